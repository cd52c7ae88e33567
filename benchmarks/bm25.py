"""BM25 scoring of one fold both ways: rank-bm25's per-query loop vs one sparse product.

Candidate pools: one fold of the snapshot (≈ 352) and of 10× and 100× synthetic corpora.
The two give the same scores (a unit test checks it); only the time differs.
"""

from __future__ import annotations

import time

from benchmarks.common import print_table, write_result
from benchmarks.synthetic import synthetic_records
from formula_assets.core.settings import Settings
from formula_assets.evaluation.bm25 import bm25_scorer, reference_scores
from formula_assets.evaluation.ranking import gold_ranks
from formula_assets.ingest.records import records_to_table
from formula_assets.semantics.annotations import build_annotations
from formula_assets.syntax.opt import build_opt_graphs, parse_options

# the parser as the pipeline runs it (FORMULA_ASSETS_STYLED_LETTERS)
OPTIONS = parse_options(Settings.from_environment().styled_letters)

REFERENCE_LIMIT = 4000  # the per-query loop beyond this pool takes minutes


def _rank(queries: list[str], documents: list[str]) -> None:
    """Score and rank in chunks, as the evaluation does (never the whole matrix at once)."""
    gold_ranks(bm25_scorer(queries, documents))


def _timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def run(scales: tuple[int, ...] = (1, 10, 100)) -> dict:
    results, rows = {}, []
    for scale in scales:
        records, _ = synthetic_records(scale)
        pool = records[: len(records) // 5]
        graphs = build_opt_graphs(((r.qid, r.mathml) for r in pool), OPTIONS).graphs
        opt = graphs["linearised_opt"].to_pylist()
        annotations = build_annotations(records_to_table(pool).to_pylist())
        texts = [" ".join(t) for t in annotations["texts"].to_pylist()][: len(opt)]
        fast = _timed(_rank, opt, texts) + _timed(_rank, texts, opt)
        slow = None
        if len(opt) <= REFERENCE_LIMIT:
            slow = _timed(reference_scores, opt, texts) + _timed(reference_scores, texts, opt)
        results[f"{scale}x"] = {"candidates": len(opt), "sparse_s": fast, "rank_bm25_loop_s": slow}
        rows.append(
            [f"{scale}×", f"{len(opt):,}", f"{fast:.2f}", "—" if slow is None else f"{slow:.2f}"]
        )
    print_table(
        "BM25, one fold, both directions, scored and ranked (seconds)",
        ["corpus", "candidates", "sparse product", "rank-bm25 loop"],
        rows,
    )
    print(f"written {write_result('bm25', {'scales': results})}")
    return results


if __name__ == "__main__":
    run()
