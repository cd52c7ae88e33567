"""Files in the data lake: atomic writes on any fsspec filesystem.

A reader never sees a half-written file: data goes to a hidden temporary sibling first and is
renamed over the final path only when complete (on object stores a single PUT is atomic).
Concurrent writers each use their own temporary file, so the last rename wins with a complete
file. A writer killed mid-write leaves only its hidden temporary file, named after its process
id; the next write of the same path on the same host removes it once that process is gone.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

TMP_MARKER = ".tmp-"


def _is_local(path: UPath) -> bool:
    return path.protocol in ("", "file", "local")


def temporary_sibling(path: UPath) -> UPath:
    return path.with_name(f".{path.name}{TMP_MARKER}{os.getpid()}-{uuid.uuid4().hex}")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_orphans(path: UPath) -> list[str]:
    """Remove temporary siblings of `path` left by writers that no longer run (local only)."""
    if not _is_local(path) or not path.parent.exists():
        return []
    prefix = f".{path.name}{TMP_MARKER}"
    removed = []
    for candidate in path.parent.iterdir():
        if not candidate.name.startswith(prefix):
            continue
        pid = candidate.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                candidate.unlink()
                removed.append(candidate.name)
    return removed


@contextlib.contextmanager
def atomic_file(path: UPath) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at `path` only if the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_orphans(path)
    tmp = temporary_sibling(path)
    try:
        with tmp.open("wb") as fh:
            yield fh
            if _is_local(path):
                fh.flush()
                os.fsync(fh.fileno())
        replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def replace(source: UPath, target: UPath) -> None:
    """Move `source` over `target` in one step where the filesystem allows it."""
    if _is_local(target):
        os.replace(source.path, target.path)
    else:
        source.fs.mv(source.path, target.path)


def write_parquet_atomic(table: pa.Table, path: UPath) -> None:
    with atomic_file(path) as fh:
        pq.write_table(table, fh, compression="zstd")


def write_bytes_atomic(data: bytes, path: UPath) -> None:
    """Figures, model weights, reports: same temp-then-rename discipline as tables."""
    with atomic_file(path) as fh:
        fh.write(data)


def read_parquet(path: UPath) -> pa.Table:
    with path.open("rb") as fh:
        return pq.read_table(fh)
