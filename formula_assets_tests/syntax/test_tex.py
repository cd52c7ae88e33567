"""An identifier written as the TeX Wikidata stores a symbol in, checked by hand and by reading
the TeX back the way structure search does (latex2mathml, then `syntax.canonical`)."""

from __future__ import annotations

import pytest

from formula_assets.search.meaning import latex_to_mathml
from formula_assets.syntax.canonical import identifier
from formula_assets.syntax.mathml import parse_mathml
from formula_assets.syntax.tex import identifier_tex

CASES = [
    ("x", "x"),
    ("E_k", "E_{k}"),
    ("E_kin", "E_{\\mathrm{kin}}"),
    ("α", "\\alpha"),
    ("Δx", "\\Delta x"),
    ("x¯", "\\bar{x}"),
    ("F→", "\\vec{F}"),
    ("x′", "x'"),
    ("x″", "x''"),
    ("double-struck R", "\\mathbb{R}"),
    ("script L", "\\mathcal{L}"),
    ("sgn", "\\mathrm{sgn}"),
    ("ℏ", "\\hbar"),
    ("αβ", "\\alpha \\beta"),
    ("v_0", "v_{0}"),
    ("ω_α", "\\omega_{\\alpha}"),
]


@pytest.mark.parametrize(("name", "tex"), CASES)
def test_an_identifier_is_written_as_wikidata_writes_its_symbol(name: str, tex: str) -> None:
    assert identifier_tex(name) == tex


@pytest.mark.parametrize("name", ["x", "E_k", "α", "v_0", "F→", "x¯", "Δx", "ω_α"])
def test_the_tex_reads_back_as_the_same_identifier(name: str) -> None:
    assert identifier(parse_mathml(latex_to_mathml(identifier_tex(name)))) == name
