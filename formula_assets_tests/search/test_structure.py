"""The structure channel: a formula query against every formula's canonical keys. Exact and
near-exact matches first; a part or one link of a formula still finds it; the index is built
from `opt_graphs` rows as the asset builds it, and answers as the searcher asks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from latex2mathml.converter import convert

from formula_assets.ingest.records import Concept, FormulaRecord, records_to_table
from formula_assets.search.structure import (
    EXACT,
    StructureIndex,
    query_keys,
    structure_table,
    variant_quality,
)
from formula_assets.syntax.mathml import ParseOptions
from formula_assets.syntax.opt import build_opt_graphs

OPTIONS = ParseOptions()
FORMULAE = {
    "Q1": "c^2 = a^2 + b^2",
    "Q2": "E = m c^2",
    "Q3": "C = \\pi d = 2 \\pi r",
    "Q4": "E_k = \\frac{1}{2} m v^2",
    "Q5": "V = R I",
    "Q6": "p = m v",
    "Q7": "F = -k x",
    "Q8": "\\sum_{i=1}^{n} x_i^2",
}


def math(tex: str) -> str:
    return convert(tex)


@pytest.fixture(scope="module")
def formulae() -> pa.Table:
    records = [
        FormulaRecord(
            qid=qid,
            label=qid,
            description=None,
            mathml=math(tex),
            concepts=[Concept("Q11423", "mass", None, math("m"))] if "m" in tex else [],
        )
        for qid, tex in FORMULAE.items()
    ]
    return records_to_table(records)


@pytest.fixture(scope="module")
def index(formulae: pa.Table) -> StructureIndex:
    pairs = zip(formulae["qid"].to_pylist(), formulae["mathml"].to_pylist(), strict=True)
    graphs = build_opt_graphs(pairs, OPTIONS).graphs
    return StructureIndex(structure_table(graphs, formulae, OPTIONS))


def ranked(index: StructureIndex, tex: str) -> list[str]:
    scores = index.score(query_keys(math(tex), OPTIONS)).scores
    return [index.qids[i] for i in np.argsort(-scores, kind="stable")]


@pytest.mark.parametrize(
    ("query", "item"),
    [
        ("a^2 + b^2 = c^2", "Q1"),  # sides swapped
        ("z^2 = y^2 + x^2", "Q1"),  # renamed
        ("E = c^2 m", "Q2"),  # reordered
        ("K = \\frac{m u^2}{2}", "Q4"),  # renamed, another notation
        ("U = I R", "Q5"),
        ("C = 2 \\pi r", "Q3"),  # one link of a chain
        ("\\pi d = 2 \\pi r", "Q3"),
        ("\\frac{1}{2} m v^2", "Q4"),  # one side
        ("F = k x", "Q7"),  # but for the sign
    ],
)
def test_a_variant_finds_its_formula_first(index: StructureIndex, query: str, item: str) -> None:
    assert ranked(index, query)[0] == item


def test_the_same_formula_is_exact_and_the_same_names_rank_first(index: StructureIndex) -> None:
    found = index.score(query_keys(math("p = m v"), OPTIONS))
    same = {index.qids[i] for i in np.flatnonzero(found.exact)}
    assert same == {"Q5", "Q6"}  # v = a b: Ohm's law has the shape of momentum
    assert {index.qids[i] for i in np.flatnonzero(found.named)} == {"Q6"}
    assert found.scores[index.qids.index("Q6")] > found.scores[index.qids.index("Q5")] >= EXACT
    assert ranked(index, "p = m v")[:2] == ["Q6", "Q5"]


def test_a_formula_unlike_all_scores_below_every_match(index: StructureIndex) -> None:
    scores = index.score(query_keys(math("\\int_0^1 \\log t \\, dt"), OPTIONS)).scores
    assert scores.max() < 1.0  # similarity only: no tier reached


def test_the_table_holds_identifiers_in_pattern_order_and_annotations(formulae) -> None:
    graphs = build_opt_graphs(
        zip(formulae["qid"].to_pylist(), formulae["mathml"].to_pylist(), strict=True), OPTIONS
    ).graphs
    table = structure_table(graphs, formulae, OPTIONS)
    row = table.to_pylist()[table["qid"].to_pylist().index("Q2")]
    assert sorted(row["identifiers"]) == ["E", "c", "m"]
    assert row["annotations"] == [{"concept": "Q11423", "label": "mass", "identifier": "m"}]
    assert row["pattern"] == query_keys(math("E = m c^2"), OPTIONS).pattern


def test_the_variant_figures_count_every_kind_that_applies(formulae, index) -> None:
    quality = variant_quality(index, formulae, OPTIONS)
    assert quality["renamed"]["queries"] == len(FORMULAE)
    assert quality["one_link"]["queries"] == 1  # only Q3 is a chain
    assert quality["swapped_sides"]["strict_success_at_1"] == 1.0
    assert quality["all"]["queries"] == sum(
        figures["queries"] for kind, figures in quality.items() if kind != "all"
    )
