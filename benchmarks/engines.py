"""The two embedding engines side by side: plain torch (`semantics.bert`, what the embedding
steps run for BERT and MPNet folders) and sentence-transformers, each in a fresh process as a
refresh worker runs it (one torch thread by default): the seconds to start and load the
packaged all-MiniLM-L6-v2, the seconds to embed the snapshot's distinct annotation texts, and
how far apart the two engines' vectors are.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import print_table, write_result

ENGINES = ("torch", "sentence-transformers")

PROBE = """
import json, sys, time
started = time.perf_counter()
import numpy as np
import torch
torch.set_num_threads(int(sys.argv[2]))
from benchmarks.embedding import _texts
from formula_assets.ingest.snapshot import snapshot_records
from formula_assets.semantics.models import TextEmbedder, resolve_model
texts = list(dict.fromkeys(_texts(list(snapshot_records()))))
embedder = TextEmbedder(resolve_model(None, "benchmark"), library=sys.argv[1] != "torch")
embedder.encode(["warm-up"])
loaded = time.perf_counter()
vectors = embedder.encode(texts)
done = time.perf_counter()
np.save(sys.argv[3], vectors)
print(json.dumps({"engine": embedder.engine, "texts": len(texts),
                  "start_and_load_s": round(loaded - started, 2),
                  "encode_s": round(done - loaded, 2)}))
"""


def measure(engine: str, threads: int, folder: Path) -> tuple[dict, np.ndarray]:
    target = folder / f"{engine}.npy"
    out = subprocess.run(
        [sys.executable, "-c", PROBE, engine, str(threads), str(target)],
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["texts_per_s"] = round(result["texts"] / result["encode_s"])
    return result, np.load(target)


def run(threads: int = 1) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        measured = {e: measure(e, threads, Path(folder)) for e in ENGINES}
    results = {e: r for e, (r, _) in measured.items()}
    plain, library = (measured[e][1] for e in ENGINES)
    difference = np.abs(plain - library).max(axis=1)
    agreement = {
        "max_abs_difference": float(difference.max()),
        "median_abs_difference": float(np.median(difference)),
        "min_cosine": float((plain * library).sum(axis=1).min()),
    }
    print_table(
        f"Embedding engines, all-MiniLM-L6-v2, {threads} torch thread(s), fresh process each",
        ["engine", "start and load", "texts", "encode", "texts/s"],
        [
            [e, f"{r['start_and_load_s']} s", r["texts"], f"{r['encode_s']} s", r["texts_per_s"]]
            for e, r in results.items()
        ],
    )
    print(
        f"largest difference of a vector component {agreement['max_abs_difference']:.2g} "
        f"(median over texts {agreement['median_abs_difference']:.2g}), "
        f"lowest cosine {agreement['min_cosine']:.7f}"
    )
    result = {"threads": threads, "engines": results, "agreement": agreement}
    print(f"written {write_result('engines', result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    run(parser.parse_args().threads)
