"""The canonical reading of a formula: what stays the same under renaming, operand order,
sides and notation, and what does not (LaTeX through latex2mathml, as search queries come, and
Wikidata's own MathML, as the corpus comes)."""

from __future__ import annotations

import pytest
from latex2mathml.converter import convert

from formula_assets.syntax.canonical import (
    MAX_DEPTH,
    TooDeep,
    canonical_of_opt,
    identifier,
    links,
    renamable,
    sides,
)
from formula_assets.syntax.mathml import parse_mathml


def read(tex: str):
    return canonical_of_opt(parse_mathml(convert(tex)))


def mathml(inner: str):
    return canonical_of_opt(parse_mathml(f"<math>{inner}</math>"))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("c^2 = a^2 + b^2", "z^2 = x^2 + y^2"),  # renamed
        ("c^2 = a^2 + b^2", "a^2 + b^2 = c^2"),  # sides swapped
        ("c^2 = a^2 + b^2", "c^2 = b^2 + a^2"),  # operands reordered
        ("F = m a", "F = a \\cdot m"),
        ("F = m a", "F = m \\times a"),
        ("E_k = \\frac{1}{2} m v^2", "E_k = \\frac{m v^2}{2}"),
        ("E_k = \\frac{1}{2} m v^2", "E_k = m v^2 / 2"),
        ("a > b", "b < a"),
        ("x \\geq y", "y \\leq x"),
        ("(a + b)^2", "(b + a)^2"),
        ("F = -k x", "F = -x k"),
        ("a b + c d", "d c + b a"),
        ("\\vec{F} = m \\vec{a}", "\\mathbf{F} = m \\mathbf{a}"),
    ],
)
def test_the_same_formula_written_otherwise_has_one_pattern(one: str, other: str) -> None:
    assert read(one).pattern == read(other).pattern


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("a b + b c", "a b + c d"),  # a shared identifier is not two
        ("a^2 + b^2 = c^2", "a^2 + b^3 = c^2"),
        ("a - b", "a + b"),
        ("a < b", "a \\leq b"),
        ("x = \\frac{a}{b}", "x = a b"),
        ("f(x) = x^2", "f(x) = x^3"),
    ],
)
def test_different_formulae_have_different_patterns(one: str, other: str) -> None:
    assert read(one).pattern != read(other).pattern


def test_the_named_form_keeps_the_names_and_ignores_the_order() -> None:
    assert read("V = I R").named == read("V = R I").named == read("R I = V").named
    assert read("V = I R").named != read("U = I R").named
    assert read("V = I R").pattern == read("U = I R").pattern


def test_wikidatas_mathml_and_latex2mathmls_read_alike() -> None:
    """Ohm's law as the query service renders it: a ⋅ (U+22C5) between R and I."""
    corpus = mathml(
        '<mrow data-mjx-texclass="ORD"><mstyle displaystyle="true" scriptlevel="0"><mi>V</mi>'
        '<mo stretchy="false">=</mo><mi>R</mi><mo stretchy="false">&#x22C5;</mo><mi>I</mi>'
        "</mstyle></mrow>"
    )
    assert corpus.named == read("V = I R").named


def test_identifiers_are_numbered_in_canonical_order() -> None:
    formula = read("E = m c^2")
    assert sorted(formula.variables) == ["E", "c", "m"]
    assert sorted(formula.variables.values()) == ["v1", "v2", "v3"]
    assert formula.variables == read("E = c^2 m").variables  # the order does not move them


def test_a_subscript_an_accent_and_a_difference_make_one_identifier() -> None:
    assert set(read("E_{k} = x").variables) == {"E_k", "x"}
    assert set(read("\\bar{x} = y").variables) == {"x¯", "y"}
    assert set(read("F = k \\Delta x").variables) == {"F", "k", "Δx"}
    assert set(read("f' = g").variables) == {"f′", "g"}


def test_known_functions_and_constants_are_not_identifiers() -> None:
    formula = read("y = \\sin(x) + \\pi")
    assert set(formula.variables) == {"x", "y"}
    assert "apply" in formula.tree.text() and "sin" in formula.tree.text()
    assert renamable("x") and renamable("F_0") and not renamable("π")
    assert not renamable("sin") and not renamable("2") and not renamable("Δ")


def test_a_big_operator_takes_the_rest_of_its_product() -> None:
    tree = read("s = \\sum_{i=1}^{n} x_i y_i").tree
    (right,) = [a for a in tree.args if a.head == "bigop"]
    assert right.name == "∑" and right.args[-1].head == "prod"


def test_a_script_on_a_closing_fence_applies_to_the_group() -> None:
    """latex2mathml puts `)^2`'s `)` in the power's base."""
    assert read("(a+b)^2").tree.text() == "pow(sum(a, b), 2)"


def test_a_bar_without_a_partner_is_a_condition() -> None:
    assert read("P(A|B)").tree.text() == "apply(P, rel::(A, B))"
    assert read("|x|").tree.text() == "abs(x)"


def test_links_of_a_chain_and_sides_of_a_relation() -> None:
    chain = read("C = \\pi d = 2 \\pi r")
    patterns = {canonical_link(link) for link in links(chain.tree)}
    assert read("C = 2 \\pi r").pattern in patterns
    assert read("\\pi d = 2 \\pi r").pattern in patterns
    assert len(sides(read("a = b").tree)) == 2


def canonical_link(expr):
    from formula_assets.syntax.canonical import canonical

    return canonical(expr).pattern


def test_aligned_rows_continue_the_statement_above() -> None:
    table = mathml(
        "<mtable><mtr><mtd><mi>a</mi></mtd><mtd><mo>=</mo><mi>b</mi></mtd></mtr>"
        "<mtr><mtd></mtd><mtd><mo>=</mo><mi>c</mi></mtd></mtr></mtable>"
    )
    assert table.pattern == read("a = b = c").pattern


def test_a_symbol_is_the_identifier_formulae_name() -> None:
    def of(inner: str) -> str | None:
        return identifier(parse_mathml(f"<math>{inner}</math>"))

    assert of("<msub><mi>E</mi><mi>k</mi></msub>") == "E_k"
    assert of('<mi mathvariant="bold">F</mi>') == of("<mover><mi>F</mi><mo>→</mo></mover>")
    assert of("<mi>π</mi>") == "π"
    assert of("<mi>a</mi><mo>+</mo><mi>b</mi>") is None


def test_formulae_nested_too_deep_are_refused_not_crashed() -> None:
    deep = (
        "<msqrt><mi>a</mi><mo>=</mo>" * (MAX_DEPTH + 5)
        + "<mi>x</mi>"
        + "</msqrt>" * (MAX_DEPTH + 5)
    )
    with pytest.raises(TooDeep, match=f"deeper than {MAX_DEPTH} levels"):
        mathml(deep)
    shallow = "<msqrt><mi>a</mi><mo>=</mo>" * 20 + "<mi>x</mi>" + "</msqrt>" * 20
    assert mathml(shallow).size > 20
