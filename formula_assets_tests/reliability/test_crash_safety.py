"""Crash safety of the data lake: `kill -9` mid-write and concurrent writers.

A child process writes Parquet files or model weights in a loop; the test kills it with
SIGKILL while a write is in flight, then checks that the final path holds a complete,
readable version (never a partial file) and that the next write succeeds and clears the
dead writer's temporary file.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from upath import UPath

from formula_assets.core import lake
from formula_assets.training.artifacts import load_model, save_model
from formula_assets_tests.reliability.crash_writer import model, table

BIG = 12_000_000  # rows / floats: ~100 MB, so a write is in flight long enough to kill


def writer(kind: str, target: Path, value: float, rows: int, times: int) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "formula_assets_tests.reliability.crash_writer",
            kind,
            str(target),
            str(value),
            str(rows),
            str(times),
        ],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )


def kill_mid_write(process: subprocess.Popen, folder: Path, timeout: float = 60) -> None:
    """SIGKILL the writer as soon as a temporary file of an unfinished write exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(lake.TMP_MARKER in p.name for p in folder.rglob("*")):
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            return
        if process.poll() is not None:
            break
        time.sleep(0.01)
    pytest.fail("no write in flight to interrupt")


@pytest.mark.slow
def test_kill_9_while_writing_parquet(tmp_path: Path) -> None:
    target = tmp_path / "lake" / "opt_graphs.parquet"
    lake.write_parquet_atomic(table(1.0, 10), UPath(target))
    process = writer("parquet", target, 2.0, BIG, 100)
    kill_mid_write(process, target.parent)
    assert process.returncode == -signal.SIGKILL
    stored = lake.read_parquet(UPath(target))  # complete and readable: the old or a new one
    assert stored.num_rows in (10, BIG)
    leftovers = [p for p in target.parent.iterdir() if lake.TMP_MARKER in p.name]
    assert leftovers and all(p.name.startswith(".") for p in leftovers)  # hidden, not final
    lake.write_parquet_atomic(table(3.0, 10), UPath(target))  # the next run succeeds
    assert lake.read_parquet(UPath(target))["value"].to_pylist() == [3.0] * 10
    assert [p.name for p in target.parent.iterdir()] == ["opt_graphs.parquet"]


@pytest.mark.slow
def test_kill_9_while_writing_model_weights(tmp_path: Path) -> None:
    directory = tmp_path / "lake" / "fold_models" / "1" / "sbert_dual_cl"
    save_model(model(1.0, 10), UPath(directory))
    process = writer("model", directory, 2.0, BIG, 100)
    kill_mid_write(process, directory)
    loaded = load_model(UPath(directory))  # the pointer still names a complete version
    assert float(loaded.state["w"][0]) in (1.0, 2.0)
    assert loaded.state["w"].numel() in (10, BIG)
    save_model(model(3.0, 10), UPath(directory))
    assert torch.equal(load_model(UPath(directory)).state["w"], torch.full((10,), 3.0))


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
    assert values in ({1.0}, {2.0})
    assert not [p for p in target.parent.rglob("*") if lake.TMP_MARKER in p.name]
