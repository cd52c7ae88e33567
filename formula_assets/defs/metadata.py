"""Metadata that makes assets readable in the UI: schemas, previews, tables and charts; and
what a run of an asset's step costs, which `formula-assets refresh` plans its worker
processes with.

Outside every code version (see `core.versioning`): editing how an asset page looks never
makes data stale. Asset modules build their UI metadata here, not in their own module.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
import pyarrow as pa

PREVIEW_CELL_CHARS = 80
COST_KEY = "formula_assets/cost"
PARTITION_COST_KEY = "formula_assets/partition_cost"
# what an asset's code version covers (module sources, data files, settings → short hashes):
# on its definition, and copied onto each materialization, so `stale --explain` can say
# which of them changed since
COVERS_KEY = "formula_assets/code_version_covers"


# One name, one meaning: the same column means the same thing in every asset.
COLUMN_DOCS = {
    "qid": "Wikidata item id of the formula item (Q…)",
    "label": "English label of the item",
    "description": "English description of the item",
    "aliases": "other English names of the item (Wikidata aliases)",
    "names": "the item's names search matches: label, aliases, English Wikipedia title",
    "name_text": "what the sentence model read of the item: names, description, concepts",
    "spoken": "the item's formulae read aloud, identifiers with their concepts' labels",
    "pattern": "hash of the formula up to renaming, operand order and sides",
    "named": "hash of the same canonical formula with its identifiers' names",
    "loose": "hash of the pattern without signs",
    "loose_named": "hash of the formula without signs, with its names",
    "links": "hashes of the patterns of each relation the formula states on its own",
    "parts": "hashes of the patterns of every subtree of three nodes or more",
    "feature_keys": "hashes of the near-match features (subtree shapes, parent → child steps)",
    "feature_counts": "how often each feature occurs",
    "size": "nodes of the canonical formula tree",
    "identifiers": "the formula's identifiers in canonical order (v1, v2, …)",
    "annotations": "each annotated concept with the identifier its symbol is",
    "mathml": "the defining formula (P2534) as MathML",
    "tex": "the formula's TeX, where the source gives TeX (dumps)",
    "other_formulae": "the further distinct defining formulae (MathML); mathml holds the first",
    "concepts": "statements qualified with P7235: concept qid, label, description, symbol",
    "repeated_concepts": "concept entries dropped as repeats of the same concept and symbol",
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
    "token": "an OPT node token (symbol, operator or construct name)",
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
    "url": "the item's Wikidata page",
    "scored": "whether the fold models that never trained on the item scored it",
    "remark": "why the item is not scored, or what it lacks",
    "num_concepts": "concepts annotated on the item (P7235 statements)",
    "pool": "candidates its own pair ranks among: every item of its fold's index",
    "rank_formula_to_annotation": "its annotation's rank among all items' for its formula",
    "rank_annotation_to_formula": "its formula's rank among all items' for its annotation",
    "margin_formula_to_annotation": "best other annotation's score minus its own",
    "margin_annotation_to_formula": "best other formula's score minus its own",
    "suspicion": "½ (mean + worst) of its concepts' percentiles (docs/audit.md)",
    "concept_fit": "each concept's percentile among the vocabulary for this formula (0 best)",
    "preferred_annotations": "the items whose annotation fits this formula best",
    "preferred_formulae": "the items whose formula fits this annotation best",
    "missing_concepts": "concepts the item may lack, best first, with the symbol if named",
    "unannotated_symbols": "the formula's identifiers that no concept's symbol covers",
    "finding": "what looks wrong, in words",
}


def step_cost(cost: float, partitions: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Definition metadata: what one run of the asset's step costs, relative to the others
    (1.0: about one sentence-embedding table or one projection-head model on a small CPU).
    Steps without it are cheaper than starting a worker process (about 3 s). `partitions`
    multiplies the cost of a partition by the factor of a part of its key (a method's relative
    training cost); the largest factor of its parts counts."""
    out: dict[str, Any] = {COST_KEY: float(cost)}
    if partitions:
        out[PARTITION_COST_KEY] = dg.MetadataValue.json(
            {part: float(factor) for part, factor in partitions.items()}
        )
    return out


def asset_cost(metadata: Mapping[str, Any]) -> float:
    """The declared cost of one run of an asset's step (0 when none is declared)."""
    return float(_value(metadata.get(COST_KEY)) or 0.0)


def partition_cost(metadata: Mapping[str, Any], partition: str) -> float:
    """The factor of one partition: the largest of its key parts' (`1|graph_text_cl`: fold
    `1`, method `graph_text_cl`), 1 when none is declared."""
    factors = _value(metadata.get(PARTITION_COST_KEY)) or {}
    return max((float(factors[p]) for p in partition.split("|") if p in factors), default=1.0)


def code_covers(covered: Mapping[str, str]) -> dict[str, Any]:
    return {COVERS_KEY: dg.MetadataValue.json(dict(covered))}


def recorded_covers(metadata: Mapping[str, Any]) -> dict[str, str] | None:
    """What a definition's or a materialization's metadata says its code version covered."""
    value = metadata.get(COVERS_KEY)
    if value is None:
        return None
    data = value.data if isinstance(value, dg.JsonMetadataValue) else value
    return dict(data) if isinstance(data, Mapping) else None


def covers_of_definition(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The covers entry of a definition's metadata, to record on a materialization."""
    return {COVERS_KEY: metadata[COVERS_KEY]} if COVERS_KEY in metadata else {}


def _value(value: Any) -> Any:
    return value.value if isinstance(value, dg.MetadataValue) else value


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


def image(png: bytes, alt: str) -> dg.MetadataValue:
    """A PNG inline in a Markdown metadata entry."""
    return dg.MetadataValue.md(f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})")


def rows_markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> dg.MetadataValue:
    return dg.MetadataValue.md(
        markdown_table([dict(zip(columns, r, strict=True)) for r in rows], columns)
    )


def table_1(metrics: pa.Table) -> dg.MetadataValue:
    from formula_assets.reporting.tables import TABLE_1_COLUMNS, table_1_rows

    return rows_markdown(TABLE_1_COLUMNS, table_1_rows(metrics))


def table_2(scores: pa.Table) -> dg.MetadataValue:
    from formula_assets.reporting.tables import TABLE_2_COLUMNS, table_2_rows

    return rows_markdown(TABLE_2_COLUMNS, table_2_rows(scores))


def significance(comparisons: Sequence[Any]) -> dg.MetadataValue:
    from formula_assets.reporting.tables import SIGNIFICANCE_COLUMNS, significance_rows

    return rows_markdown(SIGNIFICANCE_COLUMNS, significance_rows(comparisons))


def recall_chart(scores: pa.Table) -> dg.MetadataValue:
    from formula_assets.core.protocol import DIRECTIONS
    from formula_assets.evaluation.retrieval import table_2 as summary
    from formula_assets.reporting.figures import recall_bars_figure

    return image(recall_bars_figure(summary(scores), DIRECTIONS), "recall@k per method")


def training_curve(history: Sequence[dict[str, float]]) -> dg.MetadataValue:
    from formula_assets.reporting.figures import line_figure

    png = line_figure(curve_series(history), "epoch", "value", "training curve")
    return image(png, "training curve")


def curve_series(history: Sequence[dict[str, float]]) -> dict[str, list[float]]:
    """The lines of a model's training curve: loss and validation MRR per epoch, per run
    (named by run only when there are several)."""
    runs = sorted({int(h.get("run", 0)) for h in history})
    series: dict[str, list[float]] = {}
    for run in runs:
        epochs = [h for h in history if int(h.get("run", 0)) == run]
        label = f" (run {run + 1})" if len(runs) > 1 else ""
        series[f"training loss{label}"] = [h["loss"] for h in epochs]
        series[f"validation MRR{label}"] = [h["validation_mrr"] for h in epochs]
    return series


def tokens(graphs: pa.Table, top: int = 25) -> dict[str, Any]:
    """How many distinct OPT tokens there are, the most frequent ones, and every count."""
    from formula_assets.graphs.vocabulary import token_counts

    counts = token_counts(graphs.column("node_tokens").to_pylist())
    ranked = sorted(counts.items(), key=lambda tc: (-tc[1], tc[0]))
    return {
        "vocabulary_size": len(ranked),
        "top_tokens": dg.MetadataValue.md(
            markdown_table([{"token": t, "count": c} for t, c in ranked[:top]], ["token", "count"])
        ),
        "token_vocabulary": dg.MetadataValue.json(dict(ranked)),
    }


def annotation_audit_top(audit: pa.Table) -> dg.MetadataValue:
    """The head of the editors' queue of the annotation audit, linked to Wikidata."""
    from formula_assets.audit.table import TOP_ITEMS, WIKIDATA, top_rows

    columns = ["#", "item", "label", "kind", "what to do", "priority", "suspicion"]
    rows = [
        [
            n,
            f"[{row['qid']}]({WIKIDATA}{row['qid']})",
            row["label"],
            row["kind"] or "—",
            row["finding"],
            f"{row['priority']:.3f}",
            "—" if row["suspicion"] is None else f"{row['suspicion']:.3f}",
        ]
        for n, row in enumerate(top_rows(audit, TOP_ITEMS), 1)
    ]
    return rows_markdown(columns, rows)
