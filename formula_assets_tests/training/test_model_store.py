"""The model store on a local folder, one save at a time: a save → load round trip gives the
model back, versions are kept and pruned as documented, the pointer and its fallbacks, and the
model's content hash follows its tensors and vectors only."""

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch
from upath import UPath

from formula_assets.core import lake
from formula_assets.methods.sbert_finetuned_cl import FineTunedSettings
from formula_assets.training import artifacts
from formula_assets.training.artifacts import (
    CONFIG,
    EMBEDDINGS,
    HISTORY,
    POINTER,
    WEIGHTS,
    ModelDescription,
    ModelLoadError,
    RunSummary,
    SplitSizes,
    TrainedModel,
    content_hash,
    current_version,
    embeddings_table,
    load_model,
    model_directory,
    save_model,
    weights_bytes,
)
from formula_assets.training.settings import MethodSettings
from formula_assets_tests.training.descriptions import described


def model(value: float = 1.0, embeddings: bool = True) -> TrainedModel:
    state = {
        "b.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) * value,
        "a.bias": torch.tensor([value, -value], dtype=torch.float64),
        "a.count": torch.tensor([3], dtype=torch.int64),
    }
    history = [{"epoch": 1, "loss": 0.5 * value, "step": np.float32(2.0)}]
    table = (
        embeddings_table(
            ["Q1", "Q2", "Q3"],
            ["train", "test", "test"],
            np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]) * value,
            np.array([[0.0, 1.0], [1.0, 0.0], [0.8, 0.6]]),
        )
        if embeddings
        else None
    )
    return TrainedModel(described(value=value), state, history, table)


def versions(directory: UPath) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("v-"))


def test_save_then_load_gives_the_model_back(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "m"
    saved = model(2.0)
    target = save_model(saved, directory)
    assert target == current_version(directory)
    assert sorted(p.name for p in target.iterdir()) == sorted(
        [CONFIG, EMBEDDINGS, HISTORY, WEIGHTS]
    )
    assert (directory / POINTER).read_text() == target.name
    loaded = load_model(directory)
    assert loaded.description == saved.description
    assert set(loaded.state) == set(saved.state)
    assert all(
        torch.equal(loaded.state[k], v) and loaded.state[k].dtype == v.dtype
        for k, v in saved.state.items()
    )
    assert loaded.history == [{"epoch": 1, "loss": 1.0, "step": 2.0}]
    assert loaded.embeddings.equals(saved.embeddings)
    assert (loaded.method, loaded.fold) == ("sbert_dual_cl", 1)
    config = json.loads((target / CONFIG).read_text())
    assert config == json.loads(json.dumps(saved.description.to_json()))
    text = (target / CONFIG).read_text()
    assert text == json.dumps(config, indent=2, sort_keys=True)  # stable, readable JSON
    assert (target / WEIGHTS).read_bytes() == weights_bytes(saved)


def test_a_model_without_embeddings_round_trips(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "m"
    save_model(model(embeddings=False), directory)
    assert EMBEDDINGS not in [p.name for p in current_version(directory).iterdir()]
    loaded = load_model(directory)
    assert loaded.embeddings is None
    with pytest.raises(ValueError, match="sbert_dual_cl fold 1: no embeddings stored"):
        loaded.split_vectors("test")


def test_a_damaged_version_fails_with_its_missing_file(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "m"
    for name in (WEIGHTS, HISTORY):
        target = save_model(model(), directory)
        (target / name).unlink()
        with pytest.raises(FileNotFoundError):
            load_model(directory)


def test_the_stored_description_is_read_without_the_weights(tmp_path: Path) -> None:
    """What a recipe is compared with before a stored model is loaded."""
    directory = UPath(tmp_path)
    save_model(model(1.0), directory)
    newest = dataclasses.replace(
        model(2.0), description=dataclasses.replace(described(value=2.0), recipe="r2")
    )
    save_model(newest, directory)
    (current_version(directory) / WEIGHTS).unlink()
    assert artifacts.stored_description(directory) == newest.description
    assert ModelDescription.from_json(newest.description.to_json()).recipe == "r2"
    assert "recipe" not in model(1.0).description.to_json()  # none yet: not written
    with pytest.raises(FileNotFoundError):
        artifacts.stored_description(UPath(tmp_path / "none"))
    # the method it names, read first by a reader that must pick the settings' class
    graph = dataclasses.replace(newest.description, method="graph_text_cl")
    save_model(dataclasses.replace(newest, description=graph), directory)
    assert artifacts.stored_method(directory) == "graph_text_cl"


def test_weights_are_deterministic_safetensors() -> None:
    """The same tensors give the same bytes, whatever the order the state lists them in."""
    raw = weights_bytes(model())
    header_size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + header_size])
    assert {k for k in header if k != "__metadata__"} == {"a.bias", "a.count", "b.weight"}
    reordered = model()
    reordered.state = dict(reversed(list(reordered.state.items())))
    assert weights_bytes(reordered) == raw


def test_split_vectors_in_stored_order() -> None:
    qids, structural, semantic = model().split_vectors("test")
    assert qids == ["Q2", "Q3"]
    assert np.allclose(structural, [[0.6, 0.8], [0.0, 1.0]])
    assert np.allclose(semantic, [[1.0, 0.0], [0.8, 0.6]])
    every, structural, _ = model().split_vectors(None)
    assert every == ["Q1", "Q2", "Q3"] and structural.shape == (3, 2)


def test_the_model_directory_layout(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    assert model_directory(root, 3, "graph_text_cl") == root / "fold_models" / "3" / "graph_text_cl"


def test_the_two_newest_versions_are_kept(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "m"
    names = [save_model(model(float(i)), directory).name for i in range(4)]
    assert versions(directory) == sorted(names)[-2:]
    assert load_model(directory).description.extra["value"] == 3.0


def test_incomplete_versions_go_only_when_their_writer_is_gone(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "m"
    save_model(model(), directory)
    dead = lake.writer_tag().split("~")
    dead[1] = str(dead_pid())
    dead_version = directory / f"v-{0:020d}-{'~'.join(dead)}"
    live_version = directory / f"v-{1:020d}-{lake.writer_tag()}"
    for version in (dead_version, live_version):
        version.mkdir()
        (version / WEIGHTS).write_bytes(b"partial")
    save_model(model(2.0), directory)
    left = versions(directory)
    assert dead_version.name not in left  # debris of a save whose process died
    assert live_version.name in left  # maybe still being written
    assert len([v for v in left if (directory / v / CONFIG).exists()]) == 2


def dead_pid() -> int:
    """A pid no process has (a finished child's)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_the_pointer_and_its_fallbacks(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "m"
    with pytest.raises(FileNotFoundError, match="no trained model at"):
        current_version(directory)
    first = save_model(model(1.0), directory)
    second = save_model(model(2.0), directory)
    (directory / POINTER).write_text("v-99999999999999999999-gone")  # pruned meanwhile
    assert current_version(directory) == second  # the newest complete one
    (second / CONFIG).unlink()
    assert current_version(directory) == first
    (first / CONFIG).unlink()
    with pytest.raises(FileNotFoundError, match="no complete trained model at"):
        current_version(directory)


def test_a_load_that_keeps_losing_its_version_gives_up(tmp_path: Path, monkeypatch) -> None:
    """Each attempt's version vanishes as it is read (its config gone): after LOAD_ATTEMPTS
    fresh pointer reads the load fails, naming every version it lost."""
    directory = UPath(tmp_path) / "m"
    save_model(model(), directory)
    lost = []

    def vanishing(version: UPath) -> UPath:
        name = f"v-{len(lost):020d}-gone"
        lost.append(name)
        return version.parent / name

    real = artifacts.current_version
    monkeypatch.setattr(artifacts, "current_version", lambda d: vanishing(real(d)))
    with pytest.raises(ModelLoadError, match="removed the version being loaded 10 times") as e:
        load_model(directory)
    assert len(lost) == 10
    assert f"({', '.join(lost)})" in str(e.value)  # every version it lost, named
    monkeypatch.undo()
    assert load_model(directory).description.extra["value"] == 1.0


def test_the_content_hash_follows_tensors_and_vectors_only() -> None:
    base = content_hash(model())
    assert content_hash(model()) == base
    reordered = model()
    reordered.state = dict(reversed(list(reordered.state.items())))
    assert content_hash(reordered) == base
    retimed = model()
    retimed.history = []  # the history is not the model
    assert content_hash(retimed) == base
    changes = []
    for change in (
        lambda m: m.state.__setitem__("a.bias", m.state["a.bias"].float()),  # dtype
        lambda m: m.state.__setitem__("b.weight", m.state["b.weight"].reshape(3, 2)),  # shape
        lambda m: m.state.__setitem__("c", m.state.pop("a.count")),  # name
        lambda m: m.state["b.weight"].__setitem__((1, 2), 7.5),  # one value
        lambda m: setattr(
            m, "embeddings", m.embeddings.set_column(0, "qid", pa.array(["Q1", "Q2", "Q4"]))
        ),
        lambda m: setattr(m, "embeddings", None),
    ):
        changed = model()
        change(changed)
        changes.append(content_hash(changed))
    assert base not in changes and len(set(changes)) == len(changes)


def test_an_untrained_description_says_nothing_was_trained() -> None:
    untrained = described()
    assert (untrained.best_epoch, untrained.epochs_run, untrained.runs) == (0, 0, ())
    assert (untrained.best_validation_mrr, untrained.train_seconds) == (0.0, 0.0)
    assert not untrained.stopped_early and untrained.torch_threads == 0
    assert untrained.selection_fraction == 0.0
    assert (untrained.token_text_dim, untrained.formula_text_dim) == (0, 0)
    written = untrained.to_json()
    assert not {"vocabulary", "token_text_dim", "formula_text_dim", "deterministic"} & set(written)
    assert written["best_epoch"] == 0 and written["stopped_early"] is False


def test_a_methods_settings_are_written_as_its_own_class_has_them() -> None:
    """A dual model's config names no other method's fields; a fine-tuned encoder's names its
    own and loads back into its class."""
    written = described().to_json()["settings"]
    assert set(written) == {f.name for f in dataclasses.fields(MethodSettings)}
    own = FineTunedSettings(
        **dataclasses.asdict(described().settings), base_model="/models/x", frozen_layers=2
    )
    config = dataclasses.replace(described(), settings=own).to_json()
    assert (config["settings"]["base_model"], config["settings"]["frozen_layers"]) == (
        "/models/x",
        2,
    )
    assert ModelDescription.from_json(config, FineTunedSettings).settings == own


# every field of the one settings class all methods shared before each had its own, at the
# value a dual encoder recorded (it read none beyond the base's)
FORMERLY_SHARED = {
    "layers": 2, "token_text": False, "token_dropout": 0.0, "readout": "mean",
    "head_hidden": 1024, "head_dropout": 0.3, "semantic_hidden": None, "semantic_dropout": None,
    "formula_text": False, "base_model": None, "max_seq_len": 128, "frozen_layers": 0,
    "hard_negatives": 0.0,
}  # fmt: skip


def test_a_config_of_the_formerly_shared_settings_loads_into_the_methods_class() -> None:
    written = described().to_json()
    old = {**written, "settings": {**written["settings"], **FORMERLY_SHARED}}
    assert ModelDescription.from_json(old).settings == described().settings
    # a value the method's class cannot hold is a model this code cannot rebuild
    for entry, value in (("hard_negatives", 0.25), ("token_text", True), ("max_seq_len", 64)):
        other = {**old, "settings": {**old["settings"], entry: value}}
        with pytest.raises(ValueError, match=f"MethodSettings does not have: \\['{entry}'\\]"):
            ModelDescription.from_json(other)


def test_split_sizes_and_run_summaries_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SplitSizes(1, 1, 0, 1).train = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunSummary(1, 1, 0.5, 1, False, 1.0).seed = 2  # type: ignore[misc]


def test_a_history_that_is_not_json_is_refused_and_no_version_becomes_current(
    tmp_path: Path,
) -> None:
    unserialisable = model()
    unserialisable.history = [{"epoch": 1, "when": object()}]
    with pytest.raises(TypeError, match="not JSON serialisable: object"):
        save_model(unserialisable, UPath(tmp_path) / "m")
    with pytest.raises(FileNotFoundError):
        current_version(UPath(tmp_path) / "m")  # no version became current
    sets = model()
    sets.history = [{"epoch": 1, "tokens": {"a"}}]  # a set is written as a list
    save_model(sets, UPath(tmp_path) / "n")
    assert load_model(UPath(tmp_path) / "n").history == [{"epoch": 1, "tokens": ["a"]}]


def pruned_while_read(monkeypatch, directory: UPath, what: str) -> None:
    """A concurrent prune removes the current version while it is being read: just before
    the load reads `what` of it, its config.json (removed first) and `what` go."""
    victim = current_version(directory)
    real_read, real_parquet = artifacts._read, lake.read_parquet

    def remove() -> None:
        (victim / CONFIG).unlink(missing_ok=True)
        (victim / what).unlink(missing_ok=True)

    def read(path: UPath) -> bytes:
        if path == victim / what:
            remove()
        return real_read(path)

    def read_parquet(path: UPath):
        if path == victim / what:
            remove()
        return real_parquet(path)

    monkeypatch.setattr(artifacts, "_read", read)
    monkeypatch.setattr(artifacts.lake, "read_parquet", read_parquet)


@pytest.mark.parametrize("what", [WEIGHTS, EMBEDDINGS])
def test_a_version_pruned_while_read_is_never_returned(tmp_path: Path, monkeypatch, what) -> None:
    """The load starts over and returns the newest complete version, whole."""
    directory = UPath(tmp_path) / "m"
    save_model(model(1.0), directory)
    save_model(model(2.0), directory)
    pruned_while_read(monkeypatch, directory, what)
    loaded = load_model(directory)
    assert loaded.description.extra["value"] == 1.0
    assert loaded.embeddings is not None and loaded.embeddings.equals(model(1.0).embeddings)
