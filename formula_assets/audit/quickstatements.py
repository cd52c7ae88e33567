"""QuickStatements (V1) lines for the edits an editor confirms: tab-separated `item, property,
value`, then qualifier pairs. The project writes nothing to Wikidata: these lines are what an
editor pastes into QuickStatements after reviewing them."""

from __future__ import annotations

from formula_assets.core.wikidata import is_qid
from formula_assets.syntax.tex import identifier_tex

HAS_PART = "P527"  # has part(s): how most formula items link their concepts
IN_DEFINING_FORMULA = "P7235"  # the qualifier: the symbol, a math (TeX) value


def _string(text: str) -> str:
    """A QuickStatements string value (a double quote cannot be written inside one)."""
    if '"' in text or "\t" in text or "\n" in text:
        raise ValueError(f"no QuickStatements string can hold {text!r}")
    return f'"{text}"'


def concept_with_symbol(item: str, concept: str, identifier: str, prop: str = HAS_PART) -> str:
    """Add `concept` to `item`, qualified with the symbol `identifier` stands for in its
    formula (as TeX)."""
    for qid in (item, concept):
        if not is_qid(qid):
            raise ValueError(f"not a Wikidata item: {qid!r}")
    return "\t".join(
        (item, prop, concept, IN_DEFINING_FORMULA, _string(identifier_tex(identifier)))
    )
