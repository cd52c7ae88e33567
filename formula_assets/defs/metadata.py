"""Metadata that makes assets readable in the UI: schemas, previews, summaries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg
import pyarrow as pa

PREVIEW_CELL_CHARS = 80


# One name, one meaning: the same column means the same thing in every asset.
COLUMN_DOCS = {
    "qid": "Wikidata item id of the formula item (Q…)",
    "label": "English label of the item",
    "description": "English description of the item",
    "mathml": "the defining formula (P2534) as MathML",
    "tex": "the formula's TeX, where the source gives TeX (dumps)",
    "concepts": "statements qualified with P7235: concept qid, label, description, symbol",
    "unassigned_descriptions": "concept descriptions the source could not attribute",
    "enwiki": "English Wikipedia article",
    "paper_fold": "the paper's published cross-validation fold (1–5), where known",
    "source": "snapshot, sparql or dump",
    "retrieved_at": "when the source was read (null for the packaged snapshot)",
    "notes": "data-quality remarks made while reading the item",
    "node_tokens": "OPT node values in preorder (node 0 is the root)",
    "node_types": "symbol, operator or function per node",
    "edge_parent": "parent node index per edge",
    "edge_child": "child node index per edge",
    "edge_roles": "role of the child in its parent (base, exp, num, den, …)",
    "child_positions": "position of the child among its siblings",
    "linearised_opt": "preorder tokens as text, for BM25 and sentence encoders",
    "num_nodes": "number of OPT nodes",
    "depth": "depth of the OPT (root = 0)",
    "parse_status": "ok, or repaired (see parse_warnings)",
    "parse_warnings": "repairs the parser made",
    "stage": "where the formula was rejected",
    "reason": "why it was rejected",
    "excerpt": "the start of the rejected input",
    "texts": "the distinct annotation texts of the formula",
    "num_texts": "how many annotation texts",
    "embedding": "fixed-size float32 vector",
    "metric": "Table 1 metric name",
    "value": "the metric's value",
    "detail": "JSON: parameters, reverse direction, null distribution, …",
    "fold": "cross-validation fold 1–5",
    "fold_source": "paper (published split) or hash (stable hash of the qid)",
    "method": "retrieval method",
    "direction": "syntactic_to_semantic or semantic_to_syntactic",
    "recall_at_1": "share of queries with the gold first (ties broken fairly)",
    "recall_at_5": "share of queries with the gold in the top 5",
    "recall_at_10": "share of queries with the gold in the top 10",
    "mrr": "mean reciprocal rank of the gold",
    "candidates": "size of the candidate pool (the test fold)",
}


def table_schema(schema: pa.Schema) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(name=f.name, type=str(f.type), description=COLUMN_DOCS.get(f.name))
            for f in schema
        ]
    )


def _cell(value: Any) -> str:
    if isinstance(value, list):
        text = f"[{len(value)}] " + ", ".join(str(_short(v)) for v in value[:4])
    else:
        text = "" if value is None else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= PREVIEW_CELL_CHARS else text[: PREVIEW_CELL_CHARS - 1] + "…"


def _short(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("label") or value.get("qid") or value
    return value


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def preview(table: pa.Table, columns: Sequence[str], rows: int = 5) -> dg.MetadataValue:
    return dg.MetadataValue.md(markdown_table(table.slice(0, rows).to_pylist(), columns))
