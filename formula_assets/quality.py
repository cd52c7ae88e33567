"""Data-quality rules behind the asset checks, as plain functions over Arrow tables."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
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


EXPECTED_DIMENSION_KEY = b"expected_dimension"


def with_expected_dimension(table: pa.Table, dimension: int) -> pa.Table:
    """Record, from the model or config, the width the vectors must have."""
    metadata = dict(table.schema.metadata or {})
    metadata[EXPECTED_DIMENSION_KEY] = str(dimension).encode()
    return table.replace_schema_metadata(metadata)


def vectors_valid(table: pa.Table, column: str = "embedding") -> Outcome:
    """Fixed-width float32 vectors of the declared width, all finite, none all-zero."""
    field_type = table.schema.field(column).type
    declared = (table.schema.metadata or {}).get(EXPECTED_DIMENSION_KEY)
    problems: list[str] = []
    if not (pa.types.is_fixed_size_list(field_type) and field_type.value_type == pa.float32()):
        problems.append(f"{column} is {field_type}, not a fixed-size float32 list")
        return Outcome(False, "; ".join(problems), {"problems": problems})
    width = field_type.list_size
    if declared is None:
        problems.append("no expected dimension recorded")
    elif int(declared) != width:
        problems.append(f"vectors have {width} dimensions, expected {int(declared)}")
    flat = table.column(column).combine_chunks()
    if flat.null_count:
        problems.append(f"{flat.null_count} null vectors")
    values = flat.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
    non_finite = int((~np.isfinite(values)).any(axis=1).sum())
    zero = int((np.abs(values).sum(axis=1) == 0).sum())
    if non_finite:
        problems.append(f"{non_finite} vectors with NaN or inf")
    if zero:
        problems.append(f"{zero} all-zero vectors")
    return Outcome(
        not problems,
        "; ".join(problems) or f"{table.num_rows:,} finite vectors of {width} dimensions",
        {"dimension": width, "non_finite": non_finite, "all_zero": zero, "rows": table.num_rows},
    )


def every_formula_has_both_vectors(
    graphs: pa.Table, structural: pa.Table, semantic: pa.Table
) -> Outcome:
    accepted = set(graphs.column("qid").to_pylist())
    no_structural = sorted(accepted - set(structural.column("qid").to_pylist()))
    no_semantic = sorted(accepted - set(semantic.column("qid").to_pylist()))
    passed = not no_structural and not no_semantic
    return Outcome(
        passed,
        f"all {len(accepted):,} parsed formulae have both vectors"
        if passed
        else f"{len(no_structural)} lack a structural, {len(no_semantic)} a semantic vector",
        {
            "without_structural": len(no_structural),
            "without_semantic": len(no_semantic),
            "sample": (no_structural + no_semantic)[:SAMPLE],
        },
    )


# metric → (low, high), inclusive; a metric missing here only has to be finite.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "mean_cosine": (-1, 1),
    "median_cosine": (-1, 1),
    "std_cosine": (0, 2),
    "rsa_spearman": (-1, 1),
    "rsa_p_value": (0, 1),
    "procrustes_error": (0, 1),
    "linear_cka": (0, 1),
    "cca_mean": (0, 1),
    "cca_top10": (0, 1),
    "cca_mean_shuffled": (0, 1),
    "cca_mean_heldout": (-1, 1),
    "recall_at_1": (0, 1),
    "recall_at_5": (0, 1),
    "recall_at_10": (0, 1),
    "permutation_p_value": (0, 1),
    "permutation_null_mean": (-1, 1),
    "permutation_null_std": (0, 2),
}


def metrics_in_range(metrics: pa.Table) -> Outcome:
    values = dict(
        zip(metrics.column("metric").to_pylist(), metrics.column("value").to_pylist(), strict=True)
    )
    problems = [
        f"{name} = {value}"
        for name, value in values.items()
        if value is None
        or not np.isfinite(value)
        or (name in METRIC_RANGES and not METRIC_RANGES[name][0] <= value <= METRIC_RANGES[name][1])
    ]
    missing = sorted(set(METRIC_RANGES) - set(values))
    recalls = [values.get(f"recall_at_{k}") for k in (1, 5, 10)]
    if None not in recalls and not recalls[0] <= recalls[1] <= recalls[2]:
        problems.append(
            f"recall not monotone: R@1 {recalls[0]}, R@5 {recalls[1]}, R@10 {recalls[2]}"
        )
    passed = not problems and not missing
    return Outcome(
        passed,
        "all metrics finite and in range"
        if passed
        else "; ".join(problems + [f"missing {m}" for m in missing]),
        {"out_of_range": problems[:SAMPLE], "missing": missing},
    )


def folds_valid(folds: pa.Table, formulae: pa.Table, valid_folds=(1, 2, 3, 4, 5)) -> Outcome:
    """Each formula in exactly one fold; folds within range; none empty."""
    qids = folds.column("qid").to_pylist()
    assigned = folds.column("fold").to_pylist()
    counts = Counter(qids)
    duplicated = sorted(q for q, n in counts.items() if n > 1)
    missing = sorted(set(formulae.column("qid").to_pylist()) - set(counts))
    out_of_range = sorted({f for f in assigned if f not in valid_folds}, key=str)
    sizes = Counter(assigned)
    empty = [f for f in valid_folds if sizes.get(f, 0) == 0]
    problems = []
    if duplicated:
        problems.append(f"{len(duplicated)} formulae in more than one fold")
    if missing:
        problems.append(f"{len(missing)} formulae without a fold")
    if out_of_range:
        problems.append(f"folds outside {valid_folds}: {out_of_range}")
    if empty:
        problems.append(f"empty folds: {empty}")
    return Outcome(
        not problems,
        "; ".join(problems) or f"{len(counts):,} formulae in {len(sizes)} disjoint folds",
        {
            "fold_sizes": {str(k): v for k, v in sorted(sizes.items(), key=str)},
            "sample": (duplicated + missing)[:SAMPLE],
        },
    )


SCORE_METHODS = ("bm25", "sbert_no_cl", "graph_text_cl", "sbert_dual_cl", "score_ensemble")
TRAINED_METHODS = ("graph_text_cl", "sbert_dual_cl", "score_ensemble")
SCORE_DIRECTIONS = ("syntactic_to_semantic", "semantic_to_syntactic")
CHANCE_MARGIN = 3.0


def scores_complete(scores: pa.Table, folds=(1, 2, 3, 4, 5)) -> Outcome:
    keys = Counter(
        zip(
            scores["fold"].to_pylist(),
            scores["method"].to_pylist(),
            scores["direction"].to_pylist(),
            strict=True,
        )
    )
    expected = {(f, m, d) for f in folds for m in SCORE_METHODS for d in SCORE_DIRECTIONS}
    missing = sorted(expected - set(keys))
    doubled = sorted(k for k, n in keys.items() if n > 1)
    passed = not missing and not doubled
    return Outcome(
        passed,
        f"{len(expected)} fold × method × direction rows"
        if passed
        else f"{len(missing)} rows missing, {len(doubled)} doubled",
        {"missing": [str(k) for k in missing[:SAMPLE]], "doubled": [str(k) for k in doubled]},
    )


def scores_consistent(scores: pa.Table) -> Outcome:
    bad = [
        f"fold {r['fold']} {r['method']} {r['direction']}"
        for r in scores.to_pylist()
        if not (
            0 <= r["recall_at_1"] <= r["recall_at_5"] <= r["recall_at_10"] <= 1
            and 0 <= r["mrr"] <= 1
        )
    ]
    return Outcome(
        not bad,
        "R@1 ≤ R@5 ≤ R@10 ≤ 1 everywhere" if not bad else f"{len(bad)} inconsistent rows",
        {"sample": bad[:SAMPLE]},
    )


def required_recall_at_10(candidates: int, margin: float = CHANCE_MARGIN) -> float:
    """`margin` × chance (10 / candidates), capped halfway between chance and 1 for small pools."""
    chance = min(1.0, 10 / max(candidates, 1))
    return min(margin * chance, chance + (1 - chance) / 2)


def scores_beat_chance(scores: pa.Table, margin: float = CHANCE_MARGIN) -> Outcome:
    weak = [
        f"fold {r['fold']} {r['method']} {r['direction']}: R@10 {r['recall_at_10']:.3f}"
        f" < {required_recall_at_10(r['candidates'], margin):.3f}"
        f" (chance {min(1.0, 10 / r['candidates']):.3f})"
        for r in scores.to_pylist()
        if r["method"] in TRAINED_METHODS
        and r["recall_at_10"] < required_recall_at_10(r["candidates"], margin)
    ]
    return Outcome(
        not weak,
        f"every trained method ≥ {margin:g}× chance R@10"
        if not weak
        else f"{len(weak)} rows within {margin:g}× of chance",
        {"weak": weak[:SAMPLE]},
    )


def shrinkage_problem(
    new: int, last: int | None, fraction: float, what: str = "items"
) -> str | None:
    """Why a pull of `new` rows must not replace the last good one of `last` rows, if it must not.

    Empty pulls are always refused; otherwise anything below `fraction` of the last good size.
    """
    if new == 0:
        return f"the source returned no {what}" + (
            f" (the last good pull had {last:,})" if last else ""
        )
    if last and new < fraction * last:
        return (
            f"the source returned {new:,} {what}, under {fraction:.0%} of the last good pull's "
            f"{last:,}"
        )
    return None
