"""The annotation audit on a small index it can be checked against by hand: ranks, margins,
concept fit, the rows of items it cannot score, its checks, and `formula-assets audit`."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from formula_assets.audit.concepts import identifiers, suspicion, unannotated_symbols
from formula_assets.audit.scores import pair_scores
from formula_assets.audit.table import (
    build_audit,
    loaded_models,
    one_row_per_item,
    ranks_in_range,
    tsv_rows,
)
from formula_assets.cli import main
from formula_assets.defs.metadata import annotation_audit_top
from formula_assets.evaluation.ranking import MatrixScorer
from formula_assets.methods import registry, sbert_dual_cl
from formula_assets.methods.base import LoadedModel
from formula_assets.search.layout import INDEX_SCHEMA, METADATA_KEY
from formula_assets.training.artifacts import TrainedModel
from formula_assets_tests.training.descriptions import described

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


def index_of(
    rows: list[dict],
    texts: dict,
    folds: dict,
    indexed: tuple[int, ...],
    method: str = METHOD,
    network: torch.nn.Module | None = None,
) -> pa.Table:
    """`method`'s search index; a trained method's vectors are `network`'s projections."""
    parts = []
    for fold in indexed:
        qids = [r["qid"] for r in rows]
        structural = np.stack(
            [sum(texts[f"concept {c}"] for c in (2 * i, 2 * i + 1)) for i in range(len(rows))]
        )
        semantic = np.stack(
            [texts[r["label"]] + sum((texts[c["label"]] for c in r["concepts"]), 0) for r in rows]
        )
        if network is not None:
            with torch.no_grad():
                structural = network.encode_structural(torch.from_numpy(structural)).numpy()
                semantic = network.encode_semantic(torch.from_numpy(semantic)).numpy()
        splits = ["test" if folds.get(q) == fold else "train" for q in qids]
        n = len(qids)
        parts.append(
            pa.table(
                {
                    "fold": pa.array([fold] * n, pa.int8()),
                    "method": [method] * n,
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
        "ensemble_weights": {str(f): {method: 1.0} for f in indexed},
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


def test_the_ui_table_shows_the_25_most_suspicious() -> None:
    rows, texts, folds = corpus(30)
    lines = annotation_audit_top(audit_of(rows, texts, folds)).value.splitlines()
    assert len(lines) == 2 + 25  # of the 29 items with concepts, as docs/audit.md says


def test_most_suspicious_first_a_perfect_fit_last_of_the_scored() -> None:
    """An item whose one concept fits best has suspicion 0: it comes after every item with
    any doubt, and before the items without concepts (no suspicion), which sort by qid."""
    rows, texts, folds = corpus()
    rows[4]["concepts"].pop()
    audit = audit_of(rows, texts, folds).to_pylist()
    assert next(r for r in audit if r["qid"] == "Q4")["suspicion"] == 0.0
    assert [r["qid"] for r in audit][-2:] == ["Q4", "Q11"]
    scored = [r["suspicion"] for r in audit if r["suspicion"] is not None]
    assert scored == sorted(scored, reverse=True)


def test_a_row_counts_and_names_the_items_concepts_worst_fitting_first() -> None:
    rows, texts, folds = corpus()
    audit = {r["qid"]: r for r in audit_of(rows, texts, folds).to_pylist()}
    assert audit["Q3"]["num_concepts"] == 2 and audit["Q11"]["num_concepts"] == 0
    fit = audit["Q3"]["concept_fit"]
    assert {(f["qid"], f["label"]) for f in fit} == {("Q1006", "concept 6"), ("Q1007", "concept 7")}
    assert fit[0]["percentile"] > fit[1]["percentile"]


def test_items_no_longer_among_the_formulae_are_left_out_of_their_fold() -> None:
    """cv_folds and the index may hold items wikidata_formulae has lost since: a fold none
    of whose held-out items remain scores nothing, and the other folds are audited."""
    rows, texts, folds = corpus()
    index = index_of(rows, texts, folds, (1, 2))
    remaining = [r for r in rows if folds[r["qid"]] == 2]
    audit = build_audit(remaining, index, folds, {}, texts, "sum").to_pylist()
    assert sorted(r["qid"] for r in audit) == sorted(r["qid"] for r in remaining)
    assert all(r["scored"] for r in audit)


def test_a_trained_method_audits_with_its_trained_weights_and_no_dropout() -> None:
    """A trained method maps the concepts' texts into its space with the fold's network:
    loaded by `loaded_models`, the audit is the one the trained network gives (not an
    untrained network of the same shape), the same every time (dropout off); without the
    fold's model, the fold is not scored."""
    method = registry.trained_method("sbert_dual_cl")
    settings = dataclasses.replace(
        sbert_dual_cl.PROFILE_SETTINGS["smoke"], hidden=16, out_dim=8, dropout=0.5, runs=1
    )
    description = dataclasses.replace(
        described(), settings=settings, structural_dim=DIM, semantic_dim=DIM
    )
    torch.manual_seed(1)
    network = method.network(description).eval()
    trained = [
        TrainedModel(dataclasses.replace(description, fold=f), network.state_dict()) for f in (1, 2)
    ]
    rows, texts, folds = corpus()
    index = index_of(rows, texts, folds, (1, 2), method.name, network)

    def audit(models: dict) -> pa.Table:
        return build_audit(rows, index, folds, models, texts, "sum")

    models = loaded_models(trained)
    assert sorted(models) == [(1, method.name), (2, method.name)]
    assert all(not m.module.training for m in models.values())
    loaded = audit(models)
    assert all(loaded.column("scored").to_pylist())
    assert loaded.equals(audit(models))
    by_hand = {key: LoadedModel(m.description, network) for key, m in models.items()}
    assert loaded.equals(audit(by_hand))
    torch.manual_seed(2)
    untrained = {key: LoadedModel(m.description, method.network(description).eval())
                 for key, m in models.items()}  # fmt: skip
    assert not loaded.equals(audit(untrained))
    without = {r["qid"]: r for r in audit({(1, method.name): models[(1, method.name)]}).to_pylist()}
    assert without["Q0"]["scored"]  # fold 1
    assert without["Q1"]["remark"] == "fold 2 could not be scored: no sbert_dual_cl model"


def test_the_audit_scores_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its margins are stored floats: another thread count would round them otherwise and
    give the same inputs another data version in another process (a Celery worker)."""
    from threadpoolctl import threadpool_info

    from formula_assets.audit import table

    seen: list[tuple[int, set[int]]] = []
    score = table._audit_fold

    def counting(*args, **kwargs):
        blas = {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}
        seen.append((torch.get_num_threads(), blas))
        return score(*args, **kwargs)

    monkeypatch.setattr(table, "_audit_fold", counting)
    torch.set_num_threads(2)
    rows, texts, folds = corpus()
    assert audit_of(rows, texts, folds)["scored"].to_pylist().count(True) > 0
    assert seen == [(1, {1}), (1, {1})]  # both indexed folds
    assert torch.get_num_threads() == 2
