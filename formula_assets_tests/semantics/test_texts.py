"""Annotation texts joined as one text, in their stored order."""

from formula_assets.semantics.texts import annotation_text


def test_texts_are_joined_in_order_with_a_semicolon() -> None:
    assert annotation_text(["mass", "energy", "speed of light"]) == "mass; energy; speed of light"
    assert annotation_text(("one",)) == "one"
    assert annotation_text([]) == ""
