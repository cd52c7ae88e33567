"""A formula read aloud: the words people say for it, identifiers also as their concepts."""

from __future__ import annotations

import pytest
from latex2mathml.converter import convert

from formula_assets.ingest.snapshot import read_snapshot_items
from formula_assets.syntax import spoken
from formula_assets.syntax.canonical import MAX_DEPTH, written_order
from formula_assets.syntax.mathml import OptNode, ParseOptions, parse_mathml
from formula_assets.syntax.opt import build_opt_graphs, trees
from formula_assets.syntax.spoken import speak, spoken_of_opt

OPTIONS = ParseOptions()


def said(tex: str, labels: dict[str, str] | None = None) -> str:
    return speak(written_order(parse_mathml(convert(tex), OPTIONS)), labels or {})


@pytest.mark.parametrize(
    ("tex", "words"),
    [
        ("E = m c^2", "E equals m times c squared"),
        ("V = R I", "V equals R times I"),
        ("a + b - c", "a plus b minus c"),
        ("-a + b", "minus a plus b"),
        ("x = \\frac{a}{b c}", "x equals a over b times c"),
        ("y = \\frac{1}{x}", "y equals one over x"),
        ("V = \\frac{4}{3} \\pi r^3", "V equals 4/3 times pi times r cubed"),
        ("E_k = \\frac{1}{2} m v^2", "E k equals one half times m times v squared"),
        ("c = \\sqrt{a^2 + b^2}", "c equals square root of a squared plus b squared"),
        ("y = x^{1/2}", "y equals square root of x"),
        ("n!", "n factorial"),
        ("\\hbar = \\frac{h}{2 \\pi}", "h bar equals h over 2 times pi"),
        ("y = \\sin x", "y equals sine of x"),
        ("a < b", "a is less than b"),
        ("a > b", "b is less than a"),  # read as written canonically: the sides swapped
        ("F \\propto a", "F is proportional to a"),
        ("\\sum_{i=1}^{n} i", "sum from i equals 1 to n of i"),
        ("y = x^n", "y equals x to the power n"),
        ("y = x^4", "y equals x to the power 4"),
        ("\\underset{n}{x}", "x n"),  # a mark under or over is not said as an operator
        ("|x|", "absolute value of x"),
        ("-x", "minus x"),
    ],
)
def test_a_formula_is_said_in_words(tex: str, words: str) -> None:
    assert said(tex) == words


def test_an_annotated_identifier_is_said_as_its_concept_and_its_letter() -> None:
    labels = {"m": "mass", "c": "speed of light"}
    assert said("E = m c^2", labels) == "E equals mass m times speed of light c squared"


def test_a_formula_too_deep_to_read_is_not_said() -> None:
    root = node = OptNode("frac", "frac")
    for _ in range(MAX_DEPTH + 5):
        child = OptNode("frac", "frac")
        node.children.extend([child, OptNode("mi", "x")])
        node = child
    assert spoken_of_opt(root, {}) is None
    assert spoken_of_opt(parse_mathml(convert("x = 1"), OPTIONS), {}) == "x equals 1"


@pytest.mark.parametrize(
    ("tex", "words"),
    [
        ("a_{n+1}", "a sub n plus 1"),
        ("\\|v\\|", "norm of v"),
        ("\\{a, b\\}", "set of a and b"),
        ("(a + b)^2", "a plus b squared"),
        ("\\int_a^b f(x) dx", "integral from a to b of f of x times d times x"),
    ],
)
def test_operators_of_one_operand_are_said_before_or_after_it(tex: str, words: str) -> None:
    assert said(tex) == words


def test_each_node_is_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A product of inverses of products, nested: said in one pass over its nodes (reading
    a node's operands twice would double the work at every level)."""
    tree = written_order(parse_mathml(convert("\\frac{a}{" * 20 + "b" + "}" * 20), OPTIONS))
    calls = 0
    words = spoken._words

    def counted(node, labels):
        nonlocal calls
        calls += 1
        return words(node, labels)

    monkeypatch.setattr(spoken, "_words", counted)
    assert spoken.speak(tree, {}).count("over") == 20
    assert calls == tree.size()


def test_every_snapshot_formula_is_said() -> None:
    items = read_snapshot_items()
    graphs = build_opt_graphs((i["item"].rsplit("/", 1)[1], i["formula"]) for i in items).graphs
    said = [spoken_of_opt(root, {}) for _, root in trees(graphs)]
    assert len(said) == len(items)
    assert all(words and words == " ".join(words.split()) for words in said)
