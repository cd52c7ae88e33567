"""`formula-assets refresh`: materialize exactly what is stale or missing, in order.

Dagster marks staleness one level at a time (a rebuilt asset makes its children stale only
once it has a new data version), so refresh works in rounds: find what is stale or missing,
run the part of it whose ancestors are all fresh, and look again, until nothing is left: each
step runs once per refresh. A
runner executes each round: locally (heavy steps in worker processes, one torch thread each)
or on a distributed engine (`cli/distributed.py`).

Each refresh first observes the sources as `formula-assets stale` does (`cli/observe.py`),
so a model changed in place is seen by the next `make run`: exactly the embedding assets turn
stale, and what depends on them follows if their vectors changed.

A step that another entry point (the automation sensor, the UI, `dg launch`, another refresh)
is building right now is not started a second time: the refresh waits for that run, then
looks again, and usually finds the step fresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import dagster as dg

from formula_assets.cli.inflight import Builder, building_elsewhere, job_targets
from formula_assets.cli.observe import observe
from formula_assets.cli.pools import ensure_training_pool, free_slots_of_ended_runs
from formula_assets.cli.runs import Job, Print, RefreshError, Runner
from formula_assets.defs.plan import Target, buildable, stale_entries

MAX_ROUNDS = 50
POLL_S = 2.0  # how often a waiting refresh looks at the runs it waits for
REMIND_S = 300.0  # how often it says again what it waits for

__all__ = ["RefreshError", "RefreshReport", "refresh"]


@dataclass
class RefreshReport:
    ran: list[str] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0


def _held(
    defs: dg.Definitions, instance: dg.DagsterInstance, jobs: list[Job]
) -> dict[Job, list[Builder]]:
    """Jobs with a target that some other run or backfill is building, with those builders."""
    busy = building_elsewhere(defs, instance, [t for job in jobs for t in job_targets(job)])
    held: dict[Job, list[Builder]] = {}
    for job in jobs:
        builders = list(dict.fromkeys(busy[t] for t in job_targets(job) if t in busy))
        if builders:
            held[job] = builders
    return held


def _announce(held: dict[Job, list[Builder]], said: set[tuple[Job, Builder]], echo: Print) -> None:
    for job, builders in held.items():
        for builder in builders:
            if (job, builder) not in said:
                said.add((job, builder))
                echo(f"waiting for {builder}, which is already building {job}")


def _wait(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    jobs: list[Job],
    said: set[tuple[Job, Builder]],
    echo: Print,
    poll_s: float,
    remind_s: float,
) -> None:
    """Until no other run or backfill is building any of `jobs`, saying so every `remind_s`."""
    started = last_reminder = time.perf_counter()
    while held := _held(defs, instance, jobs):
        _announce(held, said, echo)
        if time.perf_counter() - last_reminder > remind_s:
            last_reminder = time.perf_counter()
            ids = sorted({b.id for builders in held.values() for b in builders})
            echo(
                f"  still waiting after {last_reminder - started:.0f} s for {', '.join(ids)}; "
                "if it hangs, terminate it in the UI (Runs) and the refresh goes on"
            )
        time.sleep(poll_s)
    echo(f"  waited {time.perf_counter() - started:.1f} s; looking again")


def refresh(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    echo: Print = print,
    workers: int = 2,
    max_rounds: int = MAX_ROUNDS,
    observe_probe: bool = False,
    runner: Runner | None = None,
    poll_s: float = POLL_S,
    remind_s: float = REMIND_S,
) -> RefreshReport:
    if runner is None:
        from formula_assets.cli.worker import LocalRunner

        with LocalRunner(workers) as local:  # one pool of workers for every round
            return refresh(
                defs, instance, echo, workers, max_rounds, observe_probe, local, poll_s, remind_s
            )
    report = RefreshReport()
    started = time.perf_counter()
    warning = ensure_training_pool(instance)
    if warning:
        echo(f"warning: {warning}")
    for run_id in free_slots_of_ended_runs(instance):
        echo(f"freed the pool slots still held by run {run_id}, which has ended")
    observe(defs, instance, echo, probe=observe_probe)
    attempted: dict[Target, int] = {}
    said: set[tuple[Job, Builder]] = set()
    while entries := stale_entries(defs, instance):
        runner.expect(defs, entries)
        frontier = buildable(defs.resolve_asset_graph(), entries)
        planned = runner.plan(defs, frontier)
        held = _held(defs, instance, planned)
        _announce(held, said, echo)
        jobs = [job for job in planned if job not in held]
        if not jobs:  # everything left to do is being built elsewhere: wait, then look again
            _wait(defs, instance, planned, said, echo, poll_s, remind_s)
            continue
        if report.rounds == max_rounds:
            raise RefreshError(f"not fresh after {max_rounds} rounds")
        report.rounds += 1
        targets = {t for job in jobs for t in job_targets(job)}
        repeated = [e for e in frontier if e.target in targets and attempted.get(e.target, 0) >= 2]
        if repeated:
            raise RefreshError(
                "still stale after being rebuilt twice: "
                + ", ".join(f"{e.target} ({'; '.join(e.causes)})" for e in repeated)
            )
        for target in targets:
            attempted[target] = attempted.get(target, 0) + 1
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
    report.seconds = time.perf_counter() - started
    return report
