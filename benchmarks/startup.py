"""Start-up costs every command pays: loading the definitions, `formula-assets stale` and a
no-op `formula-assets refresh` (targets ≤ 3 s, ≤ 5 s, ≤ 5 s on the reference machine); and
what the automation sensor pays at each evaluation (every asset's condition, the stale
status of the whole graph among them), timed inside one process after a first evaluation.

Each measurement is a fresh process, median of `--runs`. The CLI timings use the project's
instance and data lake as they are: run `make run` first, so that nothing is stale. The
floor, importing dagster, pyarrow, pandas and lxml alone, is measured beside them.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import print_table, write_result

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "formula-assets"
COMMANDS = {
    "import dagster, pyarrow, pandas, lxml (floor)": [
        sys.executable,
        "-c",
        "import dagster, pyarrow, pandas, lxml",
    ],
    "load the definitions": [sys.executable, "-c", "import formula_assets.definitions"],
    "formula-assets stale": [str(CLI), "stale"],
    "formula-assets refresh (nothing stale)": [str(CLI), "refresh"],
}
EVALUATION = "one evaluation of the automation sensor (in process)"
_EVALUATE = """
import time, dagster as dg
from formula_assets.core.settings import Settings
from formula_assets.definitions import defs
home = str(Settings.from_environment().dagster_home)
with dg.DagsterInstance.from_config(home) as instance:
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    for _ in range({runs}):
        started = time.perf_counter()
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
        print(time.perf_counter() - started, result.total_requested)
"""
TARGETS = {
    "load the definitions": 3.0,
    "formula-assets stale": 5.0,
    "formula-assets refresh (nothing stale)": 5.0,
}


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout


def run(runs: int) -> dict:
    results = {}
    for name, command in COMMANDS.items():
        timed(command)  # warm the file cache
        times, outputs = zip(*(timed(command) for _ in range(runs)), strict=True)
        if name == "formula-assets stale" and outputs[0].strip():
            raise RuntimeError(f"something is stale, run `make run` first:\n{outputs[0]}")
        results[name] = {
            "median_s": round(statistics.median(times), 2),
            "min_s": round(min(times), 2),
            "max_s": round(max(times), 2),
            "runs": runs,
            "target_s": TARGETS.get(name),
        }
    script = _EVALUATE.format(runs=runs)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    rows = [line.split() for line in done.stdout.splitlines()]
    if any(int(requested) for _, requested in rows):
        raise RuntimeError("the sensor would build something: run `make run` first")
    times = [float(seconds) for seconds, _ in rows]
    results[EVALUATION] = {
        "median_s": round(statistics.median(times), 2),
        "min_s": round(min(times), 2),
        "max_s": round(max(times), 2),
        "runs": runs,
        "target_s": None,
    }
    print_table(
        f"Start-up (fresh process each, median of {runs})",
        ["command", "median", "min–max", "target"],
        [
            [
                name,
                f"{r['median_s']:.2f} s",
                f"{r['min_s']:.2f}–{r['max_s']:.2f} s",
                f"≤ {r['target_s']:.0f} s" if r["target_s"] else "—",
            ]
            for name, r in results.items()
        ],
    )
    print(f"written {write_result('startup', {'commands': results})}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    run(parser.parse_args().runs)
