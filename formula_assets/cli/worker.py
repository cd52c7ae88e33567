"""A refresh worker: materialize some partitions of one asset, one run each, in this process."""

from __future__ import annotations

import sys

import dagster as dg

from formula_assets.cli.refresh import load_definitions, materialize
from formula_assets.instance_home import ensure_dagster_home


def main(argv: list[str]) -> int:
    key, partitions = dg.AssetKey.from_user_string(argv[0]), argv[1:]
    ensure_dagster_home()
    defs = load_definitions()
    failed = 0
    with dg.DagsterInstance.get() as instance:
        for partition in partitions:
            print(f"materializing {key.to_user_string()}[{partition}]", flush=True)
            if not materialize(defs, instance, [key], partition):
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
