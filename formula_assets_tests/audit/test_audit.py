"""The annotation audit on a small index it can be checked against by hand: ranks, margins,
concept fit, the rows of items it cannot score, its checks, and `formula-assets audit`."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from formula_assets.audit.concepts import identifiers, suspicion, unannotated_symbols
from formula_assets.audit.scores import pair_scores
from formula_assets.audit.table import (
    build_audit,
    one_row_per_item,
    ranks_in_range,
    tsv_rows,
)
from formula_assets.cli import main
from formula_assets.defs.metadata import annotation_audit_top
from formula_assets.evaluation.ranking import MatrixScorer
from formula_assets.search.layout import INDEX_SCHEMA, METADATA_KEY

DIM = 64
METHOD = "sbert_no_cl"  # untrained: its text vectors are the sentence vectors themselves


def mi(*names: str) -> str:
    return "<math>" + "".join(f"<mi>{n}</mi>" for n in names) + "</math>"


def corpus(n: int = 12) -> tuple[list[dict], dict[str, np.ndarray], dict[str, int]]:
    """Items whose formula vector is the sum of their concepts' text vectors: each fits its
    own concepts. Two concepts per item; the last item has none."""
    rng = np.random.default_rng(0)
    rows, texts = [], {}
    for i in range(n):
        concepts = (
            []
            if i == n - 1
            else [
                {
                    "qid": f"Q{1000 + c}",
                    "label": f"concept {c}",
                    "description": None,
                    "symbol_mathml": mi(f"x{c}"),
                }
                for c in (2 * i, 2 * i + 1)
            ]
        )
        rows.append(
            {
                "qid": f"Q{i}",
                "label": f"item {i}",
                "description": None,
                "mathml": mi(*(f"x{c}" for c in (2 * i, 2 * i + 1)), "y"),
                "concepts": concepts,
            }
        )
        for c in (2 * i, 2 * i + 1):
            texts[f"concept {c}"] = rng.normal(size=DIM).astype(np.float32)
        # an item's label says what its concepts say
        texts[f"item {i}"] = 0.5 * (texts[f"concept {2 * i}"] + texts[f"concept {2 * i + 1}"])
    folds = {r["qid"]: 1 + i % 2 for i, r in enumerate(rows)}
    return rows, texts, folds


def index_of(rows: list[dict], texts: dict, folds: dict, indexed: tuple[int, ...]) -> pa.Table:
    parts = []
    for fold in indexed:
        qids = [r["qid"] for r in rows]
        structural = np.stack(
            [sum(texts[f"concept {c}"] for c in (2 * i, 2 * i + 1)) for i in range(len(rows))]
        )
        semantic = np.stack(
            [texts[r["label"]] + sum((texts[c["label"]] for c in r["concepts"]), 0) for r in rows]
        )
        splits = ["test" if folds.get(q) == fold else "train" for q in qids]
        n = len(qids)
        parts.append(
            pa.table(
                {
                    "fold": pa.array([fold] * n, pa.int8()),
                    "method": [METHOD] * n,
                    "qid": qids,
                    "split": splits,
                    "structural": [list(map(float, v)) for v in structural],
                    "semantic": [list(map(float, v)) for v in semantic],
                    "structural_hubness": np.zeros(n),
                    "semantic_hubness": np.zeros(n),
                },
                schema=INDEX_SCHEMA,
            )
        )
    summary = {
        "ensemble_weights": {str(f): {METHOD: 1.0} for f in indexed},
        "ensemble_hubness_k": {str(f): 0 for f in indexed},
    }
    table = pa.concat_tables(parts)
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(summary)})


def audit_of(rows, texts, folds, indexed=(1, 2)) -> pa.Table:
    return build_audit(rows, index_of(rows, texts, folds, indexed), folds, {}, texts, "sum")


def test_ranks_margins_and_preferred_items() -> None:
    scores = np.array([[0.9, 0.1, 0.2], [0.8, 0.3, 0.1], [0.0, 0.0, 0.5]])
    got = pair_scores(MatrixScorer(scores), MatrixScorer(scores.T), np.arange(3), top=2)
    assert got.forward_rank.tolist() == [1, 2, 1]
    assert got.backward_rank.tolist() == [1, 1, 1]
    assert np.allclose(got.forward_margin, [0.2 - 0.9, 0.8 - 0.3, 0.0 - 0.5])
    assert got.preferred_annotations.tolist() == [[2, 1], [0, 2], [0, 1]]


def test_a_tie_with_the_own_pair_counts_against_it() -> None:
    scores = np.array([[0.5, 0.5], [0.0, 1.0]])
    got = pair_scores(MatrixScorer(scores), MatrixScorer(scores.T), np.arange(2))
    assert got.forward_rank.tolist() == [2, 1]


def test_swapped_concepts_are_the_most_suspicious() -> None:
    rows, texts, folds = corpus()
    rows[0]["concepts"], rows[2]["concepts"] = rows[2]["concepts"], rows[0]["concepts"]
    audit = audit_of(rows, texts, folds)
    top = audit.column("qid").to_pylist()[:2]
    assert set(top) == {"Q0", "Q2"}
    first = audit.to_pylist()[0]
    assert first["suspicion"] > 0.5 and first["rank_formula_to_annotation"] > 1
    clean = [r["suspicion"] for r in audit.to_pylist()[2:] if r["suspicion"] is not None]
    assert len(clean) == 9 and max(clean) < 0.1  # its two concepts come first


def test_a_removed_concept_is_suggested_with_its_symbol() -> None:
    rows, texts, folds = corpus()
    removed = rows[4]["concepts"].pop()
    rows[6]["concepts"].append(removed)  # the vocabulary is the corpus's: it must be used
    row = next(r for r in audit_of(rows, texts, folds).to_pylist() if r["qid"] == "Q4")
    suggested = [s["qid"] for s in row["missing_concepts"]]
    assert suggested[0] == removed["qid"]
    assert row["missing_concepts"][0]["symbol"] == "x9"
    assert row["unannotated_symbols"] == ["x9", "y"]


def test_items_it_cannot_score_get_a_row_with_the_reason() -> None:
    rows, texts, folds = corpus()
    folds = {**folds, "Q3": 3}  # a fold the index does not hold
    del folds["Q5"]  # in no fold
    audit = audit_of(rows, texts, folds).to_pylist()
    by_qid = {r["qid"]: r for r in audit}
    assert not by_qid["Q3"]["scored"] and "fold 3 has no models" in by_qid["Q3"]["remark"]
    assert not by_qid["Q5"]["scored"] and "no cross-validation fold" in by_qid["Q5"]["remark"]
    no_concepts = by_qid["Q11"]
    assert no_concepts["scored"] and no_concepts["remark"] == "no concepts annotated"
    assert no_concepts["suspicion"] is None and no_concepts["missing_concepts"]
    assert one_row_per_item(pa.Table.from_pylist(audit), [r["qid"] for r in rows]).passed
    assert ranks_in_range(pa.Table.from_pylist(audit)).passed


def test_the_checks_fail_on_a_broken_table() -> None:
    rows, texts, folds = corpus()
    audit = audit_of(rows, texts, folds)
    qids = [r["qid"] for r in rows]
    assert one_row_per_item(audit, qids).passed and ranks_in_range(audit).passed
    doubled = pa.concat_tables([audit, audit.slice(0, 1)])
    assert not one_row_per_item(doubled, qids).passed
    assert not one_row_per_item(audit.slice(1), qids).passed
    broken = audit.to_pylist()
    broken[0]["rank_formula_to_annotation"] = broken[0]["pool"] + 1
    assert not ranks_in_range(pa.Table.from_pylist(broken, schema=audit.schema)).passed
    broken = audit.to_pylist()
    broken[1]["scored"], broken[1]["remark"] = False, None
    assert not ranks_in_range(pa.Table.from_pylist(broken, schema=audit.schema)).passed


def test_the_suspicion_is_the_mean_and_the_worst_concept_averaged() -> None:
    assert suspicion({}) is None
    assert suspicion({"a": 0.0, "b": 0.5}) == pytest.approx(0.375)


def test_symbols_come_from_the_operator_tree() -> None:
    einstein = "<math><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></math>"
    assert identifiers(einstein) == ["E", "m", "c"]  # the number 2 is no identifier
    assert identifiers("<math><mi>broken") == []
    row = {"mathml": mi("F", "m", "a"), "concepts": [{"symbol_mathml": mi("F")}]}
    assert unannotated_symbols(row) == ["m", "a"]


def test_the_ui_table_links_the_most_suspicious_to_wikidata() -> None:
    rows, texts, folds = corpus()
    rows[0]["concepts"], rows[2]["concepts"] = rows[2]["concepts"], rows[0]["concepts"]
    lines = annotation_audit_top(audit_of(rows, texts, folds)).value.splitlines()
    assert len(lines) == 2 + 11  # every item with concepts, up to 25
    first = re.match(r"\| 1 \| \[Q(\d)\]\(https://www\.wikidata\.org/wiki/Q(\d)\) \|", lines[2])
    assert first and first[1] == first[2] and first[1] in {"0", "2"}


def test_the_command_prints_and_writes_the_list(tmp_path, monkeypatch, capsys) -> None:
    rows, texts, folds = corpus()
    rows[0]["concepts"], rows[2]["concepts"] = rows[2]["concepts"], rows[0]["concepts"]
    audit = audit_of(rows, texts, folds)
    monkeypatch.setenv("FORMULA_ASSETS_DATA_LAKE", str(tmp_path / "lake"))
    assert main(["audit", "--top", "2"]) == 2
    assert "not materialized" in capsys.readouterr().err
    (tmp_path / "lake").mkdir()
    pq.write_table(audit, tmp_path / "lake" / "annotation_audit.parquet")
    tsv = tmp_path / "audit.tsv"
    assert main(["audit", "--top", "2", "--tsv", str(tsv)]) == 0
    printed = capsys.readouterr().out
    assert "Q0" in printed and "Q2" in printed and "https://www.wikidata.org/wiki/Q0" in printed
    lines = tsv.read_text().splitlines()
    assert len(lines) == 3 and lines[0].split("\t")[0] == "item"
    assert [line.split("\t") for line in lines[1:]] == tsv_rows(audit, 2)
    assert main(["audit", "--top", "0"]) == 2
    assert main(["audit", "--tsv", str(tmp_path / "no" / "such" / "dir.tsv")]) == 2
    assert "cannot write" in capsys.readouterr().err
