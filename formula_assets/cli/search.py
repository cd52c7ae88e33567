"""`formula-assets search`: a text or a formula, answered from names, structure and meaning."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

from upath import UPath

from formula_assets.core.protocol import ENSEMBLE
from formula_assets.core.settings import Settings
from formula_assets.search.searcher import LATEX, MATHML, TEXT, Searcher, SearchError, SearchResult
from formula_assets.syntax.opt import parse_options


def _query(args: argparse.Namespace) -> tuple[str, str]:
    if args.mathml is not None:
        try:
            return Path(args.mathml).read_text(encoding="utf-8"), MATHML
        except (OSError, UnicodeDecodeError) as exc:
            raise SearchError(f"cannot read {args.mathml}: {exc}") from None
    if args.latex is not None:
        return args.latex, LATEX
    return args.text, TEXT


def searcher_from_settings(method: str | None = None, fold: int | None = None) -> Searcher:
    """A searcher over the configured data lake, parsing as the pipeline parsed."""
    settings = Settings.from_environment()
    return Searcher(
        UPath(settings.data_lake),
        method,
        fold,
        options=parse_options(settings.styled_letters),
        model_dir=settings.model_dir,
        offline=settings.hf_hub_offline,
    )


def run_search(args: argparse.Namespace) -> int:
    """Print the hits of one query (or write them as JSON); 2 when the search cannot run."""
    try:
        query, kind = _query(args)
        result = searcher_from_settings(args.method, args.fold).search(query, kind, args.top)
    except SearchError as exc:
        print(f"search: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(result.as_json(), sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        print_result(result)
    # The process ends here: the collection Python runs at exit would walk every object
    # torch and the indexes made (0.3–0.5 s of a 3 s cold search); frozen, it skips them.
    gc.freeze()
    return 0


def _channels(hit) -> str:
    parts = []
    for name, found in hit.channels.items():
        parts.append(f"{name} #{found.rank}" + (" (exact)" if found.exact else ""))
    return ", ".join(parts)


def print_result(result: SearchResult) -> None:
    meaning = result.meaning
    weights = ""
    if meaning.get("method") == ENSEMBLE:
        weights = " weighing " + ", ".join(f"{m} {w:.1f}" for m, w in meaning["weights"].items())
    print(
        f"{result.kind} query, channels: {', '.join(result.channels)} (meaning: "
        f"{meaning.get('method')}, fold {meaning.get('fold')} models{weights}; 'trained on': "
        "the item was in those models' training folds, 'held out': in their test fold)"
    )
    for hit in result.hits:
        seen = {True: "trained on", False: "held out", None: ""}[hit.trained_on]
        line = f"{hit.rank:>3}. {hit.qid:<11} {hit.label or '(no label)'}"
        if hit.description:
            line += f" — {hit.description}"
        print(line)
        print(f"{'':16}found by {_channels(hit)}{'; ' + seen if seen else ''}")
        concepts = [c.label for c in hit.concepts if c.label]
        if concepts:
            print(f"{'':16}concepts: {', '.join(sorted(set(concepts))[:8])}")
    if result.symbols:
        print("what the query's symbols most likely denote:")
        for symbol in result.symbols:
            if not symbol.readings:
                print(f"  {symbol.identifier}: no annotation in the items found or the corpus")
                continue
            readings = []
            for r in symbol.readings:
                kinds = ", ".join(f"{k} {v:.2f}" for k, v in r.evidence.items())
                readings.append(f"{r.label or r.concept} ({r.concept}) {r.score:.2f} [{kinds}]")
            print(f"  {symbol.identifier}: " + "; ".join(readings))
