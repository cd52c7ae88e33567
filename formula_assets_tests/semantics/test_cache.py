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


class CountingEmbedder:
    """A deterministic embedder that records what it was asked to encode: the cache decides
    which texts reach the model, whatever the model is (the real model's path through the
    cache is test_identity's)."""

    dimension = DIMENSION

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts, progress=None) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t), ord(t[0]), j, 1.0] for t in texts for j in [0]], np.float32)


def expected_row(text: str) -> list[float]:
    return [len(text), ord(text[0]), 0.0, 1.0]


def test_text_key_is_the_sha256_of_the_utf8_text() -> None:
    import hashlib

    from formula_assets.semantics.cache import text_key

    assert text_key("énergie") == hashlib.sha256("énergie".encode()).hexdigest()[:32]
    assert len(text_key("")) == 32


def test_the_cache_folder_is_the_models_identity_then_the_table_made_path_safe(
    tmp_path: Path,
) -> None:
    cache = EmbeddingCache(UPath(tmp_path), "hub-a/b c", "tok ens")
    assert cache.directory == UPath(tmp_path) / "hub-a_b_c" / "tok_ens"
    long = EmbeddingCache(UPath(tmp_path), "x" * 200, "t")
    assert long.directory.parent.name == "x" * 120
    assert cache.parts() == []  # nothing written yet: no folder, no parts


def test_embed_texts_embeds_each_new_distinct_text_once_and_reads_the_rest(
    tmp_path: Path,
) -> None:
    from formula_assets.semantics.cache import embed_texts

    cache = EmbeddingCache(UPath(tmp_path), "model", "texts")
    embedder = CountingEmbedder()
    out, stats = embed_texts(["ab", "c", "ab", "def"], embedder, cache)
    assert embedder.calls == [["ab", "c", "def"]]
    assert out.dtype == np.float32
    assert out.tolist() == [expected_row(t) for t in ["ab", "c", "ab", "def"]]
    assert (stats.texts, stats.distinct, stats.cached, stats.embedded) == (4, 3, 0, 3)
    assert stats.seconds >= 0
    out, stats = embed_texts(["def", "gh", "c"], embedder, cache)
    assert embedder.calls[1:] == [["gh"]]
    assert out.tolist() == [expected_row(t) for t in ["def", "gh", "c"]]
    assert (stats.texts, stats.distinct, stats.cached, stats.embedded) == (3, 3, 2, 1)
    assert len(cache.parts()) == 2
    out, stats = embed_texts(["c", "c"], embedder, cache)
    assert len(embedder.calls) == 2 and len(cache.parts()) == 2  # all cached: nothing written
    assert out.tolist() == [expected_row("c")] * 2
    assert (stats.cached, stats.embedded) == (1, 0)


def test_embed_texts_without_a_cache_or_texts(tmp_path: Path) -> None:
    from formula_assets.semantics.cache import embed_texts

    embedder = CountingEmbedder()
    out, stats = embed_texts(["a", "a"], embedder, None)
    assert out.tolist() == [expected_row("a")] * 2 and embedder.calls == [["a"]]
    out, stats = embed_texts(["a"], embedder, None)
    assert embedder.calls == [["a"], ["a"]]  # no cache: embedded again
    out, stats = embed_texts([], embedder, EmbeddingCache(UPath(tmp_path), "m", "t"))
    assert out.shape == (0, DIMENSION) and out.dtype == np.float32
    assert (stats.texts, stats.distinct, stats.cached, stats.embedded) == (0, 0, 0, 0)
    assert len(embedder.calls) == 2 and not (tmp_path / "m").exists()


def test_get_returns_only_the_keys_asked_for(tmp_path: Path) -> None:
    cache = EmbeddingCache(UPath(tmp_path), "model", "texts")
    fill(cache, [["k1", "k2"], ["k3"]])
    found = cache.get(["k3", "k1", "k7", "k1"], DIMENSION)
    assert sorted(found) == ["k1", "k3"]
    assert np.array_equal(found["k3"], vectors_for(["k3"])[0])
    cache.put([], np.zeros((0, DIMENSION), np.float32))
    assert len(cache.parts()) == 2  # nothing to put: no part


def test_get_skips_unreadable_and_other_shaped_parts_with_a_warning(
    flaky: type[FlakyFileSystem], tmp_path: Path
) -> None:
    warnings: list[str] = []
    cache = EmbeddingCache(UPath(f"flaky://{tmp_path}"), "model", "texts", warnings.append)
    fill(cache, [["k1"], ["k2"]])
    flaky.failing.add(cache.parts()[0].path)
    other = cache.directory / "part-00000000000000000003-cccccccc.parquet"
    pq.write_table(pa.table({"text_hash": ["k3"], "embedding": [[1.0, 2.0]]}), other.path)
    assert sorted(cache.get(["k1", "k2", "k3"], DIMENSION)) == ["k2"]
    assert len(warnings) == 2
    assert "unreadable, skipped" in warnings[0] or "unreadable, skipped" in warnings[1]
    assert any(other.name in w and "another shape, skipped" in w for w in warnings)


def test_only_part_files_are_parts_in_name_order(tmp_path: Path) -> None:
    cache = EmbeddingCache(UPath(tmp_path), "model", "texts")
    fill(cache, [["k1"], ["k2"], ["k3"]])
    (cache.directory / "notes.txt").write_text("not a part")
    names = [p.name for p in cache.parts()]
    assert len(names) == 3 and names == sorted(names)
    assert all(n.startswith("part-") for n in names)


def test_parts_are_merged_once_there_are_more_than_sixteen(tmp_path: Path) -> None:
    cache = EmbeddingCache(UPath(tmp_path), "model", "texts")
    keys = [f"k{i}" for i in range(1, 18)]
    fill(cache, [[k] for k in keys[:16]])
    assert len(cache.parts()) == 16
    fill(cache, [[keys[16]]])
    assert len(cache.parts()) == 1
    assert_cached(cache, keys)


def test_a_text_cached_twice_reads_its_first_vector_before_and_after_compaction(
    tmp_path: Path,
) -> None:
    cache = EmbeddingCache(UPath(tmp_path), "model", "texts")
    cache.put(["k1", "k2"], vectors_for(["k1", "k2"]))
    cache.put(["k2", "k3"], vectors_for(["k9", "k3"]))  # k2 again, other bits
    assert_cached(cache, ["k1", "k2", "k3"])  # before compaction as after: the first vector
    cache.compact(DIMENSION)
    (part,) = cache.parts()
    table = pq.read_table(part.path)
    assert table.column("text_hash").to_pylist() == ["k1", "k2", "k3"]
    assert_cached(cache, ["k1", "k2", "k3"])


def test_one_part_is_not_rewritten(tmp_path: Path) -> None:
    cache = EmbeddingCache(UPath(tmp_path), "model", "texts")
    fill(cache, [["k1"]])
    before = cache.parts()
    cache.compact(DIMENSION)
    assert cache.parts() == before


def test_a_corrupt_part_that_cannot_be_moved_stays_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    cache = EmbeddingCache(UPath(tmp_path), "model", "texts", warnings.append)
    fill(cache, [["k1"], ["k2"]])
    corrupt = cache.directory / "part-00000000000000000001-aaaaaaaa.parquet"
    corrupt.write_bytes(b"not parquet")

    def refuse(self, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(LocalFileSystem, "mv", refuse)
    cache.compact(DIMENSION)
    assert corrupt.exists()
    assert any(corrupt.name in w and "is corrupt" in w and "kept" in w for w in warnings)
    assert_cached(cache, ["k1", "k2"])


def test_an_embedder_that_returns_another_number_of_rows_is_an_error(tmp_path: Path) -> None:
    from formula_assets.semantics.cache import embed_texts

    class OneTooMany(CountingEmbedder):
        def encode(self, texts, progress=None) -> np.ndarray:
            return super().encode([*texts, "extra"])

    for cache in (None, EmbeddingCache(UPath(tmp_path), "m", "t")):
        with pytest.raises(ValueError):
            embed_texts(["a", "b"], OneTooMany(), cache)


def test_embed_texts_times_itself(tmp_path: Path) -> None:
    import time

    from formula_assets.semantics.cache import embed_texts

    started = time.perf_counter()
    _, stats = embed_texts(["a"], CountingEmbedder(), EmbeddingCache(UPath(tmp_path), "m", "t"))
    assert 0 <= stats.seconds <= time.perf_counter() - started
