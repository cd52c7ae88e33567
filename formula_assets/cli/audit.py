"""`formula-assets audit`: the head of the editors' queue of formula annotations to check,
printed, or as TSV with a line per lead and its QuickStatements. It reads the
`annotation_audit` table; nothing is written to Wikidata."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import pyarrow as pa
from upath import UPath

from formula_assets.audit.table import TSV_COLUMNS, top_rows, tsv_rows
from formula_assets.core import lake
from formula_assets.core.settings import Settings

ASSET = "annotation_audit"


def read_audit(root: UPath) -> pa.Table:
    path = root / f"{ASSET}.parquet"
    if not path.exists():
        raise FileNotFoundError(
            f"{ASSET} is not materialized in {root}; run `make run` (formula-assets refresh) first"
        )
    try:
        return lake.read_parquet(path)
    except pa.ArrowInvalid as exc:
        raise FileNotFoundError(f"{path} is not a readable Parquet table ({exc})") from None


def run_audit(args: argparse.Namespace) -> int:
    """Print the first `--top` items of the editors' queue (and write them to `--tsv`); 2 when
    the audit is not there to read or the file cannot be written."""
    if args.top < 1:
        print("audit: --top must be at least 1", file=sys.stderr)
        return 2
    try:
        audit = read_audit(UPath(Settings.from_environment().data_lake))
    except FileNotFoundError as exc:
        print(f"audit: {exc}", file=sys.stderr)
        return 2
    rows = top_rows(audit, args.top)
    unscored = audit.num_rows - sum(audit.column("scored").to_pylist())
    print(
        f"the first {len(rows)} of {audit.num_rows} formula items in the editors' queue"
        + (f" ({unscored} not scored by the models)" if unscored else "")
    )
    for n, row in enumerate(rows, 1):
        leads = row.get("leads") or []
        # an item with leads by its strongest lead's score, else by the models' suspicion
        score = f"{row['priority']:.3f}" if leads else f"({row['suspicion']:.3f})"
        print(f"{n:>3}. {score:>7}  {row['qid']:<11} {row['label'] or '(no label)'}  {row['url']}")
        # a table written before leads has no kind
        print(f"{'':14}{row.get('kind') or 'model doubt'}: {row['finding']}")
    if args.tsv is not None:
        try:
            with Path(args.tsv).open("w", encoding="utf-8", newline="") as handle:
                # plain TSV, no quoting: a QuickStatements cell reads as it is (cells hold no tabs)
                writer = csv.writer(
                    handle, delimiter="\t", quoting=csv.QUOTE_NONE, quotechar=None,
                    lineterminator="\n",
                )  # fmt: skip
                writer.writerow(TSV_COLUMNS)
                lines = tsv_rows(audit, args.top)
                writer.writerows(lines)
        except OSError as exc:
            print(f"audit: cannot write {args.tsv}: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {len(lines)} lines ({len(rows)} items) to {args.tsv}")
    return 0
