"""Refresh wall times: a no-op `formula-assets refresh`, and one after a parser change.

For each profile: materialize the full snapshot into a throw-away instance and lake (sharing
the project's embedding cache, so texts are not re-embedded), time a no-op refresh (target
≤ 15 s), then edit the MathML parser in a copy of the package (`msup` → `superscript`) and
time the refresh that rebuilds `opt_graphs` and everything downstream of it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.common import print_table, write_result
from formula_assets import settings
from formula_assets_tests.pipeline import edited_package, pipeline, ran, with_package

PARSER_CHANGE = {"mathml.py": lambda s: s.replace('"msup": ("power",', '"msup": ("superscript",')}


def _timed(run, *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    completed = run.run(*args, timeout=3600)
    if completed.returncode != 0:
        raise RuntimeError(f"formula-assets {' '.join(args)} failed: {completed.stderr[-2000:]}")
    return time.perf_counter() - started, completed.stdout


def run(profiles: list[str]) -> dict:
    cache = Path(settings.embedding_cache_url())
    results = {}
    for profile in profiles:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            base = pipeline(tmp, cache, FORMULA_ASSETS_PROFILE=profile)
            for name in ("FORMULA_ASSETS_SAMPLE", "FORMULA_ASSETS_MIN_FORMULAE"):
                base.env.pop(name)
            full_s, _ = _timed(base, "refresh")
            noop = [_timed(base, "refresh")[0] for _ in range(3)]
            changed = with_package(base, edited_package(tmp, PARSER_CHANGE))
            change_s, out = _timed(changed, "refresh")
            results[profile] = {
                "full_refresh_s": round(full_s, 1),
                "noop_refresh_s_median": round(sorted(noop)[1], 1),
                "parser_change_refresh_s": round(change_s, 1),
                "parser_change_rebuilt": sorted(ran(out)),
            }
    print_table(
        "Refresh wall times (full snapshot, shared embedding cache)",
        ["profile", "full", "no-op (median of 3)", "parser change"],
        [
            [
                p,
                f"{r['full_refresh_s']} s",
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
