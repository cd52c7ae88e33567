"""How the fusion's weights were chosen: a grid over the tuning part of the hand-written
queries only (`benchmarks/data/search_queries.jsonl`, `part` = tuning), scored by the sum of
the text and the LaTeX queries' MRR. Each query's channels are scored once; every grid point
only fuses them again. Prints the best points; the chosen values are `FusionWeights`' and
the structure channel calls exact only the very formula (`search.searcher`): a renamed one
earned nothing more at any bonus tried.

Then the names channel's lexical weights (`NameWeights`; the dense cosine weighs 1), with
the fusion's chosen values, scored by the text queries' MRR (`--names`).

The tuning part holds no query that says a formula in words, so the grid is flat in the
weight of the spoken formulae (`NameWeights.spoken`). `--spoken` sets that weight's tuning
figures beside those of `SPOKEN_CHECK`: formulae said in words, written for this check
after the search was built (so a check of what the match is for, not a benchmark).

    python -m experiments.search_tuning [--names | --spoken]
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
    "spoken": (0.0, 0.1, 0.2, 0.3, 0.5),
}


# (query, expected QID): a formula or a symbol said in words
SPOKEN_CHECK = [
    ("e equals m c squared", "Q35875"),
    ("v equals i r", "Q41591"),
    ("a squared plus b squared equals c squared", "Q11518"),
    ("h bar", "Q2115969"),
    ("p v equals n r t", "Q191785"),
    ("one half m v squared", "Q46276"),
    ("e equals h nu", "Q18388892"),
    ("f equals g m1 m2 over r squared", "Q134465"),
    ("pressure equals force over area", "Q39552"),
    ("density equals mass over volume", "Q29539"),
    ("momentum equals mass times velocity", "Q41273"),
    ("power equals energy over time", "Q25342"),
    ("speed equals distance over time", "Q3711325"),
    ("area of a circle pi r squared", "Q4115331"),
    ("e to the i pi plus one equals zero", "Q204819"),
    ("n factorial", "Q120976"),
    ("force equals minus k x", "Q170282"),
    ("work equals force times distance", "Q42213"),
]
SPOKEN_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)


def _prepared(search, queries: list[tuple[str, list[str]]]) -> list[tuple]:
    """Each text query's other channels and sentence vector, scored once."""
    prepared = []
    for query, expected in queries:
        text = " ".join(query.split())
        rows = {search.catalogue.row(e) for e in expected}
        prepared.append((text, search.meaning.sentence(text), search._text_channels(text), rows))
    return prepared


def _ranks(search, prepared: list[tuple], weights: NameWeights) -> list[int | None]:
    """Each query's rank of its first expected item, the names channel scored by `weights`."""
    ranks = []
    for text, vector, channels, expected in prepared:
        found = search.names.score(text, vector, weights)
        scored = {**channels, NAMES: search._channel(NAMES, found.scores, found.exact)}
        fused = fuse(scored, search.fusion)
        ranks.append(next((i for i, f in enumerate(fused, 1) if f.row in expected), None))
    return ranks


def _tuning_texts() -> list[tuple[str, list[str]]]:
    return [(q["query"], q["expected"]) for q in load_queries("tuning") if q["kind"] == "text"]


def names_grid() -> int:
    search = searcher()
    queries = _tuning_texts()
    prepared = _prepared(search, queries)
    points = []
    for values in itertools.product(*NAMES_GRID.values()):
        weights = NameWeights(**dict(zip(NAMES_GRID, values, strict=True)), dense=1.0)
        ranks = _ranks(search, prepared, weights)
        points.append((float(np.mean([1.0 / r if r else 0.0 for r in ranks])), *values))
    points.sort(key=lambda p: -p[0])
    print_table(
        f"names channel grid on the tuning part ({len(queries)} text queries), best first",
        [*NAMES_GRID, "text MRR"],
        [[*values, f"{mrr:.3f}"] for mrr, *values in points[:12]],
    )
    write_result("search_tuning_names", {"grid": NAMES_GRID, "best": points[:12]})
    return 0


def spoken_weights() -> int:
    search = searcher()
    parts = {
        "tuning texts": _prepared(search, _tuning_texts()),
        "said in words": _prepared(search, [(q, [e]) for q, e in SPOKEN_CHECK]),
    }
    rows, result = [], {}
    for weight in SPOKEN_WEIGHTS:
        for part, prepared in parts.items():
            ranks = np.array(
                [r or 10**6 for r in _ranks(search, prepared, NameWeights(spoken=weight))]
            )
            figures = [
                float((ranks <= 1).mean()),
                float((ranks <= 10).mean()),
                float((1.0 / ranks).mean()),
            ]
            rows.append([weight, part, len(ranks), *(f"{f:.3f}" for f in figures)])
            result[f"{weight} {part}"] = figures
    print_table(
        "the spoken formulae's weight (the other names weights as chosen)",
        ["spoken", "queries", "n", "success@1", "success@10", "MRR"],
        rows,
    )
    write_result("search_tuning_spoken", result)
    return 0


def main() -> int:
    if "--names" in sys.argv[1:]:
        return names_grid()
    if "--spoken" in sys.argv[1:]:
        return spoken_weights()
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
