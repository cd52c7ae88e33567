import pytest

from formula_assets.search.meaning import latex_to_mathml
from formula_assets.syntax.binding import (
    ARGUMENT,
    BOUND,
    CONSTANT,
    DIFFERENTIAL,
    placeholders,
    roles,
)
from formula_assets.syntax.canonical import written_order
from formula_assets.syntax.mathml import ParseOptions, parse_mathml


def tree(latex: str):
    return written_order(parse_mathml(latex_to_mathml(latex), ParseOptions()))


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        (r"E = m c^2", set()),
        (r"S = \sum_{k=1}^{n} x_k", {"k"}),  # a summation index; n and x_k are quantities
        (r"\sum_j p_j = 1", {"j"}),  # (not i: i is a constant wherever it stands alone)
        (r"F(x) = \int_a^b f(t)\, dt", {"d", "t", "x"}),  # x only an argument
        (r"\frac{dy}{dx} = k y", {"d"}),
        (r"L = \lim_{h \to 0} \frac{f(x+h)-f(x)}{h}", {"h"}),
        (r"e^{i \pi} + 1 = 0", {"e", "i"}),
        (r"m = \rho V", set()),
        (r"f: \mathbb{R} \to \mathbb{C}", {"double-struck R", "double-struck C"}),
        (r"x \in X", set()),  # a set that is not a number set is a quantity
    ],
)
def test_placeholders(latex: str, expected: set[str]) -> None:
    assert placeholders(tree(latex)) == expected


def test_roles_name_why() -> None:
    found = roles(tree(r"F(x) = \int_a^b f(t)\, dt"))
    assert BOUND in found["t"] and DIFFERENTIAL in found["d"]
    assert roles(tree(r"e^{i \pi} + 1 = 0"))["e"] == {CONSTANT}


def test_an_index_used_as_a_quantity_elsewhere_is_still_bound_by_its_operator() -> None:
    # the sorted product would put d beside ρ; the written order keeps d beside V
    assert placeholders(tree(r"\int \rho \, dV = M")) == {"d", "V"}


def test_logical_signs_written_as_identifiers_are_constants() -> None:
    mathml = "<math><mi>∀</mi><mi>x</mi><mo>:</mo><mi>x</mi><mo>≥</mo><mi>y</mi></math>"
    assert placeholders(written_order(parse_mathml(mathml, ParseOptions()))) == {"∀"}


def test_a_limits_other_side_is_a_quantity() -> None:
    union = roles(tree(r"S = \bigcup_{k \in K} U_k"))
    assert union["k"] == {BOUND} and union["K"] == {"free"}


def test_a_function_and_its_arguments() -> None:
    found = roles(tree(r"y = f(x) + g(x + z)"))
    assert found["f"] == {"function"} and found["x"] == {ARGUMENT, "free"}
    assert found["z"] == {"free"} and found["g"] == {"function"}


def test_an_integral_binds_its_variable_an_inner_integral_its_own() -> None:
    assert placeholders(tree(r"F = \int_0^1 f(t)\, dt")) == {"d", "t"}
    assert roles(tree(r"F = \int_0^1 \int_0^t g(s)\, ds\, dt"))["s"] >= {BOUND}
