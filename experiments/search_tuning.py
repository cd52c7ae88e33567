"""How the fusion's weights were chosen: a grid over the tuning part of the hand-written
queries only (`benchmarks/data/search_queries.jsonl`, `part` = tuning), scored by the sum of
the text and the LaTeX queries' MRR. Each query's channels are scored once; every grid point
only fuses them again. Prints the best points; the chosen values are `FusionWeights`' and
the structure channel calls exact only the very formula (`search.searcher`): a renamed one
earned nothing more at any bonus tried.

Then the names channel's lexical weights (`NameWeights`; the dense cosine weighs 1), with
the fusion's chosen values, scored by the text queries' MRR (`--names`).

    python -m experiments.search_tuning [--names]
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from benchmarks.common import print_table, write_result
from benchmarks.search_queries import load_queries, searcher
from formula_assets.search.fusion import (
    MEANING,
    NAMES,
    STRUCTURE,
    ChannelScores,
    FusionWeights,
    fuse,
)
from formula_assets.search.meaning import latex_to_mathml
from formula_assets.search.names import NameWeights

GRID = {
    "k": (5.0, 10.0, 30.0, 60.0),
    "meaning": (0.0, 0.1, 0.25, 0.5, 1.0),
    "exact": (0.5, 1.0),
    "renamed_exact": (0.0, 0.3, 1.0),
}


NAMES_GRID = {
    "names": (0.1, 0.2, 0.3, 0.5),
    "description": (0.1, 0.2, 0.3, 0.5),
    "trigrams": (0.0, 0.1, 0.2, 0.3),
}


def names_grid() -> int:
    queries = [q for q in load_queries("tuning") if q["kind"] == "text"]
    search = searcher()
    prepared = []
    for query in queries:
        text = " ".join(query["query"].split())
        channels = search._text_channels(text)
        expected = {search.catalogue.row(e) for e in query["expected"]}
        prepared.append((text, search.meaning.sentence(text), channels, expected))
    points = []
    for values in itertools.product(*NAMES_GRID.values()):
        weights = NameWeights(**dict(zip(NAMES_GRID, values, strict=True)), dense=1.0)
        reciprocal = []
        for text, vector, channels, expected in prepared:
            found = search.names.score(text, vector, weights)
            scored = {**channels, NAMES: search._channel(NAMES, found.scores, found.exact)}
            fused = fuse(scored, search.fusion)
            rank = next((i for i, f in enumerate(fused, 1) if f.row in expected), None)
            reciprocal.append(1.0 / rank if rank else 0.0)
        points.append((float(np.mean(reciprocal)), *values))
    points.sort(key=lambda p: -p[0])
    print_table(
        f"names channel grid on the tuning part ({len(queries)} text queries), best first",
        [*NAMES_GRID, "text MRR"],
        [[*values, f"{mrr:.3f}"] for mrr, *values in points[:12]],
    )
    write_result("search_tuning_names", {"grid": NAMES_GRID, "best": points[:12]})
    return 0


def main() -> int:
    if "--names" in sys.argv[1:]:
        return names_grid()
    queries = load_queries("tuning")
    search = searcher()
    channels = {}
    renamed_rows = {}  # per LaTeX query: which structure rows hold its formula, renamed
    for query in queries:
        if query["kind"] == "text":
            channels[query["id"]] = search._text_channels(" ".join(query["query"].split()))
        else:
            found, _, scores = search._formula_channels(latex_to_mathml(query["query"]))
            channels[query["id"]] = found
            rows = search._rows[STRUCTURE]
            renamed_rows[query["id"]] = scores.exact[rows >= 0].astype(float)
    points = []
    for k, meaning, exact, renamed in itertools.product(*GRID.values()):
        weights = FusionWeights(
            k=k,
            weights={NAMES: 1.0, STRUCTURE: 1.0, MEANING: meaning},
            exact={NAMES: exact, STRUCTURE: exact},
        )
        reciprocal: dict[str, list[float]] = {}
        for query in queries:
            scored = dict(channels[query["id"]])
            if STRUCTURE in scored:  # exact names: 1; the same formula renamed: `renamed`
                s = scored[STRUCTURE]
                level = np.where(s.exact >= 1.0, 1.0, renamed * renamed_rows[query["id"]])
                scored[STRUCTURE] = ChannelScores(s.rows, s.scores, level)
            fused = fuse(scored, weights)
            expected = {search.catalogue.row(e) for e in query["expected"]}
            rank = next((i for i, f in enumerate(fused, 1) if f.row in expected), None)
            reciprocal.setdefault(query["kind"], []).append(1.0 / rank if rank else 0.0)
        mrr = {kind: float(np.mean(v)) for kind, v in reciprocal.items()}
        points.append((sum(mrr.values()), k, meaning, exact, renamed, mrr))
    points.sort(key=lambda p: -p[0])
    print_table(
        f"fusion grid on the tuning part ({len(queries)} queries), best first",
        ["k", "meaning weight", "exact bonus", "renamed exactness", "text MRR", "LaTeX MRR"],
        [
            [k, m, e, r, f"{mrr['text']:.3f}", f"{mrr['latex']:.3f}"]
            for _, k, m, e, r, mrr in points[:12]
        ],
    )
    write_result(
        "search_tuning",
        {"grid": GRID, "best": [[*p[1:5], p[5]] for p in points[:12]]},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
