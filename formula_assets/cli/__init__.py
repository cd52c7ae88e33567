"""`formula-assets`: the project's command line (instance, staleness, refresh)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from formula_assets.instance_home import ensure_dagster_home


def _home(_args: argparse.Namespace) -> int:
    print(ensure_dagster_home())
    return 0


def _stale(_args: argparse.Namespace) -> int:
    import dagster as dg

    from formula_assets.cli.refresh import load_definitions
    from formula_assets.cli.staleness import stale_entries

    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        for entry in stale_entries(load_definitions(), instance):
            print(entry.line())
    return 0


def _refresh(args: argparse.Namespace) -> int:
    import dagster as dg

    from formula_assets.cli.refresh import RefreshError, load_definitions, refresh

    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        try:
            report = refresh(
                load_definitions(), instance, workers=args.workers, observe=args.observe
            )
        except RefreshError as exc:
            print(f"refresh failed: {exc}", file=sys.stderr)
            return 1
    if report.ran:
        print(f"refreshed {len(report.ran)} asset(s)/partition(s) in {report.seconds:.1f} s")
    else:
        print(f"everything is fresh ({report.seconds:.1f} s)")
    return 0


def _search(args: argparse.Namespace) -> int:
    from upath import UPath

    from formula_assets import settings
    from formula_assets.search import Searcher, SearchError, latex_to_mathml

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
        searcher = Searcher(UPath(settings.data_lake_url()), args.method, args.fold)
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
        line = f"{hit.rank:>3}. {hit.score:6.3f}  {hit.qid:<11} {hit.label or '(no label)'}"
        if hit.description:
            line += f" — {hit.description}"
        print(line)
        if mathml is not None and hit.concepts:
            print(f"{'':24}concepts: {', '.join(hit.concepts[:8])}")
        if mathml is None and hit.formula:
            print(f"{'':24}formula: {hit.formula[:100]}")
    return 0


def _fold_note(searcher) -> str:
    if searcher.fold is None:
        return ""
    weights = ""
    if searcher.method == "score_ensemble":
        weights = ", weights " + ", ".join(f"{m} {w:.1f}" for m, w in searcher.weights.items())
    return f" (fold {searcher.fold} models{weights})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="formula-assets", description="Work with the formula_assets pipeline."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "home", help="create the project's Dagster instance folder and print its path"
    ).set_defaults(handler=_home)
    commands.add_parser(
        "stale", help="list stale or missing assets and partitions, with Dagster's causes"
    ).set_defaults(handler=_stale)
    refresh = commands.add_parser(
        "refresh", help="materialize exactly the stale or missing assets, in order, until fresh"
    )
    refresh.add_argument(
        "--workers", type=int, default=2, help="parallel processes for partitions (default 2)"
    )
    refresh.add_argument(
        "--observe",
        action="store_true",
        help="observe the Wikidata change probe first (as the weekly schedule does)",
    )
    refresh.set_defaults(handler=_refresh)
    search = commands.add_parser(
        "search", help="formula → concepts (--latex/--mathml) or text → formulae (--text)"
    )
    query = search.add_mutually_exclusive_group(required=True)
    query.add_argument("--latex", help="a formula in LaTeX, e.g. 'F = m a'")
    query.add_argument("--mathml", metavar="FILE", help="a file holding a MathML formula")
    query.add_argument("--text", help="a description, e.g. 'kinetic energy'")
    search.add_argument(
        "--method",
        choices=["score_ensemble", "sbert_dual_cl", "graph_text_cl", "sbert_no_cl"],
        help="default: the best method available in the data lake",
    )
    search.add_argument("--fold", type=int, help="which fold's models (default: best validation)")
    search.add_argument("--top", type=int, default=10, help="how many items to print (10)")
    search.set_defaults(handler=_search)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
