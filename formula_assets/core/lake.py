"""Files in the data lake: atomic writes on any fsspec filesystem.

A reader never sees a half-written file. On a local disk data goes to a hidden temporary
sibling first and is renamed over the final path only when complete; on an object store
(or any other non-local filesystem) the finished bytes go up in one PUT, which the store
makes visible all at once, so nothing partial is ever written there, and tables are read
back in one GET, so a read never mixes two versions. Concurrent writers each
use their own temporary file, so the last rename wins with a complete file.

Temporary files and model versions carry the writer's tag, host + pid + random. A writer
killed mid-write leaves only its hidden temporary file; the next write of the same path
removes it once it is sure that writer is gone: same host, process no longer running. A
temporary file of another host is never touched, so hosts that share one data lake cannot
delete each other's work in flight.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import socket
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

TMP_MARKER = ".tmp-"
TAG_SEPARATOR = "~"
HOST = re.sub(r"[^A-Za-z0-9.-]+", "-", socket.gethostname()) or "localhost"


@dataclass(frozen=True)
class Writer:
    host: str
    pid: int

    def gone(self) -> bool:
        """Certainly finished: a process of this host that no longer runs. Another host's
        writer is never presumed gone: it cannot be asked."""
        return self.host == HOST and self.pid != os.getpid() and not pid_alive(self.pid)


def writer_tag() -> str:
    """host~pid~random: unique to one write of one process on one host."""
    return f"{HOST}{TAG_SEPARATOR}{os.getpid()}{TAG_SEPARATOR}{uuid.uuid4().hex}"


def parse_writer_tag(tag: str) -> Writer | None:
    parts = tag.split(TAG_SEPARATOR)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return Writer(parts[0], int(parts[1]))


def is_local(path: UPath) -> bool:
    return path.protocol in ("", "file", "local")


def temporary_sibling(path: UPath) -> UPath:
    return path.with_name(f".{path.name}{TMP_MARKER}{writer_tag()}")


def pid_alive(pid: int) -> bool:
    """Whether a process exists on this machine (a zombie, killed but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # no /proc here: the signal answered
    state = next((x for x in status.splitlines() if x.startswith("State:")), "")
    return "zombie" not in state


def sweep_orphans(path: UPath) -> list[str]:
    """Remove temporary siblings of `path` whose writer is certainly gone (local disks only:
    object stores never hold temporary files)."""
    if not is_local(path) or not path.parent.exists():
        return []
    prefix = f".{path.name}{TMP_MARKER}"
    removed = []
    for candidate in path.parent.iterdir():
        if not candidate.name.startswith(prefix):
            continue
        writer = parse_writer_tag(candidate.name[len(prefix) :])
        if writer is not None and writer.gone():
            with contextlib.suppress(FileNotFoundError):
                candidate.unlink()
                removed.append(candidate.name)
    return removed


@contextlib.contextmanager
def atomic_file(path: UPath) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at `path` only if the block succeeds."""
    if not is_local(path):
        buffer = io.BytesIO()
        yield buffer
        path.write_bytes(buffer.getvalue())  # one PUT: all or nothing
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_orphans(path)
    tmp = temporary_sibling(path)
    try:
        with tmp.open("wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp.path, path.path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


# A table whose schema metadata holds this key (a decimal row count) is written in row groups
# of that many rows, so a reader that wants one block (one fold of the search index) can skip
# the others by their statistics.
ROW_GROUP_ROWS_KEY = b"formula_assets.row_group_rows"


def write_parquet_atomic(table: pa.Table, path: UPath) -> None:
    rows = (table.schema.metadata or {}).get(ROW_GROUP_ROWS_KEY)
    with atomic_file(path) as fh:
        pq.write_table(table, fh, compression="zstd", row_group_size=int(rows) if rows else None)


def write_bytes_atomic(data: bytes, path: UPath) -> None:
    """Figures, model weights, reports: the same all-or-nothing discipline as tables."""
    with atomic_file(path) as fh:
        fh.write(data)


def read_parquet(
    path: UPath,
    columns: Sequence[str] | None = None,
    where: Mapping[str, Collection[object]] | None = None,
) -> pa.Table:
    """A table, or some of it: the named `columns`, and with `where` only the rows whose
    value in each named column is one of the given ones (row groups whose statistics rule
    them out are not read). Read through `ParquetFile`, which does not import pyarrow's
    dataset layer (and pandas with it): a search from a cold process reads tables too."""
    with native_source(path) as source:
        return _read(source, columns, where)


def read_parquet_schema(path: UPath) -> pa.Schema:
    """The Arrow schema with its metadata, from the file's footer."""
    with native_source(path) as source:
        return pq.ParquetFile(source).schema_arrow


def native_source(path: UPath) -> pa.NativeFile:
    """The file as Arrow reads it with no Python object inside: Arrow's worker threads
    may release a reader's last reference after the read has returned, and releasing a
    Python file or `bytes` takes the GIL, which a thread that asks for it while the
    interpreter shuts down cannot get: the process aborted at exit ("terminate called
    without an active exception"). From an object store in one GET, copied into Arrow's
    memory: ranged reads could span two versions of an object that is replaced meanwhile."""
    if is_local(path):
        return pa.OSFile(path.path, "rb")
    return arrow_buffer_reader(path.fs.cat_file(path.path))


def arrow_buffer_reader(data: bytes) -> pa.BufferReader:
    """A reader of a copy of `data` in Arrow's memory (see `native_source`)."""
    copy = pa.BufferOutputStream()
    copy.write(data)
    return pa.BufferReader(copy.getvalue())


def _read(
    source, columns: Sequence[str] | None, where: Mapping[str, Collection[object]] | None
) -> pa.Table:
    file = pq.ParquetFile(source)
    if not where:
        return file.read(columns=columns)
    wanted = None if columns is None else [*columns, *(c for c in where if c not in columns)]
    groups = [i for i in range(file.num_row_groups) if _may_hold(file.metadata.row_group(i), where)]
    table = file.read_row_groups(groups, columns=wanted)
    for column, values in where.items():
        allowed = pa.array(list(values), type=table.schema.field(column).type)
        table = table.filter(pc.is_in(table.column(column), value_set=allowed))
    return table if columns is None else table.select(list(columns))


def _may_hold(group: pq.RowGroupMetaData, where: Mapping[str, Collection[object]]) -> bool:
    """False only when a column's min/max statistics exclude every wanted value."""
    return all(_in_range(group.column(i), where) for i in range(group.num_columns))


def _in_range(chunk: pq.ColumnChunkMetaData, where: Mapping[str, Collection[object]]) -> bool:
    values = where.get(chunk.path_in_schema)
    stats = chunk.statistics
    if values is None or stats is None or not stats.has_min_max:
        return True  # a column not asked about, or without statistics, excludes nothing
    return any(stats.min <= v <= stats.max for v in values)
