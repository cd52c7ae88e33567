"""The local refresh runner: what a job costs comes from its assets' definitions
(`defs.metadata.step_cost`, no table of asset names in the runner), which jobs run in this
process and which in worker processes, what a pool process runs (called here, in this
process), and a worker that died."""

import os
import queue
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest
from dagster._core.events import DagsterEventType

from formula_assets.cli import worker
from formula_assets.cli.home import ensure_dagster_home
from formula_assets.cli.runs import JOB_TAG, Job, load_definitions
from formula_assets.cli.worker import LocalRunner, cost, materialize_here
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.metadata import step_cost
from formula_assets.defs.plan import Entry, Target
from formula_assets_tests.support.recorded_runs import a_run

PARTS = dg.MultiPartitionsDefinition(
    {
        "fold": dg.StaticPartitionsDefinition(["1", "2"]),
        "method": dg.StaticPartitionsDefinition(["fast", "slow"]),
    }
)


@dg.asset
def cheap() -> None: ...


@dg.asset(metadata=step_cost(2.0))
def embedded() -> None: ...


@dg.asset(partitions_def=PARTS, metadata=step_cost(1.0, partitions={"slow": 3.0}))
def trained() -> None: ...


DEFS = dg.Definitions(assets=[cheap, embedded, trained])


def test_costs_are_read_from_the_assets() -> None:
    assert cost(DEFS, Job(("cheap",))) == 0.0  # declares none: runs in the refresh's process
    assert cost(DEFS, Job(("embedded",))) == 2.0
    assert cost(DEFS, Job(("cheap", "embedded"))) == 2.0
    assert cost(DEFS, Job(("trained",), "1|fast")) == 1.0
    assert cost(DEFS, Job(("trained",), "2|slow")) == 3.0  # the method's factor


def test_the_longest_jobs_start_first() -> None:
    frontier = [
        Entry(Target(dg.AssetKey("cheap")), "MISSING", ()),
        Entry(Target(dg.AssetKey("embedded")), "MISSING", ()),
        Entry(Target(dg.AssetKey("trained"), "1|fast"), "MISSING", ()),
        Entry(Target(dg.AssetKey("trained"), "1|slow"), "MISSING", ()),
    ]
    planned = [str(job) for job in LocalRunner(workers=2).plan(DEFS, frontier)]
    assert planned == ["trained[1|slow]", "embedded", "trained[1|fast]", "cheap"]


def test_the_project_declares_its_heavy_steps() -> None:
    from formula_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    heavy = {
        key.to_user_string(): cost(defs, Job((key.to_user_string(),)))
        for key in graph.materializable_asset_keys
        if cost(defs, Job((key.to_user_string(),)))
    }
    assert heavy == {
        "semantic_embeddings": 2.0,
        "opt_text_embeddings": 2.0,
        "opt_token_embeddings": 1.0,
        "name_index": 1.0,
        "fold_models": 1.0,
        # in a worker beside the fold models, with the sbert_dual_cl folds
        "correspondence_metrics": 1.0,
    }
    assert cost(defs, Job(("fold_models",), "3|graph_text_cl")) == 3.0
    assert cost(defs, Job(("fold_models",), "3|sbert_dual_cl")) == 1.0


# --- a worker that died ---------------------------------------------------------------------------


def _done(result: object = None, error: BaseException | None = None) -> Future:
    future: Future = Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
    return future


def _started_run(defs: dg.Definitions, instance: dg.DagsterInstance, job: Job) -> str:
    run_id = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    instance.add_run_tags(run_id, {JOB_TAG: str(job)})
    return run_id


def test_a_dead_worker_names_its_job_and_fails_only_that_jobs_runs(small) -> None:
    """Formulae were announced (twice: a job's run may announce again) and never finished:
    the dead worker's. Folds finished; graphs never started; an earlier round's job announced
    in the same pool is not this round's. Only formulae's run is failed."""
    defs, instance = small
    formulae, folds = Job(("wikidata_formulae",)), Job(("cv_folds",))
    graphs = Job(("opt_graphs", "rejected_formulae"))
    started: queue.Queue = queue.Queue()
    earlier = Job(("semantic_embeddings",))  # an earlier round's, in the pool's queue
    for job in (earlier, formulae, folds, formulae):
        started.put((1234, job))
    dying = _started_run(defs, instance, formulae)
    other = _started_run(defs, instance, graphs)
    instance.event_log_storage.set_concurrency_slots("training", 2)
    for run_id in (dying, other):
        claim = instance.event_log_storage.claim_concurrency_slot("training", run_id, "step")
        assert claim.is_claimed
    done = [_done((folds, True)), _done(error=BrokenProcessPool("a worker died"))]

    error = LocalRunner._broken(instance, [formulae, folds, graphs], done, started)

    assert str(error) == (
        "a worker process died while running wikidata_formulae; "
        "not started: opt_graphs, rejected_formulae. The last good data is kept; run refresh again."
    )
    assert instance.get_run_by_id(dying).status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id(other).status == dg.DagsterRunStatus.STARTED
    # The dead run's pool slot is given back; the live one keeps its own.
    claimed = instance.event_log_storage.get_concurrency_info("training").claimed_slots
    assert [slot.run_id for slot in claimed] == [other]


def test_a_worker_dead_before_any_job_started_says_so(small) -> None:
    _defs, instance = small
    jobs = [Job(("wikidata_formulae",)), Job(("cv_folds",))]
    done = [_done(error=BrokenProcessPool("a worker died"))]

    error = LocalRunner._broken(instance, jobs, done, queue.Queue())

    assert str(error) == (
        "a worker process died while running a job that had not started; "
        "not started: wikidata_formulae, cv_folds. The last good data is kept; run refresh again."
    )


# --- where jobs run ---------------------------------------------------------------------------


def _pids(instance: dg.DagsterInstance) -> dict[str, int | None]:
    """The process that began each run, by its refresh job."""
    pids = {}
    for run in instance.get_runs():
        records = instance.get_records_for_run(
            run.run_id, of_type=DagsterEventType.RUN_START
        ).records
        pids[run.tags[JOB_TAG]] = records[0].event_log_entry.dagster_event.pid
    return pids


@dg.asset(metadata=step_cost(2.0))
def heavy() -> pa.Table:
    return pa.table({"x": [1]})


@dg.asset(metadata=step_cost(1.0))
def heavier() -> pa.Table:
    return pa.table({"x": [4]})


@dg.asset
def light() -> pa.Table:
    return pa.table({"x": [2]})


@dg.asset
def lighter() -> pa.Table:
    return pa.table({"x": [3]})


def test_a_single_heavy_job_and_the_light_ones_run_in_this_process(tmp_path: Path) -> None:
    """A pool of workers costs more than it saves for one heavy job; light jobs never use it."""
    defs = dg.Definitions(
        assets=[heavy, light, lighter],
        resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
    )
    jobs = [Job(("heavy",)), Job(("light",)), Job(("lighter",))]
    with dg.instance_for_test() as instance:
        failed = LocalRunner(workers=2).run(defs, instance, jobs, lambda _line: None)
        assert failed == []
        assert _pids(instance) == {
            "heavy": os.getpid(),
            "light": os.getpid(),
            "lighter": os.getpid(),
        }


def test_with_one_worker_every_job_runs_in_this_process(tmp_path: Path) -> None:
    """`--workers 1`: no pool, however many heavy jobs a round has."""
    defs = dg.Definitions(
        assets=[heavy, heavier, light],
        resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
    )
    jobs = [Job(("heavy",)), Job(("heavier",)), Job(("light",))]
    with dg.instance_for_test() as instance:
        failed = LocalRunner(workers=1).run(defs, instance, jobs, lambda _line: None)
        assert failed == []
        assert _pids(instance) == {
            "heavy": os.getpid(),
            "heavier": os.getpid(),
            "light": os.getpid(),
        }


def _pool_workers() -> list[int]:
    workers = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            parent = next(
                line.split()[1]
                for line in status.read_text().splitlines()
                if line.startswith("PPid:")
            )
            command = (status.parent / "cmdline").read_bytes()
        except (OSError, StopIteration):
            continue
        if parent == str(os.getpid()) and b"spawn_main" in command:
            workers.append(int(status.parent.name))
    return workers


def test_heavy_jobs_run_in_worker_processes_that_end_with_the_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two heavy jobs of the project on an empty data lake: each runs in a worker process,
    which records its run on the shared instance, fails for want of its inputs, and is
    reported failed; no worker outlives the round. The instance is opened here first, as the
    command line opens it: two workers making its databases at once may both stamp their
    schema version, and then no process can open it."""
    from formula_assets.definitions import defs

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    ensure_dagster_home()
    monkeypatch.setenv("FORMULA_ASSETS_DATA_LAKE", str(tmp_path / "lake"))
    jobs = [Job(("fold_models",), "1|sbert_dual_cl"), Job(("fold_models",), "2|sbert_dual_cl")]

    with dg.DagsterInstance.get() as instance:
        failed = LocalRunner(workers=2).run(defs, instance, jobs, lambda _line: None)
        pids = _pids(instance)

    assert _pool_workers() == []
    assert sorted(map(str, failed)) == sorted(map(str, jobs))
    assert sorted(pids) == sorted(map(str, jobs))
    assert os.getpid() not in pids.values()


def test_an_entered_runner_keeps_its_workers_for_every_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh's rounds share one pool: the second round's runs begin in the processes
    that began the first's (a pool per round would start two more), and none outlives the
    runner."""
    from formula_assets.definitions import defs

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    ensure_dagster_home()
    monkeypatch.setenv("FORMULA_ASSETS_DATA_LAKE", str(tmp_path / "lake"))
    rounds = [
        [Job(("fold_models",), f"{fold}|sbert_dual_cl") for fold in folds]
        for folds in ((1, 2), (3, 4))
    ]

    with dg.DagsterInstance.get() as instance, LocalRunner(workers=2) as runner:
        for jobs in rounds:
            failed = runner.run(defs, instance, jobs, lambda _line: None)
            assert sorted(map(str, failed)) == sorted(map(str, jobs))  # no inputs: they fail
            assert len(_pool_workers()) == 2
        pids = _pids(instance)

    assert _pool_workers() == []
    first = {pids[str(job)] for job in rounds[0]}
    assert {pids[str(job)] for job in rounds[1]} <= first
    assert os.getpid() not in first
    with dg.DagsterInstance.get() as instance:  # used again, not entered: a pool per round
        runner.run(defs, instance, rounds[0], lambda _line: None)
    assert _pool_workers() == []


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


# --- what a pool process runs, called here ------------------------------------------------------
# A pool process imports this module afresh from disk; these tests call its initializer and its
# job function in this process, so that a change to them fails here too (docs/mutation.md).

THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@pytest.fixture
def fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process as a pool process starts: no definitions, no queue, thread counts of its
    own and an instance folder not made yet (each restored after the test). Returns that
    folder."""
    monkeypatch.setattr(worker, "_DEFS", None)
    monkeypatch.setattr(worker, "_STARTED", None)
    for name in THREADS:
        monkeypatch.setenv(name, "4")
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def test_the_initializer_pins_one_thread_loads_the_definitions_and_keeps_the_queue(
    fresh_process: Path,
) -> None:
    started: queue.Queue = queue.Queue()

    worker.initialize(started)

    assert {name: os.environ[name] for name in THREADS} == dict.fromkeys(THREADS, "1")
    assert (fresh_process / "dagster.yaml").is_file()  # the shared instance, ready for runs
    assert worker._DEFS is load_definitions()
    assert worker._STARTED is started


def test_a_pool_job_refuses_to_run_without_the_initializer(fresh_process: Path) -> None:
    with pytest.raises(RuntimeError, match="initializer loaded the defs"):
        worker.materialize_job(Job(("light",)))


def test_a_pool_job_is_announced_before_it_runs_and_returns_its_outcome(
    fresh_process: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job is on the queue, with this process's pid, by the time its asset computes (the
    refresh reads the queue to name the job of a worker that died); its line is printed; the
    run is recorded on the shared instance; the job comes back with whether its run
    succeeded."""
    seen: list[list[tuple[int, Job]]] = []

    @dg.asset
    def announced() -> None:
        seen.append(list(worker._STARTED.queue))

    @dg.asset
    def failing() -> None:
        raise ValueError("no inputs")

    started: queue.Queue = queue.Queue()
    ensure_dagster_home(fresh_process)
    monkeypatch.setattr(worker, "_DEFS", dg.Definitions(assets=[announced, failing]))
    monkeypatch.setattr(worker, "_STARTED", started)
    job, bad = Job(("announced",)), Job(("failing",))

    assert worker.materialize_job(job) == (job, True)
    assert seen == [[(os.getpid(), job)]]
    assert capsys.readouterr().out.splitlines() == ["materializing announced"]
    assert worker.materialize_job(bad) == (bad, False)
    assert list(started.queue) == [(os.getpid(), job), (os.getpid(), bad)]
    with dg.DagsterInstance.from_config(str(fresh_process)) as instance:
        assert sorted(run.tags[JOB_TAG] for run in instance.get_runs()) == ["announced", "failing"]


def test_workers_start_early_only_for_heavy_steps_ahead(tmp_path, monkeypatch) -> None:
    """Two or more heavy steps anywhere in what is stale start the pool at once (its workers
    import torch while the light steps above run); fewer, an unentered runner (whose pool
    ends with its round) or one worker start nothing."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    ensure_dagster_home()
    light = Entry(Target(dg.AssetKey("cheap")), "MISSING", ())
    one_heavy = [light, Entry(Target(dg.AssetKey("embedded")), "STALE", ())]
    two_heavy = [*one_heavy, Entry(Target(dg.AssetKey("trained"), "2|slow"), "MISSING", ())]
    unentered = LocalRunner(workers=2)
    unentered.expect(DEFS, two_heavy)
    assert unentered._pool is None and not unentered.warming
    with LocalRunner(workers=1) as single:
        single.expect(DEFS, two_heavy)
        assert single._pool is None and not single.warming
    with LocalRunner(workers=2) as runner:
        runner.expect(DEFS, one_heavy)
        assert runner._pool is None and not runner.warming
        runner.expect(DEFS, two_heavy)
        assert runner._pool is not None and len(runner.warming) == 2
        pool, warming = runner._pool, list(runner.warming)
        runner.expect(DEFS, two_heavy)  # once per refresh: no second pool, no more warm-ups
        assert runner._pool is pool and runner.warming == warming
        pids = {future.result(timeout=120) for future in runner.warming}
        assert os.getpid() not in pids and all(isinstance(pid, int) for pid in pids)
