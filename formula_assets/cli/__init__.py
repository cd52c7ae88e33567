"""`formula-assets`: the project's command line (instance, staleness, refresh)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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
            report = refresh(load_definitions(), instance, workers=args.workers)
        except RefreshError as exc:
            print(f"refresh failed: {exc}", file=sys.stderr)
            return 1
    if report.ran:
        print(f"refreshed {len(report.ran)} asset(s)/partition(s) in {report.seconds:.1f} s")
    else:
        print(f"everything is fresh ({report.seconds:.1f} s)")
    return 0


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
    refresh.set_defaults(handler=_refresh)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
