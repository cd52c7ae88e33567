"""`concept_symbols`: each declared symbol parsed as the formulae are, failures kept."""

from formula_assets.syntax.concept_symbols import CONCEPT_SYMBOLS_SCHEMA, build_concept_symbols
from formula_assets.syntax.mathml import ParseOptions
from formula_assets.syntax.opt import build_opt_graphs, parse_options
from formula_assets.syntax.symbols import formula_symbols

EPSILON_0 = "<math><msub><mi>&#x03B5;</mi><mn>0</mn></msub></math>"
FORMULA = (
    "<math><mi>F</mi><mo>=</mo><mfrac><mrow><mi>q</mi><mi>Q</mi></mrow><mrow><mn>4</mn>"
    "<mi>π</mi><msub><mi>ε</mi><mn>0</mn></msub><msup><mi>r</mi><mn>2</mn></msup></mrow>"
    "</mfrac></math>"
)


def concept(qid: str, label: str, mathml: str | None) -> dict:
    return {"qid": qid, "label": label, "description": "", "symbol_mathml": mathml}


def test_each_declared_symbol_is_a_row_with_the_formulas_spelling() -> None:
    table = build_concept_symbols(
        [
            (
                "Q1",
                [
                    concept("Q6158", "permittivity of vacuum", EPSILON_0),
                    concept("Q167", "pi", "<math><mi>π</mi></math>"),
                    concept("Q11423", "mass", None),  # no symbol declared: no row
                ],
            ),
            ("Q2", None),  # no concepts at all
        ],
        ParseOptions(),
    )
    assert table.schema == CONCEPT_SYMBOLS_SCHEMA
    rows = table.to_pylist()
    assert [(r["qid"], r["concept"], r["label"]) for r in rows] == [
        ("Q1", "Q6158", "permittivity of vacuum"),
        ("Q1", "Q167", "pi"),
    ]
    assert "ε_0" in rows[0]["symbols"] and rows[1]["symbols"] == ["π"]
    assert all(r["error"] is None for r in rows)
    # the same symbol in a formula is the same string
    graph = build_opt_graphs([("Q1", FORMULA)], ParseOptions()).graphs.to_pylist()[0]
    in_formula = formula_symbols(graph["node_tokens"], graph["edge_parent"], graph["edge_child"])
    assert {"ε_0", "π"} <= set(in_formula)


def test_a_symbol_that_does_not_parse_keeps_its_row_and_says_why() -> None:
    table = build_concept_symbols(
        [("Q1", [concept("Q2", "broken", "<math><mi>x</mi>"), concept("Q3", "blank", "  ")])],
        ParseOptions(),
    )
    (row,) = table.to_pylist()  # the blank one declares nothing
    assert row["concept"] == "Q2" and row["symbols"] == []
    assert row["error"]  # the parser's reason


def test_the_styled_letter_setting_spells_symbols_as_in_formulae() -> None:
    double_struck_r = "<math><mi mathvariant='double-struck'>R</mi></math>"
    pairs = [("Q1", [concept("Q26851380", "real numbers", double_struck_r)])]
    distinct = build_concept_symbols(pairs, parse_options("distinct")).to_pylist()[0]["symbols"]
    folded = build_concept_symbols(pairs, parse_options("fold")).to_pylist()[0]["symbols"]
    assert distinct != folded and folded == ["R"]
