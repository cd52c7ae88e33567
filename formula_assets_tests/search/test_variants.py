"""Formula variants made from a formula's own tree: each keeps the formula's pattern (or is
one of its links), goes back to MathML and parses again."""

from __future__ import annotations

from latex2mathml.converter import convert

from formula_assets.search.variants import one_link, renamed, reordered, swapped_sides
from formula_assets.syntax.canonical import canonical_of_opt, links
from formula_assets.syntax.mathml import parse_mathml
from formula_assets.syntax.writer import to_mathml


def tree(tex: str):
    return parse_mathml(convert(tex))


def again(node):
    """The variant as a query would come: MathML text, parsed."""
    return parse_mathml(to_mathml(node))


def pattern(node) -> str:
    return canonical_of_opt(node).pattern


def test_a_renaming_is_consistent_and_uses_letters_the_formula_lacks() -> None:
    original = tree("E = m c^2 + m")
    variant = again(renamed(original, seed=3))
    before, after = canonical_of_opt(original), canonical_of_opt(variant)
    assert after.pattern == before.pattern and after.named != before.named
    assert not set(after.variables) & set(before.variables)
    assert renamed(tree("\\pi = 3"), seed=0) is None  # nothing to rename


def test_constants_differences_and_functions_are_not_renamed() -> None:
    variant = again(renamed(tree("F = k \\Delta x + \\sin(\\pi)"), seed=1))
    text = canonical_of_opt(variant).tree.text()
    assert "Δ" in text and "sin" in text and "π" in text


def test_the_sides_of_one_equals_sign_are_swapped() -> None:
    original = tree("E = m c^2")
    variant = again(swapped_sides(original))
    assert variant.to_sexpr() == "group(m, power(c, 2), =, E)"
    assert pattern(variant) == pattern(original)
    assert swapped_sides(tree("a = b = c")) is None and swapped_sides(tree("a + b")) is None


def test_a_sum_is_reordered() -> None:
    original = tree("c^2 = a^2 + b^2")
    variant = again(reordered(original))
    assert variant.to_sexpr() == "group(power(c, 2), =, power(b, 2), +, power(a, 2))"
    assert pattern(variant) == pattern(original)


def test_one_link_of_a_chain_is_a_link_of_the_formula() -> None:
    original = tree("C = \\pi d = 2 \\pi r")
    for seed in range(3):
        variant = again(one_link(original, seed))
        assert pattern(variant) in {
            canonical_of_opt(again(one_link(original, s))).pattern for s in range(2)
        }
        from formula_assets.syntax.canonical import canonical

        assert pattern(variant) in {
            canonical(x).pattern for x in links(canonical_of_opt(original).tree)
        }
    assert one_link(tree("a = b"), 0) is None
