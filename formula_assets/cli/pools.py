"""The `training` pool of the shared instance: known to storage before anything claims it,
and slots that dead runs left claimed given back."""

from __future__ import annotations

import dagster as dg

from formula_assets.cli.home import TRAINING_POOL
from formula_assets.cli.inflight import run_process_gone


def ensure_training_pool(instance: dg.DagsterInstance) -> str | None:
    """Store the pool's limit now rather than at its first claim: Dagster's run queue holds
    runs back only for pools already in storage, so the first batch of queued training runs
    (the automation sensor's 10 fold partitions) would otherwise all start together.
    Returns a warning when the instance sets no limit at all."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return None
    if TRAINING_POOL in storage.get_concurrency_keys():
        return None
    if instance.global_op_concurrency_default_limit is None:
        return (
            f"the Dagster instance ({instance.root_directory}) sets no limit for the "
            f"`{TRAINING_POOL}` pool: every fold_models run launched at once trains at once. "
            "Set `concurrency: pools: default_limit` in its dagster.yaml, or "
            f"`dagster instance concurrency set {TRAINING_POOL} N`."
        )
    storage.initialize_concurrency_limit_to_default(TRAINING_POOL)
    return None


def free_slots_of_ended_runs(instance: dg.DagsterInstance) -> list[str]:
    """Give back pool slots still held by runs that ended, or whose process is gone (a
    killed `dg dev` or refresh leaves its runs marked started; those are marked failed
    first). Nothing else would without a daemon, nor with Dagster's default run launcher,
    which cannot tell a dead run worker: training would wait for those slots forever.
    Returns the runs whose slots were freed."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    freed = []
    for run_id in sorted(storage.get_concurrency_run_ids()):
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            if run.status != dg.DagsterRunStatus.STARTED or not run_process_gone(instance, run_id):
                continue
            instance.report_run_failed(run, "its process is gone; its pool slots were freed")
        storage.free_concurrency_slots_for_run(run_id)
        freed.append(run_id)
    return freed
