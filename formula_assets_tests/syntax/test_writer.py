"""An OPT written back as MathML parses to the same OPT: every snapshot formula, and the
tokens that look like element names or are empty."""

from __future__ import annotations

from formula_assets.ingest.snapshot import snapshot_records
from formula_assets.syntax.mathml import MathMLError, parse_mathml
from formula_assets.syntax.writer import to_mathml


def test_every_snapshot_formula_round_trips() -> None:
    trees = []
    for record in snapshot_records():
        try:
            trees.append(parse_mathml(record.mathml))
        except MathMLError:
            continue
    assert len(trees) > 1700
    assert all(parse_mathml(to_mathml(t)) == t for t in trees)


def test_tokens_named_like_elements_and_special_characters_stay_tokens() -> None:
    for inner in ("<mi>frac</mi><mo>&lt;</mo><mi>x</mi>", "<mi>∅</mi><mo>&amp;</mo><mn>2</mn>"):
        original = parse_mathml(f"<math>{inner}</math>")
        assert parse_mathml(to_mathml(original)) == original
