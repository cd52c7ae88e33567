"""`formula-assets audit`: what an editor reads — the head of the queue, one line each with
the finding beneath (its strongest lead's kind, or the models' doubt), how many the models
could not score — and a clear error, exit 2, for a table that is missing or not Parquet."""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from formula_assets.cli.audit import run_audit
from formula_assets_tests.support.audit_rows import lead

WIKIDATA = "https://www.wikidata.org/wiki/"


def item(
    qid: str, label: str | None, suspicion: float | None, lead_text: str | None = None
) -> dict:
    addition = f'{qid}\tP527\tQ11423\tP7235\t"m"'
    more = {"symbol": "m", "suggestion": "Q11423", "suggestion_label": "mass", "items": ["Q5"]}
    leads = [lead("unannotated_symbol", lead_text, 0.75, quickstatements=addition, **more)]
    return {
        "qid": qid,
        "label": label,
        "url": WIKIDATA + qid,
        "scored": suspicion is not None,
        "suspicion": suspicion,
        "priority": 0.75 if lead_text else 0.0,
        "kind": "unannotated_symbol" if lead_text else None,
        "leads": leads if lead_text else [],
        "finding": lead_text or f"finding of {qid}",
        "missing_concepts": [],
        "rank_formula_to_annotation": 3,
        "rank_annotation_to_formula": 4,
    }


def lake_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: list[dict]) -> Path:
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), lake / "annotation_audit.parquet")
    monkeypatch.setenv("FORMULA_ASSETS_DATA_LAKE", str(lake))
    return lake


def audit(top: int = 25, tsv: Path | None = None) -> int:
    return run_audit(argparse.Namespace(top=top, tsv=tsv))


def test_the_head_of_the_queue_with_the_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        item("Q7", "Newton", None, lead_text="m has no concept"),
        item("Q1", "Ohm's law", 0.91234),
        item("Q22", None, 0.5),
        item("Q3", "x", None),
    ]
    lake_with(tmp_path, monkeypatch, rows)
    assert audit(top=3) == 0
    assert capsys.readouterr().out.splitlines() == [
        "the first 3 of 4 formula items in the editors' queue (2 not scored by the models)",
        f"  1.   0.750  Q7          Newton  {WIKIDATA}Q7",
        "              unannotated_symbol: m has no concept",
        f"  2. (0.912)  Q1          Ohm's law  {WIKIDATA}Q1",
        "              model doubt: finding of Q1",
        f"  3. (0.500)  Q22         (no label)  {WIKIDATA}Q22",
        "              model doubt: finding of Q22",
    ]


def test_every_item_scored_says_nothing_of_unscored_ones_and_writes_the_tsv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lake_with(
        tmp_path,
        monkeypatch,
        [item("Q1", "a", 0.2, lead_text="m has no concept"), item("Q2", "b", 0.1)],
    )
    tsv = tmp_path / "audit.tsv"
    assert audit(top=1, tsv=tsv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "the first 1 of 2 formula items in the editors' queue"
    assert out[-1] == f"wrote 1 lines (1 items) to {tsv}"
    lines = tsv.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and lines[1].split("\t")[:7] == [
        "Q1", "a", f"{WIKIDATA}Q1", "unannotated_symbol", "m has no concept", "mass (Q11423)",
        'Q1|P527|Q11423|P7235|"m"',
    ]  # fmt: skip


def test_a_table_that_is_not_parquet_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = lake_with(tmp_path, monkeypatch, [item("Q1", "a", 0.2)])
    (lake / "annotation_audit.parquet").write_bytes(b"not parquet at all")
    assert audit() == 2
    err = capsys.readouterr().err
    assert err.startswith(f"audit: {lake / 'annotation_audit.parquet'} is not a readable Parquet")


def test_a_top_below_one_and_an_unwritable_tsv_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lake_with(tmp_path, monkeypatch, [item("Q1", "a", 0.2)])
    assert audit(top=0) == 2
    assert capsys.readouterr() == ("", "audit: --top must be at least 1\n")
    nowhere = tmp_path / "no" / "such" / "folder" / "audit.tsv"
    assert audit(tsv=nowhere) == 2
    assert capsys.readouterr().err.startswith(f"audit: cannot write {nowhere}: ")


def test_a_table_written_before_leads_still_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = {k: v for k, v in item("Q1", "a", 0.2).items() if k not in ("priority", "kind", "leads")}
    lake_with(tmp_path, monkeypatch, [old])
    tsv = tmp_path / "audit.tsv"
    assert audit(tsv=tsv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:3] == [
        f"  1. (0.200)  Q1          a  {WIKIDATA}Q1",
        "              model doubt: finding of Q1",
    ]
    assert tsv.read_text(encoding="utf-8").splitlines()[1].split("\t")[3:5] == ["", "finding of Q1"]
