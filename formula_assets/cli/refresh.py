"""`formula-assets refresh`: materialize exactly what is stale or missing, in order.

Dagster marks staleness one level at a time (a rebuilt asset makes its children stale only
once it has a new data version), so refresh works in rounds: find what is stale or missing,
run the part of it whose parents are all fresh, and look again, until nothing is left. A
runner executes each round: locally (heavy steps in worker processes, one torch thread each)
or on a distributed engine (`cli/distributed.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import dagster as dg

from formula_assets.cli.runs import REFRESH_TAG, Print, RefreshError, Runner
from formula_assets.cli.stale import Entry, Target, stale_entries

MAX_ROUNDS = 50
OBSERVE_JOB = "observe_wikidata"

__all__ = ["RefreshError", "RefreshReport", "observe_sources", "refresh"]


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
    runner: Runner | None = None,
) -> RefreshReport:
    if runner is None:
        from formula_assets.cli.worker import LocalRunner

        runner = LocalRunner(workers)
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
        jobs = runner.plan(defs, frontier)
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
        failed = runner.run(defs, instance, jobs, echo)
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
