"""The local refresh runner: light jobs in this process, heavy ones in a pool of worker
processes that each load the definitions once, kept for every round of a refresh.

Jobs are handed out one at a time, longest first, so a slow one never holds up the queue
behind it. Each worker runs with one torch/BLAS thread (on a small CPU two threads in one
process train slower than two one-thread processes). A worker that dies — killed for memory,
a segfault — breaks the pool: the refresh stops at once with an error that names the job the
dead worker was running, and the runs it left in progress are marked failed.

Each job looks once more, right before it starts, whether another entry point (the automation
sensor ticks while a round runs) has started building it meanwhile; then it is left to that
run, and the refresh loop waits for it.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queues
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import dagster as dg

from formula_assets.cli.inflight import building_elsewhere, job_targets
from formula_assets.cli.runs import JOB_TAG, Job, Print, RefreshError, materialize, plan_jobs, say
from formula_assets.defs.metadata import asset_cost, partition_cost
from formula_assets.defs.plan import Entry

_DEFS: dg.Definitions | None = None
_STARTED: Any = None  # the pool's queue of (pid, job) announcements


def cost(defs: dg.Definitions, job: Job) -> float:
    """What the job's run costs, from its assets' declared step costs (`defs.metadata.
    step_cost`): steps that declare none are cheaper than starting a worker process."""
    graph = defs.resolve_asset_graph()
    declared = [graph.get(key).metadata for key in job.asset_keys]
    value = sum(asset_cost(metadata) for metadata in declared)
    if job.partition is not None:
        value *= max(partition_cost(metadata, job.partition) for metadata in declared)
    return value


def initialize(started: Any) -> None:
    """Pool initializer: pin thread counts before torch is imported, then load definitions."""
    global _DEFS, _STARTED
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    from formula_assets.cli.home import ensure_dagster_home
    from formula_assets.cli.runs import load_definitions

    ensure_dagster_home()
    _DEFS = load_definitions()
    _STARTED = started


def warm() -> int:
    """Import torch, which every heavy step needs (seconds), before a step asks for it."""
    import torch  # noqa: F401

    return os.getpid()


def materialize_here(
    defs: dg.Definitions, instance: dg.DagsterInstance, job: Job, echo: Print
) -> bool:
    """Run `job` unless some other run or backfill is building it by now; False if it failed."""
    busy = building_elsewhere(defs, instance, job_targets(job))
    if busy:
        echo(f"leaving {job} to {next(iter(busy.values()))}, which has started building it")
        return True
    return materialize(defs, instance, job)


def materialize_job(job: Job) -> tuple[Job, bool]:
    """One refresh job (assets, or one partition) as one run on the shared instance."""
    if _DEFS is None:
        raise RuntimeError("materialize_job runs in a pool whose initializer loaded the defs")
    _STARTED.put((os.getpid(), job))
    say(f"materializing {job}")
    with dg.DagsterInstance.get() as instance:
        return job, materialize_here(_DEFS, instance, job, say)


class LocalRunner:
    """Heavy jobs in `workers` processes. Entered (`with LocalRunner(2) as runner`), it keeps
    one pool for every round, so a refresh starts its workers (each importing torch and
    loading the definitions: seconds) once rather than once per round; not entered, each
    `run` starts and ends its own."""

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self._entered = False
        self._pool: ProcessPoolExecutor | None = None
        self._started: Any = None
        self.warming: list[Future] = []  # `expect`'s warm-up tasks, once it started the pool

    def __enter__(self) -> LocalRunner:
        self._entered = True
        return self

    def __exit__(self, *_exc: object) -> None:
        self._entered = False
        self._close()

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool, self._started = None, None

    def _workers(self) -> tuple[ProcessPoolExecutor, Any]:
        """The pool (its announcement queue with it): the runner's own when entered."""
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._started = context.Queue()
            self._pool = ProcessPoolExecutor(
                self.workers, context, initializer=initialize, initargs=(self._started,)
            )
        return self._pool, self._started

    def expect(self, defs: dg.Definitions, entries: Sequence[Entry]) -> None:
        """With heavy steps ahead (two or more, as `run` sends to the pool), start the workers
        now: each loads the definitions and imports torch (about 10 s on a slow 2-core CPU)
        while this process builds the light steps above them. Entered runners only: the pool
        must outlive this round."""
        if not self._entered or self._pool is not None or self.workers < 2:
            return
        graph = defs.resolve_asset_graph()
        heavy = [e for e in entries if asset_cost(graph.get(e.target.key).metadata) > 0]
        if len(heavy) < 2:
            return
        pool, _ = self._workers()
        # one task each: a spawned pool starts a process per task it cannot hand to an idle one
        self.warming = [pool.submit(warm) for _ in range(self.workers)]

    def plan(self, defs: dg.Definitions, frontier: Sequence[Entry]) -> list[Job]:
        jobs = plan_jobs(defs, frontier)
        return sorted(jobs, key=lambda job: cost(defs, job), reverse=True)  # longest first

    def run(
        self, defs: dg.Definitions, instance: dg.DagsterInstance, jobs: list[Job], echo: Print
    ) -> list[Job]:
        heavy = [job for job in jobs if cost(defs, job) > 0] if self.workers > 1 else []
        if len(heavy) <= 1:
            heavy = []
        failed = [
            job
            for job in jobs
            if job not in heavy and not materialize_here(defs, instance, job, echo)
        ]
        if heavy:
            failed += self._in_processes(instance, heavy)
        return failed

    def _in_processes(self, instance: dg.DagsterInstance, jobs: list[Job]) -> list[Job]:
        pool, started = self._workers()
        futures = {pool.submit(materialize_job, job): job for job in jobs}
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            if any(isinstance(f.exception(), BrokenProcessPool) for f in done):
                raise self._broken(instance, futures.values(), done, started)
            return [futures[f] for f in done if not f.result()[1]]
        finally:  # a broken pool ends the refresh; the runner's exit closes it
            if not self._entered:
                self._close()

    @staticmethod
    def _broken(instance: dg.DagsterInstance, jobs: Any, done: Any, started: Any) -> RefreshError:
        """A worker died (killed for memory, crashed): the jobs announced as started and never
        finished were running; one of them was the dead worker's. Their runs are failed."""
        finished = {f.result()[0] for f in done if f.exception() is None}
        announced: list[Job] = []
        while True:
            try:
                announced.append(started.get(timeout=0.5)[1])
            except queues.Empty:
                break
        # this round's jobs only: the queue also holds earlier rounds' announcements
        jobs = list(jobs)
        running = [j for j in dict.fromkeys(announced) if j in jobs and j not in finished]
        waiting = [job for job in jobs if job not in finished and job not in running]
        for job in running:
            _mark_runs_failed(instance, job)
        return RefreshError(
            "a worker process died while running "
            + (", ".join(map(str, running)) or "a job that had not started")
            + (f"; not started: {', '.join(map(str, waiting))}" if waiting else "")
            + ". The last good data is kept; run refresh again."
        )


def _mark_runs_failed(instance: dg.DagsterInstance, job: Job) -> None:
    """Runs of `job` that a dead worker left started are failed, not running forever, and
    the pool slot a dead training step held is given back."""
    records = instance.get_runs(
        filters=dg.RunsFilter(tags={JOB_TAG: str(job)}, statuses=[dg.DagsterRunStatus.STARTED])
    )
    for run in records:
        instance.report_run_failed(run)
        if instance.event_log_storage.supports_global_concurrency_limits:
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
