"""The distributed run against the single-process refresh, on the same inputs.

Both start from an empty instance and data lake and share the project's (warm) embedding
cache, so what differs is where steps run: `formula-assets refresh` (in-process, heavy steps
in 2 worker processes) against `formula-assets distributed` (PostgreSQL, 2 Celery workers,
the refresh loop as driver; its time includes starting and stopping them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import print_table, write_result
from formula_assets.core.settings import Settings
from formula_assets_tests.support.pipeline import CLI, ROOT


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(CLI), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"formula-assets {' '.join(args)} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started, done.stdout


def run(profile: str) -> dict:
    cache = Settings.from_environment().embedding_cache
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        env = {
            **os.environ,
            "DAGSTER_HOME": str(tmp / "home"),
            "FORMULA_ASSETS_DATA_LAKE": str(tmp / "lake"),
            "FORMULA_ASSETS_EMBEDDING_CACHE": cache,
            "FORMULA_ASSETS_PROFILE": profile,
            "HF_HUB_OFFLINE": "1",
        }
        for name in ("FORMULA_ASSETS_SAMPLE", "FORMULA_ASSETS_SOURCE"):
            env.pop(name, None)
        local_s, _ = timed(["refresh"], env)
        report_file = tmp / "report.json"
        distributed_s, _ = timed(
            ["distributed", "--profile", profile, "--report", str(report_file)], env
        )
        report = json.loads(report_file.read_text())
    result = {
        "profile": profile,
        "refresh_s": round(local_s, 1),
        "distributed_s": round(distributed_s, 1),
        "distributed_driver_s": round(report["seconds"], 1),
        "steps": len(report["placements"]),
        "workers": sorted({p["worker"] for p in report["placements"]}),
        "max_concurrent_training": report["max_concurrent_training"],
    }
    print_table(
        f"Full snapshot, {profile} profile, warm embedding cache",
        ["run", "wall time"],
        [
            ["formula-assets refresh (2 worker processes)", f"{result['refresh_s']} s"],
            ["formula-assets distributed (PostgreSQL, 2 Celery workers)", f"{distributed_s:.1f} s"],
        ],
    )
    print(f"written {write_result('distributed', result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="smoke")
    run(parser.parse_args().profile)
