"""MathML as other producers write it: entities, tables, content markup, glyphs, styled letters.

The fixtures are small hand-written formulae in the shapes the MathJax and W3C test suites,
TeXZilla and LaTeXML produce (parallel markup, `annotation-xml`, `mglyph`, `mathvariant`,
HTML named entities).
"""

import time

import pytest

from formula_assets.syntax.mathml import (
    STYLED_LETTERS,
    MathMLError,
    ParseOptions,
    parse_mathml,
    parse_mathml_tree,
)

NS = 'xmlns="http://www.w3.org/1998/Math/MathML"'
FOLD = ParseOptions(styled_letters="fold")


def m(body: str) -> str:
    return f"<math {NS}>{body}</math>"


def reason(text: str) -> str:
    with pytest.raises(MathMLError) as raised:
        parse_mathml(text)
    return raised.value.reason


# ---- named entities are characters, never markup ---------------------------------------------


@pytest.mark.parametrize(
    ("entity", "text"),
    [
        ("&AMP;", "&"),
        ("&LT;", "<"),
        ("&GT;", ">"),
        ("&QUOT;", '"'),
        ("&nvlt;", "<\u20d2"),
        ("&nvgt;", ">\u20d2"),
        ("&AMP;&alpha;&LT;", "&α<"),
        ("&alpha;&lt;&amp;&gt;&quot;&apos;", "α<&>\"'"),  # XML's own beside named ones
    ],
)
def test_named_entities_that_spell_markup_characters_stay_text(entity: str, text: str) -> None:
    assert parse_mathml(m(f"<mtext>{entity}</mtext>")).token == text


def test_escaped_markup_is_not_parsed_as_elements() -> None:
    upper = m("<mi>a</mi>&LT;mo&GT;+&LT;/mo&GT;<mi>b</mi>")
    lower = m("<mi>a</mi>&lt;mo&gt;+&lt;/mo&gt;<mi>b</mi>")
    assert parse_mathml(upper).to_sexpr() == parse_mathml(lower).to_sexpr() == "group(a, b)"
    assert parse_mathml(m("<mtext>&LT;mi&GT;x&LT;/mi&GT;</mtext>")).token == "<mi>x</mi>"


def test_named_entities_in_attributes() -> None:
    root = parse_mathml(m("<mfenced open='&LT;' close='&RightAngleBracket;'><mi>a</mi></mfenced>"))
    assert root.to_sexpr() == "group(<, a, \u27e9)"


@pytest.mark.parametrize(
    ("body", "token"),
    [
        ("<!-- &nosuch; --><mi>x</mi>", "x"),
        ("<mi>x<!-- &nosuch; &alpha; --></mi>", "x"),
        ("<mtext><![CDATA[&alpha; &nosuch; <b>]]></mtext>", "&alpha; &nosuch; <b>"),
        ("<?note &nosuch;?><mi>x</mi>", "x"),
        ("<!-- <![CDATA[ --><mi>&alpha;</mi><!-- ]]> -->", "α"),  # CDATA inside a comment
        ("<!--<?--><mi>&alpha;</mi>", "α"),  # an instruction's start inside a comment
        ("<mtext><![CDATA[<!--]]>&alpha;</mtext>", "<!--α"),  # a comment's start in CDATA
    ],
)
def test_comments_cdata_and_instructions_are_not_expanded(body: str, token: str) -> None:
    assert parse_mathml(m(body)).token == token


def test_an_unknown_entity_after_a_comment_is_still_unknown() -> None:
    assert reason(m("<!-- c --><mi>&alpha;</mi><mi>&nosuch;</mi>")) == "unknown entity &nosuch;"
    assert reason(m("<!--<?--><mi>&nosuch;</mi>")) == "unknown entity &nosuch;"


def test_an_unterminated_comment_is_malformed_not_an_unknown_entity() -> None:
    assert reason(m("<!-- &nosuch; <mi>x</mi>")).startswith("not well-formed XML")


def test_entity_replacement_is_linear_in_the_input() -> None:
    text = m("<mtext>" + "&alpha;<!--" * 50_000 + "</mtext>")
    started = time.thread_time()  # this thread's CPU seconds, not other work or threads
    assert reason(text).startswith("not well-formed XML")
    assert reason(m("<mi>x</mi>" + "<?p " * 100_000)).startswith("not well-formed XML")
    assert time.thread_time() - started < 1.0


# ---- table rows are normalised like every other row ----------------------------------------


def test_merror_inside_a_table_is_rejected() -> None:
    text = m("<mtable><merror><mtext>Undefined control sequence</mtext></merror></mtable>")
    assert reason(text) == "the formula did not render (merror: 'Undefined control sequence')"
    cell = m("<mtable><mtr><merror><mtext>bad</mtext></merror></mtr></mtable>")
    assert reason(cell) == "the formula did not render (merror: 'bad')"


def test_spacing_and_style_wrappers_in_tables_vanish() -> None:
    root = parse_mathml(
        m(
            "<mtable><mspace linebreak='newline'/><mtr><mtd><mi>a</mi></mtd><mspace/></mtr>"
            "<mstyle displaystyle='true'><mtr><mspace/><mtd><mi>b</mi></mtd></mtr>"
            "<mtr><mstyle><mtd><mi>c</mi></mtd><mtd><mi>d</mi></mtd></mstyle></mtr></mstyle>"
            "</mtable>"
        )
    )
    assert root.to_sexpr() == "table(row(cell(a)), row(cell(b)), row(cell(c), cell(d)))"
    assert [(c.role, c.position) for c in root.children] == [("row", 0), ("row", 1), ("row", 2)]
    last = root.children[2]
    assert [(c.role, c.position) for c in last.children] == [("cell", 0), ("cell", 1)]


def test_a_label_is_the_first_cell_after_spacing() -> None:
    root = parse_mathml(
        m(
            "<mtable><mlabeledtr><mspace/><mtd><mtext>(1)</mtext></mtd><mtd><mi>a</mi></mtd>"
            "</mlabeledtr></mtable>"
        )
    )
    assert [(c.to_sexpr(), c.role) for c in root.children[0].children] == [
        ("cell((1))", "label"),
        ("cell(a)", "cell"),
    ]


# ---- content MathML -------------------------------------------------------------------------

# LaTeXML's parallel markup: content first, presentation in an annotation (ids kept).
LATEXML_PARALLEL = m(
    "<semantics><apply id='p.1'><eq/><apply><plus/><cn type='integer'>1</cn>"
    "<cn type='integer'>2</cn></apply><cn type='integer'>3</cn></apply>"
    "<annotation-xml encoding='application/openmath+xml'>"
    "<OMOBJ xmlns='http://www.openmath.org/OpenMath'><OMI>3</OMI></OMOBJ></annotation-xml>"
    "<annotation-xml encoding='MathML-Presentation'><mrow id='p.1.pmml' xref='p.1'>"
    "<mrow><mn>1</mn><mo>+</mo><mn>2</mn></mrow><mo>=</mo><mn>3</mn></mrow></annotation-xml>"
    "<annotation encoding='application/x-tex'>1+2=3</annotation></semantics>"
)


def test_parallel_markup_is_read_through_its_presentation_annotation() -> None:
    tree = parse_mathml_tree(LATEXML_PARALLEL)
    assert tree.root.to_sexpr() == "group(group(1, +, 2), =, 3)"
    assert tree.warnings == []


@pytest.mark.parametrize(
    "encoding",
    ["MathML-Presentation", " mathml-presentation ", "application/mathml-presentation+xml"],
)
def test_presentation_encodings(encoding: str) -> None:
    text = m(
        "<semantics><ci>x</ci>"
        f"<annotation-xml encoding='{encoding}'><msup><mi>x</mi><mn>2</mn></msup>"
        "</annotation-xml></semantics>"
    )
    assert parse_mathml(text).to_sexpr() == "power(x, 2)"


def test_a_presentation_annotation_alone_is_the_formula() -> None:
    text = m(
        "<semantics><annotation-xml encoding='MathML-Presentation'><mi>x</mi><mo>+</mo><mi>y</mi>"
        "</annotation-xml><annotation encoding='application/x-tex'>x+y</annotation></semantics>"
    )
    assert parse_mathml(text).to_sexpr() == "group(x, +, y)"
    after_tex = m(
        "<semantics><annotation encoding='application/x-tex'>x</annotation>"
        "<annotation-xml encoding='MathML-Presentation'><mi>x</mi></annotation-xml></semantics>"
    )
    assert parse_mathml(after_tex).to_sexpr() == "x"


def test_presentation_first_keeps_it_over_a_content_annotation() -> None:
    """The W3C suite's semantics test: presentation annotated with its content form."""
    text = m(
        "<semantics><mrow><mi>a</mi><mfenced><mrow><mi>x</mi><mo>+</mo><mn>5</mn></mrow>"
        "</mfenced></mrow><annotation-xml encoding='MathML-Content'><apply><ci>a</ci>"
        "<apply><plus/><ci>x</ci><cn>5</cn></apply></apply></annotation-xml>"
        "<annotation-xml encoding='MathML-Presentation'><mi>z</mi></annotation-xml></semantics>"
    )
    assert parse_mathml(text).to_sexpr() == "group(a, group((, group(x, +, 5), )))"


@pytest.mark.parametrize(
    ("body", "element"),
    [
        ("<apply><eq/><ci>x</ci><cn>1</cn></apply>", "apply"),
        ("<ci>x</ci>", "ci"),
        ("<mrow><mi>y</mi><cn>2</cn></mrow>", "cn"),
        ("<pi/>", "pi"),
        ("<set><ci>a</ci></set>", "set"),
        (
            "<semantics><apply><plus/><ci>a</ci><ci>b</ci></apply>"
            "<annotation encoding='application/x-tex'>a+b</annotation></semantics>",
            "apply",
        ),
        (
            "<semantics><bind><forall/><bvar><ci>x</ci></bvar><ci>x</ci></bind>"
            "<annotation-xml encoding='MathML-Content'><ci>x</ci></annotation-xml></semantics>",
            "bind",
        ),
    ],
)
def test_content_mathml_is_rejected_saying_what_it_is(body: str, element: str) -> None:
    assert reason(m(body)) == (
        f"content MathML (<{element}>) is not supported: only presentation MathML is"
    )


def test_a_semantics_with_only_a_text_annotation_is_empty() -> None:
    text = m("<semantics><annotation encoding='application/x-tex'>x</annotation></semantics>")
    assert reason(text) == "the formula is empty"


# ---- mglyph ---------------------------------------------------------------------------------


def test_a_glyph_is_its_alt_text() -> None:
    """The W3C suite's braid glyphs: each identifier is an image with a name."""
    root = parse_mathml(
        m(
            "<mstyle><mi><mglyph src='my-braid-23.png' alt='23braid'></mglyph></mi><mo>+</mo>"
            "<mi><mglyph src='my-braid-132.png' alt='132braid'/></mi></mstyle>"
        )
    )
    assert root.to_sexpr() == "group(23braid, +, 132braid)"
    assert parse_mathml(m("<mi><mglyph alt='NIST' src='nist.png'/></mi>")).token == "NIST"
    assert parse_mathml(m("<mi>x<mglyph alt=' y '/>z</mi>")).token == "x y z"
    assert parse_mathml(m("<mi>x<mglyph src='a.png'/></mi>")).token == "x"


def test_html_inside_mtext_is_its_text() -> None:
    html = "<b xmlns='http://www.w3.org/1999/xhtml'>bold</b>"
    assert parse_mathml(m(f"<mtext>a {html} c</mtext>")).token == "a bold c"


def test_depth_counts_the_presentation_annotation() -> None:
    """semantics → annotation-xml → its content: two levels per wrapping."""
    body = "<mi>x</mi>"
    for _ in range(3):
        body = (
            "<semantics><ci>c</ci><annotation-xml encoding='MathML-Presentation'>"
            f"<mrow><mi>s</mi>{body}</mrow></annotation-xml></semantics>"
        )
    deepest = 1 + 3 * 3  # <math> is level 0; each wrapping adds three levels
    assert "x" in parse_mathml(m(body), ParseOptions(max_depth=deepest)).to_sexpr()
    with pytest.raises(MathMLError) as raised:
        parse_mathml(m(body), ParseOptions(max_depth=deepest - 1))
    assert raised.value.reason == f"nesting deeper than {deepest - 1}"


# ---- styled letters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "distinct", "fold"),
    [
        ("<mi>ℝ</mi>", "double-struck R", "R"),
        ("<mi mathvariant='double-struck'>R</mi>", "double-struck R", "R"),
        ("<mi>&Zopf;</mi>", "double-struck Z", "Z"),
        ("<mi>&#x2115;</mi>", "double-struck N", "N"),
        ("<mi>ℂ</mi>", "double-struck C", "C"),  # the first letterlike styled letter
        ("<mi>ⅉ</mi>", "double-struck j", "j"),  # the last one (double-struck italic j)
        ("<mn>𝟿</mn>", "monospace 9", "9"),  # the last mathematical alphanumeric
        ("<mi>𝐅</mi>", "bold F", "F"),  # bold
        ("<mi>𝑭</mi>", "bold F", "F"),  # bold italic: italic is no style
        ("<mi mathvariant='bold'>F</mi>", "bold F", "F"),
        ("<mi mathvariant='bold-italic'>F</mi>", "bold F", "F"),
        ("<mi>𝒗</mi>", "bold v", "v"),
        ("<mi mathvariant='bold-italic'>σ</mi>", "bold σ", "σ"),
        ("<mi>𝝈</mi>", "bold σ", "σ"),
        ("<mi>𝔤</mi>", "fraktur g", "g"),
        ("<mi mathvariant='fraktur'>g</mi>", "fraktur g", "g"),
        ("<mi>&Hfr;</mi>", "fraktur H", "H"),  # black-letter H is fraktur
        ("<mi>𝕲</mi>", "bold fraktur G", "G"),
        ("<mi mathvariant='bold-fraktur'>G</mi>", "bold fraktur G", "G"),
        ("<mi>ℒ</mi>", "script L", "L"),
        ("<mi>𝒞</mi>", "script C", "C"),
        ("<mi mathvariant='bold-script'>C</mi>", "bold script C", "C"),
        ("<mi>𝓒</mi>", "bold script C", "C"),
        ("<mi>ℓ</mi>", "script l", "l"),
        ("<mi>𝖢</mi>", "sans-serif C", "C"),
        ("<mtext mathvariant='sans-serif'>T</mtext>", "sans-serif T", "T"),
        ("<mi mathvariant='sans-serif-italic'>x</mi>", "sans-serif x", "x"),
        ("<mi>𝘅</mi>", "bold sans-serif x", "x"),
        ("<mi mathvariant='sans-serif-bold-italic'>x</mi>", "bold sans-serif x", "x"),
        ("<mi mathvariant='bold-sans-serif'>x</mi>", "bold sans-serif x", "x"),
        ("<mi>𝚡</mi>", "monospace x", "x"),
        ("<mi mathvariant='monospace'>x</mi>", "monospace x", "x"),
        ("<mn>𝟙</mn>", "double-struck 1", "1"),
        ("<mn mathvariant='bold'>2</mn>", "bold 2", "2"),
        ("<mi>&DD;</mi>", "double-struck D", "D"),  # double-struck italic D
        # Math italic is how letter identifiers look anyway: the plain letter.
        ("<mi>𝑥</mi>", "x", "x"),
        ("<mi mathvariant='italic'>x</mi>", "x", "x"),
        ("<mi mathvariant='normal'>x</mi>", "x", "x"),
        ("<mi>ℎ</mi>", "h", "h"),  # the italic h lives among the letterlike symbols
        ("<mi>ℏ</mi>", "ħ", "ħ"),
        ("<mi>ϕ</mi>", "φ", "φ"),  # a variant glyph of one letter
        ("<mi>&#xFF21;</mi>", "A", "A"),  # fullwidth A
        # Sequences, super- and subscripts and fractions say something else than their parts.
        ("<mo>∬</mo>", "∬", "∫∫"),
        ("<mo>…</mo>", "…", "..."),
        ("<mo>″</mo>", "″", "′′"),
        ("<mo>˙</mo>", "˙", " ̇"),
        ("<mn>²</mn>", "²", "2"),
        ("<mn>½</mn>", "½", "1⁄2"),
        ("<mi>e&#x301;</mi>", "é", "é"),  # composed
        # Mixed runs keep their own styles.
        ("<mi>𝐅x</mi>", "bold F x", "Fx"),
        ("<mi>𝐀 𝐁</mi>", "bold A bold B", "A B"),
        ("<mi mathvariant='bold'>sin</mi>", "bold sin", "sin"),
        ("<mi mathvariant='bold'>𝔤</mi>", "fraktur g", "g"),  # the character's own style wins
        ("<mi mathvariant='bold'>x2</mi>", "bold x2", "x2"),
        ("<mi mathvariant='double-struck'>x+</mi>", "double-struck x +", "x+"),
        ("<mo mathvariant='bold'>∇</mo>", "bold ∇", "∇"),  # operators take a style too
        ("<mo>𝛁</mo>", "bold ∇", "∇"),
        ("<mi>αβ</mi>", "αβ", "αβ"),
        # No styled character of that style exists: the character stays as it is.
        ("<mo mathvariant='bold'>+</mo>", "+", "+"),
        ("<mi mathvariant='double-struck'>α</mi>", "α", "α"),
        ("<mi mathvariant='no-such-variant'>x</mi>", "x", "x"),
        ("<mi mathvariant='initial'>x</mi>", "x", "x"),
    ],
)
def test_styled_letters(token: str, distinct: str, fold: str) -> None:
    assert parse_mathml(m(token)).token == distinct
    assert parse_mathml(m(token), FOLD).token == fold


def test_symbols_that_differ_in_meaning_are_different_tokens() -> None:
    """ℝ is not R, a bold vector is not its magnitude, ∬ is not ∫∫ (two integral signs)."""
    pairs = [
        ("<mi>ℝ</mi>", "<mi>R</mi>"),
        ("<mi>ℤ</mi>", "<mi>Z</mi>"),
        ("<mi>𝑭</mi>", "<mi>F</mi>"),
        ("<mi>𝔤</mi>", "<mi>g</mi>"),
        ("<mo>∬</mo>", "<mo>∫∫</mo>"),
    ]
    for styled, plain in pairs:
        assert parse_mathml(m(styled)).token != parse_mathml(m(plain)).token
        assert parse_mathml(m(styled), FOLD).token == parse_mathml(m(plain), FOLD).token


def test_mathvariant_is_inherited_from_mstyle() -> None:
    root = parse_mathml(
        m(
            "<mrow><mstyle mathvariant='bold'><mi>F</mi><mo>=</mo><mi>m</mi>"
            "<mi mathvariant='normal'>a</mi><mstyle mathvariant='double-struck'><mi>R</mi>"
            "</mstyle><mi>x</mi></mstyle><mi>b</mi></mrow>"
        )
    )
    assert [c.token for c in root.children] == [
        "bold F",
        "=",
        "bold m",
        "a",  # a token's own mathvariant wins
        "double-struck R",  # the inner mstyle's
        "bold x",  # the outer one's again after the inner ends
        "b",  # nothing outside the mstyle
    ]
    operator = parse_mathml(m("<mstyle mathvariant='bold'><mo>∇</mo><mi>φ</mi></mstyle>"))
    assert operator.to_sexpr() == "group(bold ∇, bold φ)"
    kept = ParseOptions(unwrap_wrappers=False)
    inside = parse_mathml(m("<mstyle mathvariant='bold'><mi>v</mi></mstyle>"), kept)
    assert inside.to_sexpr() == "math(mstyle(bold v))"
    assert parse_mathml(m("<mstyle mathvariant='bold'><mi>v</mi></mstyle>"), FOLD).token == "v"


def test_mathvariant_does_not_reach_other_elements() -> None:
    """Only tokens take a style: an unknown leaf element keeps its text."""
    assert parse_mathml(m("<mstyle mathvariant='bold'><mstack>x</mstack></mstyle>")).token == "x"


def test_styled_letters_as_written() -> None:
    keep = ParseOptions(styled_letters="keep")
    assert parse_mathml(m("<mi>ℝ</mi>"), keep).token == "ℝ"
    assert parse_mathml(m("<mi mathvariant='bold'>F</mi>"), keep).token == "F"
    assert parse_mathml(m("<mo>∬</mo>"), keep).token == "∬"


def test_styled_letter_modes_are_checked() -> None:
    assert STYLED_LETTERS == ("distinct", "fold", "keep")
    assert ParseOptions().styled_letters == "distinct"
    with pytest.raises(ValueError) as raised:
        ParseOptions(styled_letters="nfkc")
    assert str(raised.value) == "styled_letters must be one of distinct, fold, keep, not 'nfkc'"
