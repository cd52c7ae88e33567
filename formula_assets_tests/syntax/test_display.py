"""MathML for a page: only MathML presentation markup passes, text is escaped, each identifier
is marked with the name structure search gives it, and the parser's limits hold."""

from __future__ import annotations

import pytest

from formula_assets.syntax.display import display_mathml
from formula_assets.syntax.mathml import MATHML_NS, MathMLError

NS = f'xmlns="{MATHML_NS}"'


def test_identifiers_are_marked_with_their_names() -> None:
    shown = display_mathml(
        f"<math {NS}><msub><mi>E</mi><mi>k</mi></msub><mo>=</mo><mi>m</mi></math>"
    )
    assert '<msub data-symbol="E_k">' in shown
    assert '<mi data-symbol="m">m</mi>' in shown
    assert "<mo>=</mo>" in shown  # an operator is no symbol
    assert shown.startswith(f'<math xmlns="{MATHML_NS}">')


def test_foreign_elements_and_attributes_are_dropped_and_text_escaped() -> None:
    hostile = (
        f'<math {NS} xmlns:h="http://www.w3.org/1999/xhtml" onclick="steal()">'
        '<mi href="javascript:x" style="color:red" mathvariant="bold">x</mi>'
        "<mtext>&lt;script&gt;alert(1)&lt;/script&gt;</mtext>"
        "<mo>+</mo><mi>y</mi></math>"
    )
    try:
        shown = display_mathml(hostile)
    except MathMLError:
        return  # refused outright is as safe
    assert "onclick" not in shown and "href" not in shown and "style" not in shown
    assert 'mathvariant="bold"' in shown
    assert "<script>" not in shown and "&lt;script&gt;" in shown


def test_an_unknown_element_is_dropped_with_its_content() -> None:
    shown = display_mathml(f"<math {NS}><mi>x</mi><annotation>secret</annotation></math>")
    assert "secret" not in shown and "annotation" not in shown


@pytest.mark.parametrize(
    "text",
    [
        "<notmath/>",
        f"<math {NS}><mi>x</mi>",
        f'<!DOCTYPE math [<!ENTITY e SYSTEM "file:///etc/passwd">]><math {NS}><mi>&e;</mi></math>',
        f"<math {NS}>" + "<mrow>" * 300 + "<mi>x</mi>" + "</mrow>" * 300 + "</math>",
    ],
)
def test_what_the_parser_refuses_is_refused(text: str) -> None:
    with pytest.raises(MathMLError):
        display_mathml(text)
