"""The symbol explanation measured by leaving each item out: its own formula is the query,
its own annotations are hidden (from the aligned items, the items found and the corpus
counts), and the meaning channel uses the models of the fold that held it out. For every
identifier of the formula that the item annotates, is an annotated concept the first reading
(accuracy@1), or among the first three (@3)? The baseline ranks each identifier's concepts by
how many other items annotate it so ("the identifier's most frequent concept"). The audit's
suggestions for an unannotated identifier (`audit.leads`: the same explanation from the
structure channel's items and the corpus, without the meaning channel) are measured the same
way, as `audit`.

Figures per fold (an item's fold is the one whose models held it out) and over all; needs the
`default` lake of `make run`.

    python -m benchmarks.symbol_explanation [--limit N]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from benchmarks.common import print_table, write_result
from benchmarks.search_queries import searcher
from formula_assets.audit.leads import LeadFinder
from formula_assets.core import lake
from formula_assets.search.fusion import fuse
from formula_assets.search.searcher import Searcher


def item_folds(search: Searcher) -> dict[str, int]:
    folds = lake.read_parquet(search.root / "cv_folds.parquet", ["qid", "fold"])
    return dict(zip(folds["qid"].to_pylist(), folds["fold"].to_pylist(), strict=True))


def baseline(use: Counter[str]) -> list[str]:
    return [c for c, _ in sorted(use.items(), key=lambda kv: (-kv[1], kv[0]))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="only the first N items (a quick look)")
    args = parser.parse_args()
    first = searcher()
    folds = item_folds(first)
    by_fold = {f: searcher(fold=f) for f in sorted(set(folds.values()))}
    catalogue = first.catalogue
    use = catalogue.symbol_use()
    structure_rows = {q: i for i, q in enumerate(first.structure.qids)}
    finder = LeadFinder(catalogue, first.structure, first.options)
    kinds = ("explained", "audit", "baseline")
    hits: dict[str, dict[int, list[tuple[bool, bool]]]] = {kind: {} for kind in kinds}
    started = time.perf_counter()
    items = 0
    for row, qid in enumerate(catalogue.qids):
        at = structure_rows.get(qid)
        fold = folds.get(qid)
        if at is None or fold is None or not catalogue.mathml[row]:
            continue
        identifiers = set(first.structure.identifiers[at])
        gold: dict[str, set[str]] = {}
        for annotation in catalogue.annotations[row]:
            if annotation.identifier in identifiers:
                gold.setdefault(annotation.identifier, set()).add(annotation.concept)
        if not gold:
            continue
        items += 1
        if args.limit and items > args.limit:
            break
        search = by_fold[fold]
        channels, keys, found = search._formula_channels(catalogue.mathml[row])
        fused = [f.row for f in fuse(channels, search.fusion)]
        hidden = catalogue.use_without(use, row, gold)
        left_out = {**use, **hidden}
        explained = {
            e.identifier: [r.concept for r in e.readings]
            for e in search.explain(keys, found, fused, exclude=row, use=left_out)
        }
        read = finder.explain(row)
        audit = {e.identifier: [r.concept for r in e.readings] for e in (read[1] if read else [])}
        for name, concepts in gold.items():
            ranking = (explained.get(name, []), audit.get(name, []), baseline(hidden[name]))
            for kind, ranked in zip(kinds, ranking, strict=True):
                hits[kind].setdefault(fold, []).append(
                    (bool(set(ranked[:1]) & concepts), bool(set(ranked[:3]) & concepts))
                )
    seconds = time.perf_counter() - started
    results: dict[str, dict] = {}
    rows = []
    for kind, per_fold in hits.items():
        everything = [x for values in per_fold.values() for x in values]
        fold_at = {f: [np.mean([h[k] for h in v]) for k in (0, 1)] for f, v in per_fold.items()}
        results[kind] = {
            "symbols": len(everything),
            "accuracy_at_1": round(float(np.mean([h[0] for h in everything])), 4),
            "accuracy_at_3": round(float(np.mean([h[1] for h in everything])), 4),
            "per_fold_accuracy_at_1": {f: round(float(v[0]), 4) for f, v in fold_at.items()},
            "per_fold_accuracy_at_3": {f: round(float(v[1]), 4) for f, v in fold_at.items()},
        }
        spread3 = np.std([v[1] for v in fold_at.values()])
        rows.append(
            [
                kind,
                results[kind]["symbols"],
                results[kind]["accuracy_at_1"],
                results[kind]["accuracy_at_3"],
                f"{spread3:.3f}",
            ]
        )
    for kind in kinds[:2]:
        margins = [
            results[kind]["per_fold_accuracy_at_3"][f]
            - results["baseline"]["per_fold_accuracy_at_3"][f]
            for f in results[kind]["per_fold_accuracy_at_3"]
        ]
        results[kind]["margin_at_3"] = {
            "mean": round(float(np.mean(margins)), 4),
            "spread_over_folds": round(float(np.std(margins)), 4),
            "per_fold": [round(m, 4) for m in margins],
        }
    print_table(
        f"annotated identifiers of {items} items, each left out ({seconds:.0f} s)",
        ["readings", "symbols", "accuracy@1", "accuracy@3", "spread of @3 over folds"],
        rows,
    )
    for kind in kinds[:2]:
        margin = results[kind]["margin_at_3"]
        print(
            f"{kind}: margin @3 over the baseline, per fold: {margin['per_fold']} "
            f"(mean {margin['mean']}, spread {margin['spread_over_folds']})"
        )
    write_result("symbol_explanation", {"items": items, "results": results, "seconds": seconds})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
