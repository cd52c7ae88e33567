"""Model versions under concurrent saves and loads: a load sees one version from start to end.

Saver threads keep writing new versions (each prune removing old ones) while reader threads
keep loading, on a local folder and on an S3-compatible store (a local moto server through
s3fs); every load must return one complete model whose config, weights, history and
embeddings all come from the same save, and no load may fail.
"""

import json
import threading
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
import torch
from upath import UPath

from formula_assets.training import artifacts
from formula_assets.training.artifacts import TrainedModel, load_model, save_model
from formula_assets_tests.training.descriptions import described

SAVES_PER_WRITER = 60
SAVES_PER_WRITER_S3 = 12
WRITERS = 2
READERS = 3


def model(value: int) -> TrainedModel:
    """A model whose every file names `value`; weights of a size that also depends on it."""
    size = 20_000 + value % 7
    history = [{"epoch": 1.0, "value": float(value)}]
    embeddings = pa.table({"qid": [f"Q{value}"] * 50, "value": [value] * 50})
    return TrainedModel(
        described(value=value), {"w": torch.full((size,), float(value))}, history, embeddings
    )


def assert_self_consistent(loaded: TrainedModel) -> int:
    value = int(loaded.description.extra["value"])
    assert loaded.state["w"].numel() == 20_000 + value % 7
    assert torch.all(loaded.state["w"] == float(value))
    assert loaded.history == [{"epoch": 1.0, "value": float(value)}]
    assert loaded.embeddings is not None
    assert set(loaded.embeddings["value"].to_pylist()) == {value}
    assert loaded.embeddings.num_rows == 50
    return value


def test_a_load_for_queries_leaves_the_items_vectors_unread(tmp_path: Path) -> None:
    directory = UPath(tmp_path / "model")
    save_model(model(3), directory)
    network = load_model(directory, embeddings=False)
    assert network.embeddings is None
    assert torch.all(network.state["w"] == 3.0) and network.history[0]["value"] == 3.0
    assert_self_consistent(load_model(directory))  # by default, everything


def race(directory: UPath, saves_per_writer: int) -> tuple[list[int], list[BaseException]]:
    """Writers save distinct values while readers load; the values read and the failures."""
    save_model(model(0), directory)
    done = threading.Event()
    seen: list[int] = []
    failures: list[BaseException] = []

    def write(first: int) -> None:
        try:
            for i in range(saves_per_writer):
                save_model(model(first + WRITERS * i), directory)
        except BaseException as exc:
            failures.append(exc)

    def read() -> None:
        while not done.is_set():
            try:
                seen.append(assert_self_consistent(load_model(directory)))
            except BaseException as exc:
                failures.append(exc)

    writers = [threading.Thread(target=write, args=(1 + k,)) for k in range(WRITERS)]
    readers = [threading.Thread(target=read) for _ in range(READERS)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=300)
    done.set()
    for thread in readers:
        thread.join(timeout=60)
    return seen, failures


def test_loads_during_concurrent_saves_always_see_one_complete_version(tmp_path: Path) -> None:
    directory = UPath(tmp_path / "fold_models" / "1" / "sbert_dual_cl")
    seen, failures = race(directory, SAVES_PER_WRITER)
    assert not failures, (
        f"{len(failures)} of {len(seen) + len(failures)} loads failed: {failures[:3]}"
    )
    assert len(seen) > 20 and len(set(seen)) > 5  # the readers did overlap with the saves
    save_model(model(10_000), directory)  # once the saves are over, one more prunes to two
    assert assert_self_consistent(load_model(directory)) == 10_000
    versions = [p for p in directory.iterdir() if p.name.startswith("v-")]
    assert len(versions) == artifacts.KEEP_VERSIONS
    assert all((p / artifacts.CONFIG).exists() for p in versions)


def test_a_damaged_version_fails_at_once_with_the_missing_file(tmp_path: Path) -> None:
    """A file missing from a version that is still complete is not a concurrent prune: the
    load is not retried and names the file."""
    directory = UPath(tmp_path / "model")
    save_model(model(1), directory)
    version = artifacts.current_version(directory)
    (version / artifacts.WEIGHTS).unlink()
    with pytest.raises(FileNotFoundError, match=artifacts.WEIGHTS):
        load_model(directory)


def test_loads_during_concurrent_saves_on_an_object_store(s3: str) -> None:
    directory = UPath(f"{s3}/{uuid.uuid4().hex[:8]}/fold_models/1/sbert_dual_cl")
    seen, failures = race(directory, SAVES_PER_WRITER_S3)
    assert not failures, (
        f"{len(failures)} of {len(seen) + len(failures)} loads failed: {failures[:3]}"
    )
    assert len(seen) > 5 and len(set(seen)) > 2
    loaded = load_model(directory)
    assert (
        assert_self_consistent(loaded)
        == json.loads((artifacts.current_version(directory) / artifacts.CONFIG).read_bytes())[
            "value"
        ]
    )
