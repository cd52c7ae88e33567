"""Metadata that makes assets readable in the UI: schemas, previews, summaries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg
import pyarrow as pa

PREVIEW_CELL_CHARS = 80


def table_schema(schema: pa.Schema) -> dg.TableSchema:
    return dg.TableSchema(columns=[dg.TableColumn(name=f.name, type=str(f.type)) for f in schema])


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
