"""`formula-assets refresh`: its rounds, the guards of its loop (a step still stale after two
builds, the round limit), waiting for another entry point's run, the pool slots and warnings it
starts with, observing first, and a worker process that dies mid-step.

Most tests build a few assets of their own and drive the loop with a runner that records what
it is given (a look at the staleness of the project's graph costs seconds); the waits run on a
clock of the test's own. The last ones refresh real assets of the project."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import dagster as dg
import pytest

import formula_assets.cli.refresh as refresh_module
from formula_assets.cli.refresh import refresh
from formula_assets.cli.runs import Job, Print, RefreshError
from formula_assets.cli.worker import LocalRunner
from formula_assets.defs.plan import Entry, Target
from formula_assets.defs.semantics.sentence_model import observe_sentence_model as observe_job
from formula_assets.defs.semantics.sentence_model import sentence_model
from formula_assets.semantics.models import packaged_default_path
from formula_assets_tests.support.models import copy_model, fine_tune_in_place
from formula_assets_tests.support.pipeline import CLI, ROOT, copy_pipeline
from formula_assets_tests.support.recorded_runs import a_run, dead_pid

# ------------------------------------------------------------------- a few assets of the test's own


@dg.asset
def formulae() -> dg.MaterializeResult:
    return dg.MaterializeResult()


@dg.multi_asset(
    specs=[dg.AssetSpec("graphs", deps=[formulae]), dg.AssetSpec("rejected", deps=[formulae])]
)
def parse() -> Iterator[dg.MaterializeResult]:
    """One step, two assets (as the project's parse): one job."""
    yield dg.MaterializeResult(asset_key="graphs")
    yield dg.MaterializeResult(asset_key="rejected")


@dg.asset(deps=[formulae])
def texts() -> dg.MaterializeResult:
    return dg.MaterializeResult()


@dg.asset
def labels() -> dg.MaterializeResult:
    return dg.MaterializeResult()


@dg.asset
def broken() -> None:
    raise ValueError("the source is unreachable")


@dg.observable_source_asset(name="wikidata_probe")
def probe() -> dg.ObserveResult:
    return dg.ObserveResult(data_version=dg.DataVersion("1758 formulae"))


@dg.observable_source_asset(name="wikidata_probe")
def failing_probe() -> dg.ObserveResult:
    raise ConnectionError("the query service answered 500")


def observe_wikidata() -> dg.UnresolvedAssetJobDefinition:
    return dg.define_asset_job("observe_wikidata", selection=["wikidata_probe"])


FOLDS = dg.StaticPartitionsDefinition(["1", "2", "3"])
ONE = dg.StaticPartitionsDefinition(["all"])


@dg.asset(partitions_def=FOLDS)
def per_fold() -> dg.MaterializeResult:
    return dg.MaterializeResult()


@dg.asset(partitions_def=ONE)
def per_corpus() -> dg.MaterializeResult:
    return dg.MaterializeResult()


PIPELINE = dg.Definitions(assets=[formulae, parse, texts])
FORMULAE = dg.AssetKey("formulae")


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:
        yield instance


def quiet(_line: str) -> None: ...


class Recording:
    """A runner whose runs all succeed and build nothing (a broken deployment): it records the
    jobs of each round. It fails the test when a refresh plans round after round (a loop that
    would never end)."""

    def __init__(self, max_plans: int = 60) -> None:
        self.rounds: list[list[str]] = []
        self.expected: list[list[str]] = []  # what each round was told lies ahead
        self.plans = 0
        self.max_plans = max_plans

    def plan(self, defs: dg.Definitions, frontier: Sequence[Entry]) -> list[Job]:
        self.plans += 1
        if self.plans > self.max_plans:
            raise AssertionError(f"the refresh planned {self.max_plans} rounds and goes on")
        return LocalRunner(1).plan(defs, frontier)

    def expect(self, defs: dg.Definitions, entries: Sequence[Entry]) -> None:
        self.expected.append(sorted(str(entry.target) for entry in entries))

    def run(
        self, defs: dg.Definitions, instance: dg.DagsterInstance, jobs: list[Job], echo: Print
    ) -> list[Job]:
        self.rounds.append([str(job) for job in jobs])
        return []


class MarksBuilt(Recording):
    """Records each job's assets as materialized (an event, no run): to Dagster they are then
    fresh, as after a run, at a fraction of its cost."""

    def run(
        self, defs: dg.Definitions, instance: dg.DagsterInstance, jobs: list[Job], echo: Print
    ) -> list[Job]:
        super().run(defs, instance, jobs, echo)
        for job in jobs:
            for key in job.asset_keys:
                event = dg.AssetMaterialization(key, partition=job.partition)
                instance.report_runless_asset_event(event)
        return []


class Clock:
    """Stands in for the `time` module of the refresh: a sleep passes at once, moves the clock
    on by its length and does what the test scheduled for then (seconds after the start). It
    fails the test when the refresh reads it again and again without sleeping (a busy wait)."""

    def __init__(self, schedule: dict[float, Callable[[], None]]) -> None:
        self.now = self.start = 1000.0
        self.sleeps: list[float] = []
        self.schedule = sorted(schedule.items())
        self.reads = 0

    def perf_counter(self) -> float:
        self.reads += 1
        if self.reads > 100:
            raise AssertionError("the refresh reads the clock again and again without sleeping")
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.reads = 0
        self.now += seconds
        while self.schedule and self.schedule[0][0] <= self.now - self.start:
            self.schedule.pop(0)[1]()


def ended(instance: dg.DagsterInstance, run_id: str) -> Callable[[], None]:
    return lambda: instance.report_run_canceled(instance.get_run_by_id(run_id))


def lines_like(pattern: str, lines: list[str]) -> list[str]:
    return [line for line in lines if re.fullmatch(pattern, line)]


# ------------------------------------------------------------------- the loop's own guards


def test_a_step_still_stale_after_two_builds_stops_the_refresh(instance) -> None:
    runner = Recording()
    with pytest.raises(RefreshError) as raised:
        refresh(PIPELINE, instance, echo=quiet, runner=runner)

    assert (
        str(raised.value) == "still stale after being rebuilt twice: formulae (never materialized)"
    )
    assert runner.rounds == [["formulae"], ["formulae"]]
    # told at each look everything stale or missing, the steps below the frontier included
    assert len(runner.expected) == 3  # the third look finds formulae stale still, and stops
    assert all(e == ["formulae", "graphs", "rejected", "texts"] for e in runner.expected)


def test_max_rounds_bounds_the_rounds_of_one_refresh(instance) -> None:
    said: list[str] = []
    runner = MarksBuilt()
    with pytest.raises(RefreshError, match=r"^not fresh after 1 rounds$"):
        refresh(PIPELINE, instance, echo=said.append, max_rounds=1, runner=runner)
    assert runner.rounds == [["formulae"]]  # round 2 never began
    assert not any("graphs" in line for line in said)
    # what is left (the children) takes one round more, which a new refresh may run
    report = refresh(PIPELINE, instance, echo=said.append, max_rounds=1, runner=runner)
    assert (report.rounds, sorted(report.ran)) == (1, ["graphs, rejected", "texts"])


SIXTY = dg.StaticPartitionsDefinition([str(n) for n in range(60)])


@dg.asset(partitions_def=SIXTY)
def unsettled() -> None: ...


def test_a_refresh_that_keeps_finding_new_work_stops_after_fifty_rounds(
    instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each look finds another partition stale (a graph that never settles): by default the
    refresh gives up after 50 rounds. (Staleness is scripted: a real graph that needs 51 rounds
    takes minutes to look at.)"""
    looks = itertools.count()

    def another_partition(_defs: dg.Definitions, _instance: dg.DagsterInstance) -> list[Entry]:
        partition = str(next(looks))
        return [Entry(Target(dg.AssetKey("unsettled"), partition), "STALE", ("it changed",))]

    monkeypatch.setattr(refresh_module, "stale_entries", another_partition)
    runner = Recording()
    with pytest.raises(RefreshError, match=r"^not fresh after 50 rounds$"):
        refresh(dg.Definitions(assets=[unsettled]), instance, echo=quiet, runner=runner)
    assert len(runner.rounds) == 50


# ------------------------------------------------------------------- rounds


def test_a_refresh_builds_round_by_round_and_then_has_nothing_to_do(instance) -> None:
    """The root first; its children (one of them a step of two assets) only once it is fresh;
    a second refresh runs nothing."""
    said: list[str] = []
    started = time.perf_counter()

    report = refresh(PIPELINE, instance, echo=said.append, workers=1)  # its own local runner

    assert report.rounds == 2
    assert report.ran[0] == "formulae"
    assert sorted(report.ran[1:]) == ["graphs, rejected", "texts"]
    assert [line for line in said if line.startswith("materializing")] == [
        "materializing formulae",
        "materializing graphs, rejected, texts",
    ]
    assert len(lines_like(r"  done in \d+\.\d s", said)) == 2
    assert 0 < report.seconds <= time.perf_counter() - started
    assert {run.tags["formula_assets/refresh_job"] for run in instance.get_runs()} == {
        "formulae",
        "graphs, rejected",
        "texts",
    }
    again = refresh(PIPELINE, instance, echo=said.append, runner=LocalRunner(1))
    assert (again.rounds, again.ran) == (0, [])


def chain(top: str, bottom: str) -> dg.Definitions:
    """top → middle → bottom, with the code versions of the ends given."""

    @dg.asset(name="top", code_version=top)
    def top_asset() -> dg.MaterializeResult:
        return dg.MaterializeResult()

    @dg.asset(name="middle", deps=["top"], code_version="1")
    def middle_asset() -> dg.MaterializeResult:
        return dg.MaterializeResult()

    @dg.asset(name="bottom", deps=["middle"], code_version=bottom)
    def bottom_asset() -> dg.MaterializeResult:
        return dg.MaterializeResult()

    return dg.Definitions(assets=[top_asset, middle_asset, bottom_asset])


def test_a_step_stale_below_a_rebuilt_ancestor_waits_for_it_and_runs_once(instance) -> None:
    """`bottom`'s own code changed and so did `top`'s: `bottom` is stale at once, but `middle`
    only once `top` is rebuilt. Run in the first round it would run again in the third (as the
    annotation audit did after a parser change)."""
    refresh(chain("1", "1"), instance, echo=quiet, runner=LocalRunner(1))
    said: list[str] = []
    report = refresh(chain("2", "2"), instance, echo=said.append, runner=LocalRunner(1))
    assert report.ran == ["top", "middle", "bottom"]
    assert [line for line in said if line.startswith("materializing")] == [
        "materializing top",
        "materializing middle",
        "materializing bottom",
    ]


def test_partitions_are_counted_per_asset_beside_whole_assets(instance) -> None:
    """By default in two processes, as the command line's `--workers`; never more than the
    partitions."""
    defs = dg.Definitions(assets=[per_fold, per_corpus, labels])
    said: list[str] = []

    report = refresh(defs, instance, echo=said.append, runner=MarksBuilt())

    materializing = [line for line in said if line.startswith("materializing")]
    assert materializing[0] == "materializing labels"
    assert sorted(materializing[1:]) == [
        "materializing per_corpus: 1 partition(s) in 1 process(es)",
        "materializing per_fold: 3 partition(s) in 2 process(es)",
    ]
    assert sorted(report.ran) == [
        "labels",
        "per_corpus[all]",
        "per_fold[1]",
        "per_fold[2]",
        "per_fold[3]",
    ]


def test_a_failed_run_stops_the_refresh_naming_it(instance) -> None:
    defs = dg.Definitions(assets=[broken, labels])

    with pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=quiet, runner=LocalRunner(1))

    assert str(raised.value) == "1 run(s) failed: broken; see their run logs in the UI"


# ------------------------------------------------------------------- waiting for another run


def test_a_waiting_refresh_looks_again_every_poll_and_reminds_only_after_remind_s(
    instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another entry point's live run builds the root for 10 s. The refresh says so once,
    looks again every second, reminds once more than 3 s have passed since the last time, and
    builds the root once that run has ended."""
    other = a_run(PIPELINE, instance, dg.DagsterRunStatus.STARTED, os.getpid(), FORMULAE)
    clock = Clock({10: ended(instance, other)})
    monkeypatch.setattr(refresh_module, "time", clock)
    said: list[str] = []

    report = refresh(
        PIPELINE, instance, echo=said.append, runner=MarksBuilt(), poll_s=1.0, remind_s=3.0
    )

    waiting = (
        f"waiting for run {other} (the UI or a dg/dagster command, started), "
        "which is already building formulae"
    )
    reminder = (
        "  still waiting after {} s for " + other + "; "
        "if it hangs, terminate it in the UI (Runs) and the refresh goes on"
    )
    assert said.count(waiting) == 1
    assert lines_like(r"  still waiting .*", said) == [reminder.format(4), reminder.format(8)]
    assert "  waited 10.0 s; looking again" in said
    assert clock.sleeps == [1.0] * 10
    assert report.ran[0] == "formulae"
    assert said.index(waiting) < said.index("materializing formulae")


def test_a_refresh_builds_what_is_free_at_once_and_waits_for_the_rest(
    instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root is being built elsewhere (for 3 s); a step beside it is free. The refresh says
    at once what it leaves to the other run, builds the free step meanwhile, then waits,
    looking every 2 s by default, and builds the root's children last."""
    defs = dg.Definitions(assets=[formulae, parse, texts, labels])
    other = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid(), FORMULAE)
    clock = Clock({3: ended(instance, other)})
    monkeypatch.setattr(refresh_module, "time", clock)
    said: list[str] = []

    report = refresh(defs, instance, echo=said.append, runner=MarksBuilt())

    waiting = next(line for line in said if line.startswith("waiting for"))
    assert waiting.endswith(
        f"{other} (the UI or a dg/dagster command, started), which is already building formulae"
    )
    assert said.index(waiting) < said.index("materializing labels")
    assert clock.sleeps == [2.0, 2.0]
    assert "  waited 4.0 s; looking again" in said
    assert report.ran[:2] == ["labels", "formulae"]
    assert report.rounds == 3


def test_a_run_that_takes_over_the_step_while_the_refresh_waits_is_named_too(
    instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = a_run(PIPELINE, instance, dg.DagsterRunStatus.STARTED, os.getpid(), FORMULAE)
    second: list[str] = []

    def hand_over() -> None:
        ended(instance, first)()
        second.append(a_run(PIPELINE, instance, dg.DagsterRunStatus.STARTED, os.getpid(), FORMULAE))

    clock = Clock({1: hand_over, 2: lambda: ended(instance, second[0])()})
    monkeypatch.setattr(refresh_module, "time", clock)
    said: list[str] = []

    refresh(PIPELINE, instance, echo=said.append, runner=MarksBuilt(), poll_s=1.0)

    assert [line.split()[3] for line in said if line.startswith("waiting for")] == [
        first,
        second[0],
    ]
    assert "  waited 2.0 s; looking again" in said


def test_by_default_a_waiting_refresh_reminds_every_five_minutes(
    instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = a_run(PIPELINE, instance, dg.DagsterRunStatus.STARTED, os.getpid(), FORMULAE)
    clock = Clock({700: ended(instance, other)})
    monkeypatch.setattr(refresh_module, "time", clock)
    said: list[str] = []

    refresh(PIPELINE, instance, echo=said.append, runner=MarksBuilt(), poll_s=100.0)

    assert [line.split(";")[0] for line in lines_like(r"  still waiting .*", said)] == [
        f"  still waiting after 400 s for {other}"
    ]


# ------------------------------------------------------------------- before the first round


def test_slots_a_dead_run_held_are_given_back_and_said(instance) -> None:
    storage = instance.event_log_storage
    storage.set_concurrency_slots("training", 1)
    gone = a_run(PIPELINE, instance, dg.DagsterRunStatus.STARTED, dead_pid(), FORMULAE)
    assert storage.claim_concurrency_slot("training", gone, "fold_models").is_claimed
    said: list[str] = []

    refresh(PIPELINE, instance, echo=said.append, runner=MarksBuilt())

    assert f"freed the pool slots still held by run {gone}, which has ended" in said
    assert storage.get_concurrency_info("training").claimed_slots == []


def test_an_instance_without_a_training_limit_is_warned_about(tmp_path: Path) -> None:
    home_dir = tmp_path / "home"
    home_dir.mkdir()
    (home_dir / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    said: list[str] = []
    with dg.DagsterInstance.from_config(str(home_dir)) as instance:
        refresh(PIPELINE, instance, echo=said.append, runner=MarksBuilt())

    [warning] = [line for line in said if line.startswith("warning: ")]
    assert "sets no limit for the `training` pool" in warning


def test_a_refresh_that_observes_first_records_the_probe(instance) -> None:
    defs = dg.Definitions(assets=[probe, formulae], jobs=[observe_wikidata()])
    said: list[str] = []

    refresh(defs, instance, echo=said.append, runner=MarksBuilt(), observe_probe=True)

    assert said.index("observing wikidata_probe") < said.index("materializing formulae")
    [record] = instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=2).records
    assert record.asset_observation.data_version == "1758 formulae"


def test_a_refresh_observes_nothing_unless_asked(instance) -> None:
    defs = dg.Definitions(assets=[probe, formulae], jobs=[observe_wikidata()])
    said: list[str] = []

    refresh(defs, instance, echo=said.append, runner=MarksBuilt())

    assert "observing wikidata_probe" not in said
    assert not instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=1).records


def test_a_failed_observation_stops_the_refresh_before_any_build(instance) -> None:
    defs = dg.Definitions(assets=[failing_probe, formulae], jobs=[observe_wikidata()])
    runner = MarksBuilt()

    with pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=quiet, runner=runner, observe_probe=True)

    assert str(raised.value) == "observing wikidata_probe failed; the last good data is kept"
    assert runner.rounds == []


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
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(packaged_default_path()))
    job = dg.define_asset_job("observe_sentence_model", selection=["sentence_model"])
    defs = dg.Definitions(assets=[broken_sentence_model], jobs=[job])
    with dg.instance_for_test() as instance, pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=quiet, runner=LocalRunner(1))

    assert str(raised.value) == (
        "observing sentence_model failed: ValueError: the tokenizer file is unreadable; "
        "the last good data is kept"
    )


class Unopenable(dg.ConfigurableResource):
    """A resource that cannot start: the run fails before any step does."""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        raise OSError("the model cache is not mounted")


@dg.observable_source_asset(name="sentence_model")
def unstartable_sentence_model(cache: Unopenable) -> dg.ObserveResult:
    return dg.ObserveResult()


def test_a_model_observation_that_fails_before_its_step_points_to_the_run_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(packaged_default_path()))
    job = dg.define_asset_job("observe_sentence_model", selection=["sentence_model"])
    defs = dg.Definitions(
        assets=[unstartable_sentence_model], jobs=[job], resources={"cache": Unopenable()}
    )
    with dg.instance_for_test() as instance, pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=quiet, runner=LocalRunner(1))

    assert str(raised.value) == (
        "observing sentence_model failed: see the run log in the UI; the last good data is kept"
    )


def test_a_model_that_cannot_be_identified_stops_the_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(tmp_path / "nowhere"))
    defs = dg.Definitions(assets=[sentence_model], jobs=[observe_job])
    with dg.instance_for_test() as instance, pytest.raises(RefreshError) as raised:
        refresh(defs, instance, echo=quiet, runner=LocalRunner(1))

    assert str(raised.value).startswith("the sentence model cannot be identified: ")


# ------------------------------------------------------------------- on real time and real assets


def test_a_refresh_waits_in_real_time_for_a_run_another_process_ends(instance) -> None:
    """The other run is ended through another connection to the instance, a second after
    the refresh says it waits for it (so a slow start under load cannot shorten the wait):
    the refresh sees it, reminding (at most every `remind_s`) meanwhile, then builds."""
    other = a_run(PIPELINE, instance, dg.DagsterRunStatus.STARTED, os.getpid(), FORMULAE)
    waiting = threading.Event()

    def end_the_other_run() -> None:
        waiting.wait(timeout=60)
        time.sleep(1.0)
        with dg.DagsterInstance.from_ref(instance.get_ref()) as elsewhere:
            elsewhere.report_run_canceled(elsewhere.get_run_by_id(other))

    def echo(line: str) -> None:
        said.append((time.perf_counter(), line))
        if line.startswith("waiting for"):  # said once the wait has begun
            waiting.set()

    ender = threading.Thread(target=end_the_other_run)
    ender.start()
    said: list[tuple[float, str]] = []
    try:
        report = refresh(
            PIPELINE,
            instance,
            echo=echo,
            runner=LocalRunner(1),
            poll_s=0.05,
            remind_s=0.25,
        )
    finally:
        ender.join()

    lines = [line for _, line in said]
    reminder = re.compile(rf"  still waiting after \d+ s for {other}; .*")
    times = [said[0][0]] + [at for at, line in said if reminder.fullmatch(line)]
    assert len(times) >= 2  # waited a second: at least one reminder
    assert all(later - earlier > 0.25 for earlier, later in itertools.pairwise(times))
    [waited] = [float(m[1]) for line in lines if (m := re.fullmatch(r"  waited (\S+) s; .*", line))]
    assert waited >= 1.0
    assert report.ran[0] == "formulae" and report.rounds == 2


def test_the_project_pull_is_built_before_its_three_children(small) -> None:
    """On the project's own probe, pull, parse and annotations: the pull first, its three
    children once it is fresh, nothing the second time."""
    defs, instance = small
    said: list[str] = []

    report = refresh(defs, instance, echo=said.append, runner=LocalRunner(1))

    assert report.rounds == 2
    assert report.ran[0] == "wikidata_formulae"
    assert sorted(report.ran[1:]) == ["concept_annotations", "opt_graphs, rejected_formulae"]
    again = refresh(defs, instance, echo=said.append, runner=LocalRunner(1))
    assert (again.rounds, again.ran) == (0, [])


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
    returncode = process.wait(timeout=300)  # it must not hang (300 s: beside other tests)
    output = Path(out.name).read_text()
    assert returncode == 1, output[-3000:]
    assert "a worker process died while running fold_models[" in output
    with dg.DagsterInstance.from_config(str(run.home)) as instance:
        left_running = instance.get_runs(
            filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])
        )
        assert left_running == []
    assert all(not Path(f"/proc/{w}").exists() for w in pool_workers(process.pid))
