"""QuickStatements lines for a confirmed suggestion: item, has part, concept, and the symbol as
the defining-formula qualifier in TeX; anything that is no item or no writable string is refused."""

from __future__ import annotations

import pytest

from formula_assets.audit.quickstatements import concept_with_symbol


def test_a_suggested_concept_becomes_one_line_with_its_symbol() -> None:
    line = concept_with_symbol("Q41591", "Q25428", "V")
    assert line.split("\t") == ["Q41591", "P527", "Q25428", "P7235", '"V"']


def test_the_symbol_is_written_as_tex() -> None:
    assert concept_with_symbol("Q1", "Q2", "E_k").endswith('\t"E_{k}"')
    assert concept_with_symbol("Q1", "Q2", "α", prop="P2534").split("\t")[1] == "P2534"


@pytest.mark.parametrize(("item", "concept"), [("41591", "Q1"), ("Q1", "P31"), ("Q1\t", "Q2")])
def test_what_is_no_item_is_refused(item: str, concept: str) -> None:
    with pytest.raises(ValueError, match="not a Wikidata item"):
        concept_with_symbol(item, concept, "x")


def test_a_symbol_no_string_can_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="no QuickStatements string"):
        concept_with_symbol("Q1", "Q2", 'x"')
