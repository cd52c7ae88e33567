"""Sentence-transformer loading, batching and the embedding cache (real MiniLM, offline)."""

import time
from pathlib import Path

import numpy as np
import pytest
from upath import UPath

from formula_assets.core.profiles import DEFAULT_EMBEDDING_MODEL
from formula_assets.semantics.cache import EmbeddingCache, embed_texts
from formula_assets.semantics.models import (
    EmbeddingModelError,
    TextEmbedder,
    load_model,
    resolve_model,
)


@pytest.fixture(scope="module")
def embedder() -> TextEmbedder:
    return TextEmbedder(resolve_model(None, "the default"), batch_size=4)


def test_default_model_is_the_packaged_minilm(embedder: TextEmbedder) -> None:
    assert embedder.spec.name == DEFAULT_EMBEDDING_MODEL
    assert embedder.spec.local and Path(embedder.spec.location, "model.safetensors").exists()
    assert embedder.dimension == 384


def test_encode_keeps_input_order(embedder: TextEmbedder) -> None:
    texts = ["kinetic energy", "a much longer text about the mass of a body in motion", "force"]
    seen: list[tuple[int, int]] = []
    matrix = embedder.encode(texts, progress=lambda done, total: seen.append((done, total)))
    assert matrix.shape == (3, 384) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    alone = embedder.encode(["force"])
    assert np.allclose(matrix[2], alone[0], atol=1e-5)
    assert seen[-1] == (3, 3)
    similar = float(matrix[0] @ embedder.encode(["energy of motion"])[0])
    unrelated = float(matrix[0] @ embedder.encode(["prime number"])[0])
    assert similar > unrelated


def test_cache_embeds_only_new_texts(embedder: TextEmbedder, tmp_path: Path) -> None:
    cache = EmbeddingCache(UPath(tmp_path), embedder.spec.identity, "texts")
    texts = ["mass", "speed of light", "mass", "energy"]
    first, stats = embed_texts(texts, embedder, cache)
    assert (stats.distinct, stats.cached, stats.embedded) == (3, 0, 3)
    again, stats = embed_texts(texts, embedder, cache)
    assert (stats.cached, stats.embedded) == (3, 0)
    assert np.array_equal(first, again)
    _, stats = embed_texts([*texts, "momentum"], embedder, cache)
    assert (stats.cached, stats.embedded) == (3, 1)
    assert len(cache.parts()) == 2


def test_cache_is_per_model(embedder: TextEmbedder, tmp_path: Path) -> None:
    embed_texts(
        ["mass"], embedder, EmbeddingCache(UPath(tmp_path), embedder.spec.identity, "texts")
    )
    other = EmbeddingCache(UPath(tmp_path), "another-model", "texts")
    assert other.get(["anything"], 384) == {}
    assert len(list(tmp_path.iterdir())) == 1


def test_a_table_never_takes_vectors_another_table_cached(
    embedder: TextEmbedder, tmp_path: Path
) -> None:
    """The bits of a vector depend on its batch: a text shared by two tables must come out
    the same whichever table embedded it first, so that step order never changes a build."""
    cold, _ = embed_texts(["c"], embedder, None)
    shared = ["c", "the speed of light in vacuum, a universal physical constant"]
    embed_texts(shared, embedder, EmbeddingCache(UPath(tmp_path), embedder.spec.identity, "a"))
    cache_b = EmbeddingCache(UPath(tmp_path), embedder.spec.identity, "b")
    after, stats = embed_texts(["c"], embedder, cache_b)
    assert stats.embedded == 1
    assert np.array_equal(after, cold)


def test_unreadable_cache_part_is_skipped(embedder: TextEmbedder, tmp_path: Path) -> None:
    warnings: list[str] = []
    cache = EmbeddingCache(UPath(tmp_path), embedder.spec.identity, "texts", warnings.append)
    embed_texts(["mass"], embedder, cache)
    cache.parts()[0].write_bytes(b"not parquet")
    _, stats = embed_texts(["mass"], embedder, cache)
    assert stats.embedded == 1
    assert warnings and "unreadable" in warnings[0]


def test_cache_compacts_many_parts(embedder: TextEmbedder, tmp_path: Path) -> None:
    cache = EmbeddingCache(UPath(tmp_path), embedder.spec.identity, "texts")
    for i in range(20):
        embed_texts([f"text {i}"], embedder, cache)
    assert len(cache.parts()) <= 17
    _, stats = embed_texts([f"text {i}" for i in range(20)], embedder, cache)
    assert stats.embedded == 0


def test_missing_local_folder_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError) as raised:
        resolve_model(
            str(tmp_path / "no-such-model"), "the FORMULA_ASSETS_EMBEDDING_MODEL variable"
        )
    assert "FORMULA_ASSETS_EMBEDDING_MODEL" in str(raised.value)
    assert "does not exist" in str(raised.value)


def test_unknown_hub_model_fails_fast_with_one_clear_error() -> None:
    spec = resolve_model("someone/no-such-sentence-model", "the `model` config")
    started = time.perf_counter()
    with pytest.raises(EmbeddingModelError) as raised:
        load_model(spec, offline=True)
    assert time.perf_counter() - started < 30
    message = str(raised.value)
    assert "someone/no-such-sentence-model" in message and "the `model` config" in message
    assert "FORMULA_ASSETS_EMBEDDING_MODEL" in message
    assert raised.value.__cause__ is None  # no hub-client traceback chained to it


def test_unknown_hub_model_without_offline_flag() -> None:
    spec = resolve_model(
        "someone/no-such-sentence-model", "the FORMULA_ASSETS_EMBEDDING_MODEL variable"
    )
    with pytest.raises(EmbeddingModelError, match="FORMULA_ASSETS_EMBEDDING_MODEL"):
        load_model(spec, offline=False)


def test_joined_names_embed_as_each_model_normalised_side_by_side(
    embedder: TextEmbedder,
) -> None:
    folder = embedder.spec.location
    joined = TextEmbedder(resolve_model(f"{DEFAULT_EMBEDDING_MODEL} + {folder}", "a test"))
    assert [p.location for p in joined.spec.parts] == [folder, folder]
    assert joined.spec.local
    # both parts are the same files, so the same identity; the pair is a third one
    assert [p.identity for p in joined.spec.parts] == [embedder.spec.identity] * 2
    assert joined.spec.identity != embedder.spec.identity
    assert joined.dimension == 768
    seen: list[tuple[int, int]] = []
    texts = ["kinetic energy", "force"]
    matrix = joined.encode(texts, progress=lambda done, total: seen.append((done, total)))
    single = embedder.encode(texts)
    assert matrix.shape == (2, 768)
    assert np.allclose(matrix[:, :384], single, atol=1e-5)
    assert np.allclose(matrix[:, 384:], single, atol=1e-5)
    assert seen[-1] == (4, 4)  # both models' progress, as one count


def test_a_joined_name_with_a_missing_part_names_it(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="no-such-model"):
        resolve_model(f"{DEFAULT_EMBEDDING_MODEL}+{tmp_path / 'no-such-model'}", "a test")


@pytest.mark.parametrize(
    "name", [f"{DEFAULT_EMBEDDING_MODEL}+", f"+{DEFAULT_EMBEDDING_MODEL}", "a+ +b"]
)
def test_a_joined_name_with_an_empty_part_is_refused(name: str) -> None:
    with pytest.raises(EmbeddingModelError, match="joins an empty name"):
        resolve_model(name, "the FORMULA_ASSETS_EMBEDDING_MODEL variable")


def test_with_the_width_known_cached_texts_never_load_the_model(
    embedder: TextEmbedder, tmp_path: Path
) -> None:
    cache = EmbeddingCache(UPath(tmp_path), embedder.spec.identity, "texts")
    first, _ = embed_texts(["mass", "energy"], embedder, cache)
    fresh = TextEmbedder(embedder.spec, batch_size=4)  # nothing loaded yet
    again, stats = embed_texts(["energy", "mass"], fresh, cache, dimension=384)
    assert stats.cached == 2 and fresh._plain is None and fresh._model is None
    assert np.array_equal(again, first[::-1])
    more, stats = embed_texts(["mass", "momentum"], fresh, cache, dimension=384)
    assert stats.embedded == 1 and fresh._plain is not None  # a new text loads it
    assert np.array_equal(more[0], first[0])
