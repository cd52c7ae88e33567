"""`formula-assets search`: formula → concepts or text → formulae, printed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from upath import UPath

from formula_assets.core.protocol import ENSEMBLE
from formula_assets.core.settings import Settings
from formula_assets.search.searcher import Searcher, SearchError, latex_to_mathml
from formula_assets.syntax.opt import parse_options


def run_search(args: argparse.Namespace) -> int:
    """Print the hits of one query; 2 when the search cannot run as asked."""
    try:
        if args.mathml is not None:
            try:
                mathml = Path(args.mathml).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SearchError(f"cannot read {args.mathml}: {exc}") from None
        elif args.latex is not None:
            mathml = latex_to_mathml(args.latex)
        else:
            mathml = None
        settings = Settings.from_environment()
        searcher = Searcher(
            UPath(settings.data_lake),
            args.method,
            args.fold,
            options=parse_options(settings.styled_letters),
            model_dir=settings.model_dir,
            offline=settings.hf_hub_offline,
        )
        if mathml is not None:
            hits = searcher.formula_to_concepts(mathml, args.top)
            print(f"formula → concepts with {searcher.method}" + _fold_note(searcher))
        else:
            hits = searcher.text_to_formulae(args.text, args.top)
            print(f"text → formulae with {searcher.method}" + _fold_note(searcher))
    except SearchError as exc:
        print(f"search: {exc}", file=sys.stderr)
        return 2
    for hit in hits:
        seen = {True: "trained on", False: "held out", None: ""}[hit.trained_on]
        line = (
            f"{hit.rank:>3}. {hit.score:6.3f}  {seen:<10}  {hit.qid:<11} "
            f"{hit.label or '(no label)'}"
        )
        if hit.description:
            line += f" — {hit.description}"
        print(line)
        if mathml is not None and hit.concepts:
            print(f"{'':24}concepts: {', '.join(hit.concepts[:8])}")
        if mathml is None and hit.formula:
            print(f"{'':24}formula: {hit.formula[:100]}")
    return 0


def _fold_note(searcher) -> str:
    weights = ""
    if searcher.method == ENSEMBLE:
        weights = ", weights " + ", ".join(f"{m} {w:.1f}" for m, w in searcher.weights.items())
        weights += f", hubness k {searcher.index.hubness_k}"
    return (
        f" (fold {searcher.fold} models{weights}; 'trained on': the item was in those models'"
        " training folds, 'held out': in their test fold)"
    )
