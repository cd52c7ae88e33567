"""The evaluation assets in Dagster, launched by `dg` on a materialized smoke pipeline."""

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from formula_assets_tests.support.pipeline import ROOT, copy_pipeline


@pytest.mark.slow
def test_the_audit_tells_its_run_log_when_the_frozen_layer_store_refuses_writes(
    materialized, tmp_path: Path
) -> None:
    """`annotation_audit` encodes the concept vocabulary with every fold's fine-tuned tower;
    with a file where the cache's `frozen_layers/` should be, it computes the frozen layers in
    the process, gives the same table, and its run's log says the pass was not shared."""
    run = copy_pipeline(materialized[0], tmp_path)
    before = pq.read_table(run.lake / "annotation_audit.parquet")
    cache = tmp_path / "cache"
    shutil.copytree(
        run.env["FORMULA_ASSETS_EMBEDDING_CACHE"],
        cache,
        ignore=shutil.ignore_patterns("frozen_layers"),
    )
    (cache / "frozen_layers").write_text("not a folder")
    env = {
        **run.env,
        "FORMULA_ASSETS_EMBEDDING_CACHE": str(cache),
        "VIRTUAL_ENV": sys.prefix,
        # the run's steps in its own process: a process per step and check loads the
        # definitions again each time (62 s → 41 s for this test, idle)
        "FORMULA_ASSETS_EXECUTOR": "in_process",
    }
    launched = subprocess.run(
        [str(Path(sys.executable).parent / "dg"), "launch", "--assets", "annotation_audit"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr[-3000:]
    with dg.DagsterInstance.from_config(str(run.home)) as instance:
        (latest,) = instance.get_runs(limit=1)
        assert latest.asset_selection == {dg.AssetKey("annotation_audit")}
        warned = [
            e.user_message
            for e in instance.all_logs(latest.run_id)
            if e.level == logging.WARNING and "not shared" in e.user_message
        ]
    assert warned and str(cache / "frozen_layers") in warned[0]
    assert pq.read_table(run.lake / "annotation_audit.parquet").equals(before)
