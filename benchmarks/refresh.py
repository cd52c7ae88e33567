"""Pipeline wall times: a cold full refresh, a no-op refresh, one after a parser change.

For each profile: materialize the full snapshot into a throw-away instance, lake and empty
embedding cache (a cold start: every text is embedded; target ≤ 10 min for `default`),
time a no-op refresh (target ≤ 15 s), then edit the MathML parser in a copy of the package
(`msup` → `superscript`) and time the refresh that rebuilds `opt_graphs` and everything
downstream of it. Peak memory is the largest resident set of the refresh process or any of
its workers (`wait4` rusage).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import print_table, write_result
from formula_assets_tests.support.pipeline import (
    CLI,
    ROOT,
    Pipeline,
    edited_package,
    pipeline,
    ran,
    with_package,
)

PARSER_CHANGE = {
    "syntax/mathml.py": lambda s: s.replace('"msup": ("power",', '"msup": ("superscript",')
}


def _timed(run: Pipeline, *args: str) -> tuple[float, str, float]:
    """(wall seconds, stdout, peak RSS MiB of the largest process of the run)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            [str(CLI), *args], cwd=ROOT, env=run.env, stdout=out, stderr=err, text=True
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise RuntimeError(f"formula-assets {' '.join(args)} failed: {stderr[-2000:]}")
    return seconds, stdout, usage.ru_maxrss / 1024


def run(profiles: list[str]) -> dict:
    results = {}
    for profile in profiles:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            base = pipeline(tmp, tmp / "embedding_cache", FORMULA_ASSETS_PROFILE=profile)
            for name in ("FORMULA_ASSETS_SAMPLE", "FORMULA_ASSETS_MIN_FORMULAE"):
                base.env.pop(name)
            full_s, _, full_rss = _timed(base, "refresh")
            noop = [_timed(base, "refresh")[0] for _ in range(3)]
            changed = with_package(base, edited_package(tmp, PARSER_CHANGE))
            change_s, out, _ = _timed(changed, "refresh")
            results[profile] = {
                "full_refresh_s": round(full_s, 1),
                "full_refresh_peak_rss_mib": round(full_rss),
                "noop_refresh_s_median": round(sorted(noop)[1], 1),
                "parser_change_refresh_s": round(change_s, 1),
                "parser_change_rebuilt": sorted(ran(out)),
            }
    print_table(
        "Refresh wall times (full snapshot, cold embedding cache)",
        ["profile", "cold full", "peak RSS", "no-op (median of 3)", "parser change"],
        [
            [
                p,
                f"{r['full_refresh_s']} s",
                f"{r['full_refresh_peak_rss_mib']} MiB",
                f"{r['noop_refresh_s_median']} s",
                f"{r['parser_change_refresh_s']} s",
            ]
            for p, r in results.items()
        ],
    )
    print(f"written {write_result('refresh', {'profiles': results})}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profiles", nargs="+", default=["smoke", "default"])
    run(parser.parse_args().profiles)
