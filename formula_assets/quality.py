"""Data-quality rules behind the asset checks, as plain functions over Arrow tables."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from formula_assets.opt import is_tree

SAMPLE = 10
MAX_REJECT_RATE = 0.01


@dataclass
class Outcome:
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def unique_qids(table: pa.Table) -> Outcome:
    counts = Counter(table.column("qid").to_pylist())
    duplicates = sorted(q for q, n in counts.items() if n > 1)
    nulls = counts.pop(None, 0)
    passed = not duplicates and not nulls
    return Outcome(
        passed,
        "every qid appears once" if passed else f"{len(duplicates)} duplicated, {nulls} null qids",
        {"duplicates": len(duplicates), "null_qids": nulls, "sample": duplicates[:SAMPLE]},
    )


def mathml_present(table: pa.Table) -> Outcome:
    mathml = table.column("mathml")
    empty = pc.or_(pc.is_null(mathml), pc.equal(pc.utf8_trim_whitespace(mathml), ""))
    missing = table.filter(pc.fill_null(empty, True)).column("qid").to_pylist()
    return Outcome(
        not missing,
        "every item has MathML" if not missing else f"{len(missing)} items without MathML",
        {"missing": len(missing), "sample": missing[:SAMPLE]},
    )


def has_concepts(table: pa.Table) -> Outcome:
    lengths = pc.fill_null(pc.list_value_length(table.column("concepts")), 0)
    without = table.filter(pc.equal(lengths, 0)).column("qid").to_pylist()
    share = len(without) / table.num_rows if table.num_rows else 0.0
    return Outcome(
        not without,
        "every item links at least one concept"
        if not without
        else f"{len(without)} items ({share:.1%}) link no concept",
        {"without_concepts": len(without), "share": share, "sample": without[:SAMPLE]},
    )


def row_count_floor(table: pa.Table, floor: int) -> Outcome:
    rows = table.num_rows
    return Outcome(
        rows >= floor,
        f"{rows:,} rows (floor {floor:,})",
        {"rows": rows, "floor": floor},
    )


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


def reject_rate(graphs: pa.Table, rejected: pa.Table, limit: float = MAX_REJECT_RATE) -> Outcome:
    total = graphs.num_rows + rejected.num_rows
    rate = rejected.num_rows / total if total else 0.0
    return Outcome(
        total > 0 and rate <= limit,
        f"{rejected.num_rows:,} of {total:,} rejected ({rate:.2%}; limit {limit:.0%})",
        {"rejected": rejected.num_rows, "total": total, "rate": rate, "limit": limit},
    )
