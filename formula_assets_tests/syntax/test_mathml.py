"""The MathML → OPT parser on hand-written MathML: node types, roles, positions, normalisation."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formula_assets.syntax import mathml
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


def test_math_italic_folds_and_whitespace_collapses() -> None:
    assert parse_mathml(m("<mi>\U0001d435</mi>")).token == "B"  # italic: the plain letter
    assert parse_mathml(m("<mtext>  for \n all </mtext>")).token == "for all"
    keep = ParseOptions(styled_letters="keep")
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


# ---- OptNode: construction, equality, text form, size --------------------------------------


def test_opt_node_defaults_and_fresh_children() -> None:
    a, b = OptNode("symbol", "x"), OptNode("symbol", "y")
    assert (a.children, a.role, a.position) == ([], "root", 0)
    a.children.append(b)
    assert OptNode("symbol", "z").children == []  # no list shared between nodes
    kids = [b]
    assert OptNode("function", "f", kids).children is kids


def node(**changes: object) -> OptNode:
    fields = {"type": "function", "token": "f", "role": "arg", "position": 1}
    fields.update(changes)
    children = changes.get("children", [OptNode("symbol", "x", role="base")])
    return OptNode(fields["type"], fields["token"], children, fields["role"], fields["position"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [
        {"type": "symbol"},
        {"token": "g"},
        {"role": "exp"},
        {"position": 2},
        {"children": []},
        {"children": [OptNode("symbol", "x", role="exp")]},
        {"children": [OptNode("symbol", "x", role="base"), OptNode("symbol", "y")]},
    ],
)
def test_opt_nodes_differing_in_one_field_are_unequal(change: dict) -> None:
    assert node() == node()
    assert node() != node(**change)
    assert (node() == node(**change)) is False


def test_opt_node_equality_with_other_types() -> None:
    x = OptNode("symbol", "x")
    assert x.__eq__("x") is NotImplemented
    assert (x == "x") is False
    assert x != ("symbol", "x")
    with pytest.raises(TypeError):
        hash(x)


def test_to_sexpr_size_and_repr() -> None:
    leaf = OptNode("symbol", "x")
    tree = OptNode("function", "f", [leaf, OptNode("function", "g", [OptNode("symbol", "1")])])
    assert leaf.to_sexpr() == "x"
    assert tree.to_sexpr() == "f(x, g(1))"
    assert (leaf.size(), tree.size()) == (1, 4)
    assert repr(leaf) == "OptNode(symbol 'x' as root#0)"
    assert repr(tree) == "OptNode(function 'f' as root#0, 2 children)"


def test_mathml_error_carries_its_reason() -> None:
    error = MathMLError("empty input")
    assert (error.reason, str(error), error.args) == (
        "empty input",
        "empty input",
        ("empty input",),
    )


# ---- input: types, encodings, entities ------------------------------------------------------


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_binary_inputs(wrap) -> None:
    assert parse_mathml(wrap(m("<mi>π</mi>").encode())).token == "π"


@pytest.mark.parametrize(("value", "kind"), [(5, "int"), (None, "NoneType"), (["<math/>"], "list")])
def test_non_text_input(value: object, kind: str) -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(value)  # type: ignore[arg-type]
    assert raised.value.reason == f"expected MathML text, got {kind}"


def test_invalid_utf8_names_the_byte() -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(b"<math><mi>\xff</mi></math>")
    assert raised.value.reason == "input is not valid UTF-8 (byte 10)"


def test_unpaired_surrogates() -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(m("<mi>\udc80</mi>"))
    assert raised.value.reason == "input contains unpaired surrogate characters"


def test_surrounding_space_and_byte_order_mark_are_ignored() -> None:
    assert parse_mathml("\n \ufeff" + m("<mi>x</mi>") + " \n").token == "x"
    assert parse_mathml(b"\xef\xbb\xbf" + m("<mi>x</mi>").encode()).token == "x"


@pytest.mark.parametrize(
    ("entity", "char"),
    [("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'")],
)
def test_xml_entities_are_left_to_the_xml_parser(entity: str, char: str) -> None:
    assert parse_mathml(m(f"<mo>{entity}</mo>")).token == char


def test_html_named_entities_become_characters() -> None:
    assert parse_mathml(m("<mrow><mi>&alpha;</mi><mo>&PlusMinus;</mo><mi>&beta;</mi></mrow>")) == (
        parse_mathml(m("<mrow><mi>α</mi><mo>±</mo><mi>β</mi></mrow>"))
    )
    # Named invisible operators are dropped like their characters.
    assert parse_mathml(
        m("<mrow><mi>f</mi><mo>&ApplyFunction;</mo><mi>x</mi></mrow>")
    ).to_sexpr() == ("group(f, x)")


def test_unknown_entity_is_named() -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(m("<mi>&alpha;&nosuchthing;</mi>"))
    assert raised.value.reason == "unknown entity &nosuchthing;"


def test_empty_set_is_a_formula_not_an_empty_one() -> None:
    """∅ (U+2205) doubles as the placeholder token, but a lone ∅ is the empty set."""
    root = parse_mathml(m("<mi>∅</mi>"))
    assert (root.type, root.token, root.children) == ("symbol", EMPTY_TOKEN, [])
    assert parse_mathml(m('<mi mathvariant="normal">&empty;</mi>')).token == "∅"


@pytest.mark.parametrize(
    "body",
    [
        "",
        "<mrow/>",
        "<mrow><mrow/></mrow>",
        "<mi>  </mi>",
        "<mo>&#x2062;</mo>",
        "<mspace width='1em'/>",
        "<semantics/>",
        "<mstyle><mphantom><mi>x</mi></mphantom></mstyle>",
    ],
)
def test_formulae_that_normalise_to_nothing_are_empty(body: str) -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(m(body))
    assert raised.value.reason == "the formula is empty"


# ---- namespaces and the root ----------------------------------------------------------------


def test_prefixed_mathml_namespace() -> None:
    prefixed = (
        '<m:math xmlns:m="http://www.w3.org/1998/Math/MathML">'
        "<m:msup><m:mi>x</m:mi><m:mn>2</m:mn></m:msup></m:math>"
    )
    assert parse_mathml(prefixed) == parse_mathml(m("<msup><mi>x</mi><mn>2</mn></msup>"))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            '<math xmlns="urn:other"><mi>x</mi></math>',
            "element <math> from foreign namespace 'urn:other'",
        ),
        (m('<mi xmlns="urn:x">x</mi>'), "element <mi> from foreign namespace 'urn:x'"),
        ("<svg><mi>x</mi></svg>", "root element is <svg>, expected <math>"),
        (
            '<m:mrow xmlns:m="http://www.w3.org/1998/Math/MathML"/>',
            "root element is <mrow>, expected <math>",
        ),
    ],
)
def test_root_and_namespace_errors(text: str, reason: str) -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(text)
    assert raised.value.reason == reason


def test_local_name_cache_is_bounded() -> None:
    names = [f"cachecheck{i}" for i in range(4200)]
    parse_mathml(m("<mrow>" + "".join(f"<{n}/>" for n in names) + "</mrow>"))
    assert len(mathml._LOCAL_NAMES) == 4096
    again = parse_mathml(m("<mrow>" + "".join(f"<{n}/>" for n in names[:3]) + "</mrow>"))
    assert again.to_sexpr() == "group(cachecheck0, cachecheck1, cachecheck2)"


# ---- tokens ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "text"),
    [
        ("<mi>x2</mi>", "x2"),
        ("<mi> x </mi>", "x"),
        ("<mtext>a \t b\n c</mtext>", "a b c"),
        ("<ms>quoted text</ms>", "quoted text"),
        ("<mtext>for\u00a0 all</mtext>", "for all"),  # non-ASCII space: collapsed too
        ("<mi>\U0001d49c</mi>", "script A"),  # mathematical script A
        ("<mn>\u00bd</mn>", "\u00bd"),  # a fraction character is not 1⁄2
        ("<mi>a<malignmark/>b</mi>", "ab"),  # markup inside a token: its text only
        ("<mi><mglyph alt='g'/>z</mi>", "gz"),  # a glyph is its alt text
    ],
)
def test_token_text_normalisation(token: str, text: str) -> None:
    assert parse_mathml(m(token)).token == text


@pytest.mark.parametrize(
    ("token", "text"),
    [
        ("<mi>\U0001d49c</mi>", "A"),
        ("<mn>\u00bd</mn>", "1⁄2"),  # NFKC: vulgar fraction one half
        ("<mi mathvariant='double-struck'>R</mi>", "R"),  # mathvariant is ignored
        ("<mi>a<mglyph alt='g'/></mi>", "ag"),
    ],
)
def test_token_text_when_styled_letters_fold(token: str, text: str) -> None:
    assert parse_mathml(m(token), ParseOptions(styled_letters="fold")).token == text


def test_folding_switched_off_still_collapses_space() -> None:
    keep = ParseOptions(styled_letters="keep")
    assert (
        parse_mathml(m("<mi>\U0001d49c\u00a0 \U0001d49c</mi>"), keep).token
        == "\U0001d49c \U0001d49c"
    )


@pytest.mark.parametrize("char", ["\u2061", "\u2062", "\u2063", "\u2064"])
def test_each_invisible_operator_is_dropped_or_kept(char: str) -> None:
    mathml = m(f"<mrow><mi>a</mi><mo>{char}</mo><mi>b</mi></mrow>")
    assert parse_mathml(mathml).to_sexpr() == "group(a, b)"
    keep = parse_mathml(mathml, ParseOptions(drop_invisible_operators=False))
    assert child_summary(keep)[1] == ("operator", char, "arg", 1)


def test_visible_operators_survive_dropping_invisible_ones() -> None:
    root = parse_mathml(m("<mrow><mi>a</mi><mo>\u2062</mo><mo>-</mo><mi>b</mi></mrow>"))
    assert child_summary(root) == [
        ("symbol", "a", "arg", 0),
        ("operator", "-", "arg", 1),
        ("symbol", "b", "arg", 2),
    ]


def test_empty_tokens_kept_as_placeholders_when_asked() -> None:
    mathml = m("<mrow><mi>x</mi><mi/><mo> </mo><mn></mn></mrow>")
    assert parse_mathml(mathml).to_sexpr() == "x"
    keep = parse_mathml(mathml, ParseOptions(drop_empty_tokens=False))
    assert child_summary(keep) == [
        ("symbol", "x", "arg", 0),
        ("symbol", EMPTY_TOKEN, "arg", 1),
        ("operator", EMPTY_TOKEN, "arg", 2),
        ("symbol", EMPTY_TOKEN, "arg", 3),
    ]


# ---- rows, wrappers, silent elements --------------------------------------------------------


def test_nested_groups_of_several_children_are_kept() -> None:
    root = parse_mathml(m("<mrow><mi>x</mi><mrow><mi>a</mi><mi>b</mi></mrow><mrow/></mrow>"))
    assert root.to_sexpr() == "group(x, group(a, b))"
    assert child_summary(root)[1] == ("function", "group", "arg", 1)


def test_groups_without_collapsing() -> None:
    raw = ParseOptions(collapse_single_child_groups=False)
    assert parse_mathml(m("<mrow><mrow><mi>x</mi></mrow><mrow/></mrow>"), raw).to_sexpr() == (
        "group(group(x), group)"
    )
    assert parse_mathml(m("<msqrt><mrow/></msqrt>"), raw).to_sexpr() == "sqrt(group)"


@pytest.mark.parametrize("wrapper", ["mstyle", "mpadded"])
def test_style_wrappers_give_way_to_their_children(wrapper: str) -> None:
    mathml = m(f"<mrow><mi>a</mi><{wrapper}><mo>+</mo><mi>b</mi></{wrapper}></mrow>")
    assert child_summary(parse_mathml(mathml)) == [
        ("symbol", "a", "arg", 0),
        ("operator", "+", "arg", 1),
        ("symbol", "b", "arg", 2),
    ]
    kept = parse_mathml(mathml, ParseOptions(unwrap_wrappers=False))
    assert kept.to_sexpr() == f"math(group(a, {wrapper}(+, b)))"
    assert [c.role for c in kept.children[0].children[1].children] == ["arg", "arg"]


def test_maction_and_semantics_show_their_first_child_only() -> None:
    action = m("<maction actiontype='toggle'><mi>a</mi><mi>b</mi></maction>")
    assert parse_mathml(action).to_sexpr() == "a"
    semantics = m("<semantics><mi>x</mi><mi>y</mi><annotation>x y</annotation></semantics>")
    assert parse_mathml(semantics).to_sexpr() == "x"
    inside = m("<mrow><mi>p</mi><semantics><mrow><mi>q</mi><mi>r</mi></mrow></semantics></mrow>")
    assert parse_mathml(inside).to_sexpr() == "group(p, group(q, r))"
    kept = ParseOptions(unwrap_wrappers=False)
    assert parse_mathml(action, kept).to_sexpr() == "math(maction(a, b))"
    assert parse_mathml(semantics, kept).to_sexpr() == "math(semantics(x, y))"


@pytest.mark.parametrize(
    "silent",
    [
        "<mspace/>",
        "<mphantom><mi>p</mi></mphantom>",
        "<malignmark/>",
        "<maligngroup/>",
        "<none/>",
        "<mprescripts/>",
        "<annotation>t</annotation>",
        "<annotation-xml><mi>t</mi></annotation-xml>",
    ],
)
def test_silent_elements_vanish(silent: str) -> None:
    assert parse_mathml(m(f"<mrow><mi>a</mi>{silent}<mi>b</mi></mrow>")).to_sexpr() == "group(a, b)"


def test_merror_reason_quotes_the_message_cut_to_120_characters() -> None:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(m("<mrow><merror><mtext>bad\n  input</mtext></merror></mrow>"))
    assert raised.value.reason == "the formula did not render (merror: 'bad input')"
    with pytest.raises(MathMLError) as raised:
        parse_mathml(m(f"<merror><mtext>{'e' * 300}</mtext></merror>"))
    assert raised.value.reason == f"the formula did not render (merror: {'e' * 120!r})"


# ---- constructs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "sexpr", "roles", "warnings"),
    [
        ("<msup><mi>x</mi><mn>2</mn></msup>", "power(x, 2)", ["base", "exp"], []),
        (
            "<msubsup><mi>x</mi><mi>i</mi><mn>2</mn></msubsup>",
            "subsup(x, i, 2)",
            ["base", "sub", "sup"],
            [],
        ),
        (
            "<msub><mi>x</mi><mi>i</mi><mi>j</mi><mi>k</mi></msub>",
            "subscript(x, i, j, k)",
            ["base", "sub", "arg", "arg"],
            ["<msub> has 4 children, expected 2; repaired"],
        ),
        (
            "<munderover><mo>∑</mo></munderover>",
            "underover(∑)",
            ["base"],
            ["<munderover> has 1 children, expected 3; repaired"],
        ),
        ("<mfrac/>", "frac", [], ["<mfrac> has 0 children, expected 2; repaired"]),
    ],
)
def test_scripted_constructs_and_repairs(
    body: str, sexpr: str, roles: list[str], warnings: list[str]
) -> None:
    tree = parse_mathml_tree(m(body))
    assert tree.root.to_sexpr() == sexpr
    assert tree.root.type == "function"
    assert [c.role for c in tree.root.children] == roles
    assert [c.position for c in tree.root.children] == list(range(len(roles)))
    assert tree.warnings == warnings


def test_each_tree_has_its_own_warnings() -> None:
    first = parse_mathml_tree(m("<msup><mi>x</mi></msup>"))
    second = parse_mathml_tree(m("<msup><mi>x</mi><mn>2</mn></msup>"))
    assert (len(first.warnings), second.warnings) == (1, [])
    assert first.root.role == "root" and first.root.position == 0


def test_a_group_in_a_slot_keeps_its_arguments_in_order() -> None:
    root = parse_mathml(m("<msup><mrow><mi>a</mi><mo>+</mo><mi>b</mi></mrow><mn>2</mn></msup>"))
    group = root.children[0]
    assert (group.token, group.role, group.position) == ("group", "base", 0)
    assert child_summary(group) == [
        ("symbol", "a", "arg", 0),
        ("operator", "+", "arg", 1),
        ("symbol", "b", "arg", 2),
    ]


@pytest.mark.parametrize(
    ("element", "token"),
    [("msqrt", "sqrt"), ("mtd", "cell"), ("menclose", "enclose"), ("mscarries", "carries")],
)
def test_inferred_rows(element: str, token: str) -> None:
    lifted = parse_mathml(m(f"<{element}><mrow><mi>a</mi><mi>b</mi></mrow></{element}>"))
    assert lifted.to_sexpr() == f"{token}(a, b)"
    assert child_summary(lifted) == [("symbol", "a", "arg", 0), ("symbol", "b", "arg", 1)]
    # A lone construct is not a group: it stays one argument.
    single = parse_mathml(m(f"<{element}><msup><mi>x</mi><mn>2</mn></msup></{element}>"))
    assert single.to_sexpr() == f"{token}(power(x, 2))"
    assert parse_mathml(m(f"<{element}/>")).to_sexpr() == token
    assert parse_mathml(m(f"<{element}><mi>y</mi></{element}>")).to_sexpr() == f"{token}(y)"


def test_labelled_table_rows() -> None:
    root = parse_mathml(
        m(
            "<mtable><mlabeledtr><mtd><mtext>(1)</mtext></mtd><mtd><mi>a</mi></mtd></mlabeledtr>"
            "<mtr><mtd><mi>b</mi></mtd><mtd><mi>c</mi></mtd></mtr><mlabeledtr/></mtable>"
        )
    )
    assert root.to_sexpr() == "table(row(cell((1)), cell(a)), row(cell(b), cell(c)), row)"
    labelled, plain, empty = root.children
    assert [(c.role, c.position) for c in labelled.children] == [("label", 0), ("cell", 1)]
    assert [(c.role, c.position) for c in plain.children] == [("cell", 0), ("cell", 1)]
    assert (empty.role, empty.position, empty.children) == ("row", 2, [])
    assert (plain.type, plain.token) == ("function", "row")


def test_multiscripts_alternate_sub_and_sup_on_both_sides() -> None:
    root = parse_mathml(
        m(
            "<mmultiscripts><mi>R</mi><mi>a</mi><mi>b</mi><mi>c</mi><none/><mi>e</mi><mi>f</mi>"
            "<mprescripts/><none/><mi>p</mi><mi>q</mi><mi>r</mi></mmultiscripts>"
        )
    )
    assert [(c.token, c.role, c.position) for c in root.children] == [
        ("R", "base", 0),
        ("a", "sub", 1),
        ("b", "sup", 2),
        ("c", "sub", 3),
        ("e", "sub", 4),
        ("f", "sup", 5),
        ("p", "presup", 6),
        ("q", "presub", 7),
        ("r", "presup", 8),
    ]


def test_multiscripts_without_a_base_is_repaired() -> None:
    tree = parse_mathml_tree(m("<mmultiscripts/>"))
    assert (tree.root.token, tree.root.children) == ("multiscripts", [])
    assert tree.warnings == ["<mmultiscripts> without a base; repaired"]
    empty_base = parse_mathml(m("<mmultiscripts><mrow/><mn>1</mn></mmultiscripts>"))
    assert child_summary(empty_base) == [
        ("symbol", EMPTY_TOKEN, "base", 0),
        ("symbol", "1", "sub", 1),
    ]


@pytest.mark.parametrize(
    ("attributes", "sexpr"),
    [
        ("", "group((, a, ,, b, ,, c, ))"),
        ("open='[' close='|'", "group([, a, ,, b, ,, c, |)"),
        ("separators='; |'", "group((, a, ;, b, |, c, ))"),
        ("separators=';'", "group((, a, ;, b, ;, c, ))"),
        ("separators='' open='' close=''", "group(a, b, c)"),
        ("separators=' '", "group((, a, b, c, ))"),
    ],
)
def test_mfenced(attributes: str, sexpr: str) -> None:
    root = parse_mathml(m(f"<mfenced {attributes}><mi>a</mi><mi>b</mi><mi>c</mi></mfenced>"))
    assert root.to_sexpr() == sexpr
    assert [c.position for c in root.children] == list(range(len(root.children)))
    assert {c.role for c in root.children} == {"arg"}


def test_mfenced_operators_and_slots() -> None:
    root = parse_mathml(
        m("<mfenced separators=';,.'><mi>a</mi><mrow/><mi>c</mi><mi>d</mi><mi>e</mi></mfenced>")
    )
    assert root.to_sexpr() == f"group((, a, ;, {EMPTY_TOKEN}, ,, c, ., d, ., e, ))"
    assert [c.type for c in root.children[:3]] == ["operator", "symbol", "operator"]
    assert parse_mathml(m("<mfenced><mi>x</mi></mfenced>")).to_sexpr() == "group((, x, ))"
    assert parse_mathml(m("<mfenced/>")).to_sexpr() == "group((, ))"


def test_other_elements_by_tag_name() -> None:
    assert parse_mathml(m("<mlongdiv><mn>3</mn><mrow/></mlongdiv>")).to_sexpr() == (
        f"mlongdiv(3, {EMPTY_TOKEN})"
    )
    leaf = parse_mathml(m("<mglyph alt=' star '/>"))
    assert (leaf.type, leaf.token) == ("symbol", "star")
    assert parse_mathml(m("<mglyph/>")).token == "mglyph"
    assert parse_mathml(m("<mstack>12</mstack>")).token == "12"
    root = parse_mathml(m("<mstack><msrow><mn>1</mn></msrow><msline/></mstack>"))
    assert [(c.type, c.token, c.role, c.position) for c in root.children] == [
        ("function", "msrow", "arg", 0),
        ("symbol", "msline", "arg", 1),
    ]
    assert child_summary(root.children[0]) == [("symbol", "1", "arg", 0)]


# ---- limits: nodes and depth, off by one ----------------------------------------------------


def flat(count: int) -> str:
    """A formula of `count` OPT nodes: a group of count − 1 symbols."""
    return m("<mrow>" + "<mi>x</mi>" * (count - 1) + "</mrow>")


def test_node_limit_default_is_20000_inclusive() -> None:
    assert ParseOptions().max_nodes == 20_000
    assert parse_mathml(flat(20_000)).size() == 20_000
    with pytest.raises(MathMLError) as raised:
        parse_mathml(flat(20_001))
    assert raised.value.reason == "formula exceeds 20,000 OPT nodes"


def test_node_limit_counts_every_node_once() -> None:
    options = ParseOptions(max_nodes=5)
    # power(x, 2) inside group with y and z: group, y, power, x, 2 = 5 nodes.
    five = m("<mrow><mi>y</mi><msup><mi>x</mi><mn>2</mn></msup></mrow>")
    assert parse_mathml(five, options).size() == 5
    with pytest.raises(MathMLError, match="formula exceeds 5 OPT nodes"):
        parse_mathml(
            m("<mrow><mi>y</mi><msup><mi>x</mi><mn>2</mn></msup><mi>z</mi></mrow>"), options
        )


def nested(levels: int, inner: str = "<mi>x</mi>") -> str:
    """`inner` under `levels` mrows: with <math> at depth 0, `inner` sits at levels + 1."""
    return m("<mrow>" * levels + inner + "</mrow>" * levels)


def test_depth_limit_is_inclusive() -> None:
    assert parse_mathml(nested(4), ParseOptions(max_depth=5)).token == "x"
    with pytest.raises(MathMLError) as raised:
        parse_mathml(nested(5), ParseOptions(max_depth=5))
    assert raised.value.reason == "nesting deeper than 5"


# Each template wraps {} in `levels` element levels and holds nothing deeper than {}; the walk
# must count each level.
TEMPLATES = [
    ("<mrow>{}<mi>a</mi></mrow>", 1),
    ("<mstyle>{}</mstyle>", 1),
    ("<mpadded><mi>a</mi>{}</mpadded>", 1),
    ("<semantics>{}<annotation>t</annotation></semantics>", 1),
    ("<maction actiontype='toggle'>{}<mi>b</mi></maction>", 1),
    ("<msqrt>{}</msqrt>", 1),
    ("<menclose>{}<mi>a</mi></menclose>", 1),
    ("<mtd>{}</mtd>", 1),
    ("<msup>{}<mn>2</mn></msup>", 1),
    ("<mfrac><mn>1</mn>{}</mfrac>", 1),
    ("<mroot><mn>1</mn>{}</mroot>", 1),
    ("<munderover>{}<mi>a</mi><mi>b</mi></munderover>", 1),
    ("<mmultiscripts>{}<mi>a</mi></mmultiscripts>", 1),
    ("<mmultiscripts><mi>a</mi><none/>{}<mprescripts/>{}</mmultiscripts>", 1),
    ("<mfenced>{}<mi>y</mi></mfenced>", 1),
    ("<mstack>{}</mstack>", 1),
    ("<mtable><mtr><mtd>{}</mtd></mtr></mtable>", 3),
    ("<mtable><mlabeledtr><mtd/>{}</mlabeledtr></mtable>", 2),
]


def build(chain: list[tuple[str, int]]) -> tuple[str, int]:
    """The formula of a chain of templates (first innermost) and the depth of its <mi>x</mi>."""
    body = "<mi>x</mi>"
    for template, _ in chain:
        body = template.replace("{}", body, 1).replace("{}", "<mi>s</mi>")
    return m(body), 1 + sum(levels for _, levels in chain)  # <math> is level 0


def assert_depth_boundary(text: str, deepest: int, unwrap: bool) -> None:
    """Parses with max_depth = the deepest level; fails, naming the limit, one level less."""
    fits = ParseOptions(max_depth=deepest, unwrap_wrappers=unwrap)
    assert "x" in parse_mathml(text, fits).to_sexpr()
    tight = ParseOptions(max_depth=deepest - 1, unwrap_wrappers=unwrap)
    with pytest.raises(MathMLError) as raised:
        parse_mathml(text, tight)
    assert raised.value.reason == f"nesting deeper than {deepest - 1}"


@pytest.mark.parametrize("unwrap", [True, False])
@pytest.mark.parametrize("template", TEMPLATES, ids=[t for t, _ in TEMPLATES])
def test_depth_limit_counts_each_level_of_each_construct(
    template: tuple[str, int], unwrap: bool
) -> None:
    text, deepest = build([template] * 3)
    assert_depth_boundary(text, deepest, unwrap)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(TEMPLATES), max_size=6), st.booleans())
def test_depth_limit_counts_element_levels_through_any_chain(
    chain: list[tuple[str, int]], unwrap: bool
) -> None:
    text, deepest = build(chain)
    assert_depth_boundary(text, deepest, unwrap)


def test_options_are_immutable_and_shared_safely() -> None:
    options = ParseOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_depth = 5  # type: ignore[misc]
    assert hash(options) == hash(ParseOptions())
