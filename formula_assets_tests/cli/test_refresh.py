"""`formula-assets refresh` when one of its worker processes dies mid-step, and the guards of
its loop: a step still stale after two builds, the round limit, a job already being built."""

import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.cli.refresh import refresh
from formula_assets.cli.runs import Job, RefreshError
from formula_assets.cli.worker import LocalRunner, materialize_here
from formula_assets_tests.support.pipeline import CLI, ROOT, copy_pipeline
from formula_assets_tests.support.recorded_runs import a_run


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


# ------------------------------------------------------------------- the loop's own guards


class BuildsNothing:
    """An engine whose runs all report success and change nothing (a broken deployment)."""

    def __init__(self) -> None:
        self.rounds: list[list[str]] = []

    def plan(self, defs, frontier):
        return LocalRunner(1).plan(defs, frontier)

    def run(self, defs, instance, jobs, echo):
        self.rounds.append([str(job) for job in jobs])
        return []


def test_a_step_still_stale_after_two_builds_stops_the_refresh(small) -> None:
    defs, instance = small
    runner = BuildsNothing()
    with pytest.raises(RefreshError, match="still stale after being rebuilt twice: wikidata_formu"):
        refresh(defs, instance, echo=lambda _line: None, runner=runner)
    assert runner.rounds == [["wikidata_formulae"], ["wikidata_formulae"]]


def test_max_rounds_bounds_the_rounds_a_refresh_runs(small) -> None:
    defs, instance = small
    said: list[str] = []
    with pytest.raises(RefreshError, match="not fresh after 1 rounds"):
        refresh(defs, instance, echo=said.append, max_rounds=1, runner=LocalRunner(1))
    assert "materializing wikidata_formulae" in said
    assert not any("opt_graphs" in line for line in said)  # round 2 never began
    # what is left (the children) takes one round more, which a new refresh may run
    report = refresh(defs, instance, echo=said.append, max_rounds=1, runner=LocalRunner(1))
    assert report.rounds == 1
    assert sorted(report.ran) == ["concept_annotations", "opt_graphs, rejected_formulae"]


def test_a_worker_leaves_a_job_to_the_run_already_building_it(small) -> None:
    """By the time a worker reaches a job, another entry point may have started it: the
    worker says who builds it and starts no second run."""
    defs, instance = small
    other = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    said: list[str] = []
    assert materialize_here(defs, instance, Job(("wikidata_formulae",)), said.append)
    assert said == [
        f"leaving wikidata_formulae to run {other} (the UI or a dg/dagster command, started), "
        "which has started building it"
    ]
    assert [r.run_id for r in instance.get_runs()] == [other]
