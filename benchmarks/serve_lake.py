"""A data lake `scale` × the snapshot for the service benchmark, built from the `default` lake.

The items are `benchmarks.synthetic`'s (each joins two snapshot formulae): their formulae are
parsed and keyed for structure search for real; their name vectors and their vectors in each
method's space (the serving fold's) are the normalised sums of their two source items', as
`benchmarks.growth` makes semantic vectors, since embedding 175,800 texts would take hours on
two cores. The trained models, token vectors and Table 2 are the source lake's (linked). The
lake is kept in `benchmarks/results/` and built again only when missing.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.synthetic import synthetic_records
from formula_assets.core.arrow import embedding_matrix
from formula_assets.core.settings import Settings
from formula_assets.ingest.records import records_to_table
from formula_assets.search.layout import METADATA_KEY, index_summary
from formula_assets.search.names import name_table
from formula_assets.search.structure import structure_table
from formula_assets.syntax.opt import build_opt_graphs, parse_options

LINKED = (
    "fold_models",
    "opt_token_embeddings.parquet",
    "retrieval_scores.parquet",
    "ensemble_choices.parquet",
    "annotation_audit.parquet",
)
DONE = "built.json"


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def _combined(vectors: np.ndarray, parents: np.ndarray) -> np.ndarray:
    return _unit(vectors[parents[:, 0]] + vectors[parents[:, 1]])


def _list_column(matrix: np.ndarray) -> pa.Array:
    offsets = pa.array(np.arange(len(matrix) + 1, dtype=np.int32) * matrix.shape[1])
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))


def build(scale: int, target: Path, source: Path | None = None) -> Path:
    source = source or Path(Settings.from_environment().data_lake)
    if (target / DONE).exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    started = time.perf_counter()
    options = parse_options(Settings.from_environment().styled_letters)
    records, parents = synthetic_records(scale)
    base_qids = [r.qid for r in records[: len(parents) // scale]]
    formulae = records_to_table(records)
    order = {q: i for i, q in enumerate(formulae.column("qid").to_pylist())}
    parents_by_row = np.zeros_like(parents)
    for record, pair in zip(records, parents, strict=True):
        parents_by_row[order[record.qid]] = pair
    pq.write_table(formulae, target / "wikidata_formulae.parquet")
    graphs = build_opt_graphs(
        zip(formulae["qid"].to_pylist(), formulae["mathml"].to_pylist(), strict=True), options
    ).graphs
    pq.write_table(structure_table(graphs, formulae, options), target / "structure_index.parquet")

    names = pq.read_table(source / "name_index.parquet")
    name_qids, name_vectors = embedding_matrix(names)
    by_name = {q: i for i, q in enumerate(name_qids)}
    base_rows = np.array([by_name[q] for q in base_qids])
    vectors = _combined(name_vectors[base_rows], parents_by_row)
    table = name_table(formulae, lambda texts: vectors)
    table = table.replace_schema_metadata(names.schema.metadata)
    pq.write_table(table, target / "name_index.parquet")

    index = pq.read_table(source / "search_index.parquet")
    summary = index_summary(index)
    fold = summary["serving_fold"]
    rows = index.filter(pc.equal(index.column("fold"), fold))
    parts = []
    for method in dict.fromkeys(rows.column("method").to_pylist()):
        part = rows.filter(pc.equal(rows.column("method"), method))
        qids = part.column("qid").to_pylist()
        at = {q: i for i, q in enumerate(qids)}
        base = np.array([at[q] for q in base_qids])
        columns = {}
        for side in ("structural", "semantic"):
            column = part.column(side)
            matrix = np.array(column.to_pylist(), dtype=np.float32)[base]
            columns[side] = _list_column(_combined(matrix, parents_by_row))
        hubs = {
            side: part.column(side).to_numpy()[base][parents_by_row].mean(axis=1)
            for side in ("structural_hubness", "semantic_hubness")
        }
        splits = np.array(part.column("split").to_pylist(), dtype=object)[base]
        n = formulae.num_rows
        parts.append(
            pa.table(
                {
                    "fold": pa.array([fold] * n, pa.int8()),
                    "method": pa.array([method] * n, pa.string()),
                    "qid": formulae.column("qid"),
                    "split": pa.array(splits[parents_by_row[:, 0]].tolist(), pa.string()),
                    "structural": columns["structural"],
                    "semantic": columns["semantic"],
                    "structural_hubness": pa.array(hubs["structural_hubness"], pa.float64()),
                    "semantic_hubness": pa.array(hubs["semantic_hubness"], pa.float64()),
                },
                schema=index.schema.remove_metadata(),
            )
        )
    summary["items"] = formulae.num_rows
    table = pa.concat_tables(parts).replace_schema_metadata({METADATA_KEY: json.dumps(summary)})
    pq.write_table(table, target / "search_index.parquet", row_group_size=formulae.num_rows)
    for name in LINKED:
        if (source / name).exists():
            (target / name).symlink_to((source / name).resolve())
    (target / DONE).write_text(
        json.dumps({"scale": scale, "items": formulae.num_rows,
                    "seconds": round(time.perf_counter() - started, 1)})
    )  # fmt: skip
    return target
