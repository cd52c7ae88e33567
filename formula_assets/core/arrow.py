"""Arrow helpers for the embedding tables every stage shares: one row per formula, a `qid`
and a fixed-size float32 `embedding` column."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

EXPECTED_DIMENSION_KEY = b"expected_dimension"
MODEL_NAME_KEY = b"model_name"
MODEL_IDENTITY_KEY = b"model_identity"
AGGREGATION_KEY = b"aggregation"


def vectors(column: pa.ChunkedArray | pa.Array, dimension: int) -> np.ndarray:
    """A fixed-size-list float32 column as an (n, dimension) matrix, without a Python loop."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if len(chunks) == 1:
        flat = chunks[0].flatten().to_numpy(zero_copy_only=False)
        return flat.astype(np.float32, copy=False).reshape(-1, dimension)
    # chunk by chunk into one matrix: combining the chunks first would hold a third copy
    out = np.empty((sum(len(c) for c in chunks), dimension), dtype=np.float32)
    start = 0
    for chunk in chunks:
        flat = chunk.flatten().to_numpy(zero_copy_only=False)
        out[start : start + len(chunk)] = flat.reshape(-1, dimension)
        start += len(chunk)
    return out


def vector_column(matrix: np.ndarray) -> pa.FixedSizeListArray:
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


def embedding_schema(dimension: int, extra: Sequence[tuple[str, pa.DataType]] = ()) -> pa.Schema:
    return pa.schema(
        [("qid", pa.string()), *extra, ("embedding", pa.list_(pa.float32(), dimension))]
    )


def embedding_table(
    qids: Sequence[str], matrix: np.ndarray, **columns: Sequence[object]
) -> pa.Table:
    data: dict[str, pa.Array | Sequence[object]] = {"qid": pa.array(list(qids), pa.string())}
    data.update(columns)
    data["embedding"] = vector_column(matrix)
    return pa.table(data)


def embedding_matrix(table: pa.Table) -> tuple[list[str], np.ndarray]:
    """(qids, float32 matrix) of an embedding table."""
    column = table.column("embedding")
    return table.column("qid").to_pylist(), vectors(column, column.type.list_size)


def aligned_matrices(left: pa.Table, right: pa.Table) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Rows of two embedding tables for the formulae present in both, in `left`'s order."""
    lq, lx = embedding_matrix(left)
    rq, rx = embedding_matrix(right)
    index = {q: i for i, q in enumerate(rq)}
    keep = [i for i, q in enumerate(lq) if q in index]
    return [lq[i] for i in keep], lx[keep], rx[[index[lq[i]] for i in keep]]


def with_expected_dimension(table: pa.Table, dimension: int) -> pa.Table:
    """Record, from the model or config, the width the vectors must have (for the checks)."""
    metadata = dict(table.schema.metadata or {})
    metadata[EXPECTED_DIMENSION_KEY] = str(dimension).encode()
    return table.replace_schema_metadata(metadata)


def expected_dimension(table: pa.Table) -> int | None:
    declared = (table.schema.metadata or {}).get(EXPECTED_DIMENSION_KEY)
    return None if declared is None else int(declared)


def with_model(table: pa.Table, name: str, identity: str) -> pa.Table:
    """Record which sentence-transformer made the vectors, so queries can use the same one."""
    metadata = dict(table.schema.metadata or {})
    metadata[MODEL_NAME_KEY] = name.encode()
    metadata[MODEL_IDENTITY_KEY] = identity.encode()
    return table.replace_schema_metadata(metadata)


def recorded_model(table: pa.Table) -> str | None:
    """The sentence-transformer named in an embedding table's metadata, if any."""
    name = (table.schema.metadata or {}).get(MODEL_NAME_KEY)
    return name.decode() if name else None


def recorded_identity(table: pa.Table) -> str | None:
    """The identity (files' content hash) of the sentence-transformer that made the vectors."""
    identity = (table.schema.metadata or {}).get(MODEL_IDENTITY_KEY)
    return identity.decode() if identity else None


def with_aggregation(table: pa.Table, aggregation: str) -> pa.Table:
    """Record how each formula's text vectors were combined into one (`sum`, `mean`)."""
    metadata = dict(table.schema.metadata or {})
    metadata[AGGREGATION_KEY] = aggregation.encode()
    return table.replace_schema_metadata(metadata)


def recorded_aggregation(table: pa.Table) -> str | None:
    """How the table's text vectors were combined, if recorded."""
    value = (table.schema.metadata or {}).get(AGGREGATION_KEY)
    return value.decode() if value else None
