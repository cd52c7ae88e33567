"""The `training` pool of the project's instance: limited to this machine by `formula-assets
home`, for every executor, and never blocked for good by slots that dead runs held."""

import os
import subprocess
from contextlib import ExitStack
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext

from formula_assets.cli import home
from formula_assets.cli.pools import ensure_training_pool, free_slots_of_ended_runs
from formula_assets_tests.support.pipeline import CLI
from formula_assets_tests.support.recorded_runs import a_run, dead_pid


def test_the_project_instance_holds_training_to_the_machine(tmp_path: Path) -> None:
    dagster_home = tmp_path / "dagster_home"
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home)}
    subprocess.run([str(CLI), "home"], env=env, check=True, capture_output=True)
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        info = instance.event_log_storage.get_concurrency_info("training")
        slots = info.slot_count  # stored by `home`, before any run claims it
        assert 1 <= slots <= len(os.sched_getaffinity(0)), slots
        assert slots == home.training_slots()
        assert instance.get_concurrency_config().pool_config.default_pool_limit == slots
        # Every executor claims a pool slot per step through this context: the in-process
        # one of `formula-assets refresh` and the multiprocess one of runs from the sensor and
        # the UI. One step more than the limit waits.
        with ExitStack() as stack:
            runs = [
                dg.DagsterRun(job_name="fold_models", run_id=f"run{n}") for n in range(slots + 1)
            ]
            contexts = [stack.enter_context(InstanceConcurrencyContext(instance, r)) for r in runs]
            claims = [context.claim("training", "fold_models") for context in contexts]
        assert claims == [True] * slots + [False]


def test_training_slots_follow_cores_and_memory() -> None:
    gib = 2**30
    assert home.training_slots(cpus=2, memory=23 * gib) == 2
    assert home.training_slots(cpus=16, memory=4 * gib) == 4  # memory-bound
    assert home.training_slots(cpus=1, memory=gib // 2) == 1  # never below one
    assert home.training_slots(cpus=8, memory=0) == 8  # memory unknown


def test_home_replaces_only_the_files_it_wrote_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # `ensure_dagster_home` points it away
    old, previous, own = tmp_path / "old", tmp_path / "previous", tmp_path / "own"
    for folder, text in (
        (old, home.LEGACY_INSTANCE_YAML),
        (previous, home.instance_yaml(home.PREVIOUS_INSTANCE_YAML)),
        (own, "telemetry: {enabled: false}\n"),
    ):
        folder.mkdir()
        (folder / "dagster.yaml").write_text(text)
        home.ensure_dagster_home(folder)
    for folder in (old, previous):
        assert (folder / "dagster.yaml").read_text() == home.instance_yaml()
        with dg.DagsterInstance.from_config(str(folder)) as instance:
            assert instance.global_op_concurrency_default_limit == home.training_slots()
            assert instance.run_coordinator.dequeue_interval_seconds == 1
    assert (own / "dagster.yaml").read_text() == "telemetry: {enabled: false}\n"
    with dg.DagsterInstance.from_config(str(own)) as instance:
        warning = ensure_training_pool(instance)
    assert warning and "sets no limit for the `training` pool" in warning


def test_slots_held_by_dead_runs_are_given_back(small) -> None:
    defs, instance = small
    storage = instance.event_log_storage
    storage.set_concurrency_slots("training", 2)
    alive = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    gone = a_run(defs, instance, dg.DagsterRunStatus.STARTED, dead_pid())
    for run_id in (alive, gone):
        assert storage.claim_concurrency_slot("training", run_id, "fold_models").is_claimed
    assert free_slots_of_ended_runs(instance) == [gone]
    assert instance.get_run_by_id(gone).status == dg.DagsterRunStatus.FAILURE
    assert [s.run_id for s in storage.get_concurrency_info("training").claimed_slots] == [alive]


def test_the_pool_is_stored_with_the_instances_limit_before_any_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process (the `home` command above runs in another, where a change to this
    module would not show): the run queue holds runs back only for pools in storage."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # `ensure_dagster_home` points it away
    folder = home.ensure_dagster_home(tmp_path / "home")
    with dg.DagsterInstance.from_config(str(folder)) as instance:
        storage = instance.event_log_storage
        assert "training" not in storage.get_concurrency_keys()
        assert ensure_training_pool(instance) is None
        assert storage.get_concurrency_info("training").slot_count == home.training_slots()
        storage.set_concurrency_slots("training", 7)  # set by hand later: kept
        assert ensure_training_pool(instance) is None
        assert storage.get_concurrency_info("training").slot_count == 7


def test_an_instance_without_pools_has_nothing_to_set_or_free() -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        assert not instance.event_log_storage.supports_global_concurrency_limits
        assert ensure_training_pool(instance) is None
        assert free_slots_of_ended_runs(instance) == []


def test_slots_of_ended_and_unknown_runs_are_given_back_and_queued_ones_kept(small) -> None:
    defs, instance = small
    storage = instance.event_log_storage
    storage.set_concurrency_slots("training", 3)
    ended = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    instance.report_run_failed(instance.get_run_by_id(ended), "it ended")
    queued = a_run(defs, instance, dg.DagsterRunStatus.QUEUED, dead_pid())
    for run_id in (ended, queued, "a-run-no-longer-recorded"):
        assert storage.claim_concurrency_slot("training", run_id, "fold_models").is_claimed
    assert free_slots_of_ended_runs(instance) == sorted([ended, "a-run-no-longer-recorded"])
    assert [s.run_id for s in storage.get_concurrency_info("training").claimed_slots] == [queued]
    assert instance.get_run_by_id(queued).status == dg.DagsterRunStatus.QUEUED
