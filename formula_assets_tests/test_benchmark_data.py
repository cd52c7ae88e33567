"""The benchmarks' hand-made data: the people's queries (benchmarks/data/search_queries.jsonl)
and the reader's judgements of the audit. Every query names items that exist, every LaTeX
query parses, and the tuning/test split is the rule it was made by, so a later edit cannot
move a query between the parts unnoticed."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from latex2mathml.converter import convert

from formula_assets.ingest.snapshot import snapshot_records
from formula_assets.syntax.mathml import parse_mathml

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"
STYLES = {
    "text": {"name", "other_spelling", "lower_case", "no_diacritics_or_apostrophes",
             "common_name", "description", "question"},
    "latex": {"same_notation", "renamed", "swapped_sides", "reordered", "other_notation",
              "part", "combined"},
}  # fmt: skip
ID = re.compile(r"^([tf])(\d{3})$")


@pytest.fixture(scope="module")
def snapshot_qids() -> set[str]:
    return {r.qid for r in snapshot_records()}


@pytest.fixture(scope="module")
def queries() -> list[dict]:
    lines = (DATA / "search_queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_there_are_enough_queries_of_both_kinds_with_unique_ids(queries) -> None:
    assert len(queries) >= 150
    kinds = {q["kind"] for q in queries}
    assert kinds == {"text", "latex"}
    assert len({q["id"] for q in queries}) == len(queries)


def test_every_expected_item_is_in_the_snapshot(queries, snapshot_qids) -> None:
    missing = {(q["id"], e) for q in queries for e in q["expected"] if e not in snapshot_qids}
    assert missing == set()
    assert all(q["expected"] for q in queries)


def test_the_split_is_the_rule_and_the_styles_are_known(queries) -> None:
    for query in queries:
        prefix, number = ID.match(query["id"]).groups()
        assert prefix == ("t" if query["kind"] == "text" else "f"), query["id"]
        assert query["part"] == ("tuning" if int(number) % 3 == 1 else "test"), query["id"]
        assert query["style"] in STYLES[query["kind"]], query["id"]


def test_every_latex_query_converts_and_parses(queries) -> None:
    for query in queries:
        if query["kind"] == "latex":
            assert parse_mathml(convert(query["query"])).size() > 1, query["id"]


def test_the_audit_judgements_name_snapshot_items_in_the_vocabulary(snapshot_qids) -> None:
    for path in sorted((DATA / "audit_judgements").glob("*.tsv")):
        with path.open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        assert rows, path
        for row in rows:
            assert row["qid"] in snapshot_qids, (path.name, row["qid"])
            assert row["verdict"] in {"needs_edit", "correct", "cannot_tell"}
            assert row["finding_points"] in {"yes", "partly", "no", "n/a"}
            assert (row["verdict"] == "needs_edit") == (row["finding_points"] != "n/a")
