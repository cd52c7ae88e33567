"""Every column of every asset is described once, for the UI's column view."""

import pyarrow as pa

from formula_assets.analysis.correspondence import METRICS_SCHEMA
from formula_assets.core.arrow import embedding_schema
from formula_assets.defs.metadata import COLUMN_DOCS, markdown_table, table_schema
from formula_assets.evaluation.retrieval import SCORE_SCHEMA
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
