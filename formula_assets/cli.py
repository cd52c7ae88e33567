"""`formula-assets`: the project's command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from formula_assets.instance_home import ensure_dagster_home


def _home(_args: argparse.Namespace) -> int:
    print(ensure_dagster_home())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="formula-assets", description="Work with the formula_assets pipeline."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    home = commands.add_parser(
        "home", help="create the project's Dagster instance folder and print its path"
    )
    home.set_defaults(handler=_home)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
