"""The whole search on formula variants generated from every item's own formula: identifiers
renamed, sides of `=` swapped, operands of a sum or product reordered, one link of a chain
(`search.variants`). Each variant goes in as MathML, through the parser, the structure and the
meaning channels and the fusion.

Two ranks per query: the item's own (`strict`), and the first item the query cannot tell from
it (`same formula`: the same canonical pattern — a renamed `v = λ f` is every formula of that
shape). Needs the `default` lake of `make run`.

    python -m benchmarks.search_variants [--limit N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import print_table, write_result
from benchmarks.search_queries import searcher
from formula_assets.search.quality import Ranked, ranks, summary
from formula_assets.search.searcher import MATHML
from formula_assets.search.variants import VARIANTS
from formula_assets.syntax.mathml import MathMLError, parse_mathml
from formula_assets.syntax.writer import to_mathml

DEPTH = 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="only the first N items (a quick look)")
    args = parser.parse_args()
    search = searcher()
    catalogue = search.catalogue
    patterns = {q: p for q, p in zip(search.structure.qids, search.structure.pattern, strict=True)}
    by_pattern: dict[int, set[str]] = {}
    for qid, pattern in patterns.items():
        by_pattern.setdefault(int(pattern), set()).add(qid)
    results: list[Ranked] = []
    started = time.perf_counter()
    items = 0
    for row, qid in enumerate(catalogue.qids):
        if qid not in patterns or not catalogue.mathml[row]:
            continue
        items += 1
        if args.limit and items > args.limit:
            break
        try:
            tree = parse_mathml(catalogue.mathml[row], search.options)
        except MathMLError:
            continue
        alike_qids = by_pattern[int(patterns[qid])]
        for kind, make in VARIANTS.items():
            variant = make(tree, row)
            if variant is None:
                continue
            hits = search.search(to_mathml(variant), MATHML, top=DEPTH).hits
            order = np.array([catalogue.row(h.qid) for h in hits])
            alike = np.array([catalogue.row(q) for q in alike_qids])
            strict, same = ranks(order, row, alike)
            results.append(Ranked(kind, strict, same))
    seconds = time.perf_counter() - started
    figures = summary(results)
    print_table(
        f"variants of {items} items' own formulae, the whole search ({seconds:.0f} s)",
        ["variant", "queries", "success@1", "success@10", "MRR", "same formula: success@1"],
        [
            [
                kind,
                f["queries"],
                f["strict_success_at_1"],
                f["strict_success_at_10"],
                f["strict_mrr"],
                f["same_formula_success_at_1"],
            ]
            for kind, f in figures.items()
        ],
    )
    unique = sum(1 for qids in by_pattern.values() if len(qids) == 1)
    print(
        f"{len(patterns) - unique} of {len(patterns)} formulae share their pattern with another "
        "formula: renamed, they cannot be told from it (the same-formula column counts either)"
    )
    write_result(
        "search_variants",
        {"items": items, "figures": figures, "seconds": seconds, "unique_patterns": unique},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
