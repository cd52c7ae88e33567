"""Refresh workers: processes that each load the definitions once and run refresh jobs.

Jobs (heavy assets, partitions) are handed out one at a time from a shared pool, longest
first, so a slow one never holds up the queue behind it. Each worker runs with one
torch/BLAS thread (on a small CPU two threads in one process train slower than two
one-thread processes).
"""

from __future__ import annotations

import os

_DEFS = None


def initialize() -> None:
    """Pool initializer: pin thread counts before torch is imported, then load definitions."""
    global _DEFS
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    from formula_assets.cli.home import ensure_dagster_home
    from formula_assets.cli.runs import load_definitions

    ensure_dagster_home()
    _DEFS = load_definitions()


def materialize_job(job):
    """One refresh job (assets, or one partition) as one run on the shared instance."""
    import dagster as dg

    from formula_assets.cli.runs import materialize

    print(f"materializing {job}", flush=True)
    keys = [dg.AssetKey.from_user_string(k) for k in job.keys]
    with dg.DagsterInstance.get() as instance:
        ok = materialize(_DEFS, instance, keys, job.partition)
    return job, ok
