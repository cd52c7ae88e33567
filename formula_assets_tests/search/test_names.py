"""The names channel: names as people write them (case, diacritics, apostrophes, dashes,
possessives) against each item's label, aliases and English Wikipedia title, lexically and
by the sentence model; a query that is one of an item's names is an exact match."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest
from latex2mathml.converter import convert

from formula_assets.ingest.records import Concept, FormulaRecord, records_to_table
from formula_assets.search.names import (
    NameIndex,
    NameWeights,
    acronym,
    acronyms,
    article_title,
    as_people_type,
    name_quality,
    name_table,
    names_of,
    spoken_forms,
    terms,
    trigrams,
)
from formula_assets.syntax.mathml import ParseOptions
from formula_assets.syntax.opt import build_opt_graphs


def only(**weights: float) -> NameWeights:
    """The matches named, every other one off."""
    return NameWeights(
        **{"names": 0, "description": 0, "trigrams": 0, "spoken": 0, "dense": 0} | weights
    )


LEXICAL = only(names=1.0, description=0.3, trigrams=0.5)


@pytest.mark.parametrize(
    ("written", "as_labelled"),
    [
        ("ohms law", "Ohm's law"),
        ("Ohm law", "Ohm’s law"),
        ("schrodinger equation", "Schrödinger equation"),
        ("Stefan-Boltzmann law", "Stefan–Boltzmann law"),
        ("holder inequality", "Hölder's inequality"),
        ("BAYES THEOREM", "Bayes' theorem"),
        ("Newtons laws", "Newton's law"),
        ("gauss law", "Gauss's law"),  # the possessive goes before the apostrophe
        ("charles law", "Charles's law"),
        ("minkowskis function", "Minkowski's function"),
    ],
)
def test_a_name_written_otherwise_has_the_same_terms(written: str, as_labelled: str) -> None:
    assert terms(written) == terms(as_labelled)


def test_a_label_as_people_type_it_is_still_the_label() -> None:
    assert as_people_type("Schrödinger's cat – Ohm’s law") == "schrodinger cat - ohm law"
    for label in ("Gauss's law", "Stefan–Boltzmann law", "Hölder's inequality"):
        assert terms(as_people_type(label)) == terms(label)


def test_terms_keep_words_apart_and_drop_only_plural_s() -> None:
    assert terms("mass–energy equivalence") == ["mass", "energy", "equivalence"]
    assert terms("gas, class and radius") == ["gas", "class", "and", "radius"]
    assert terms(None) == [] and terms("  ") == []
    assert terms("probabilities") == ["probability"] and terms("ties") == ["tie"]
    assert trigrams(["ohm"]) == ["#oh", "ohm", "hm#"]


def test_an_ordinal_in_digits_is_spelt_as_a_word() -> None:
    assert terms("Newton's 2nd law") == terms("Newton's second law") == ["newton", "second", "law"]
    assert terms("1st law, 3rd law, 12th root") == [
        "first", "law", "third", "law", "twelfth", "root"
    ]  # fmt: skip
    # a number's ending that is not a whole ordinal stays as it was
    assert terms("9" * 5000 + "th") == ["9" * 5000 + "th"]  # never converted to a number
    assert terms("97.5th percentile, 21st, 1,2nd") == [
        "97", "5th", "percentile", "21st", "1", "2nd"
    ]  # fmt: skip


def test_acronyms_are_the_initials_of_runs_of_content_words() -> None:
    assert acronyms(terms("Kullback–Leibler divergence")) == ["kl", "ld", "kld"]
    assert acronym(terms("Kullback–Leibler divergence")) == "kld"
    # function words give no letter
    assert acronym(terms("fundamental theorem of calculus")) == "ftc"
    assert acronym(terms("signal-to-noise ratio")) == "snr"
    # a word a query says for itself is never an acronym (`what is …`)
    assert "is" not in acronyms(terms("inverse square law"))
    assert acronym(terms("inverse square")) is None
    assert acronym(terms("mass")) is None  # one word is no acronym
    assert acronym(terms("b c d e f g h")) is None  # nor is a long name's
    # whose runs of up to six letters still are
    assert max(map(len, acronyms(terms("b c d e f g h")))) == 6
    assert acronym(terms("b c d e f g")) == "bcdefg"
    assert acronym(terms("Kullback Leibler")) == "kl"


def test_an_article_title_is_a_name_without_its_qualifier() -> None:
    assert article_title("https://en.wikipedia.org/wiki/Power_(physics)") == "Power"
    assert article_title("https://en.wikipedia.org/wiki/Mass%E2%80%93energy_equivalence") == (
        "Mass–energy equivalence"
    )
    assert article_title(None) is None and article_title("https://example.org/x") is None
    names = names_of("mass density", ["volumic mass"], "https://en.wikipedia.org/wiki/Density")
    assert names == ["mass density", "volumic mass", "Density"]
    # a title that only repeats the label (case, dashes) is not a second name
    assert names_of("Ohm's law", [], "https://en.wikipedia.org/wiki/Ohm%27s_law") == ["Ohm's law"]


RECORDS = [
    FormulaRecord("Q41591", "Ohm's law", "relation of voltage and current", "<math/>"),
    FormulaRecord(
        "Q11518", "Pythagorean theorem", "relation among the sides of a right triangle", "<math/>"
    ),
    FormulaRecord(
        "Q29539",
        "mass density",
        "mass per volume",
        "<math/>",
        enwiki="https://en.wikipedia.org/wiki/Density",
    ),
    FormulaRecord(
        "Q35875", "mass–energy equivalence", None, "<math/>", aliases=["E=mc²", "rest energy"]
    ),
    FormulaRecord("Q255166", "Kullback–Leibler divergence", "relative entropy", "<math/>"),
    FormulaRecord("Q131191", "body mass index", "mass over height squared", "<math/>"),
    FormulaRecord("Q83950903", "photon irradiance", None, "<math/>"),
    FormulaRecord("Q1194458", "RMS speed", None, "<math/>", aliases=["root mean square speed"]),
    FormulaRecord("Q2115969", "reduced Planck constant", None, "<math/>"),
    FormulaRecord("Q167", "pi", "ratio of a circle's circumference to its diameter", "<math/>"),
]


SPOKEN = {
    "Q35875": ["E equals mass m times c squared"],
    "Q2115969": ["h bar equals Planck constant h over 2 times pi"],
}


def fake_embed(texts: list[str]) -> np.ndarray:
    """A stand-in sentence model: a text's vector is its bag of terms, hashed to 64 slots."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in terms(text):
            out[row, zlib.crc32(word.encode()) % 64] += 1.0  # the same in every process
    return out


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return name_table(records_to_table(RECORDS), fake_embed, SPOKEN)


def test_the_sentence_model_reads_names_description_and_concepts() -> None:
    record = FormulaRecord(
        "Q41591", "Ohm's law", "relation of voltage and current", "<math/>",
        concepts=[Concept("Q25250", "voltage"), Concept("Q29996", "electric current"),
                  Concept("Q25358", None), Concept("Q25250", "voltage")],
    )  # fmt: skip
    [row] = name_table(records_to_table([record]), fake_embed, {}).to_pylist()
    assert row["name_text"] == (
        "Ohm's law: relation of voltage and current; electric current, voltage"
    )


def test_the_table_holds_names_text_and_vectors(table: pa.Table) -> None:
    rows = {r["qid"]: r for r in table.to_pylist()}
    assert rows["Q29539"]["names"] == ["mass density", "Density"]
    assert rows["Q35875"]["names"] == ["mass–energy equivalence", "E=mc²", "rest energy"]
    assert rows["Q41591"]["name_text"] == "Ohm's law: relation of voltage and current"
    assert table.column("embedding").type.list_size == 64


@pytest.mark.parametrize(
    ("query", "qid"),
    [
        ("ohms law", "Q41591"),
        ("pythagorean theorem", "Q11518"),
        ("density", "Q29539"),  # the article's title
        ("rest energy", "Q35875"),  # an alias
    ],
)
def test_a_name_as_people_write_it_is_an_exact_match(table, query: str, qid: str) -> None:
    index = NameIndex(table)
    assert len(index) == len(RECORDS)
    found = index.score(query, None, LEXICAL)
    assert index.qids[int(np.argmax(found.scores))] == qid
    assert [index.qids[i] for i in np.flatnonzero(found.exact)] == [qid]


def test_a_lexical_match_weighs_the_share_of_the_query_it_covers(table) -> None:
    """A name sharing one word of a long description is weak, however best it is."""
    index = NameIndex(table)
    weights = only(names=1.0)
    whole = index.score("ohms law", None, weights).scores
    assert whole.max() == pytest.approx(1.0)  # every word at its best
    part = index.score("the law relating the tension over a conductor", None, weights).scores
    assert index.qids[int(np.argmax(part))] == "Q41591"  # only it has `law`
    assert 0 < part.max() < 0.3


def test_an_acronym_covers_the_words_it_stands_for(table) -> None:
    index = NameIndex(table)
    weights = only(names=1.0)
    found = index.score("KL divergence", None, weights)
    assert index.qids[int(np.argmax(found.scores))] == "Q255166"
    # `kl` by its initials, `divergence` by the name: the whole query at its best
    assert found.scores.max() == pytest.approx(1.0)
    assert not found.exact.any()
    bmi = index.score("BMI", None, weights)
    assert [index.qids[i] for i in np.flatnonzero(bmi.exact)] == ["Q131191"]


def test_a_word_matching_a_name_both_ways_counts_no_more_than_the_whole_query(table) -> None:
    """`rms` is a word of `RMS speed` and the initials of `root mean square speed`."""
    index = NameIndex(table)
    weights = only(names=1.0)
    found = index.score("rms speed", None, weights).scores
    assert index.qids[int(np.argmax(found))] == "Q1194458"
    assert found.max() == pytest.approx(1.0)


def test_an_acronym_that_is_a_name_word_is_no_exact_match(table) -> None:
    """`pi` is a name: photon irradiance, whose initials it also is, is not what was typed."""
    index = NameIndex(table)
    found = index.score("pi", None, only(names=1.0))
    assert [index.qids[i] for i in np.flatnonzero(found.exact)] == ["Q167"]
    assert found.scores[index.qids.index("Q83950903")] > 0  # its initials still match


def test_a_misspelt_name_is_found_by_its_trigrams(table) -> None:
    index = NameIndex(table)
    found = index.score(
        "pythagoras theorm",
        None,
        only(trigrams=1.0),
    )
    assert index.qids[int(np.argmax(found.scores))] == "Q11518"
    assert not found.exact.any()


def test_a_formula_said_in_words_is_found_by_its_spoken_form(table) -> None:
    index = NameIndex(table)
    spoken = only(spoken=1.0)
    found = index.score("h-bar", None, spoken).scores
    assert index.qids[int(np.argmax(found))] == "Q2115969"
    assert found.max() == pytest.approx(1.0)  # both words at their best
    said = index.score("e equals m c squared", None, spoken).scores
    assert index.qids[int(np.argmax(said))] == "Q35875"
    unsaid = only(names=1.0, description=1.0)
    assert not index.score("h-bar", None, unsaid).scores.any()  # no name says it


def test_the_table_holds_each_item_s_spoken_formulae(table) -> None:
    rows = {r["qid"]: r["spoken"] for r in table.to_pylist()}
    assert rows["Q2115969"] == SPOKEN["Q2115969"]
    assert rows["Q41591"] == []


def test_spoken_forms_say_each_formula_with_its_annotated_concepts() -> None:
    options = ParseOptions()
    records = [
        FormulaRecord(
            "Q35875", "mass–energy equivalence", None, convert("E = m c^2"),
            concepts=[Concept("Q11379", "energy", None, convert("E")),
                      Concept("Q11423", "mass", None, convert("m")),
                      Concept("Q0", None, None, convert("c")),  # no label: not said
                      Concept("Q2111", "speed of light", None, convert("c")),
                      Concept("Q1", "rest mass", None, convert("m")),  # the first wins
                      Concept("Q2", "a product", None, convert("m c"))],
        ),
        FormulaRecord("Q41591", "Ohm's law", None, convert("V = R I")),
        FormulaRecord("Q3", "unparsed", None, "<math><mi>x</mi"),
    ]  # fmt: skip
    formulae = records_to_table(records)
    pairs = zip(formulae["qid"].to_pylist(), formulae["mathml"].to_pylist(), strict=True)
    graphs = build_opt_graphs(pairs, options).graphs
    assert spoken_forms(graphs, formulae, options) == {
        "Q35875": ["energy E equals mass m times speed of light c squared"],
        "Q41591": ["V equals R times I"],
    }


def test_the_dense_match_counts_as_weighted(table) -> None:
    index = NameIndex(table)
    vector = fake_embed(["voltage current"])[0]
    dense = index.score(
        "voltage current",
        vector,
        only(dense=1.0),
    ).scores
    assert index.qids[int(np.argmax(dense))] == "Q41591"
    assert np.all(dense >= 0) and dense.max() <= 1.0 + 1e-6
    none = index.score(
        "voltage current",
        None,
        only(dense=1.0),
    ).scores
    assert not none.any()  # no query vector: no dense score


def test_every_label_as_people_type_it_is_found_first(table) -> None:
    index = NameIndex(table)
    figures = name_quality(index, table.column("label").to_pylist())["label"]
    assert figures["queries"] == len(RECORDS)
    assert figures["strict_success_at_1"] == 1.0


def test_an_index_of_no_items_answers_with_nothing() -> None:
    index = NameIndex(name_table(records_to_table([]), fake_embed, {}))
    found = index.score("ohms law", fake_embed(["ohms law"])[0])
    assert found.scores.shape == found.exact.shape == (0,)


def test_the_weights_are_named_never_placed() -> None:
    """A match added between two others would shift a weight given by its place."""
    with pytest.raises(TypeError):
        NameWeights(0.1, 0.3)  # type: ignore[misc]
    assert NameWeights(spoken=0.5).spoken == 0.5
