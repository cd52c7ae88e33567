"""Rules behind the checks of `opt_graphs`: one graph per formula, trees, a low reject rate."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from formula_assets.core.checks import SAMPLE, Outcome
from formula_assets.syntax.opt import is_tree

MAX_REJECT_RATE = 0.01
REJECT_SIGNIFICANCE = 0.01


def one_graph_per_formula(formulae: pa.Table, graphs: pa.Table, rejected: pa.Table) -> Outcome:
    """Each formula is either a graph or a rejected row, exactly once."""
    expected = set(formulae.column("qid").to_pylist())
    graph_qids = Counter(graphs.column("qid").to_pylist())
    rejected_qids = set(rejected.column("qid").to_pylist())
    duplicated = sorted(q for q, n in graph_qids.items() if n > 1)
    both = sorted(rejected_qids & set(graph_qids))
    missing = sorted(expected - set(graph_qids) - rejected_qids)
    unknown = sorted(set(graph_qids) - expected)
    passed = not (duplicated or both or missing or unknown)
    return Outcome(
        passed,
        "one graph per accepted formula"
        if passed
        else (
            f"{len(missing)} formulae neither parsed nor rejected, {len(duplicated)} duplicated,"
            f" {len(both)} both parsed and rejected, {len(unknown)} not in wikidata_formulae"
        ),
        {
            "missing": len(missing),
            "duplicated": len(duplicated),
            "parsed_and_rejected": len(both),
            "unknown": len(unknown),
            "sample": (missing + duplicated + both + unknown)[:SAMPLE],
        },
    )


def graphs_are_trees(graphs: pa.Table) -> Outcome:
    bad: list[str] = []
    for qid, n, parents, children, tokens in zip(
        graphs.column("qid").to_pylist(),
        graphs.column("num_nodes").to_pylist(),
        graphs.column("edge_parent").to_pylist(),
        graphs.column("edge_child").to_pylist(),
        graphs.column("node_tokens").to_pylist(),
        strict=True,
    ):
        if n != len(tokens or []) or not is_tree(n, parents or [], children or []):
            bad.append(qid)
    return Outcome(
        not bad,
        "every graph is a tree (edges = nodes − 1, one root)"
        if not bad
        else f"{len(bad)} graphs are not trees",
        {"not_trees": len(bad), "sample": bad[:SAMPLE]},
    )


def reject_rate(
    graphs: pa.Table,
    rejected: pa.Table,
    limit: float = MAX_REJECT_RATE,
    significance: float = REJECT_SIGNIFICANCE,
) -> Outcome:
    """Fails when the share of rejected formulae is significantly above `limit`.

    A one-sided binomial test: P(≥ k rejections among n | rate = limit) < `significance`. One
    merror among five sampled formulae is chance; thirty among 1,758 is a broken parser.
    """
    from scipy import stats

    k, total = rejected.num_rows, graphs.num_rows + rejected.num_rows
    rate = k / total if total else 0.0
    p_value = float(stats.binom.sf(k - 1, total, limit)) if total and k else 1.0
    return Outcome(
        total > 0 and p_value >= significance,
        f"{k:,} of {total:,} rejected ({rate:.2%}; limit {limit:.0%}, binomial p {p_value:.2g})",
        {"rejected": k, "total": total, "rate": rate, "limit": limit, "p_value": p_value},
    )
