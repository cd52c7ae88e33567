"""`formula-assets refresh`: materialize exactly what is stale or missing, in order.

Dagster marks staleness one level at a time (a rebuilt asset makes its children stale only
once it has a new data version), so refresh works in rounds: find what is stale or missing,
run the part of it whose parents are all fresh, and look again, until nothing is left.
Partitions of the training asset run in parallel worker processes, one torch thread each.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from formula_assets.cli.runs import REFRESH_TAG, Job, materialize
from formula_assets.cli.stale import Entry, Target, stale_entries

MAX_ROUNDS = 50

Print = Callable[[str], None]


class RefreshError(RuntimeError):
    pass


@dataclass
class RefreshReport:
    ran: list[str] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0


def _frontier(defs: dg.Definitions, entries: list[Entry]) -> list[Entry]:
    """Entries none of whose parents is itself stale or missing."""
    graph = defs.resolve_asset_graph()
    pending = {e.target.key for e in entries}
    return [e for e in entries if not (set(graph.get(e.target.key).parent_keys) & pending)]


# Steps worth a process of their own; the rest is cheaper than starting one (~5 s).
HEAVY = {"semantic_embeddings": 2.0, "opt_text_embeddings": 2.0, "fold_models": 1.0}
HEAVY_PARTITIONS = {"graph_text_cl": 3.0}


def _cost(job: Job) -> float:
    cost = sum(HEAVY.get(k, 0.0) for k in job.keys)
    if job.partition is not None:
        cost *= max((w for m, w in HEAVY_PARTITIONS.items() if m in job.partition), default=1.0)
    return cost


def _jobs(defs: dg.Definitions, frontier: list[Entry]) -> list[Job]:
    """Runs for a round: the frontier's assets of one multi-asset run together (one step
    computes them all); partitions run one per job."""
    graph = defs.resolve_asset_graph()
    jobs: list[Job] = []
    units: dict[int, set[dg.AssetKey]] = {}
    for entry in frontier:
        key = entry.target.key
        if entry.target.partition is not None:
            jobs.append(Job((key.to_user_string(),), entry.target.partition))
        else:
            node = graph.get(key)
            units.setdefault(id(node.assets_def), set()).update(
                {key, *node.execution_set_asset_keys}
            )
    jobs += [Job(tuple(sorted(k.to_user_string() for k in unit))) for unit in units.values()]
    return sorted(jobs, key=_cost, reverse=True)  # longest first: the pool ends together


def _run_here(defs: dg.Definitions, instance: dg.DagsterInstance, job: Job) -> bool:
    keys = [dg.AssetKey.from_user_string(k) for k in job.keys]
    return materialize(defs, instance, keys, job.partition)


def _run_jobs(
    defs: dg.Definitions, instance: dg.DagsterInstance, jobs: list[Job], workers: int
) -> list[Job]:
    """Run the jobs; heavy ones in parallel processes (one torch thread each). Returns failures."""
    heavy = [job for job in jobs if _cost(job) > 0] if workers > 1 else []
    if len(heavy) <= 1:
        heavy = []
    failed = [job for job in jobs if job not in heavy and not _run_here(defs, instance, job)]
    if heavy:
        from formula_assets.cli import worker

        context = multiprocessing.get_context("spawn")
        pool = context.Pool(min(workers, len(heavy)), initializer=worker.initialize)
        try:
            results = list(pool.imap_unordered(worker.materialize_job, heavy))
        finally:
            pool.close()  # let workers exit on their own: terminate() looks like Ctrl-C to them
            pool.join()
        failed += [job for job, ok in results if not ok]
    return failed


OBSERVE_JOB = "observe_wikidata"


def observe_sources(defs: dg.Definitions, instance: dg.DagsterInstance, echo: Print) -> None:
    """Observe the change probe now, as the weekly schedule would."""
    echo("observing wikidata_probe")
    result = defs.resolve_job_def(OBSERVE_JOB).execute_in_process(
        instance=instance, tags={REFRESH_TAG: "true"}, raise_on_error=False
    )
    if not result.success:
        raise RefreshError("observing wikidata_probe failed; the last good data is kept")


def refresh(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    echo: Print = print,
    workers: int = 2,
    max_rounds: int = MAX_ROUNDS,
    observe: bool = False,
) -> RefreshReport:
    report = RefreshReport()
    started = time.perf_counter()
    if observe:
        observe_sources(defs, instance, echo)
    attempted: dict[Target, int] = {}
    for _ in range(max_rounds):
        entries = stale_entries(defs, instance)
        if not entries:
            break
        report.rounds += 1
        frontier = _frontier(defs, entries)
        repeated = [e for e in frontier if attempted.get(e.target, 0) >= 2]
        if repeated:
            raise RefreshError(
                "still stale after being rebuilt twice: "
                + ", ".join(f"{e.target} ({'; '.join(e.causes)})" for e in repeated)
            )
        for entry in frontier:
            attempted[entry.target] = attempted.get(entry.target, 0) + 1
        jobs = _jobs(defs, frontier)
        whole = sorted(k for job in jobs if job.partition is None for k in job.keys)
        if whole:
            echo(f"materializing {', '.join(whole)}")
        partitioned: dict[str, int] = {}
        for job in jobs:
            if job.partition is not None:
                partitioned[job.keys[0]] = partitioned.get(job.keys[0], 0) + 1
        for key, count in partitioned.items():
            echo(f"materializing {key}: {count} partition(s) in {min(workers, count)} process(es)")
        stage_started = time.perf_counter()
        failed = _run_jobs(defs, instance, jobs, workers)
        echo(f"  done in {time.perf_counter() - stage_started:.1f} s")
        if failed:
            raise RefreshError(
                f"{len(failed)} run(s) failed: {', '.join(map(str, failed))}; "
                "see their run logs in the UI"
            )
        report.ran += [str(job) for job in jobs]
    else:
        raise RefreshError(f"not fresh after {max_rounds} rounds")
    report.seconds = time.perf_counter() - started
    return report
