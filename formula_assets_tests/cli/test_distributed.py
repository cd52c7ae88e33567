"""`formula-assets distributed`: the pipeline on PostgreSQL + two Celery workers, for real, on
the test sample. Steps spread over both workers, the training pool holds, every process and
file is gone afterwards, and the data equal those of `formula-assets refresh`.

Needs PostgreSQL's server programs (`.ci/run` installs Debian's `postgresql`).
"""

import json
import os
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.cli.runs import data_versions
from formula_assets.core.settings import PROFILE_ENV
from formula_assets.deploy.local import DeploymentError, postgres_bin
from formula_assets.methods import registry
from formula_assets_tests.support.pipeline import SAMPLE


def postgres_installed() -> bool:
    try:
        postgres_bin("initdb")
    except DeploymentError:
        return False
    return True


def running(pattern: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if pattern in command:
            found.append(command)
    return found


@pytest.mark.distributed
def test_distributed_run_spreads_steps_and_equals_refresh(materialized, tmp_path: Path) -> None:
    if not postgres_installed():
        message = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    local, _ = materialized
    folder, report_file = tmp_path / "run", tmp_path / "report.json"
    # as `make distributed` runs it from a shell: the profile is the command's option, not
    # the environment's (the method list was once fixed under the environment's default)
    shell = replace(local, env={k: v for k, v in local.env.items() if k != PROFILE_ENV})
    completed = shell.run(
        "distributed", "--sample", str(SAMPLE), "--training-slots", "1", "--profile", "smoke",
        "--root", str(folder), "--report", str(report_file), timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert not folder.exists()  # its files removed …
    assert running(str(folder)) == []  # … and every process it started stopped
    report = json.loads(report_file.read_text())
    placements = report["placements"]
    workers = {p["worker"] for p in placements}
    assert len(workers) == 2, workers
    training = [p for p in placements if p["step"] == "fold_models"]
    assert len(training) == 5 * len(registry.trained())
    assert {p["worker"] for p in training} == workers  # the partitions really spread
    assert report["max_concurrent_training"] == 1  # the training pool held
    by_run: dict[str, set[str]] = {}
    for p in placements:
        by_run.setdefault(p["run_id"], set()).add(p["worker"])
    assert any(len(w) == 2 for w in by_run.values())  # the steps of one run spread too
    assert "steps on 2 worker(s)" in completed.stdout
    with dg.DagsterInstance.from_config(str(local.home)) as instance:
        from formula_assets.definitions import defs

        expected = data_versions(defs, instance)
    assert set(report["data_versions"]) == set(expected)
    different = {k for k in expected if expected[k] != report["data_versions"][k]}
    assert different == set(), different
