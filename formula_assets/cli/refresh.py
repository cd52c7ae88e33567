"""`formula-assets refresh`: materialize exactly what is stale or missing, in order.

Dagster marks staleness one level at a time (a rebuilt asset makes its children stale only
once it has a new data version), so refresh works in rounds: find what is stale or missing,
run the part of it whose parents are all fresh, and look again, until nothing is left.
Partitions of the training asset run in parallel worker processes, one torch thread each.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import dagster as dg

from formula_assets.cli.staleness import Entry, Target, stale_entries

MAX_ROUNDS = 50
REFRESH_TAG = "formula_assets/refresh"

Print = Callable[[str], None]


class RefreshError(RuntimeError):
    pass


@dataclass
class RefreshReport:
    ran: list[str] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0


def load_definitions() -> dg.Definitions:
    from formula_assets.definitions import defs

    return defs


def materialize(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    keys: Sequence[dg.AssetKey],
    partition: str | None = None,
) -> bool:
    """One in-process run of the given assets (and their checks) on the shared instance."""
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        instance=instance,
        resources=defs.resources,
        selection=dg.AssetSelection.assets(*keys),
        partition_key=partition,
        tags={REFRESH_TAG: "true"},
        raise_on_error=False,
    )
    return result.success


def _frontier(defs: dg.Definitions, entries: list[Entry]) -> list[Entry]:
    """Entries none of whose parents is itself stale or missing."""
    graph = defs.resolve_asset_graph()
    pending = {e.target.key for e in entries}
    return [e for e in entries if not (set(graph.get(e.target.key).parent_keys) & pending)]


def _execution_set(defs: dg.Definitions, keys: set[dg.AssetKey]) -> set[dg.AssetKey]:
    """Multi-assets run as a whole: add the siblings that are computed together."""
    graph = defs.resolve_asset_graph()
    out = set(keys)
    for key in keys:
        out |= set(graph.get(key).execution_set_asset_keys)
    return out


def _run_partitions(
    key: dg.AssetKey, partitions: list[str], workers: int, echo: Print
) -> list[str]:
    """Partitions in `workers` parallel processes; returns those that failed."""
    from formula_assets.cli import worker

    workers = max(1, min(workers, len(partitions)))
    jobs = [(key.to_user_string(), p) for p in partitions]
    context = multiprocessing.get_context("spawn")
    pool = context.Pool(workers, initializer=worker.initialize)
    try:
        results = list(pool.imap_unordered(worker.materialize_partition, jobs))
    finally:
        pool.close()  # let workers exit on their own: a terminate() looks like Ctrl-C to them
        pool.join()
    failed = sorted(p for p, ok in results if not ok)
    if failed:
        echo(f"failed partitions of {key.to_user_string()}: {', '.join(failed)}")
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
        whole = _execution_set(defs, {e.target.key for e in frontier if e.target.partition is None})
        if whole:
            names = ", ".join(sorted(k.to_user_string() for k in whole))
            echo(f"materializing {names}")
            stage_started = time.perf_counter()
            if not materialize(defs, instance, sorted(whole, key=str)):
                raise RefreshError(f"run failed for {names}; see the run log in the UI")
            echo(f"  done in {time.perf_counter() - stage_started:.1f} s")
            report.ran += sorted(k.to_user_string() for k in whole)
        partitioned: dict[dg.AssetKey, list[str]] = {}
        for entry in frontier:
            if entry.target.partition is not None:
                partitioned.setdefault(entry.target.key, []).append(entry.target.partition)
        for key, partitions in partitioned.items():
            echo(
                f"materializing {key.to_user_string()}: {len(partitions)} partition(s) "
                f"in {min(workers, len(partitions))} process(es)"
            )
            stage_started = time.perf_counter()
            failed = _run_partitions(key, partitions, workers, echo)
            echo(f"  done in {time.perf_counter() - stage_started:.1f} s")
            if failed:
                raise RefreshError(f"{len(failed)} partition(s) of {key.to_user_string()} failed")
            report.ran += [f"{key.to_user_string()}[{p}]" for p in partitions]
    else:
        raise RefreshError(f"not fresh after {max_rounds} rounds")
    report.seconds = time.perf_counter() - started
    return report
