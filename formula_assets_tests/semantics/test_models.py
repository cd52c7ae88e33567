"""Resolving a model setting (folders, hub ids in the local cache, joined names) and the
identity each gets; batching, joined parts' scaling, load errors, the hub probe and the
progress log. Most need no model loaded; the rest load the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

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
    packaged_default_path,
    resolve_model,
)


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


def test_batches_keep_the_input_order_and_report_progress() -> None:
    """Five texts in batches of two (sorted by length inside): each row is the text's own
    vector, and progress counts texts done after each batch."""
    embedder = TextEmbedder(resolve_model(None, "a test"), batch_size=2)
    texts = ["a rather long description of kinetic energy", "force", "mass", "speed", "c"]
    seen: list[tuple[int, int]] = []
    matrix = embedder.encode(texts, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(2, 5), (4, 5), (5, 5)]
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    np.testing.assert_allclose(matrix, alone, atol=1e-5)
    assert matrix.dtype == np.float32 and embedder.dimension == 384


def test_a_folder_that_does_not_load_names_the_model_and_the_folder(tmp_path) -> None:
    from formula_assets.semantics.models import load_model

    folder = _folder(tmp_path / "broken", "modules.json", "not json")
    spec = resolve_model(str(folder), "the setting")
    with pytest.raises(EmbeddingModelError, match=r"did not load from .*broken") as raised:
        load_model(spec, device="cpu")
    assert "the setting" in str(raised.value) and raised.value.__cause__ is None


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


def test_the_hub_is_reachable_when_it_answers_a_head_request(monkeypatch) -> None:
    import http.server
    import threading

    import formula_assets.semantics.models as models
    from formula_assets.semantics.models import hub_reachable

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setattr(models, "HUB_URL", f"http://127.0.0.1:{server.server_port}")
        assert hub_reachable(timeout_s=5) is True
    finally:
        server.shutdown()
        server.server_close()
    monkeypatch.setattr(models, "HUB_URL", f"http://127.0.0.1:{server.server_port}")
    assert hub_reachable(timeout_s=5) is False  # nothing listens there any more


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
    import shutil

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
