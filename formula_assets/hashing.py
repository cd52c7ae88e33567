"""Content hashes: the data versions that stop a rebuild cascade when output is unchanged."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq


class _HashSink:
    """A write-only file object that feeds a hash instead of storing bytes."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.closed = False

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True


def table_content_hash(table: pa.Table, exclude_columns: Iterable[str] = ()) -> str:
    """SHA-256 of the table's logical content.

    Parquet encodes nulls as definition levels, so two tables with the same values hash the
    same whatever their chunking or validity buffers; column order and types count.
    """
    drop = [c for c in exclude_columns if c in table.column_names]
    canonical = table.drop_columns(drop).combine_chunks()
    sink = _HashSink()
    pq.write_table(
        canonical,
        pa.PythonFile(sink, mode="w"),
        compression="none",
        write_statistics=False,
        row_group_size=max(canonical.num_rows, 1),
    )
    return sink.digest.hexdigest()


def bytes_hash(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8") if isinstance(part, str) else part)
        digest.update(b"\x00")
    return digest.hexdigest()
