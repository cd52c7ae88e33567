"""`formula-assets refresh` when one of its worker processes dies mid-step, and the guards of
its loop: a step still stale after two builds, the round limit, a job already being built."""

import itertools
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from formula_assets.cli.refresh import refresh
from formula_assets.cli.runs import RefreshError
from formula_assets.cli.worker import LocalRunner
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.semantics.sentence_model import observe_sentence_model as observe_job
from formula_assets.defs.semantics.sentence_model import sentence_model
from formula_assets_tests.support.models import copy_model, fine_tune_in_place
from formula_assets_tests.support.pipeline import CLI, ROOT, copy_pipeline
from formula_assets_tests.support.recorded_runs import a_run, dead_pid
from formula_assets_tests.support.sparql_server import FakeWdqs, is_list_query, is_probe_query


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


# ------------------------------------------------------------------- rounds, waits and failures


def test_a_refresh_builds_round_by_round_and_then_has_nothing_to_do(small) -> None:
    """The pull first; its three children only once it is fresh; a second refresh runs none."""
    defs, instance = small
    said: list[str] = []

    report = refresh(defs, instance, echo=said.append, runner=LocalRunner(1))

    assert report.rounds == 2
    assert report.ran[0] == "wikidata_formulae"
    assert sorted(report.ran[1:]) == ["concept_annotations", "opt_graphs, rejected_formulae"]
    assert [line for line in said if line.startswith("materializing")] == [
        "materializing wikidata_formulae",
        "materializing concept_annotations, opt_graphs, rejected_formulae",
    ]
    assert len([line for line in said if re.fullmatch(r"  done in \d+\.\d s", line)]) == 2
    assert report.seconds > 0
    again = refresh(defs, instance, echo=said.append, runner=LocalRunner(1))
    assert (again.rounds, again.ran) == (0, [])


def test_a_refresh_that_observes_first_records_the_probe(small) -> None:
    defs, instance = small
    said: list[str] = []

    refresh(defs, instance, echo=said.append, runner=LocalRunner(1), observe=True)

    assert "observing wikidata_probe" in said
    assert instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=1).records


def test_a_failed_observation_stops_the_refresh_before_any_build(
    small, sparql_server: FakeWdqs
) -> None:
    defs, instance = small
    sparql_server.fail(500, times=99, when=is_probe_query)

    with pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=lambda _line: None, runner=LocalRunner(1), observe=True)

    assert str(raised.value) == "observing wikidata_probe failed; the last good data is kept"
    assert not instance.fetch_materializations(dg.AssetKey("wikidata_formulae"), limit=1).records


def test_a_failed_run_stops_the_refresh_naming_it(small, sparql_server: FakeWdqs) -> None:
    defs, instance = small
    sparql_server.fail(500, times=99, when=is_list_query)

    with pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=lambda _line: None, runner=LocalRunner(1))

    assert str(raised.value) == "1 run(s) failed: wikidata_formulae; see their run logs in the UI"


def test_a_refresh_waits_for_the_run_building_its_step_reminding_now_and_then(small) -> None:
    """Another entry point's live run builds the pull; the refresh says so once, reminds at
    most every `remind_s`, and builds everything once that run has ended."""
    defs, instance = small
    other = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())

    def end_the_other_run() -> None:
        time.sleep(1.0)
        with dg.DagsterInstance.from_ref(instance.get_ref()) as elsewhere:
            elsewhere.report_run_canceled(elsewhere.get_run_by_id(other))

    ender = threading.Thread(target=end_the_other_run)
    ender.start()
    said: list[tuple[float, str]] = []
    try:
        report = refresh(
            defs,
            instance,
            echo=lambda line: said.append((time.perf_counter(), line)),
            runner=LocalRunner(1),
            poll_s=0.05,
            remind_s=0.25,
        )
    finally:
        ender.join()

    lines = [line for _, line in said]
    waiting = (
        f"waiting for run {other} (the UI or a dg/dagster command, started), "
        "which is already building wikidata_formulae"
    )
    assert lines.count(waiting) == 1
    reminder = re.compile(
        rf"  still waiting after \d+ s for {other}; "
        r"if it hangs, terminate it in the UI \(Runs\) and the refresh goes on"
    )
    times = [said[0][0]] + [at for at, line in said if reminder.fullmatch(line)]
    assert len(times) >= 2  # waited a second: at least one reminder
    assert all(later - earlier > 0.25 for earlier, later in itertools.pairwise(times))
    assert any(re.fullmatch(r"  waited \d+\.\d s; looking again", line) for line in lines)
    assert report.ran[0] == "wikidata_formulae" and report.rounds == 2


def test_a_refresh_says_nothing_of_observing_unless_asked(small) -> None:
    defs, instance = small
    said: list[str] = []
    started = time.perf_counter()

    report = refresh(defs, instance, echo=said.append, runner=LocalRunner(1))

    assert "observing wikidata_probe" not in said
    assert not instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=1).records
    assert 0 < report.seconds <= time.perf_counter() - started


def test_a_waiting_refresh_looks_again_only_every_poll(small) -> None:
    """The other run ends after 0.2 s; looking every second, the refresh waits a second."""
    defs, instance = small
    other = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())

    def end_the_other_run() -> None:
        time.sleep(0.2)
        with dg.DagsterInstance.from_ref(instance.get_ref()) as elsewhere:
            elsewhere.report_run_canceled(elsewhere.get_run_by_id(other))

    ender = threading.Thread(target=end_the_other_run)
    ender.start()
    said: list[str] = []
    try:
        refresh(defs, instance, echo=said.append, runner=LocalRunner(1), poll_s=1.0)
    finally:
        ender.join()

    [waited] = [float(m[1]) for line in said if (m := re.fullmatch(r"  waited (\S+) s; .*", line))]
    assert waited >= 1.0


def test_slots_a_dead_run_held_are_given_back_and_said(small) -> None:
    defs, instance = small
    storage = instance.event_log_storage
    storage.set_concurrency_slots("training", 1)
    gone = a_run(defs, instance, dg.DagsterRunStatus.STARTED, dead_pid())
    assert storage.claim_concurrency_slot("training", gone, "fold_models").is_claimed
    said: list[str] = []

    refresh(defs, instance, echo=said.append, runner=LocalRunner(1))

    assert f"freed the pool slots still held by run {gone}, which has ended" in said
    assert storage.get_concurrency_info("training").claimed_slots == []


def test_an_instance_without_a_training_limit_is_warned_about(small, tmp_path: Path) -> None:
    defs, _instance = small
    home_dir = tmp_path / "home"
    home_dir.mkdir()
    (home_dir / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    said: list[str] = []
    with dg.DagsterInstance.from_config(str(home_dir)) as instance:
        refresh(defs, instance, echo=said.append, runner=LocalRunner(1))

    [warning] = [line for line in said if line.startswith("warning: ")]
    assert "sets no limit for the `training` pool" in warning


FOLDS = dg.StaticPartitionsDefinition(["1", "2", "3"])


@dg.asset(partitions_def=FOLDS)
def per_fold(context: dg.AssetExecutionContext) -> pa.Table:
    return pa.table({"fold": [int(context.partition_key)]})


def test_partitions_are_counted_per_asset(tmp_path: Path) -> None:
    defs = dg.Definitions(
        assets=[per_fold], resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))}
    )
    said: list[str] = []
    with dg.instance_for_test() as instance:
        report = refresh(defs, instance, echo=said.append, workers=2, runner=LocalRunner(1))

    assert "materializing per_fold: 3 partition(s) in 2 process(es)" in said
    assert sorted(report.ran) == ["per_fold[1]", "per_fold[2]", "per_fold[3]"]
    assert not any(line.startswith("materializing per_fold,") for line in said)


# --- the sentence model is observed first, and only when its files changed ---------------------


def test_the_sentence_model_is_observed_when_new_or_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = copy_model(tmp_path / "model")
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(model))
    defs = dg.Definitions(assets=[sentence_model], jobs=[observe_job])
    said: list[str] = []
    with dg.instance_for_test() as instance:

        def observations() -> list[str]:
            records = instance.fetch_observations(dg.AssetKey("sentence_model"), limit=10).records
            return [r.asset_observation.data_version for r in records]

        refresh(defs, instance, echo=said.append, runner=LocalRunner(1))
        [first] = observations()
        refresh(defs, instance, echo=said.append, runner=LocalRunner(1))
        assert observations() == [first]  # the same files: no second observation
        assert not any("changed" in line for line in said)  # the first is no change

        fine_tune_in_place(model)
        refresh(defs, instance, echo=said.append, runner=LocalRunner(1))
        second, _ = observations()
        assert second != first
        assert (
            said[-1] == f"sentence_model changed ({first} → {second}): its files are not the same"
        )


@dg.observable_source_asset(name="sentence_model")
def broken_sentence_model() -> dg.ObserveResult:
    raise ValueError("the tokenizer file is unreadable")


def test_a_failed_model_observation_stops_the_refresh_with_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(copy_model(tmp_path / "model")))
    job = dg.define_asset_job("observe_sentence_model", selection=["sentence_model"])
    defs = dg.Definitions(assets=[broken_sentence_model], jobs=[job])
    with dg.instance_for_test() as instance, pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=lambda _line: None, runner=LocalRunner(1))

    assert str(raised.value) == (
        "observing sentence_model failed: ValueError: the tokenizer file is unreadable; "
        "the last good data is kept"
    )


def test_a_model_that_cannot_be_identified_stops_the_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(tmp_path / "nowhere"))
    defs = dg.Definitions(assets=[sentence_model], jobs=[observe_job])
    with dg.instance_for_test() as instance, pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=lambda _line: None, runner=LocalRunner(1))

    assert str(raised.value).startswith("the sentence model cannot be identified: ")
