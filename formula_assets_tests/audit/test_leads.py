"""Leads for editors, on a small corpus whose annotations are written out here."""

from __future__ import annotations

import pyarrow as pa
import pytest
from latex2mathml.converter import convert

from formula_assets.audit.leads import (
    ANOTHER_FORMULA,
    DOUBTED,
    NOT_IN_FORMULA,
    SWAPPED,
    TWO_CONCEPTS,
    TWO_SYMBOLS,
    UNANNOTATED,
    WRONG_SENSE,
    LeadFinder,
    _addition,
    _base,
    _unannotated,
    _word,
    priority,
    support,
)
from formula_assets.audit.table import build_audit, ranks_in_range, tsv_rows
from formula_assets.ingest.records import Concept, FormulaRecord, records_to_table
from formula_assets.search.catalogue import Catalogue
from formula_assets.search.explain import ALIGNED, CORPUS, Reading, SymbolExplanation
from formula_assets.search.structure import StructureIndex, structure_table
from formula_assets.syntax.mathml import ParseOptions
from formula_assets.syntax.opt import build_opt_graphs

OPTIONS = ParseOptions()
MASS, ACCEL, FORCE = ("Q11423", "mass"), ("Q11376", "acceleration"), ("Q11402", "force")
TIME, SPEED, DIST = ("Q11471", "time"), ("Q3711325", "speed"), ("Q126017", "distance")
TAXON, REFLEXION, WAVE = ("Q36602", "order"), ("Q105488155", "Order"), ("Q41364", "wavelength")
# items and their annotations: (concept, symbol as TeX)
ITEMS: dict[str, tuple[str, list[tuple[tuple[str, str], str]]]] = {
    "Q1": ("F = m a", [(FORCE, "F"), (MASS, "m"), (ACCEL, "a")]),
    "Q2": ("F = m a", [(FORCE, "F"), (MASS, "m"), (ACCEL, "a")]),
    "Q3": ("G = n b", [(FORCE, "G"), (MASS, "n"), (ACCEL, "b")]),
    "Q4": ("F = m a", [(FORCE, "F"), (MASS, "m")]),  # a lacks its concept
    "Q5": ("F = m a", [(FORCE, "F"), (MASS, "a"), (ACCEL, "m")]),  # m and a exchanged
    "Q6": ("F = m a", [(FORCE, "F"), (MASS, "m"), (TIME, "a")]),  # a: the wrong concept
    "Q7": ("v = d / t", [(SPEED, "v"), (DIST, "d"), (TIME, "t"), (MASS, "M")]),  # M: not in it
    "Q8": ("S = \\sum_{i=1}^{n} x_i", [(DIST, "S"), (DIST, "x_i"), (TIME, "n")]),
    "Q9": ("v = d / t", [(SPEED, "v"), (DIST, "d"), (TIME, "t"), (SPEED, "t")]),
    # one symbol for the indexed ones, a derivative's prime, a difference's Δ: all written
    "Q10": ("F = m_1 m_2 + \\Delta U + E'", [(MASS, "m"), (FORCE, "F'"), (TIME, "U"), (DIST, "E")]),
    # two concepts named "order": Q11's may be the wrong sense
    "Q11": ("n \\lambda = 2 d", [(TAXON, "n"), (WAVE, "\\lambda"), (DIST, "d")]),
    "Q12": ("N = h k", [(REFLEXION, "N"), (WAVE, "h"), (DIST, "k")]),
}


def _records(changes: dict[str, dict] | None = None) -> pa.Table:
    """The corpus; `changes`: qid → record fields that replace the written ones."""
    return records_to_table(
        [
            FormulaRecord(
                **{
                    "qid": qid,
                    "label": f"item {qid}",
                    "description": None,
                    "mathml": convert(tex),
                    "concepts": [
                        Concept(c, label, None, convert(symbol)) for (c, label), symbol in listed
                    ],
                    **(changes or {}).get(qid, {}),
                }
            )
            for qid, (tex, listed) in ITEMS.items()
        ]
    )


def _finder(formulae: pa.Table) -> LeadFinder:
    pairs = zip(formulae["qid"].to_pylist(), formulae["mathml"].to_pylist(), strict=True)
    graphs = build_opt_graphs(pairs, OPTIONS).graphs
    table = structure_table(graphs, formulae, OPTIONS)
    return LeadFinder(Catalogue.from_tables(formulae, table), StructureIndex(table), OPTIONS)


@pytest.fixture(scope="module")
def finder() -> LeadFinder:
    return _finder(_records())


def leads(finder: LeadFinder, qid: str, doubt=None):
    row = finder.catalogue.row(qid)
    assert row is not None
    return finder.leads(row, doubt)


def test_a_complete_annotation_has_no_lead(finder: LeadFinder) -> None:
    assert leads(finder, "Q1") == []


def test_an_unannotated_quantity_gets_the_concept_formulae_alike_give_it(finder) -> None:
    [lead] = leads(finder, "Q4")
    assert (lead.kind, lead.symbol, lead.suggestion) == (UNANNOTATED, "a", ACCEL[0])
    assert set(lead.items) >= {"Q1", "Q2"} and "Q4" not in lead.items
    assert lead.text.startswith("a has no concept; the corpus and similar formulae suggest ")
    assert "acceleration (Q11376)" in lead.text
    assert lead.quickstatements == 'Q4\tP527\tQ11376\tP7235\t"a"'


def test_exchanged_symbols_are_one_lead_first(finder: LeadFinder) -> None:
    found = leads(finder, "Q5")
    assert found[0].kind == SWAPPED and found[0].symbol == "a"
    assert {found[0].concept, found[0].suggestion} == {MASS[0], ACCEL[0]}
    assert "look exchanged" in found[0].text


def test_a_concept_formulae_alike_do_not_give_the_symbol_is_doubted(finder) -> None:
    [lead] = [lead for lead in leads(finder, "Q6") if lead.kind == DOUBTED]
    assert (lead.symbol, lead.concept, lead.suggestion) == ("a", TIME[0], ACCEL[0])
    stronger = next(x for x in leads(finder, "Q6", {TIME[0]: 0.9}) if x.kind == DOUBTED)
    assert stronger.score > lead.score and "90% down" in stronger.text


def test_a_symbol_the_formula_does_not_write(finder: LeadFinder) -> None:
    found = [lead for lead in leads(finder, "Q7") if lead.kind == NOT_IN_FORMULA]
    assert [(lead.symbol, lead.concept) for lead in found] == [("M", MASS[0])]


def _q7_with_mass_twice() -> pa.Table:
    """Q7 as a table stored before readers dropped repeats: its concepts listed once per
    formula, without `other_formulae` and `repeated_concepts`."""
    listed = ITEMS["Q7"][1]
    concepts = [Concept(c, label, None, convert(symbol)) for (c, label), symbol in listed]
    table = _records({"Q7": {"concepts": concepts + concepts}})
    return table.drop_columns(["other_formulae", "repeated_concepts"])


@pytest.mark.parametrize(
    "formulae",
    [
        lambda: _records({"Q7": {"repeated_concepts": 4}}),
        _q7_with_mass_twice,
    ],
    ids=["repeats dropped", "table stored with the repeats"],
)
def test_a_symbol_of_an_item_with_several_formulae_may_be_of_another(finder, formulae) -> None:
    (alone,) = [lead for lead in leads(finder, "Q7") if lead.kind == NOT_IN_FORMULA]
    (several,) = [lead for lead in leads(_finder(formulae()), "Q7") if lead.kind == NOT_IN_FORMULA]

    assert several.score == pytest.approx(alone.score * ANOTHER_FORMULA)
    assert several.text.endswith("so it may belong to another of them")
    assert "another" not in alone.text


def test_a_symbol_is_judged_against_every_stored_formula(finder) -> None:
    """Q7's M is in its other formula `M = d`: no lead. Where the other formulae are stored
    and none writes it, the lead stands at full weight: no unseen formula can hold it."""
    other = _finder(_records({"Q7": {"other_formulae": [convert("M = d")]}}))
    assert [lead for lead in leads(other, "Q7") if lead.kind == NOT_IN_FORMULA] == []
    (alone,) = [lead for lead in leads(finder, "Q7") if lead.kind == NOT_IN_FORMULA]
    stored = _finder(
        _records({"Q7": {"other_formulae": [convert("v = s / t")], "repeated_concepts": 4}})
    )
    (lead,) = [lead for lead in leads(stored, "Q7") if lead.kind == NOT_IN_FORMULA]
    assert lead.score == alone.score and "another" not in lead.text


def test_an_indexed_primed_or_differenced_form_writes_the_symbol(finder) -> None:
    assert [lead for lead in leads(finder, "Q10") if lead.kind == NOT_IN_FORMULA] == []


def test_placeholders_are_not_leads_but_their_quantities_are(finder: LeadFinder) -> None:
    # i is the summation index: no lead; every other identifier is annotated
    assert [lead.symbol for lead in leads(finder, "Q8") if lead.kind == UNANNOTATED] == []


def test_two_concepts_on_one_symbol_and_one_concept_on_two(finder: LeadFinder) -> None:
    found = [lead for lead in leads(finder, "Q9") if lead.kind == TWO_CONCEPTS]
    assert [(lead.symbol, lead.score) for lead in found] == [("t", 0.2)]
    shared = [lead for lead in leads(finder, "Q9") if lead.kind == TWO_SYMBOLS]
    assert [(lead.concept, lead.score) for lead in shared] == [(SPEED[0], 0.1)]
    assert "annotated on t and v" in shared[0].text


def test_each_kind_weighs_its_evidence_by_how_actionable_it_is(finder: LeadFinder) -> None:
    """Exchanged symbols: 0.9 × the weaker reading; a doubted concept: 0.7 × the reading ×
    (½ + ½ the models' percentile); a symbol not in the formula: 0.6."""
    _, readings, _, _ = finder.explain(finder.catalogue.row("Q5"))
    top = {e.identifier: e.readings[0].score for e in readings}
    swapped = next(x for x in leads(finder, "Q5") if x.kind == SWAPPED)
    assert swapped.score == pytest.approx(0.9 * min(top["a"], top["m"]))
    _, readings, _, _ = finder.explain(finder.catalogue.row("Q6"))
    best = next(e for e in readings if e.identifier == "a").readings[0].score
    doubted = next(x for x in leads(finder, "Q6", {TIME[0]: 0.5}) if x.kind == DOUBTED)
    assert doubted.score == pytest.approx(0.7 * best * 0.75)
    (missing,) = [x for x in leads(finder, "Q7") if x.kind == NOT_IN_FORMULA]
    assert missing.score == 0.6


def explanation(score: float, aligned: float, corpus: float, items: int, count: int):
    reading = Reading(
        "Q1",
        "x",
        score,
        {ALIGNED: aligned, CORPUS: corpus},
        tuple(f"Q{n + 2}" for n in range(items)),
    )
    return SymbolExplanation("x", (reading,), count)


def test_a_readings_support_counts_its_items_and_at_most_two_of_the_corpus() -> None:
    (reading,) = explanation(0.8, 1.0, 0.5, 2, 4).readings  # 2 items, 0.5 × 4 = 2 of the corpus
    assert support(reading, 4) == pytest.approx(1 - 0.5**4)
    assert support(reading, 40) == pytest.approx(1 - 0.5**4)  # the corpus counts two at most
    (alone,) = explanation(0.8, 1.0, 0.0, 0, 0).readings
    assert support(alone, 0) == 0.5  # nothing but the reading: half sure
    (one,) = explanation(0.8, 1.0, 0.25, 1, 4).readings
    assert support(one, 4) == pytest.approx(0.75)


def test_an_unannotated_quantitys_strength() -> None:
    """0.8 × support (3 items: 0.875); half for a placeholder that formulae alike annotate;
    times the sense; 0.3 without a reading; no lead for a placeholder nothing aligned names."""
    read = explanation(0.8, 1.0, 0.5, 2, 2)
    assert _unannotated("Q9", "x", read, False).score == pytest.approx(0.8 * 0.875)
    assert _unannotated("Q9", "x", read, True).score == pytest.approx(0.4 * 0.875)
    sensed = _unannotated("Q9", "x", read, False, lambda item, concept: 0.5)
    assert sensed.score == pytest.approx(0.4 * 0.875)
    weak = explanation(0.1, 1.0, 0.0, 0, 0)
    assert _unannotated("Q9", "x", weak, False).score == pytest.approx(0.3 * 0.5)
    nothing = SymbolExplanation("x", (), 0)
    lead = _unannotated("Q9", "x", nothing, False)
    assert lead.score == 0.3 and lead.suggestion is None and "nothing in the corpus" in lead.text
    assert _unannotated("Q9", "x", nothing, True) is None
    assert _unannotated("Q9", "x", explanation(0.8, 0.0, 1.0, 2, 2), True) is None


@pytest.mark.parametrize(
    ("name", "base"),
    [("m_1", "m"), ("F′", "F"), ("A→", "A"), ("A¯", "A"), ("ΔU", "U"), ("Δ", "Δ"), ("ϕ", "φ")],
)
def test_a_names_base_letter(name: str, base: str) -> None:
    assert _base(name) == base


@pytest.mark.parametrize(
    ("name", "word"),
    [("hom", True), ("Ext_x", True), ("x", False), ("E_k", False), ("x1", False),
     ("double-struck E", False)],
)  # fmt: skip
def test_a_name_of_several_letters_is_a_word(name: str, word: bool) -> None:
    assert _word(name) is word


@pytest.mark.parametrize(
    ("tex", "symbol"),
    [("y = \\sqrt{x}", "\\surd"), ("y = \\frac{a}{b}", "/"), ("a < b", "<")],
)
def test_a_sign_the_formula_writes_as_layout_or_relation_is_written(tex: str, symbol: str) -> None:
    formula = FormulaRecord(
        "Q1", "item", None, convert(tex), [Concept(FORCE[0], "f", None, convert(symbol))]
    )
    table = records_to_table([formula])
    pairs = zip(table["qid"].to_pylist(), table["mathml"].to_pylist(), strict=True)
    structure = structure_table(build_opt_graphs(pairs, OPTIONS).graphs, table, OPTIONS)
    one = LeadFinder(Catalogue.from_tables(table, structure), StructureIndex(structure), OPTIONS)
    assert [x for x in one.leads(0) if x.kind == NOT_IN_FORMULA] == []


def test_the_queue_puts_the_strongest_lead_first(finder: LeadFinder) -> None:
    assert priority([]) == 0.0
    found = leads(finder, "Q5")
    assert priority(found) == found[0].score == max(lead.score for lead in found)


def test_a_symbol_no_quickstatements_string_can_hold_still_leads_without_one() -> None:
    assert _addition("Q4", "Q11376", 'a"') is None
    assert _addition("Q4", "Q11376", "a") == 'Q4\tP527\tQ11376\tP7235\t"a"'


def test_the_audit_table_carries_the_leads_strongest_item_first(finder: LeadFinder) -> None:
    formulae = _records().to_pylist()
    empty = pa.table({"fold": pa.array([], pa.int8())})
    audit = build_audit(formulae, empty, {}, {}, {}, "sum", finder)
    rows = audit.to_pylist()
    assert len(rows) == len(ITEMS) and ranks_in_range(audit).passed
    priorities = [r["priority"] for r in rows]
    assert priorities == sorted(priorities, reverse=True) and priorities[-1] == 0.0
    by_qid = {r["qid"]: r for r in rows}
    assert by_qid["Q1"]["leads"] == [] and by_qid["Q1"]["kind"] is None
    swapped = by_qid["Q5"]
    assert swapped["kind"] == SWAPPED and swapped["priority"] == swapped["leads"][0]["score"]
    assert swapped["finding"].startswith(swapped["leads"][0]["text"])
    lacking = by_qid["Q4"]["leads"][0]
    assert (lacking["kind"], lacking["symbol"], lacking["suggestion"]) == (
        UNANNOTATED,
        "a",
        ACCEL[0],
    )
    assert lacking["quickstatements"] == f'Q4\tP527\t{ACCEL[0]}\tP7235\t"a"'
    assert lacking["items"] and set(lacking["items"]) <= set(ITEMS)
    lines = [line for line in tsv_rows(audit, len(ITEMS)) if line[0] == "Q4"]
    assert lines[0][3] == UNANNOTATED and lines[0][6] == f'Q4|P527|{ACCEL[0]}|P7235|"a"'


def test_a_concept_far_from_the_item_with_a_namesake_nearer_is_the_wrong_sense(finder) -> None:
    """Q11's "order" is far from the item (0.1 of its concepts' closeness) where the other
    "order" fits (0.9), and the held-out models doubt it: a lead naming the namesake. Without
    the models' doubt, or a namesake, or a sense to read, there is none."""

    def sense(item: str, concept: str) -> float:
        return {(("Q11", TAXON[0])): 0.1, ("Q11", REFLEXION[0]): 0.9}.get((item, concept), 1.0)

    def wrong(doubt: dict[str, float], with_sense=sense):
        sensed = LeadFinder(finder.catalogue, finder.structure, OPTIONS, with_sense)
        return [lead for lead in leads(sensed, "Q11", doubt) if lead.kind == WRONG_SENSE]

    [lead] = wrong({TAXON[0]: 0.8})
    assert (lead.symbol, lead.concept, lead.suggestion) == ("n", TAXON[0], REFLEXION[0])
    assert lead.score == pytest.approx(0.8 * (0.9 - 0.1)) and "namesake Q105488155" in lead.text
    assert wrong({TAXON[0]: 0.2}) == []  # the models find it fits the formula
    assert wrong({TAXON[0]: 0.8}, lambda item, concept: 1.0) == []  # as close as the others
    assert [x for x in leads(finder, "Q11", {TAXON[0]: 0.8}) if x.kind == WRONG_SENSE] == []
