"""Rules behind the checks of `wikidata_formulae`, and the guard against a broken pull."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from formula_assets.core.checks import SAMPLE, Outcome


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
