"""A small data lake of real snapshot items with everything search reads: the name and
structure indexes as the assets build them, and a meaning channel of the frozen sentence
vectors (`sbert_no_cl`, fold 1 serving, so no model file is needed)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from formula_assets.core.arrow import embedding_matrix
from formula_assets.ingest.records import FormulaRecord, records_to_table
from formula_assets.ingest.snapshot import snapshot_records
from formula_assets.search.layout import INDEX_SCHEMA, METADATA_KEY
from formula_assets.search.names import name_table, spoken_forms
from formula_assets.search.structure import structure_table
from formula_assets.semantics.annotations import build_annotations
from formula_assets.semantics.models import TextEmbedder, resolve_model
from formula_assets.semantics.tables import opt_text_vectors, semantic_vectors
from formula_assets.syntax.mathml import ParseOptions
from formula_assets.syntax.opt import build_opt_graphs

FROZEN = "sbert_no_cl"
# Ohm's law, the Pythagorean theorem, mass–energy equivalence, kinetic energy, Hooke's law,
# momentum, force, and some others of the snapshot
CHOSEN = frozenset({"Q41591", "Q11518", "Q35875", "Q46276", "Q170282", "Q41273", "Q11402"})
OTHERS = 33


def people_records() -> list[FormulaRecord]:
    everything = list(snapshot_records())
    others = [r for r in everything if r.qid not in CHOSEN][:: len(everything) // OTHERS][:OTHERS]
    return [r for r in everything if r.qid in CHOSEN] + others


def write_search_lake(root: Path, records: Iterable[FormulaRecord], embedder: TextEmbedder) -> None:
    """Every table search reads, written into `root` (the meaning channel: frozen vectors)."""
    formulae = records_to_table(records)
    options = ParseOptions()
    graphs = build_opt_graphs(
        zip(formulae["qid"].to_pylist(), formulae["mathml"].to_pylist(), strict=True), options
    ).graphs
    opt_text, _ = opt_text_vectors(graphs, embedder, None)
    semantic, _, _ = semantic_vectors(build_annotations(formulae.to_pylist()), embedder, None)
    qids, structural = embedding_matrix(opt_text)
    semantic_by = dict(zip(*embedding_matrix(semantic), strict=True))
    rows = [
        {"fold": fold, "method": FROZEN, "qid": q, "split": ("train", "test")[i % 2],
         "structural": structural[i].tolist(),
         "semantic": semantic_by.get(q, np.ones(structural.shape[1])).tolist(),
         "structural_hubness": 0.0, "semantic_hubness": 0.0}
        for fold in (1, 2) for i, q in enumerate(qids)
    ]  # fmt: skip
    summary = {
        "serving_fold": 1,
        "validation_mrr": {"1": {}, "2": {}},
        "ensemble_weights": {"1": {FROZEN: 1.0}, "2": {FROZEN: 1.0}},
        "ensemble_hubness_k": {"1": 0, "2": 0},
        "embedding_model": None,
        "embedding_model_identity": embedder.spec.identity,
    }
    index = pa.Table.from_pylist(rows, INDEX_SCHEMA).replace_schema_metadata(
        {METADATA_KEY: json.dumps(summary)}
    )
    pq.write_table(index, str(root / "search_index.parquet"))
    pq.write_table(formulae, str(root / "wikidata_formulae.parquet"))
    pq.write_table(graphs, str(root / "opt_graphs.parquet"))
    pq.write_table(
        structure_table(graphs, formulae, options), str(root / "structure_index.parquet")
    )
    names = name_table(formulae, embedder.encode, spoken_forms(graphs, formulae, options))
    pq.write_table(names, str(root / "name_index.parquet"))


def default_embedder() -> TextEmbedder:
    return TextEmbedder(resolve_model(None, "a test"))
