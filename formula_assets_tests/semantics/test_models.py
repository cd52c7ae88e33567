"""Resolving a model setting (folders, part packages, hub ids in the local cache, joined
names) and the identity each gets; fetching from a hub (a fake one on 127.0.0.1, through the
real client); devices, batching, joined parts' scaling, load errors, the hub probe and the
progress log. Models loaded are a tiny BERT built here and the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import dataclasses
import json
import secrets
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from formula_assets.core.profiles import DEFAULT_EMBEDDING_MODEL
from formula_assets.semantics.identity import folder_hash, joined_identity
from formula_assets.semantics.models import (
    UNRESOLVED,
    EmbeddingModelError,
    ModelSpec,
    ProgressLog,
    TextEmbedder,
    _model_key,
    _short,
    downloaded,
    hub_endpoint,
    hub_reachable,
    load_model,
    packaged_default_path,
    resolve_model,
)
from formula_assets.semantics.packaged import MPNET_PARTS, part_files
from formula_assets_tests.support.hub import FakeHub, point_client
from formula_assets_tests.support.models import tiny_sentence_model
from formula_assets_tests.support.packages import install, split_zip


def _folder(path: Path, marker: str = "config.json", content: str = "{}") -> Path:
    path.mkdir(parents=True)
    (path / marker).write_text(content)
    return path


@pytest.mark.parametrize("marker", ["config.json", "modules.json"])
def test_a_folder_with_a_model_marker_is_identified_by_its_files(tmp_path, marker) -> None:
    folder = _folder(tmp_path / "m", marker)
    spec = resolve_model(str(folder), "a test")
    content = folder_hash(folder)
    assert spec == ModelSpec(str(folder), str(folder), content.digest, "a test", local=True,
                             content=content)  # fmt: skip
    assert downloaded(spec) is spec  # on disk already: nothing to fetch


def test_a_relative_or_home_folder_is_resolved(tmp_path, monkeypatch) -> None:
    folder = _folder(tmp_path / "home" / "models" / "m")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "home")
    for name in ("~/models/m", "./models/m", "models/m"):
        spec = resolve_model(name, "a test")
        assert spec.local and spec.location == str(folder.resolve()) and spec.name == name


@pytest.mark.parametrize("name", ["./nothing-here", "/no/such/model", "~/no-such-model"])
def test_a_path_that_is_no_model_folder_is_refused(tmp_path, monkeypatch, name) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(EmbeddingModelError, match="does not exist or holds no model"):
        resolve_model(name, "the setting")


def test_a_folder_without_a_model_marker_is_refused(tmp_path) -> None:
    folder = _folder(tmp_path / "m", "README.md")
    with pytest.raises(EmbeddingModelError, match=r"holds no model \(no config.json"):
        resolve_model(str(folder), "the setting")
    (tmp_path / "file").write_text("x")
    with pytest.raises(EmbeddingModelError, match="holds no model"):
        resolve_model(str(tmp_path / "file"), "the setting")


@pytest.mark.parametrize(
    "name", [None, DEFAULT_EMBEDDING_MODEL, f"sentence-transformers/{DEFAULT_EMBEDDING_MODEL}"]
)
def test_the_default_names_are_the_packaged_model(name) -> None:
    spec = resolve_model(name, "a test")
    assert spec.name == DEFAULT_EMBEDDING_MODEL and spec.local
    assert spec.location == str(packaged_default_path())
    assert spec.identity == folder_hash(packaged_default_path()).digest


def test_a_hub_id_not_downloaded_is_named_until_fetched() -> None:
    spec = resolve_model("someone/not-here", "a test")
    assert spec == ModelSpec("someone/not-here", "someone/not-here",
                             f"{UNRESOLVED}someone__not-here", "a test", local=False)  # fmt: skip
    with pytest.raises(EmbeddingModelError, match="hub is unreachable or disabled"):
        downloaded(spec, offline=True)


def test_all_mpnet_without_a_model_dir_is_a_hub_id() -> None:
    spec = resolve_model("all-mpnet-base-v2", "a test", model_dir=None)
    assert not spec.local and spec.identity == f"{UNRESOLVED}all-mpnet-base-v2"


def test_joined_names_are_their_parts_in_order(tmp_path) -> None:
    a, b = _folder(tmp_path / "a"), _folder(tmp_path / "b", content='{"b": 1}')
    spec = resolve_model(f"{a} + {b}", "a test")
    parts = [resolve_model(str(a), "a test"), resolve_model(str(b), "a test")]
    assert spec.parts == tuple(parts) and spec.local
    assert spec.location == f"{a}+{b}" and spec.name == f"{a} + {b}"
    assert spec.identity == joined_identity([p.identity for p in parts])
    assert spec.content is None
    mixed = resolve_model(f"{a}+someone/not-here", "a test")
    assert not mixed.local and mixed.parts[1].identity == f"{UNRESOLVED}someone__not-here"
    with pytest.raises(EmbeddingModelError, match="hub is unreachable"):
        downloaded(mixed, offline=True)
    assert downloaded(spec) is spec


def test_an_empty_text_list_encodes_to_no_rows_of_the_models_width(tmp_path) -> None:
    a, b = _folder(tmp_path / "a"), _folder(tmp_path / "b")
    embedder = TextEmbedder(resolve_model(f"{a}+{b}", "a test"))

    class Width:  # only the width is asked for: no texts, nothing encoded
        def __init__(self, width: int) -> None:
            self.width = width

        def get_embedding_dimension(self) -> int:
            return self.width

    embedder._parts[0]._model, embedder._parts[1]._model = Width(3), Width(5)
    empty = embedder.encode([])
    assert empty.shape == (0, 8) and empty.dtype == np.float32


def test_a_model_is_loaded_once_per_location_content_and_device() -> None:
    spec = resolve_model(None, "a test")
    assert _model_key(spec, "cpu") == (spec.location, spec.identity, "cpu")


def test_errors_are_one_short_line() -> None:
    error = ValueError("first line\n   second\tline " + "x" * 400)
    short = _short(error)
    assert short.startswith("ValueError: first line second line x")
    assert len(short) == len("ValueError: ") + 300


def test_the_progress_log_speaks_every_few_seconds_and_at_the_end(monkeypatch) -> None:
    import formula_assets.semantics.models as models

    now = [100.0]
    monkeypatch.setattr(models.time, "perf_counter", lambda: now[0])
    lines: list[str] = []
    log = ProgressLog(lines.append, "embedding", every_s=5.0)
    now[0] = 104.0
    log(10, 100)  # 4 s after the start but 104 s after "last" (0): logged
    now[0] = 106.0
    log(20, 100)  # 2 s after the last line: quiet
    now[0] = 109.0
    log(30, 100)  # 5 s after it: logged
    now[0] = 109.5
    log(100, 100)  # done: always logged
    assert lines == [
        "embedding: 10/100 (2/s)",
        "embedding: 30/100 (3/s)",
        "embedding: 100/100 (11/s)",
    ]


@pytest.mark.parametrize("library", [False, True], ids=["plain", "library"])
def test_batches_keep_the_input_order_and_report_progress(library: bool) -> None:
    """Five texts in batches of two (sorted by length inside): each row is the text's own
    vector, and progress counts texts done after each batch, with either engine."""
    embedder = TextEmbedder(resolve_model(None, "a test"), batch_size=2, library=library)
    assert embedder.engine == ("sentence-transformers" if library else "torch")
    texts = ["a rather long description of kinetic energy", "force", "mass", "speed", "c"]
    seen: list[tuple[int, int]] = []
    matrix = embedder.encode(texts, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(2, 5), (4, 5), (5, 5)]
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    np.testing.assert_allclose(matrix, alone, atol=1e-5)
    assert matrix.dtype == np.float32 and embedder.dimension == 384


def test_a_folder_that_does_not_load_names_the_model_and_the_folder(tmp_path) -> None:
    folder = _folder(tmp_path / "broken", "modules.json", "not json")
    spec = resolve_model(str(folder), "the setting")
    with pytest.raises(EmbeddingModelError, match=r"did not load from .*broken") as raised:
        load_model(spec, device="cpu")
    assert "the setting" in str(raised.value) and raised.value.__cause__ is None


def test_a_folder_whose_modules_are_not_json_is_the_librarys_clear_error(tmp_path) -> None:
    """The engine choice reads the folder's small files; one it cannot parse goes to the
    library, whose load error names the model and the folder (not a JSON traceback)."""
    folder = _folder(tmp_path / "broken", "modules.json", "not json")
    embedder = TextEmbedder(resolve_model(str(folder), "the setting"), device="cpu")
    assert embedder.engine == "sentence-transformers"
    with pytest.raises(EmbeddingModelError, match=r"did not load from .*broken"):
        embedder.encode(["x"])


def test_a_hub_id_in_the_local_cache_is_its_snapshot_folder(tmp_path, monkeypatch) -> None:
    """The Hugging Face cache's layout (refs/main → snapshots/<commit>), no network: a hub id
    found there is that folder, identified by its files; a bare name is looked up under
    sentence-transformers/."""
    from huggingface_hub import constants

    commit = "1" * 40
    for repo in ("models--someone--tiny", "models--sentence-transformers--bare"):
        snapshot = _folder(tmp_path / "hub" / repo / "snapshots" / commit)
        (tmp_path / "hub" / repo / "refs").mkdir()
        (tmp_path / "hub" / repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    spec = resolve_model("someone/tiny", "a test")
    expected = tmp_path / "hub" / "models--someone--tiny" / "snapshots" / commit
    assert spec.local and Path(spec.location) == expected
    assert spec.identity == folder_hash(expected).digest and spec.name == "someone/tiny"
    bare = resolve_model("bare", "a test")
    assert bare.local and Path(bare.location) == snapshot
    assert not resolve_model("someone/other", "a test").local


def test_the_progress_log_waits_five_seconds_by_default(monkeypatch) -> None:
    import formula_assets.semantics.models as models

    now = [1000.0]
    monkeypatch.setattr(models.time, "perf_counter", lambda: now[0])
    lines: list[str] = []
    log = ProgressLog(lines.append, "t")
    log(1, 10)
    for at, done in ((1004.9, 2), (1005.0, 3), (1009.0, 4), (1010.0, 5)):
        now[0] = at
        log(done, 10)
    assert [line.split(":")[1].split("/")[0].strip() for line in lines] == ["1", "3", "5"]


def test_joined_parts_are_each_scaled_to_unit_length(tmp_path) -> None:
    """A model without a Normalize module gives vectors of any length; side by side, each
    part's vector is scaled to length one."""
    folder = Path(shutil.copytree(packaged_default_path(), tmp_path / "raw"))
    modules = json.loads((folder / "modules.json").read_text())[:2]
    (folder / "modules.json").write_text(json.dumps(modules))
    raw = TextEmbedder(resolve_model(str(folder), "a test"))
    joined = TextEmbedder(resolve_model(f"{folder}+{folder}", "a test"))
    texts = ["kinetic energy", "force"]
    single = raw.encode(texts)
    assert not np.allclose(np.linalg.norm(single, axis=1), 1.0, atol=1e-3)
    unit = single / np.linalg.norm(single, axis=1, keepdims=True)
    matrix = joined.encode(texts)
    np.testing.assert_allclose(matrix, np.hstack([unit, unit]), atol=1e-5)


def test_the_first_progress_report_is_logged_whatever_the_clock_reads(monkeypatch) -> None:
    """perf_counter's zero is arbitrary: a clock that reads 0 when embedding starts still
    gets its first line at once; before any time has passed there is no rate to give."""
    import formula_assets.semantics.models as models

    now = [0.0]
    monkeypatch.setattr(models.time, "perf_counter", lambda: now[0])
    lines: list[str] = []
    log = ProgressLog(lines.append, "t", every_s=5.0)
    log(0, 10)
    now[0] = 0.5
    log(1, 10)  # half a second after the first line: quiet
    log(10, 10)
    assert lines == ["t: 0/10", "t: 10/10 (20/s)"]


def test_a_spec_is_a_value() -> None:
    """Specs name models in caches and in comparisons: equal specs are one key, and a spec
    cannot be changed under them."""
    spec = resolve_model(None, "a test")
    assert {spec: 1}[resolve_model(None, "a test")] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.identity = "another"  # type: ignore[misc]


# ---------------------------------------------------------------- a tiny model, loaded


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers folder of a BERT eight numbers wide (vectors not unit length)."""
    return tiny_sentence_model(tmp_path_factory.mktemp("served") / "tiny")


def _local(folder: Path) -> ModelSpec:
    return resolve_model(str(folder), "a test")


def _vectors(folder: Path, texts: list[str]) -> np.ndarray:
    return TextEmbedder(_local(folder), device="cpu").encode(texts)


def test_a_model_goes_on_the_device_named_else_on_cuda_when_present(tiny) -> None:
    spec = _local(tiny)
    assert load_model(spec, device="meta").device.type == "meta"  # named: not the default
    assert load_model(spec).device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_loading_and_encoding_draw_no_progress_bars(tiny, capfd) -> None:
    """Progress goes to `ProgressLog` lines: a bar per load or per batch would clutter the
    command line and the run logs."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.enable_progress_bar()  # as a fresh process has it
    capfd.readouterr()
    model = load_model(_local(tiny), device="cpu")
    embedder = TextEmbedder(_local(tiny), device="cpu", library=True)
    embedder._model = model
    embedder.encode(["kinetic energy", "force"])
    assert "%|" not in capfd.readouterr().err


def test_by_default_64_texts_go_through_the_model_at_once(tiny) -> None:
    """As the sentence_embedder resource's default batch size (`batch_size`)."""
    seen: list[int] = []
    TextEmbedder(_local(tiny), device="cpu").encode(
        [f"text {i}" for i in range(65)], progress=lambda done, _total: seen.append(done)
    )
    assert seen == [64, 65]


def _scaled(tiny: Path, target: Path, scale: float) -> Path:
    """A copy of `tiny` whose vectors are `scale` times its own (the last layer norm's
    weight and bias scaled: mean pooling is linear)."""
    from safetensors.torch import load_file, save_file

    folder = Path(shutil.copytree(tiny, target))
    state = load_file(str(folder / "model.safetensors"))
    last = max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    for kind in ("weight", "bias"):
        state[f"encoder.layer.{last}.output.LayerNorm.{kind}"] *= scale
    save_file(state, str(folder / "model.safetensors"))
    return folder


def test_short_and_zero_parts_are_scaled_to_unit_length_or_left_zero(tiny, tmp_path) -> None:
    """A part whose vectors are shorter than one is scaled up like any other; a zero vector
    has no direction and stays zero (not NaN)."""
    short, zero = _scaled(tiny, tmp_path / "short", 0.1), _scaled(tiny, tmp_path / "zero", 0.0)
    texts = ["kinetic energy", "force"]
    alone = _vectors(short, texts)
    assert np.all(np.linalg.norm(alone, axis=1) < 1) and not _vectors(zero, texts).any()
    joined = TextEmbedder(resolve_model(f"{short}+{zero}", "a test"), device="cpu")
    matrix = joined.encode(texts)
    unit = alone / np.linalg.norm(alone, axis=1, keepdims=True)
    np.testing.assert_allclose(matrix[:, :8], unit, atol=1e-5)
    assert np.array_equal(matrix[:, 8:], np.zeros((2, 8), np.float32))


# ------------------------------------------- the engine: plain torch where it reads the folder

QUERIES = ["kinetic energy", "E = m c^2", "", "the potential energy of a body " * 3]


def test_the_plain_engine_gives_the_librarys_vectors_joined_parts_and_refusals_too(
    tiny, tmp_path
) -> None:
    """The plain-torch engine (a BERT and an MPNet folder side by side, as `large`'s two
    models), in one padded batch and one text at a time, and the library's for a folder it
    refuses (the [CLS] token's vector, not the mean): each gives the library's vectors."""
    mpnet = tiny_sentence_model(tmp_path / "mpnet", seed=3, architecture="mpnet")
    refused = Path(shutil.copytree(tiny, tmp_path / "refused"))
    pooling = refused / "1_Pooling" / "config.json"
    modes = {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}
    pooling.write_text(json.dumps({**json.loads(pooling.read_text()), **modes}))
    for name, engine in (
        (f"{DEFAULT_EMBEDDING_MODEL}+{mpnet}", "torch+torch"),
        (str(mpnet), "torch"),
        (f"{refused}+{mpnet}", "sentence-transformers+torch"),
    ):
        spec = resolve_model(name, "a test")
        expected = TextEmbedder(spec, device="cpu", library=True).encode(QUERIES)
        embedder = TextEmbedder(spec, device="cpu")
        assert embedder.engine == engine
        batch = embedder.encode(QUERIES)
        alone = np.stack([embedder.encode([q])[0] for q in QUERIES])
        assert batch.dtype == alone.dtype == np.float32
        np.testing.assert_allclose(batch, expected, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(alone, expected, atol=1e-5, err_msg=name)


def test_the_cache_tells_the_engines_apart(tiny) -> None:
    """A vector's last bits are its engine's: the library's keep the key the cache had before
    the plain engine, the plain engine's get their own."""
    spec = _local(tiny)
    assert TextEmbedder(spec, library=True).cache_identity == spec.identity
    assert TextEmbedder(spec).cache_identity == f"{spec.identity}-torch"
    joined = resolve_model(f"{tiny}+{tiny}", "a test")
    assert TextEmbedder(joined).cache_identity == f"{joined.identity}-torch+torch"


def test_bert_and_mpnet_folders_import_no_sentence_transformers(tmp_path) -> None:
    """What the plain engine is for: a process that embeds (an embedding step, a cold search)
    never imports the library."""
    import subprocess
    import sys

    mpnet = tiny_sentence_model(tmp_path / "mpnet", architecture="mpnet")
    probe = (
        "import sys\n"
        "from formula_assets.semantics.models import TextEmbedder, resolve_model\n"
        f"spec = resolve_model('{DEFAULT_EMBEDDING_MODEL}+{mpnet}', 'a test')\n"
        "print(TextEmbedder(spec, offline=True).encode(['kinetic energy', 'force']).shape)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'sentence_transformers', 'transformers'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["(2,", "392)", "[]"]


def test_bert_and_mpnet_folders_never_reach_the_library(tmp_path, monkeypatch) -> None:
    """The same promise in this process, where a changed engine choice is seen too: alone or
    joined, folders the plain encoder reads are never handed to sentence-transformers."""
    import formula_assets.semantics.models as models

    def library(*args: object, **kwargs: object) -> None:
        raise AssertionError("sentence-transformers was used")

    monkeypatch.setattr(models, "load_model", library)
    mpnet = tiny_sentence_model(tmp_path / "mpnet", architecture="mpnet")
    for name, width in (
        (DEFAULT_EMBEDDING_MODEL, 384),
        (str(mpnet), 8),
        (f"{DEFAULT_EMBEDDING_MODEL}+{mpnet}", 392),
    ):
        embedder = TextEmbedder(resolve_model(name, "a test"), device="cpu")
        vectors = embedder.encode(["kinetic energy", "force"])
        assert vectors.shape == (2, width) and np.isfinite(vectors).all(), name
        assert embedder.dimension == width


def test_a_hub_model_not_downloaded_is_left_to_the_library() -> None:
    spec = resolve_model("someone/not-downloaded", "a test")
    assert not spec.local
    embedder = TextEmbedder(spec, offline=True)
    assert embedder.engine == "sentence-transformers"
    with pytest.raises(EmbeddingModelError):
        embedder.encode(["x"])


# ---------------------------------------------------------------- all-mpnet-base-v2's parts


@pytest.fixture
def mpnet_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """all-mpnet-base-v2's five part packages installed under their own names (on sys.path),
    whose files together zip a (small) sentence-transformers folder."""
    members = {"m/modules.json": "[]", "m/config.json": '{"model_type": "mpnet"}'}
    parts = split_zip(tmp_path / "zip", members, parts=len(MPNET_PARTS))
    for name, part in zip(MPNET_PARTS, parts, strict=True):
        install(tmp_path / "site", name, {f"{name}/{part.name}": part.read_bytes()})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


@pytest.mark.parametrize("name", ["all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2"])
def test_all_mpnet_is_unpacked_from_its_parts_into_the_model_dir(mpnet_parts, tmp_path, name):
    spec = resolve_model(name, "a test", model_dir=tmp_path / "models")
    folder = Path(spec.location)
    assert spec.local and spec.name == name and folder.parent == tmp_path / "models"
    assert (folder / "modules.json").exists() and spec.identity == folder_hash(folder).digest
    assert not resolve_model(name, "a test", model_dir=None).local  # not looked for without
    other = resolve_model("someone/all-mpnet-base-v3", "a test", model_dir=tmp_path / "models")
    assert not other.local  # only the paper's model ships in parts


def test_without_its_part_packages_all_mpnet_is_a_hub_id(tmp_path) -> None:
    if part_files(MPNET_PARTS) is not None:
        pytest.skip("all-mpnet-base-v2's part packages are installed here")
    spec = resolve_model("all-mpnet-base-v2", "a test", model_dir=tmp_path / "models")
    assert not spec.local and spec.identity == f"{UNRESOLVED}all-mpnet-base-v2"
    assert not (tmp_path / "models").exists()


def test_part_packages_that_make_no_model_name_the_setting(tmp_path, monkeypatch) -> None:
    for name in MPNET_PARTS:
        install(tmp_path / "site", name, {f"{name}/model.zip.001": b"not a zip"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(EmbeddingModelError, match="do not make a zip") as raised:
        resolve_model("all-mpnet-base-v2", "the setting", model_dir=tmp_path / "models")
    assert "'all-mpnet-base-v2' (from the setting)" in str(raised.value)
    assert raised.value.__cause__ is None


# ---------------------------------------------------------------- the hub, for real
# A fake hub on 127.0.0.1 serves the tiny model as `someone/tiny`; huggingface_hub downloads
# from it into a temporary cache, as it would from huggingface.co or the mirror HF_ENDPOINT
# names.


@dataclasses.dataclass
class Hub:
    server: FakeHub
    tiny: str  # the hub id of the tiny model (one per test: a process loads a hub id once)
    cache: Path  # huggingface_hub's cache folder

    @property
    def requests(self) -> list[tuple[str, str]]:
        return self.server.requests


@pytest.fixture
def hub(tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    """The fake hub serving the tiny model (and `someone/broken`), huggingface_hub pointed
    at it and at an empty cache, not offline."""
    name = f"someone/tiny-{secrets.token_hex(4)}"
    broken = _folder(tmp_path / "broken", "modules.json", "not json")
    with FakeHub({name: tiny, "someone/broken": broken}) as server:
        point_client(monkeypatch, server.url, tmp_path / "hf-cache")
        yield Hub(server, name, tmp_path / "hf-cache")


def test_a_hub_model_is_fetched_once_then_identified_by_its_files(tiny, hub) -> None:
    """Resolving never touches the network: a hub id not in the cache is named until
    `downloaded` fetches it; then it is the cache's snapshot folder, identified by its files,
    embedding as the served folder does, and found in the cache without asking again."""
    spec = resolve_model(hub.tiny, "a test")
    assert not spec.local and spec.identity == UNRESOLVED + hub.tiny.replace("/", "__")
    assert hub.requests == []
    fetched = downloaded(spec, device="cpu")
    folder = Path(fetched.location)
    assert fetched.local and fetched.name == hub.tiny
    assert folder.is_relative_to(hub.cache)
    assert fetched.identity == folder_hash(folder).digest == folder_hash(tiny).digest
    asked = len(hub.requests)
    texts = ["kinetic energy", "force"]
    np.testing.assert_allclose(
        TextEmbedder(fetched, device="cpu").encode(texts), _vectors(tiny, texts), atol=1e-6
    )
    assert resolve_model(hub.tiny, "a test") == fetched
    assert downloaded(fetched) is fetched
    assert len(hub.requests) == asked  # loaded once, while fetching; then from the cache


def test_each_hub_part_of_a_joined_name_is_fetched(tiny, hub) -> None:
    spec = resolve_model(f"{tiny}+{hub.tiny}", "a test")
    assert not spec.local and spec.parts[0].local
    fetched = downloaded(spec, device="cpu")
    assert fetched.local and fetched.name == f"{tiny}+{hub.tiny}"
    assert [p.identity for p in fetched.parts] == [folder_hash(tiny).digest] * 2
    assert fetched.identity == joined_identity([p.identity for p in fetched.parts])
    assert fetched.location == f"{tiny}+{fetched.parts[1].location}"


def test_an_embedder_of_a_hub_id_fetches_it_on_first_use(tiny, hub) -> None:
    embedder = TextEmbedder(resolve_model(hub.tiny, "a test"), device="cpu")
    np.testing.assert_allclose(embedder.encode(["force"]), _vectors(tiny, ["force"]), atol=1e-6)
    fetched = [path for method, path in hub.requests if method == "GET"]
    assert any(path.endswith("/model.safetensors") for path in fetched)


def test_a_hub_model_loads_from_the_hub_then_from_the_cache_even_offline(tiny, hub) -> None:
    spec = resolve_model(hub.tiny, "a test")
    expected = _vectors(tiny, ["force"])
    model = load_model(spec, device="cpu")
    np.testing.assert_allclose(model.encode(["force"]), expected, atol=1e-6)
    asked = len(hub.requests)
    again = load_model(spec, device="cpu", offline=True)
    np.testing.assert_allclose(again.encode(["force"]), expected, atol=1e-6)
    assert len(hub.requests) == asked


def test_offline_never_asks_the_hub_even_when_it_answers(hub) -> None:
    spec = resolve_model(hub.tiny, "a test")
    with pytest.raises(EmbeddingModelError, match="hub is unreachable or disabled"):
        downloaded(spec, offline=True)
    with pytest.raises(EmbeddingModelError, match="hub is unreachable or disabled"):
        load_model(spec, device="cpu", offline=True)
    assert hub.requests == []


def test_a_hub_that_does_not_answer_is_not_downloaded_from(tmp_path, monkeypatch) -> None:
    """Nothing listens where the hub should be: the error says what to set, not what the
    client met on the way."""
    with FakeHub({}) as gone:
        url = gone.url
    point_client(monkeypatch, url, tmp_path / "hf-cache")
    assert hub_endpoint() == url and hub_reachable() is False
    with pytest.raises(EmbeddingModelError, match="hub is unreachable or disabled") as raised:
        load_model(resolve_model("someone/tiny", "the setting"), device="cpu")
    assert "FORMULA_ASSETS_EMBEDDING_MODEL" in str(raised.value)


@pytest.mark.parametrize("name", ["someone/broken", "someone/missing"])
def test_a_hub_model_that_does_not_load_says_so(hub, name) -> None:
    with pytest.raises(
        EmbeddingModelError, match="could not be loaded from the Hugging Face hub"
    ) as raised:
        load_model(resolve_model(name, "the setting"), device="cpu")
    assert name in str(raised.value) and raised.value.__cause__ is None
    assert hub.requests[0] == ("HEAD", "/")  # probed, then asked for the model


def test_the_probe_asks_the_hub_downloads_come_from_or_the_one_given(hub) -> None:
    """By default the probe asks huggingface_hub's endpoint (a mirror, where HF_ENDPOINT
    names one), not huggingface.co; else the endpoint it is given."""
    assert hub_endpoint() == hub.server.url
    assert hub_reachable() is True
    with FakeHub({}) as other:
        assert hub_reachable(other.url, timeout_s=5) is True
        assert other.requests == [("HEAD", "/")]
    assert hub_reachable(other.url) is False  # nothing listens there any more
    assert hub.requests == [("HEAD", "/")]


def test_only_a_web_server_can_be_a_hub(tmp_path) -> None:
    (tmp_path / "index.html").write_text("a file is no hub")
    assert hub_reachable((tmp_path / "index.html").as_uri()) is False


def test_a_hub_that_accepts_but_never_answers_is_given_up_after_five_seconds() -> None:
    """So a model that is nowhere fails fast, whatever the network does."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens, never answers
        started = time.perf_counter()
        assert hub_reachable(f"http://127.0.0.1:{silent.getsockname()[1]}") is False
        assert 4.5 <= time.perf_counter() - started < 7.5
