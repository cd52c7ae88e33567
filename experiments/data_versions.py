"""Every asset's (and partition's) latest data version in an instance, to compare two builds.

A refactoring must leave results alone: build the pipeline before and after it (each in its
own lake and instance), then compare what the two instances recorded:

    DAGSTER_HOME=/path/home-before python -m experiments.data_versions --write before.json
    DAGSTER_HOME=/path/home-after  python -m experiments.data_versions --compare before.json

Exit status 1 when any data version differs or an asset is missing on one side.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import dagster as dg


def compare(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per asset whose data version differs or that only one side has."""
    lines = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, "missing"), after.get(name, "missing")
        if old != new:
            lines.append(f"{name}: {old} → {new}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the versions here as JSON")
    parser.add_argument("--compare", type=Path, help="compare with versions written earlier")
    args = parser.parse_args(argv)
    from formula_assets.cli.runs import data_versions, load_definitions

    with dg.DagsterInstance.get() as instance:
        versions = data_versions(load_definitions(), instance)
    if args.write:
        args.write.write_text(json.dumps(versions, indent=1, sort_keys=True) + "\n")
    if args.compare:
        differences = compare(json.loads(args.compare.read_text()), versions)
        for line in differences:
            print(line)
        print(f"{len(versions)} data versions, {len(differences)} differ")
        return 1 if differences else 0
    for name, version in sorted(versions.items()):
        print(f"{name}\t{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
