"""The MathML → OPT parser on hand-written MathML: node types, roles, positions, normalisation."""

import pytest

from formula_assets.syntax.mathml import (
    EMPTY_TOKEN,
    MathMLError,
    OptNode,
    ParseOptions,
    parse_mathml,
    parse_mathml_tree,
)

NS = 'xmlns="http://www.w3.org/1998/Math/MathML"'


def m(body: str, ns: bool = True) -> str:
    return f"<math {NS if ns else ''}>{body}</math>"


def child_summary(node: OptNode) -> list[tuple[str, str, str, int]]:
    return [(c.type, c.token, c.role, c.position) for c in node.children]


def test_token_types() -> None:
    root = parse_mathml(m("<mrow><mi>x</mi><mo>+</mo><mn>2</mn><mtext>if</mtext></mrow>"))
    assert (root.type, root.token, root.role) == ("function", "group", "root")
    assert child_summary(root) == [
        ("symbol", "x", "arg", 0),
        ("operator", "+", "arg", 1),
        ("symbol", "2", "arg", 2),
        ("symbol", "if", "arg", 3),
    ]


@pytest.mark.parametrize(
    ("element", "token", "roles"),
    [
        ("msup", "power", ["base", "exp"]),
        ("msub", "subscript", ["base", "sub"]),
        ("mfrac", "frac", ["num", "den"]),
        ("mroot", "root", ["base", "index"]),
        ("munder", "under", ["base", "under"]),
        ("mover", "over", ["base", "over"]),
    ],
)
def test_two_argument_constructs(element: str, token: str, roles: list[str]) -> None:
    root = parse_mathml(m(f"<{element}><mi>a</mi><mn>2</mn></{element}>"))
    assert (root.type, root.token) == ("function", token)
    assert child_summary(root) == [
        ("symbol", "a", roles[0], 0),
        ("symbol", "2", roles[1], 1),
    ]


@pytest.mark.parametrize(
    ("element", "token", "roles"),
    [
        ("msubsup", "subsup", ["base", "sub", "sup"]),
        ("munderover", "underover", ["base", "under", "over"]),
    ],
)
def test_three_argument_constructs(element: str, token: str, roles: list[str]) -> None:
    root = parse_mathml(m(f"<{element}><mo>∑</mo><mi>i</mi><mi>n</mi></{element}>"))
    assert root.token == token
    assert [c.role for c in root.children] == roles
    assert [c.position for c in root.children] == [0, 1, 2]
    assert root.children[0].type == "operator"


def test_sqrt_has_its_row_as_arguments() -> None:
    inferred = parse_mathml(m("<msqrt><mi>x</mi><mo>+</mo><mn>1</mn></msqrt>"))
    explicit = parse_mathml(m("<msqrt><mrow><mi>x</mi><mo>+</mo><mn>1</mn></mrow></msqrt>"))
    assert inferred == explicit
    assert inferred.to_sexpr() == "sqrt(x, +, 1)"
    assert {c.role for c in inferred.children} == {"arg"}


def test_positional_group_is_kept() -> None:
    root = parse_mathml(m("<mfrac><mrow><mi>a</mi><mo>+</mo><mi>b</mi></mrow><mn>2</mn></mfrac>"))
    assert root.to_sexpr() == "frac(group(a, +, b), 2)"
    assert [(c.token, c.role) for c in root.children] == [("group", "num"), ("2", "den")]
    assert child_summary(root.children[0])[1] == ("operator", "+", "arg", 1)


def test_table_rows_and_cells() -> None:
    root = parse_mathml(
        m(
            "<mtable><mtr><mtd><mi>a</mi></mtd><mtd><mi>b</mi><mo>,</mo></mtd></mtr>"
            "<mtr><mtd/><mtd><mn>1</mn></mtd></mtr></mtable>"
        )
    )
    assert root.token == "table"
    assert [(c.token, c.role, c.position) for c in root.children] == [
        ("row", "row", 0),
        ("row", "row", 1),
    ]
    first_row = root.children[0]
    assert [(c.token, c.role) for c in first_row.children] == [("cell", "cell"), ("cell", "cell")]
    assert first_row.children[1].to_sexpr() == "cell(b, ,)"
    assert root.children[1].children[0].children == []  # empty cell stays a cell


def test_multiscripts_roles() -> None:
    root = parse_mathml(
        m(
            "<mmultiscripts><mi>C</mi><mn>1</mn><none/><mprescripts/>"
            "<mn>6</mn><mn>14</mn></mmultiscripts>"
        )
    )
    assert root.token == "multiscripts"
    assert [(c.token, c.role) for c in root.children] == [
        ("C", "base"),
        ("1", "sub"),
        ("6", "presub"),
        ("14", "presup"),
    ]


def test_unknown_element_is_function_by_tag() -> None:
    root = parse_mathml(m("<menclose notation='box'><mi>x</mi></menclose>"))
    assert root.to_sexpr() == "enclose(x)"
    root = parse_mathml(m("<mstack><mn>1</mn><mn>2</mn></mstack>"))
    assert (root.type, root.token) == ("function", "mstack")
    assert [c.role for c in root.children] == ["arg", "arg"]


def test_wrappers_space_and_invisible_operators_are_normalised() -> None:
    mathml = m(
        "<mrow><mstyle displaystyle='true'><mpadded><mi>sin</mi></mpadded><mo>&#x2061;</mo>"
        "<mspace width='1em'/><mi>x</mi><mo></mo><mi/></mstyle></mrow>"
    )
    assert parse_mathml(mathml).to_sexpr() == "group(sin, x)"


def test_normalisation_switches_off() -> None:
    mathml = m("<mrow><mstyle><mi>x</mi><mo>&#x2061;</mo></mstyle></mrow>")
    raw = ParseOptions(
        unwrap_wrappers=False,
        collapse_single_child_groups=False,
        drop_invisible_operators=False,
        drop_empty_tokens=False,
    )
    assert parse_mathml(mathml, raw).to_sexpr() == "math(group(mstyle(x, \u2061)))"
    assert parse_mathml(mathml).to_sexpr() == "x"


def test_single_child_groups_collapse() -> None:
    assert parse_mathml(m("<mrow><mrow><mrow><mi>x</mi></mrow></mrow></mrow>")).to_sexpr() == "x"


def test_empty_positional_child_becomes_placeholder() -> None:
    root = parse_mathml(m("<msup><mrow/><mn>14</mn></msup>"))
    assert child_summary(root) == [("symbol", EMPTY_TOKEN, "base", 0), ("symbol", "14", "exp", 1)]


def test_msup_with_one_child_is_repaired_with_a_warning() -> None:
    tree = parse_mathml_tree(m("<msup><mi>x</mi></msup>"))
    assert tree.root.to_sexpr() == "power(x)"
    assert tree.root.children[0].role == "base"
    assert tree.warnings == ["<msup> has 1 children, expected 2; repaired"]


def test_extra_children_become_arguments() -> None:
    tree = parse_mathml_tree(m("<mfrac><mi>a</mi><mi>b</mi><mi>c</mi></mfrac>"))
    assert [c.role for c in tree.root.children] == ["num", "den", "arg"]
    assert tree.warnings


def test_math_alphanumerics_fold_and_whitespace() -> None:
    assert parse_mathml(m("<mi>\U0001d435</mi>")).token == "B"
    assert parse_mathml(m("<mtext>  for \n all </mtext>")).token == "for all"
    keep = ParseOptions(fold_math_alphanumerics=False)
    assert parse_mathml(m("<mi>\U0001d435</mi>"), keep).token == "\U0001d435"


def test_named_and_numeric_entities() -> None:
    assert parse_mathml(m("<mi>&alpha;</mi>")).token == "α"
    assert parse_mathml(m("<mo>&#x2212;</mo>")).token == "−"
    assert parse_mathml(m("<mo>&lt;</mo>")).token == "<"


def test_namespace_is_optional() -> None:
    assert parse_mathml(m("<mi>x</mi>", ns=False)) == parse_mathml(m("<mi>x</mi>"))


def test_semantics_uses_presentation_child() -> None:
    root = parse_mathml(
        m(
            "<semantics><mi>x</mi>"
            "<annotation encoding='application/x-tex'>x</annotation></semantics>"
        )
    )
    assert root.to_sexpr() == "x"


def test_mfenced_expands_to_fences_and_separators() -> None:
    root = parse_mathml(m("<mfenced><mi>a</mi><mi>b</mi></mfenced>"))
    assert root.to_sexpr() == "group((, a, ,, b, ))"


def test_bytes_input() -> None:
    assert parse_mathml(m("<mi>π</mi>").encode()).token == "π"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty input"),
        ("   ", "empty input"),
        ("<math>", "not well-formed XML"),
        ("<html><body>x</body></html>", "root element is <html>"),
        (m("<merror><mtext>Failed to parse</mtext></merror>"), "did not render"),
        (m(""), "the formula is empty"),
        (m("<mi>&nosuchentity;</mi>"), "unknown entity"),
        ('<!DOCTYPE math [<!ENTITY a "b">]><math>&a;</math>', "DTD"),
        (b"<math>\xff\xfe</math>", "not valid UTF-8"),
        (m('<x:y xmlns:x="urn:evil"/>'), "foreign namespace"),
        ("plain text", "not well-formed XML"),
    ],
)
def test_bad_input_is_a_mathml_error(text: str | bytes, reason: str) -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(text)
    assert reason in raised.value.reason


def test_limits_are_enforced() -> None:
    with pytest.raises(MathMLError, match="exceeds the limit"):
        parse_mathml(m("<mi>x</mi>" * 10), ParseOptions(max_input_chars=50))
    with pytest.raises(MathMLError, match="deeper than"):
        parse_mathml(m("<mrow>" * 8 + "<mi>x</mi>" + "</mrow>" * 8), ParseOptions(max_depth=5))
    with pytest.raises(MathMLError, match="OPT nodes"):
        parse_mathml(
            m("<mrow><mi>a</mi><mi>b</mi><mi>c</mi><mi>d</mi></mrow>"), ParseOptions(max_nodes=3)
        )


def test_mathml_error_is_a_value_error() -> None:
    assert issubclass(MathMLError, ValueError)
