"""Every column of every asset is described once, for the UI's column view; previews and
tables read in one line per row; the step costs the refresh plans its workers with."""

import base64

import dagster as dg
import pyarrow as pa
import pytest

from formula_assets.analysis.correspondence import METRICS_SCHEMA
from formula_assets.core.arrow import embedding_schema
from formula_assets.defs.metadata import (
    COLUMN_DOCS,
    COST_KEY,
    PARTITION_COST_KEY,
    PREVIEW_CELL_CHARS,
    annotation_audit_top,
    asset_cost,
    curve_series,
    image,
    markdown_table,
    partition_cost,
    preview,
    recall_chart,
    rows_markdown,
    significance,
    step_cost,
    table_1,
    table_2,
    table_schema,
    tokens,
    training_curve,
)
from formula_assets.evaluation.retrieval import SCORE_SCHEMA
from formula_assets.evaluation.significance import Comparison
from formula_assets.ingest.records import FORMULA_SCHEMA
from formula_assets.semantics.annotations import ANNOTATION_SCHEMA
from formula_assets.syntax.opt import OPT_GRAPH_SCHEMA, REJECTED_SCHEMA
from formula_assets.training.folds import FOLD_SCHEMA

SCHEMAS = [
    FORMULA_SCHEMA,
    OPT_GRAPH_SCHEMA,
    REJECTED_SCHEMA,
    ANNOTATION_SCHEMA,
    embedding_schema(384, [("num_texts", pa.int32())]),
    METRICS_SCHEMA,
    FOLD_SCHEMA,
    SCORE_SCHEMA,
]


def test_every_asset_column_is_described() -> None:
    for schema in SCHEMAS:
        described = table_schema(schema)
        missing = [c.name for c in described.columns if not c.description]
        assert missing == [], missing
    assert len(COLUMN_DOCS) == len(set(COLUMN_DOCS))


def test_markdown_preview_escapes_pipes_and_truncates() -> None:
    table = markdown_table([{"a": "x|y", "b": "z" * 200}, {"a": ["p", "q"], "b": None}], ["a", "b"])
    lines = table.splitlines()
    assert lines[0] == "| a | b |" and "x\\|y" in lines[2]
    assert lines[2].endswith("… |") and "[2] p, q" in lines[3]


def test_a_step_cost_reads_back_from_an_assets_definition() -> None:
    """What `formula-assets refresh` plans its workers with: the cost declared on the asset
    (Dagster wraps the numbers as metadata values) and a partition's factor, the largest of
    its key parts' (fold `1`, method `m`)."""

    @dg.asset(metadata=step_cost(1.5, {"m": 4, "1": 2.5}))
    def costly() -> None:
        return None

    @dg.asset
    def cheap() -> None:
        return None

    declared = costly.specs_by_key[costly.key].metadata
    assert asset_cost(declared) == 1.5
    assert partition_cost(declared, "1|m") == 4.0
    assert partition_cost(declared, "1|other") == 2.5
    assert partition_cost(declared, "2|other") == 1.0  # no part declared: the asset's cost
    undeclared = cheap.specs_by_key[cheap.key].metadata
    assert asset_cost(undeclared) == 0.0 and partition_cost(undeclared, "1|m") == 1.0
    assert step_cost(2) == {COST_KEY: 2.0}  # no partition factors: no entry for them
    assert PARTITION_COST_KEY not in step_cost(2, {})


def test_a_preview_cell_is_one_line_of_at_most_80_characters() -> None:
    assert PREVIEW_CELL_CHARS == 80
    exact, over = "a" * 80, "b" * 81
    rows = [{"c": exact}, {"c": over}, {"c": "two\n  lines\tand tabs"}, {"c": None}, {"c": 0}]
    cells = [line[2:-2] for line in markdown_table(rows, ["c"]).splitlines()[2:]]
    assert cells[0] == exact
    assert cells[1] == "b" * 79 + "…"
    assert cells[2:] == ["two lines and tabs", "", "0"]


def test_a_list_cell_counts_its_items_and_names_the_first_four() -> None:
    concepts = [{"qid": "Q1", "label": "mass"}, {"qid": "Q2", "label": None}, {"other": 1}]
    table = markdown_table([{"c": concepts}, {"c": list("abcdef")}], ["c", "d"])
    header, rule, first, second = table.splitlines()
    assert (header, rule) == ("| c | d |", "|---|---|")
    assert first == "| [3] mass, Q2, {'other': 1} |  |"
    assert second == "| [6] a, b, c, d |  |"


def test_a_preview_shows_the_first_rows_only() -> None:
    table = pa.table({"n": list(range(10)), "s": [str(i) for i in range(10)]})
    lines = preview(table, ["s"], rows=3).value.splitlines()
    assert lines[2:] == ["| 0 |", "| 1 |", "| 2 |"]
    assert len(preview(table, ["n", "s"]).value.splitlines()) == 2 + 5


def test_tokens_rank_by_count_then_name_and_keep_every_count() -> None:
    graphs = pa.table({"node_tokens": [["x", "+", "y"], ["y", "=", "x"], ["y", "b", "a"]]})
    out = tokens(graphs, top=3)
    assert out["vocabulary_size"] == 6
    ranked = {"y": 3, "x": 2, "+": 1, "=": 1, "a": 1, "b": 1}
    assert list(out["token_vocabulary"].value.items()) == list(ranked.items())
    assert out["top_tokens"].value.splitlines()[2:] == ["| y | 3 |", "| x | 2 |", "| + | 1 |"]


def test_a_training_curve_names_runs_only_when_there_are_several() -> None:
    one = [{"loss": 2.0, "validation_mrr": 0.1}, {"loss": 1.0, "validation_mrr": 0.3}]
    assert curve_series(one) == {"training loss": [2.0, 1.0], "validation MRR": [0.1, 0.3]}
    two = [{**h, "run": 1} for h in one] + [{"loss": 3.0, "validation_mrr": 0.2, "run": 0}]
    assert curve_series(two) == {
        "training loss (run 1)": [3.0],
        "validation MRR (run 1)": [0.2],
        "training loss (run 2)": [2.0, 1.0],
        "validation MRR (run 2)": [0.1, 0.3],
    }


def test_an_image_is_inline_png_data() -> None:
    markdown = image(b"\x89PNG\r\n", "a chart").value
    prefix = "![a chart](data:image/png;base64,"
    assert markdown.startswith(prefix) and markdown.endswith(")")
    assert base64.b64decode(markdown[len(prefix) : -1]) == b"\x89PNG\r\n"


def test_the_audits_queue_links_to_wikidata_with_the_kind_and_what_to_do() -> None:
    audit = pa.table(
        {
            "qid": ["Q1", "Q2", "Q3"],
            "label": ["E = mc²", "unscored", "area"],
            "priority": [0.91234, 0.0, 0.0],
            "kind": ["unannotated_symbol", None, None],
            "leads": [[{"kind": "unannotated_symbol"}], [], []],
            "finding": ["m has no concept", "not audited", "looks consistent"],
            "suspicion": [None, None, 0.5],
        }
    )
    lines = annotation_audit_top(audit).value.splitlines()
    assert len(lines) == 2 + 2  # the item without a lead or a suspicion is left out
    link = "https://www.wikidata.org/wiki/"
    assert lines[2] == (
        f"| 1 | [Q1]({link}Q1) | E = mc² | unannotated_symbol | m has no concept | 0.912 | — |"
    )
    assert lines[3] == f"| 2 | [Q3]({link}Q3) | area | — | looks consistent | 0.000 | 0.500 |"


def test_a_column_without_a_description_has_none() -> None:
    [column] = table_schema(pa.schema([("not_a_column_of_ours", pa.int8())])).columns
    assert (column.name, column.type, column.description) == ("not_a_column_of_ours", "int8", None)


def test_rows_must_have_a_cell_per_column() -> None:
    assert rows_markdown(["a", "b"], [[1, 2]]).value.splitlines()[2] == "| 1 | 2 |"
    with pytest.raises(ValueError, match="zip"):
        rows_markdown(["a", "b"], [[1]])


def test_tables_1_and_2_and_the_tests_are_their_rows_in_markdown() -> None:
    metrics = pa.Table.from_pylist(
        [{"metric": "mean_cosine", "value": 0.25, "detail": None}], schema=METRICS_SCHEMA
    )
    assert table_1(metrics).value.splitlines()[2] == "| mean_cosine | 0.2500 | 0.0847 |  |"
    score = {"method": "bm25", "direction": "syntactic_to_semantic", "candidates": 9}
    scores = pa.Table.from_pylist(
        [
            {**score, "fold": f, "recall_at_1": r, "recall_at_5": r, "recall_at_10": r, "mrr": r}
            for f, r in ((1, 0.1), (2, 0.3))
        ],
        schema=SCORE_SCHEMA,
    )
    markdown = table_2(scores).value
    assert markdown.splitlines()[2].startswith("| syntactic to semantic | bm25 | 0.200 ± 0.141 |")
    comparison = Comparison("a", "b", "semantic_to_syntactic", 0.5, 1e-3, 2e-3, 3e-3)
    assert significance([comparison]).value.splitlines()[2] == (
        "| a | b | semantic to syntactic | +0.500 | 1.0e-03 | 3.0e-03 | 2.0e-03 |"
    )
    chart = recall_chart(scores).value
    assert chart.startswith("![recall@k per method](data:image/png;base64,")
    curve = training_curve([{"loss": 1.0, "validation_mrr": 0.5}]).value
    assert curve.startswith("![training curve](data:image/png;base64,")


def test_the_token_table_shows_25_unless_told() -> None:
    graphs = pa.table({"node_tokens": [[f"t{n:02d}" for n in range(30)]]})
    out = tokens(graphs)
    assert len(out["top_tokens"].value.splitlines()) == 2 + 25
    assert out["vocabulary_size"] == 30 and len(out["token_vocabulary"].value) == 30
