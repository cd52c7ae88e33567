"""Text embeddings cached by (model identity, table, text hash) in the data lake.

A refresh embeds only texts it has not seen with the same model. The model identity is a hash
of the model's files (`semantics.identity`): a model changed in place gets a new folder, and
the folders of models no longer configured are simply not read again (nothing here deletes
them: the cache may be shared by checkouts that use other models). Each table keeps its own
cache: a vector's last bits depend on the batch it was encoded in, so a text shared by two
tables (the token `c` is also the linearised OPT of `c`) must not take its bits from
whichever table ran first, or the same build would differ with the order of its steps.
Each run appends one part file, written atomically, so concurrent runs never corrupt the
cache; parts are merged once they pile up. A part that cannot be read is skipped: its texts
are simply embedded again. Merging removes only the parts it merged: a part that could not be
read (an I/O error, a store that did not answer) may hold good vectors and stays for the next
merge; a part whose bytes are not a cache table (not Parquet, another schema) is moved to
`_quarantine/` beside the parts, with a warning, so nothing is deleted unseen.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

from formula_assets.core import lake
from formula_assets.core.arrow import vector_column, vectors
from formula_assets.semantics.models import Progress, TextEmbedder

MAX_PARTS = 16
QUARANTINE = "_quarantine"


class CorruptPart(ValueError):
    """A part whose bytes are not a cache table of the expected shape."""


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _safe(identity: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", identity)[:120]


def cache_schema(dimension: int) -> pa.Schema:
    return pa.schema([("text_hash", pa.string()), ("embedding", pa.list_(pa.float32(), dimension))])


class EmbeddingCache:
    def __init__(
        self,
        root: UPath | str,
        identity: str,
        table: str,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.directory = UPath(root) / _safe(identity) / _safe(table)
        self.warn = warn or (lambda _message: None)

    def parts(self) -> list[UPath]:
        if not self.directory.exists():
            return []
        return sorted(p for p in self.directory.iterdir() if p.name.startswith("part-"))

    def get(self, keys: Sequence[str], dimension: int) -> dict[str, np.ndarray]:
        wanted = pa.array(sorted(set(keys)), pa.string())
        found: dict[str, np.ndarray] = {}
        for part in self.parts():
            try:
                table = lake.read_parquet(part)
            except (OSError, pa.ArrowException) as exc:
                self.warn(f"embedding cache part {part.name} unreadable, skipped: {exc}")
                continue
            if table.schema != cache_schema(dimension):
                self.warn(f"embedding cache part {part.name} has another shape, skipped")
                continue
            hits = table.filter(pc.is_in(table.column("text_hash"), value_set=wanted))
            matrix = vectors(hits.column("embedding"), dimension)
            for key, vector in zip(hits.column("text_hash").to_pylist(), matrix, strict=True):
                found.setdefault(key, vector)  # the oldest part's, as compaction keeps
        return found

    def put(self, keys: Sequence[str], matrix: np.ndarray) -> None:
        if not len(keys):
            return
        table = pa.table(
            {"text_hash": pa.array(list(keys), pa.string()), "embedding": vector_column(matrix)},
            schema=cache_schema(matrix.shape[1]),
        )
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        lake.write_parquet_atomic(table, self.directory / name)
        if len(self.parts()) > MAX_PARTS:
            self.compact(matrix.shape[1])

    def compact(self, dimension: int) -> None:
        """Merge all readable parts into one; a merged part goes only after the merged file is
        in place. Parts that could not be read stay: an I/O error says nothing about their
        content. Only a part proven corrupt by its bytes leaves, into quarantine."""
        tables: list[pa.Table] = []
        merged_parts: list[UPath] = []
        for part in self.parts():
            try:
                data = part.fs.cat_file(part.path)  # one GET on an object store
            except FileNotFoundError:
                continue  # merged away by a concurrent compaction
            except Exception as exc:  # I/O, a store that did not answer: not the content's fault
                self.warn(f"embedding cache part {part.name} could not be read, kept: {exc}")
                continue
            try:
                tables.append(_parse_part(data, dimension))
            except CorruptPart as exc:
                self._quarantine(part, str(exc))
                continue
            merged_parts.append(part)
        if len(merged_parts) < 2:
            return
        merged = pa.concat_tables(tables)
        keys = merged.column("text_hash").to_pylist()
        first = sorted({k: i for i, k in reversed(list(enumerate(keys)))}.values())
        merged = merged.take(pa.array(first))
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        lake.write_parquet_atomic(merged, self.directory / name)
        for part in merged_parts:
            with contextlib.suppress(OSError):
                part.unlink()

    def _quarantine(self, part: UPath, reason: str) -> None:
        """Move a corrupt part out of the live cache, keeping its bytes for inspection."""
        target = self.directory / QUARANTINE / part.name
        try:
            part.fs.makedirs(target.parent.path, exist_ok=True)  # a no-op on object stores
            part.fs.mv(part.path, target.path)
        except OSError as exc:
            self.warn(f"embedding cache part {part.name} is corrupt ({reason}), kept: {exc}")
            return
        self.warn(
            f"embedding cache part {part.name} is corrupt ({reason}); moved to {target}, "
            "its texts will be embedded again"
        )


def _parse_part(data: bytes, dimension: int) -> pa.Table:
    """The table in a part's bytes; `CorruptPart` if they are not Parquet of the cache schema.
    Parsing bytes already in memory involves no I/O, so any failure here is the content's."""
    try:
        table = pq.read_table(lake.arrow_buffer_reader(data))
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise CorruptPart(f"not a Parquet file: {exc}") from exc
    if table.schema != cache_schema(dimension):
        raise CorruptPart(f"not a cache table of dimension {dimension}: {table.schema.names}")
    return table


@dataclass
class EmbedStats:
    texts: int
    distinct: int
    cached: int
    embedded: int
    seconds: float


def embed_texts(
    texts: Sequence[str],
    embedder: TextEmbedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
    dimension: int | None = None,
) -> tuple[np.ndarray, EmbedStats]:
    """One row per text; each distinct text is embedded at most once, and only if uncached.

    `dimension`: the model's vector width where the caller knows it (from vectors the same
    model made): with every text cached, the model is then never loaded."""
    started = time.perf_counter()
    distinct = list(dict.fromkeys(texts))
    keys = [text_key(t) for t in distinct]
    dimension = embedder.dimension if dimension is None else dimension
    known = cache.get(keys, dimension) if cache is not None else {}
    missing = [i for i, k in enumerate(keys) if k not in known]
    if missing:
        fresh = embedder.encode([distinct[i] for i in missing], progress)
        new_keys = [keys[i] for i in missing]
        known.update(zip(new_keys, fresh, strict=True))
        if cache is not None:
            cache.put(new_keys, fresh)
    index = {t: i for i, t in enumerate(distinct)}
    table = np.stack([known[k] for k in keys]) if keys else np.zeros((0, dimension), np.float32)
    out = table[[index[t] for t in texts]] if texts else table
    stats = EmbedStats(
        texts=len(texts),
        distinct=len(distinct),
        cached=len(distinct) - len(missing),
        embedded=len(missing),
        seconds=time.perf_counter() - started,
    )
    return out.astype(np.float32, copy=False), stats
