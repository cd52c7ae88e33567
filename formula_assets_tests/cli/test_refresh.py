"""`formula-assets refresh` when one of its worker processes dies mid-step."""

import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from formula_assets_tests.support.pipeline import CLI, ROOT, copy_pipeline


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def pool_workers(pid: int) -> list[int]:
    workers = []
    for child in children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in command:
            workers.append(child)
    return workers


@pytest.mark.slow
def test_a_killed_worker_fails_the_refresh_naming_the_step(materialized, tmp_path: Path) -> None:
    run = copy_pipeline(materialized[0], tmp_path)
    env = {**run.env, "FORMULA_ASSETS_PROFILE": "default"}  # new code version: retrain all
    out = (tmp_path / "refresh.out").open("w+")
    process = subprocess.Popen(
        [str(CLI), "refresh"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 300
    victim = None
    while victim is None and time.monotonic() < deadline:
        assert process.poll() is None, Path(out.name).read_text()[-3000:]
        started = "materializing fold_models[" in Path(out.name).read_text()
        workers = pool_workers(process.pid)
        if started and workers:
            time.sleep(2)  # well inside the training step
            victim = workers[0]
        else:
            time.sleep(0.2)
    assert victim is not None, "no training step to interrupt"
    os.kill(victim, signal.SIGKILL)
    returncode = process.wait(timeout=120)  # it must not hang
    output = Path(out.name).read_text()
    assert returncode == 1, output[-3000:]
    assert "a worker process died while running fold_models[" in output
    with dg.DagsterInstance.from_config(str(run.home)) as instance:
        left_running = instance.get_runs(
            filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])
        )
        assert left_running == []
    assert all(not Path(f"/proc/{w}").exists() for w in pool_workers(process.pid))
