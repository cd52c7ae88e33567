"""A sentence model is identified by its files' content: a model saved over the same files (a
fine-tune written in place, same names, same sizes, same mtimes) is a new model; the same
files elsewhere are the same model. Real all-MiniLM-L6-v2 files, copied, edited in place."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from upath import UPath

from formula_assets.semantics.cache import EmbeddingCache, embed_texts
from formula_assets.semantics.identity import folder_hash
from formula_assets.semantics.models import (
    TextEmbedder,
    downloaded,
    resolve_model,
)
from formula_assets_tests.support.models import copy_model, fine_tune_in_place, keeping_times

TEXTS = ["kinetic energy", "speed of light in vacuum"]


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return copy_model(tmp_path / "model")


@pytest.mark.parametrize("replace", [False, True], ids=["in place", "replaced"])
def test_a_model_saved_over_its_files_is_a_new_model(model: Path, replace: bool) -> None:
    before = resolve_model(str(model), "a test")
    stat = (model / "model.safetensors").stat()
    folder_mtime = model.stat().st_mtime_ns
    fine_tune_in_place(model, replace=replace)
    after = resolve_model(str(model), "a test")
    assert (model / "model.safetensors").stat().st_mtime_ns == stat.st_mtime_ns
    assert (model / "model.safetensors").stat().st_size == stat.st_size
    assert model.stat().st_mtime_ns == folder_mtime
    assert after.identity != before.identity
    assert after.content is not None and after.content.files == before.content.files


def test_the_same_files_elsewhere_are_the_same_model(model: Path, tmp_path: Path) -> None:
    default = resolve_model(None, "the default")
    moved = resolve_model(str(shutil.copytree(model, tmp_path / "moved" / "elsewhere")), "a test")
    assert resolve_model(str(model), "a test").identity == default.identity == moved.identity
    assert default.content is not None and default.content.size > 90_000_000


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: (m / "tokenizer.json").write_bytes(
            (m / "tokenizer.json").read_bytes().replace(b'"[UNK]"', b'"[UNX]"', 1)
        ),
        lambda m: (m / "1_Pooling" / "config.json").write_text(
            (m / "1_Pooling" / "config.json").read_text().replace("true", "false", 1)
        ),
        lambda m: (m / "vocab.txt").rename(m / "vocabulary.txt"),
        lambda m: (m / "extra_weights.bin").write_bytes(b"\0" * 16),
    ],
    ids=["tokenizer", "pooling config", "renamed file", "new file"],
)
def test_every_file_counts(model: Path, edit) -> None:
    before = folder_hash(model).digest
    restore = keeping_times([model])
    edit(model)
    restore()
    assert folder_hash(model).digest != before


def test_hidden_files_do_not_count(model: Path) -> None:
    before = folder_hash(model).digest
    (model / ".cache" / "huggingface").mkdir(parents=True)
    (model / ".cache" / "huggingface" / "download.metadata").write_text("2026-12-01")
    (model / ".gitattributes").write_text("changed")
    assert folder_hash(model).digest == before


def test_joined_models_are_identified_in_order(model: Path) -> None:
    fine_tune_in_place(model)
    ab = resolve_model(f"all-MiniLM-L6-v2+{model}", "a test")
    ba = resolve_model(f"{model}+all-MiniLM-L6-v2", "a test")
    assert ab.identity != ba.identity
    assert {p.identity for p in ab.parts} == {p.identity for p in ba.parts}
    assert len({ab.identity, *[p.identity for p in ab.parts]}) == 3


def test_the_changed_model_embeds_anew_under_a_new_cache_key(model: Path, tmp_path: Path) -> None:
    """In one process, as in a long session: the old vectors come neither from the embedding
    cache nor from the model already loaded."""
    root = UPath(tmp_path / "cache")
    before = TextEmbedder(downloaded(resolve_model(str(model), "a test")))
    old, stats = embed_texts(TEXTS, before, EmbeddingCache(root, before.spec.identity, "t"))
    assert stats.embedded == 2
    fine_tune_in_place(model, replace=True)  # the loaded model keeps mapping the old file
    after = TextEmbedder(downloaded(resolve_model(str(model), "a test")))
    new, stats = embed_texts(TEXTS, after, EmbeddingCache(root, after.spec.identity, "t"))
    assert stats.embedded == 2 and stats.cached == 0
    assert not np.allclose(old, new, atol=1e-3)
    assert sorted(p.name for p in Path(str(root)).iterdir()) == sorted(
        [before.spec.identity, after.spec.identity]
    )
    again, stats = embed_texts(TEXTS, after, EmbeddingCache(root, after.spec.identity, "t"))
    assert stats.cached == 2 and np.array_equal(again, new)


def test_a_hub_id_in_the_local_cache_is_identified_by_its_snapshot_files(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Hugging Face cache keeps a snapshot as links to content-addressed blobs: the files
    behind the links are hashed, as for any folder."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    repo = cache / "models--someone--tiny-model"
    snapshot = repo / "snapshots" / ("0" * 40)
    (repo / "blobs").mkdir(parents=True)
    for number, source in enumerate(sorted(p for p in model.rglob("*") if p.is_file())):
        relative = source.relative_to(model)
        blob = repo / "blobs" / f"{number:040d}"
        shutil.copyfile(source, blob)
        (snapshot / relative).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / relative).symlink_to(os.path.relpath(blob, (snapshot / relative).parent))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    spec = resolve_model("someone/tiny-model", "a test")
    assert spec.local and Path(spec.location) == snapshot
    assert spec.identity == resolve_model(str(model), "a test").identity
    fine_tune_in_place(model)  # the blob behind the weights' link, changed
    blob = (snapshot / "model.safetensors").resolve()
    blob.write_bytes((model / "model.safetensors").read_bytes())
    assert resolve_model("someone/tiny-model", "a test").identity != spec.identity


def _tiny_folder(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "config.json").write_bytes(b'{"a": 1}')
    (root / "sub" / "weights.bin").write_bytes(bytes(range(256)) * 3)
    return root


def _expected(entries: list[tuple[str, bytes]]) -> str:
    """The documented scheme, computed here from the bytes: per file its name, its length and
    the SHA-256 of its content, each NUL-terminated, after the scheme tag."""
    import hashlib

    digest = hashlib.sha256(b"formula_assets/model-files/1")
    for name, content in entries:
        for part in (name, str(len(content)), hashlib.sha256(content).hexdigest()):
            digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


def test_a_folder_hash_is_its_files_names_lengths_and_contents(tmp_path: Path) -> None:
    folder = _tiny_folder(tmp_path / "m")
    content = folder_hash(folder)
    assert content.digest == _expected(
        [("config.json", b'{"a": 1}'), ("sub/weights.bin", bytes(range(256)) * 3)]
    )
    assert len(content.digest) == 32
    assert (content.files, content.size) == (2, 8 + 768)


def test_a_file_moved_into_another_subfolder_is_another_model(tmp_path: Path) -> None:
    folder = _tiny_folder(tmp_path / "m")
    before = folder_hash(folder).digest
    (folder / "other").mkdir()
    (folder / "sub" / "weights.bin").rename(folder / "other" / "weights.bin")
    assert folder_hash(folder).digest != before


def test_files_without_a_root_are_named_by_their_own_names(tmp_path: Path) -> None:
    from formula_assets.semantics.identity import files_hash

    folder = _tiny_folder(tmp_path / "m")
    parts = [folder / "config.json", folder / "sub" / "weights.bin"]
    content = files_hash(parts)
    assert content.digest == _expected(
        [("config.json", b'{"a": 1}'), ("weights.bin", bytes(range(256)) * 3)]
    )
    assert (content.files, content.size) == (2, 776)
    assert files_hash([]) == files_hash([], tmp_path)
    assert (files_hash([]).files, files_hash([]).size) == (0, 0)


def test_joined_identity_is_the_identities_in_order() -> None:
    import hashlib

    from formula_assets.semantics.identity import joined_identity

    expected = hashlib.sha256(b"formula_assets/model-files/1/joined" + b"a\0b\0").hexdigest()
    assert joined_identity(["a", "b"]) == expected[:32]
