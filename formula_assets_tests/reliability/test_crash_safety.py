"""Crash safety of the data lake: `kill -9` at every step of a model save, at random moments
of large writes, and concurrent writers.

A child process (`support/crash_writer.py`) writes Parquet files or models; the test kills it with
SIGKILL, then checks that a reader sees one complete version — the old one or the new one,
never a mixture — that the `CURRENT` pointer only ever names a complete version, and that the
next write succeeds and clears the dead writer's debris.
"""

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch
from upath import UPath

from formula_assets.core import lake
from formula_assets.training import artifacts
from formula_assets.training.artifacts import load_model, save_model
from formula_assets_tests.support.crash_writer import model, table, write

ROOT = Path(__file__).resolve().parents[2]
BIG = 12_000_000  # rows / floats: ~100 MB, so a write lasts long enough to be interrupted


def writer(kind: str, target: Path, value: float, rows: int, times: int, *extra: str):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "formula_assets_tests.support.crash_writer",
            kind,
            str(target),
            str(value),
            str(rows),
            str(times),
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def assert_one_complete_model(directory: Path, versions: dict[float, int]) -> float:
    """The pointer names a complete version whose every file belongs to the same save."""
    current = directory / (directory / artifacts.POINTER).read_text().strip()
    assert (current / artifacts.CONFIG).exists(), "the pointer names an incomplete version"
    loaded = load_model(UPath(directory))
    value = float(loaded.description.extra["value"])
    assert value in versions
    assert loaded.state["w"].numel() == versions[value]
    assert torch.all(loaded.state["w"] == value)
    assert loaded.history == [{"epoch": 1.0, "value": value}]
    assert loaded.embeddings is not None and loaded.embeddings["value"].to_pylist() == [value]
    return value


def test_a_model_save_killed_at_any_step_leaves_one_complete_version(tmp_path: Path) -> None:
    directory = tmp_path / "lake" / "fold_models" / "1" / "sbert_dual_cl"
    counting = writer("model", tmp_path / "count", 2.0, 20, 1, "--count")
    out, _ = counting.communicate(timeout=120)
    steps = int(out.split("steps")[1])
    assert steps == 5 * 5 + 1  # five files (weights … config, then the pointer), the prune
    new_from = steps - 2  # from just after the pointer's rename, the new version is current
    # the 26 writers are forked from this process (a new interpreter each would spend most of
    # the test importing torch); the counting writer above ran as the others do, on its own
    fork = multiprocessing.get_context("fork")
    for step in range(steps):
        save_model(model(1.0, 10), UPath(directory))
        process = fork.Process(target=write, args=("model", str(directory), 2.0, 20, 1, step))
        process.start()
        process.join(timeout=120)
        assert process.exitcode == -signal.SIGKILL, step
        value = assert_one_complete_model(directory, {1.0: 10, 2.0: 20})
        assert (value == 2.0) == (step >= new_from), step
        save_model(model(3.0, 5), UPath(directory))  # the next save works and cleans up
        assert assert_one_complete_model(directory, {3.0: 5}) == 3.0
        leftovers = [
            p
            for p in directory.rglob("*")
            if lake.TMP_MARKER in p.name or (p.is_dir() and not (p / artifacts.CONFIG).exists())
        ]
        assert leftovers == [], step


def kill_at_random(process: subprocess.Popen, folder: Path, rng: random.Random) -> None:
    """SIGKILL the writer at a random moment of a write (from its first temporary file on)."""
    deadline = time.monotonic() + 60
    while not any(lake.TMP_MARKER in p.name for p in folder.rglob("*")):
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail("no write in flight to interrupt")
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 1.5))  # a write of ~100 MB takes about a second here
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@pytest.mark.slow
def test_kill_9_at_random_moments_while_writing_parquet(tmp_path: Path) -> None:
    target = tmp_path / "lake" / "opt_graphs.parquet"
    rng = random.Random(7)
    for _ in range(8):
        lake.write_parquet_atomic(table(1.0, 10), UPath(target))
        process = writer("parquet", target, 2.0, BIG, 100)
        kill_at_random(process, target.parent, rng)
        assert process.returncode == -signal.SIGKILL
        stored = lake.read_parquet(UPath(target))  # complete and readable: old or new
        assert stored.num_rows in (10, BIG)
        assert set(stored["value"].to_pylist()[:10]) == ({1.0} if stored.num_rows == 10 else {2.0})
    lake.write_parquet_atomic(table(3.0, 10), UPath(target))  # the next run succeeds
    assert lake.read_parquet(UPath(target))["value"].to_pylist() == [3.0] * 10
    assert [p.name for p in target.parent.iterdir()] == ["opt_graphs.parquet"]


@pytest.mark.slow
def test_kill_9_at_random_moments_while_saving_a_model(tmp_path: Path) -> None:
    directory = tmp_path / "lake" / "fold_models" / "1" / "sbert_dual_cl"
    rng = random.Random(11)
    save_model(model(1.0, 10), UPath(directory))
    for _ in range(6):
        process = writer("model", directory, 2.0, BIG, 100)
        kill_at_random(process, directory, rng)
        assert_one_complete_model(directory, {1.0: 10, 2.0: BIG})
    save_model(model(3.0, 10), UPath(directory))
    assert torch.equal(load_model(UPath(directory)).state["w"], torch.full((10,), 3.0))


def test_another_hosts_unfinished_version_is_never_pruned(tmp_path: Path) -> None:
    directory = tmp_path / "model"
    save_model(model(1.0, 4), UPath(directory))
    foreign = directory / f"v-{time.time_ns():020d}-other-host~{os.getpid()}~{uuid.uuid4().hex}"
    foreign.mkdir()
    (foreign / artifacts.WEIGHTS).write_bytes(b"in flight on another host")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = directory / f"v-{time.time_ns():020d}-{lake.HOST}~{dead.pid}~{uuid.uuid4().hex}"
    mine.mkdir()
    for _ in range(3):
        save_model(model(2.0, 4), UPath(directory))
    assert foreign.exists()  # another host's writer may still be running
    assert not mine.exists()  # a dead writer of this host left debris: removed
    complete = [p for p in directory.iterdir() if (p / artifacts.CONFIG).exists()]
    assert len(complete) == artifacts.KEEP_VERSIONS


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["parquet", "model"])
def test_concurrent_writers_leave_one_complete_version(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "lake" / ("asset.parquet" if kind == "parquet" else "model")
    writers = [writer(kind, target, value, 200_000, 15) for value in (1.0, 2.0)]
    for process in writers:
        process.wait(timeout=300)
        assert process.returncode == 0
    if kind == "parquet":
        values = set(lake.read_parquet(UPath(target))["value"].to_pylist())
    else:
        values = set(np.unique(load_model(UPath(target)).state["w"].numpy()).tolist())
        # the version every reader resolves: the pointer's, or — when the slower writer set the
        # pointer after the faster one had pruned that version — the newest complete one
        current = artifacts.current_version(UPath(target))
        config = json.loads((current / artifacts.CONFIG).read_text())
        assert {float(config["value"])} == values
    assert values in ({1.0}, {2.0})
    assert not [p for p in target.parent.rglob("*") if lake.TMP_MARKER in p.name]
