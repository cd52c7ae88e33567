"""The searcher of people's queries over a small lake of real snapshot items: the name and
structure indexes as the assets build them, and a meaning channel of the frozen sentence
vectors (`sbert_no_cl`, fold 1 serving). Texts find names, formulae find formulae, each hit
says which channels found it, a formula's identifiers are explained, the CLI prints JSON, and
every way a query cannot run is one clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from upath import UPath

from formula_assets.search.fusion import MEANING, NAMES, STRUCTURE, ChannelRank
from formula_assets.search.searcher import LATEX, MATHML, TEXT, Hit, Searcher, SearchError
from formula_assets.syntax.canonical import MAX_DEPTH
from formula_assets_tests.support.search_lake import (
    FROZEN,
    default_embedder,
    people_records,
    write_search_lake,
)

CLI = Path(sys.executable).parent / "formula-assets"


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> UPath:
    root = tmp_path_factory.mktemp("people_lake")
    write_search_lake(root, people_records(), default_embedder())
    return UPath(root)


@pytest.fixture(scope="module")
def searcher(lake: UPath) -> Searcher:
    return Searcher(lake, FROZEN)


def first(result) -> str:
    return result.hits[0].qid


@pytest.mark.parametrize(
    ("query", "qid"),
    [("ohms law", "Q41591"), ("Pythagoras theorem", "Q11518"), ("hookes law", "Q170282")],
)
def test_a_name_as_people_write_it_comes_first(searcher, query: str, qid: str) -> None:
    result = searcher.search(query, TEXT, top=5)
    assert first(result) == qid
    assert result.channels == (NAMES, MEANING)
    assert NAMES in result.hits[0].channels


def test_each_query_kind_builds_only_its_own_channels_index(lake) -> None:
    text = Searcher(lake, FROZEN)
    assert first(text.search("ohms law", TEXT)) == "Q41591"
    assert "structure" not in vars(text)  # a cold text query never builds it
    formula = Searcher(lake, FROZEN)
    assert first(formula.search("V = I R", LATEX)) == "Q41591"
    assert "names" not in vars(formula)
    assert formula.disagreement() is None and "names" not in vars(formula)


def test_a_formula_in_other_letters_finds_its_item(searcher) -> None:
    result = searcher.search("U = I R", LATEX, top=5)
    assert first(result) == "Q41591"
    channel = result.hits[0].channels[STRUCTURE]
    assert channel.rank == 1 and not channel.exact  # renamed: not the very formula
    assert searcher.search("V = I R", LATEX).hits[0].channels[STRUCTURE].exact
    assert result.channels == (STRUCTURE, MEANING)


def test_the_same_formula_with_its_own_names_comes_first(searcher) -> None:
    assert first(searcher.search("E = m c^2", LATEX)) == "Q35875"
    assert first(searcher.search("c^2 = a^2 + b^2", LATEX)) == "Q11518"


def test_a_hit_carries_its_item_and_says_what_found_it(searcher) -> None:
    hit = searcher.search("E = m c^2", LATEX).hits[0]
    assert hit.label == "mass–energy equivalence" and hit.url.endswith("/Q35875")
    assert hit.mathml and hit.mathml.startswith("<math")
    symbols = {c.symbol for c in hit.concepts}
    assert {"E", "m", "c"} <= symbols
    assert hit.trained_on is None  # the frozen method trains nothing (test_meaning: trained)


def test_a_formulas_identifiers_are_explained(searcher) -> None:
    result = searcher.search("E = m c^2", LATEX)
    readings = {s.identifier: s.readings[0] for s in result.symbols}
    assert readings["m"].label == "mass" and readings["E"].label == "energy"
    assert "Q35875" in readings["c"].items
    renamed = searcher.search("K = q w^2", LATEX)
    assert {s.identifier for s in renamed.symbols} == {"K", "q", "w"}
    assert "aligned" in {k for s in renamed.symbols for r in s.readings for k in r.evidence}


def test_a_channel_left_out_finds_nothing(lake) -> None:
    only_names = Searcher(lake, FROZEN, channels=[NAMES])
    result = only_names.search("ohms law", TEXT)
    assert result.channels == (NAMES,)
    assert all(set(h.channels) == {NAMES} for h in result.hits)
    formula = Searcher(lake, FROZEN, channels=[MEANING]).search("V = I R", LATEX)
    assert all(set(h.channels) == {MEANING} for h in formula.hits)


def test_the_result_is_json(searcher) -> None:
    document = json.loads(json.dumps(searcher.search("V = I R", LATEX, top=3).as_json()))
    assert document["kind"] == LATEX and len(document["hits"]) == 3
    hit = document["hits"][0]
    assert set(hit) >= {"qid", "label", "mathml", "concepts", "channels", "trained_on", "url"}
    assert hit["channels"]["structure"]["rank"] == 1
    assert document["symbols"] and document["symbols"][0]["readings"]


@pytest.mark.parametrize(
    ("query", "kind", "top", "message"),
    [
        ("x", "words", 10, "unknown query kind"),
        ("   ", TEXT, 10, "the query is empty"),
        ("x" * 1001, TEXT, 10, "longer than 1,000 characters"),
        ("x" * 4001, LATEX, 10, "longer than 4,000 characters"),
        ("x", TEXT, 0, "top must be between 1 and 100"),
        ("x", TEXT, 101, "top must be between 1 and 100"),
        ("\\frac", LATEX, 10, "did not convert to MathML"),
        ("\\frac{1}{2", LATEX, 10, "at character 9 is never closed"),
        ("<math><mi>x</mi>", MATHML, 10, "does not parse"),
        (
            "<math>" + "<msqrt><mi>a</mi><mo>=</mo>" * (MAX_DEPTH + 1) + "<mi>x</mi>"
            + "</msqrt>" * (MAX_DEPTH + 1) + "</math>",
            MATHML, 10, "nests deeper",
        ),
    ],
)  # fmt: skip
def test_a_query_that_cannot_run_says_why(searcher, query, kind, top, message) -> None:
    with pytest.raises(SearchError, match=message):
        searcher.search(query, kind, top)


def test_a_lake_without_the_name_index_says_what_to_run(lake, tmp_path: Path) -> None:
    for path in Path(str(lake)).iterdir():
        if path.name != "name_index.parquet":
            (tmp_path / path.name).write_bytes(path.read_bytes())
    with pytest.raises(SearchError, match=r"name_index is not materialized.*make run"):
        Searcher(UPath(tmp_path), FROZEN)


def test_an_index_an_earlier_version_built_says_what_to_run(lake, tmp_path: Path) -> None:
    for path in Path(str(lake)).iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    names = pq.read_table(tmp_path / "name_index.parquet")
    pq.write_table(names.drop_columns(["spoken"]), tmp_path / "name_index.parquet")
    with pytest.raises(SearchError, match=r"name_index.parquet has no spoken.*refresh"):
        Searcher(UPath(tmp_path), FROZEN)


def test_the_cli_prints_the_hits_as_json(lake) -> None:
    env = {**os.environ, "FORMULA_ASSETS_DATA_LAKE": str(lake), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [str(CLI), "search", "--text", "ohms law", "--method", FROZEN, "--top", "2", "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["hits"][0]["qid"] == "Q41591" and len(document["hits"]) == 2
    shown = subprocess.run(
        [str(CLI), "search", "--latex", "V = I R", "--method", FROZEN, "--top", "2"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "Q41591" in shown.stdout and "found by structure #1 (exact)" in shown.stdout
    assert "what the query's symbols most likely denote:" in shown.stdout


def alone_catalogue(lake: UPath) -> list[str]:
    return pq.read_table(Path(str(lake)) / "wikidata_formulae.parquet").column("qid").to_pylist()


def _copy(lake: UPath, to: Path) -> Path:
    for path in Path(str(lake)).iterdir():
        (to / path.name).write_bytes(path.read_bytes())
    return to


def test_a_hit_is_trained_on_unless_its_split_is_the_held_out_fold() -> None:
    def hit(split: str | None) -> Hit:
        return Hit(1, "Q1", 1 / 3, None, None, [], None, [], {}, split)

    assert hit("train").trained_on is True and hit("validation").trained_on is True
    assert hit("test").trained_on is False and hit(None).trained_on is None
    document = hit("test").as_json()
    assert document["trained_on"] is False and document["score"] == 0.333333
    found = Hit(1, "Q1", 0.5, None, None, [], None, [], {NAMES: ChannelRank(2, 2 / 3, True)})
    assert found.as_json()["channels"] == {NAMES: {"rank": 2, "score": 0.666667, "exact": True}}


def test_the_first_item_of_the_catalogue_is_found_like_any_other(searcher) -> None:
    """Catalogue row 0 is a known row, not a missing one."""
    row0 = searcher.catalogue.qids[0]
    label = searcher.catalogue.labels[0]
    assert first(searcher.search(label, TEXT)) == row0
    mathml = searcher.catalogue.mathml[0]
    assert row0 in {h.qid for h in searcher.search(mathml, MATHML).hits[:3]}


def test_a_service_s_searcher_keeps_only_what_queries_read(lake) -> None:
    compact = Searcher(lake, FROZEN, compact=True)
    assert not compact.meaning.index.spaces  # the stored vectors went
    assert {"structure", "names"} <= set(vars(compact))  # both indexes built before a query
    assert first(compact.search("ohms law", TEXT)) == "Q41591"
    assert first(compact.search("V = I R", LATEX)) == "Q41591"


def test_hits_are_numbered_from_one_and_ten_by_default(searcher) -> None:
    result = searcher.search("energy")
    assert [h.rank for h in result.hits] == list(range(1, 11))
    assert [h.qid for h in searcher.search("energy", TEXT, top=1).hits] == [result.hits[0].qid]
    assert len(searcher.search("energy", TEXT, top=100).hits) == len(searcher.catalogue.qids)
    channel = next(iter(result.hits[0].channels.values()))
    assert channel.rank >= 1 and result.as_json()["hits"][0]["rank"] == 1


@pytest.mark.parametrize(("kind", "longest"), [(TEXT, 1_000), (LATEX, 4_000), (MATHML, 100_000)])
def test_a_query_of_the_longest_length_runs_and_one_more_character_does_not(
    searcher, kind: str, longest: int
) -> None:
    fits = {TEXT: "x", LATEX: "x", MATHML: "<math><mi>x</mi></math>"}[kind]
    query = fits + " " * (longest - len(fits))
    assert searcher.search(query, kind).hits
    with pytest.raises(SearchError, match=f"longer than {longest:,} characters"):
        searcher.search(query + " ", kind)


def test_the_result_names_the_meaning_method_and_fold(searcher) -> None:
    assert searcher.search("energy").meaning == {
        "method": FROZEN, "fold": 1, "weights": searcher.meaning.weights,
    }  # fmt: skip


def test_the_names_channel_reads_the_query_vector_without_the_meaning_channel(lake) -> None:
    """The names channel's sentence cosine needs the query's vector even when the meaning
    channel is left out."""
    query = "relation between voltage and current"
    alone = Searcher(lake, FROZEN, channels=[NAMES]).search(query, TEXT, top=5)
    both = Searcher(lake, FROZEN).search(query, TEXT, top=100)
    scores = {h.qid: h.channels[NAMES].score for h in both.hits if NAMES in h.channels}
    assert all(h.channels[NAMES].score == pytest.approx(scores[h.qid]) for h in alone.hits)
    assert all(h.channels[NAMES].score > 0 for h in alone.hits)
    meaning = Searcher(lake, FROZEN, channels=[MEANING]).search(query, TEXT, top=100)
    assert {h.qid for h in meaning.hits} == set(alone_catalogue(lake))  # row 0 included


def test_indexes_that_disagree_with_the_items_say_so(lake, tmp_path: Path) -> None:
    (tmp_path / "fewer").mkdir()
    fewer = _copy(lake, tmp_path / "fewer")
    formulae = pq.read_table(fewer / "wikidata_formulae.parquet")
    pq.write_table(formulae.slice(1), fewer / "wikidata_formulae.parquet")
    assert Searcher(UPath(fewer), FROZEN).disagreement() == (
        "the name index holds other items than wikidata_formulae"
    )
    (tmp_path / "stray").mkdir()
    stray = _copy(lake, tmp_path / "stray")
    names = pq.read_table(stray / "name_index.parquet")
    structure = pq.read_table(stray / "structure_index.parquet")
    pq.write_table(names.slice(1), stray / "name_index.parquet")
    pq.write_table(formulae.slice(1), stray / "wikidata_formulae.parquet")
    gone = names.column("qid")[0].as_py()
    assert gone in structure.column("qid").to_pylist()
    assert Searcher(UPath(stray), FROZEN).disagreement() == (
        "the structure index holds 1 item(s) wikidata_formulae lacks"
    )


def test_items_an_index_holds_beyond_the_catalogue_are_never_hits(lake, tmp_path: Path) -> None:
    """A name index rebuilt before the items: its extra rows are dropped, the others keep their
    exact flags."""
    root = _copy(lake, tmp_path)
    formulae = pq.read_table(root / "wikidata_formulae.parquet")
    qids = formulae.column("qid").to_pylist()
    keep = [i for i, q in enumerate(qids) if q != "Q11518"]  # the Pythagorean theorem
    pq.write_table(formulae.take(keep), root / "wikidata_formulae.parquet")
    search = Searcher(UPath(root), FROZEN)
    found = search.search("ohms law", TEXT, top=100)
    assert "Q11518" not in {h.qid for h in found.hits}
    assert found.hits[0].qid == "Q41591" and found.hits[0].channels[NAMES].exact
    assert "Q11518" not in {h.qid for h in search.search("c^2 = a^2 + b^2", LATEX, 100).hits}
