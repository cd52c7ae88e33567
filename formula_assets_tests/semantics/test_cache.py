"""Embedding cache compaction never deletes vectors it could not read.

A part that fails to read with an I/O error (a filesystem that answers EIO, as a network store
might for a while) stays in the cache and is merged by a later compaction; a part whose bytes
are not a cache table is moved to the quarantine folder with a warning.
"""

import errno
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileSystem
from upath import UPath

from formula_assets.semantics.cache import EmbeddingCache

DIMENSION = 4
QUARANTINE = "_quarantine"  # beside the parts: out of the live cache, not deleted

pytestmark = pytest.mark.filterwarnings("ignore:UPath 'flaky' filesystem")


class FlakyFileSystem(LocalFileSystem):
    """The local disk, except that reading a path in `failing` raises EIO."""

    protocol = ("flaky",)
    failing: ClassVar[set[str]] = set()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, auto_mkdir=True, **kwargs)

    def _check(self, path: str) -> None:
        if self._strip_protocol(path) in self.failing:
            raise OSError(errno.EIO, "Input/output error", path)

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kw: Any
    ) -> bytes:
        self._check(path)
        return super().cat_file(path, start=start, end=end, **kw)

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        if "r" in mode:
            self._check(path)
        return super()._open(path, mode, *args, **kwargs)


@pytest.fixture
def flaky() -> Iterator[type[FlakyFileSystem]]:
    fsspec.register_implementation("flaky", FlakyFileSystem, clobber=True)
    FlakyFileSystem.failing.clear()
    yield FlakyFileSystem
    FlakyFileSystem.failing.clear()


def vectors_for(keys: list[str]) -> np.ndarray:
    """A distinct, recognisable vector per key."""
    return np.array(
        [[float(int(k[1:])) + j / 10 for j in range(DIMENSION)] for k in keys], np.float32
    )


def fill(cache: EmbeddingCache, batches: list[list[str]]) -> None:
    for keys in batches:
        cache.put(keys, vectors_for(keys))


def assert_cached(cache: EmbeddingCache, keys: list[str]) -> None:
    found = cache.get(keys, DIMENSION)
    assert sorted(found) == sorted(keys)
    for key in keys:
        assert np.array_equal(found[key], vectors_for([key])[0])


def test_a_part_that_cannot_be_read_is_kept_for_the_next_compaction(
    flaky: type[FlakyFileSystem], tmp_path: Path
) -> None:
    warnings: list[str] = []
    cache = EmbeddingCache(UPath(f"flaky://{tmp_path}"), "model", "texts", warnings.append)
    batches = [["k1", "k2"], ["k3"], ["k4", "k5"], ["k6"]]
    fill(cache, batches)
    unreadable = cache.parts()[1]
    flaky.failing.add(unreadable.path)
    cache.compact(DIMENSION)  # the store fails to read one part: an error, not corrupt data
    assert unreadable in cache.parts() and len(cache.parts()) == 2  # merged part + the kept one
    assert any(unreadable.name in w and "could not be read, kept" in w for w in warnings)
    assert not (cache.directory / QUARANTINE).exists()
    flaky.failing.clear()  # the store answers again
    assert_cached(cache, [k for keys in batches for k in keys])
    cache.compact(DIMENSION)
    assert len(cache.parts()) == 1
    assert_cached(cache, [k for keys in batches for k in keys])


def test_a_corrupt_part_goes_to_quarantine_with_a_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    cache = EmbeddingCache(UPath(tmp_path), "model", "texts", warnings.append)
    fill(cache, [["k1", "k2"], ["k3"]])
    not_parquet = cache.directory / "part-00000000000000000001-aaaaaaaa.parquet"
    not_parquet.write_bytes(b"PAR1 not really")
    wrong_shape = cache.directory / "part-00000000000000000002-bbbbbbbb.parquet"
    pq.write_table(pa.table({"text_hash": ["k9"], "embedding": [[1.0, 2.0]]}), wrong_shape.path)
    originals = {p.name: p.read_bytes() for p in (not_parquet, wrong_shape)}
    cache.compact(DIMENSION)
    quarantine = cache.directory / QUARANTINE
    assert {p.name: p.read_bytes() for p in quarantine.iterdir()} == originals
    assert len(cache.parts()) == 1  # the two good parts merged, the corrupt ones out
    for name in originals:
        assert any(name in w and "corrupt" in w and QUARANTINE in w for w in warnings), name
    assert_cached(cache, ["k1", "k2", "k3"])
