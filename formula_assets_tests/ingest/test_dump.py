"""Streaming formula items out of a Wikidata JSON dump, in every compression it ships in."""

from __future__ import annotations

import bz2
import gzip
import json
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from latex2mathml.converter import convert

from formula_assets.ingest import dump as dump_module
from formula_assets.ingest.dump import (
    DumpError,
    dump_records,
    enwiki_url,
    scan_dump,
    tex_to_mathml,
)
from formula_assets.ingest.records import Concept, FormulaRecord
from formula_assets.ingest.snapshot import paper_folds

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
FOLDED_QID = "Q4721378"  # in the paper's folds, so its row must carry the published fold
SUFFIXES = (".json", ".json.gz", ".json.bz2")
Json = dict[str, Any]


# --- a tiny dump writer in Wikidata's layout ---------------------------------------------------


def _entity(
    qid: str,
    label: str | None = None,
    description: str | None = None,
    claims: dict[str, list[Json]] | None = None,
    enwiki: str | None = None,
    descriptions: Json | None = None,
) -> Json:
    """An item as the dump writes it: empty maps are `[]`."""
    return {
        "type": "item",
        "id": qid,
        "labels": {"en": {"language": "en", "value": label}} if label else [],
        "descriptions": descriptions
        if descriptions is not None
        else ({"en": {"language": "en", "value": description}} if description else []),
        "claims": claims or [],
        "sitelinks": {"enwiki": {"site": "enwiki", "title": enwiki, "badges": []}}
        if enwiki
        else [],
    }


def _item_snak(prop: str, qid: str) -> Json:
    value = {"entity-type": "item", "numeric-id": int(qid[1:]), "id": qid}
    return {
        "snaktype": "value",
        "property": prop,
        "datavalue": {"value": value, "type": "wikibase-entityid"},
        "datatype": "wikibase-item",
    }


def _math_snak(prop: str, tex: str) -> Json:
    return {
        "snaktype": "value",
        "property": prop,
        "datavalue": {"value": tex, "type": "string"},
        "datatype": "math",
    }


def _unknown(prop: str) -> Json:
    return {"snaktype": "somevalue", "property": prop, "datatype": "math"}


def _statement(mainsnak: Json, symbols: list[Json] | None = None, rank: str = "normal") -> Json:
    statement: Json = {"mainsnak": mainsnak, "type": "statement", "rank": rank}
    if symbols is not None:
        statement["qualifiers"] = {"P7235": symbols}
        statement["qualifiers-order"] = ["P7235"]
    return statement


def _formula(tex: str, rank: str = "normal") -> Json:
    return _statement(_math_snak("P2534", tex), rank=rank)


def _part(qid: str, *symbols: str, prop: str = "P527", rank: str = "normal") -> Json:
    return _statement(_item_snak(prop, qid), [_math_snak("P7235", s) for s in symbols], rank)


def _line(entity: Json) -> str:
    return json.dumps(entity, ensure_ascii=False, separators=(",", ":"))


def _write(path: Path, lines: list[str], brackets: bool = True) -> Path:
    """One entity per line; inside an array every entity but the last has a trailing comma."""
    text = "[\n" + ",\n".join(lines) + "\n]\n" if brackets else "\n".join(lines) + "\n"
    opener: Callable[..., Any] = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    return path


MALFORMED = '{"type":"item","id":"Q402","claims":{"P2534":[{"mainsnak":'


def _sample_lines() -> list[str]:
    property_entity = {
        "type": "property",
        "datatype": "math",
        "id": "P2534",
        "labels": {"en": {"language": "en", "value": "defining formula"}},
    }
    energy = _entity("Q11", "energy", "quantitative property")  # before the items needing it
    force = _entity("Q16", "force", "influence that changes motion")
    mass_energy = _entity(
        FOLDED_QID,
        "mass–energy equivalence",
        "relation between mass and energy",
        {
            "P31": [_statement(_item_snak("P31", "Q5"))],
            "P2534": [_formula("E = mc^2")],
            "P527": [
                _part("Q11", "E"),
                _part("Q12", "m"),
                _part("Q13", "c"),
                _part("Q14", "x", rank="deprecated"),
                _statement(
                    {"snaktype": "somevalue", "property": "P527"}, [_math_snak("P7235", "k")]
                ),
            ],
            "P4934": [_part("Q11", "E", prop="P4934")],  # exact duplicate of a P527 pair
        },
        enwiki="Mass–energy equivalence (Einstein's)",
    )
    not_formula = _entity("Q400", "tool", "a part list", {"P527": [_part("Q18", "t")]})
    deprecated_only = _entity(
        "Q401", "retracted", None, {"P2534": [_formula("a = b", rank="deprecated")]}
    )
    newton = _entity(
        "Q200",
        "Newton's second law",
        None,
        {
            "P2534": [
                _formula("F = 0", rank="deprecated"),
                _formula("F = ma"),
                _formula(r"F = \frac{dp}{dt}", rank="preferred"),
            ],
            "P527": [
                _part("Q12", "m", "M"),
                _part("Q15", "x^"),  # latex2mathml rejects a dangling superscript
                _statement(
                    _item_snak("P527", "Q16"), [_unknown("P7235"), _math_snak("P7235", "F")]
                ),
                _part("Q17", "a"),  # Q17 is nowhere in the dump
            ],
        },
    )
    broken = _entity(
        "Q300",
        "broken formula",
        "formula whose TeX does not convert",
        {"P2534": [_formula("\\frac{"), _formula("x = 1"), _statement(_unknown("P2534"))]},
    )
    mass = _entity("Q12", "mass", "property of matter")  # after the items needing it
    light = _entity(
        "Q13", "speed of light", descriptions={"de": {"language": "de", "value": "Naturkonstante"}}
    )
    unknown_x = _entity("Q15", "displacement", "vector quantity")
    filler = _entity("Q999", "filler", "unrelated", {"P31": [_statement(_item_snak("P31", "Q5"))]})
    return [
        _line(property_entity),
        _line(energy),
        _line(force),
        _line(mass_energy),
        _line(not_formula),
        _line(deprecated_only),
        MALFORMED,
        _line(newton),
        _line(broken),
        _line(mass),
        _line(light),
        _line(unknown_x),
        _line(filler),
    ]


def _expected() -> list[FormulaRecord]:
    def c(qid: str, label: str | None, description: str | None, tex: str) -> Concept:
        return Concept(qid, label, description, convert(tex))

    return [
        FormulaRecord(
            qid="Q200",
            label="Newton's second law",
            description=None,
            mathml=convert(r"F = \frac{dp}{dt}"),
            tex=r"F = \frac{dp}{dt}",
            concepts=[
                c("Q12", "mass", "property of matter", "M"),
                c("Q12", "mass", "property of matter", "m"),
                Concept("Q15", "displacement", "vector quantity", None),
                c("Q16", "force", "influence that changes motion", "F"),
                c("Q17", None, None, "a"),
            ],
            source="dump",
            enwiki=None,
            paper_fold=None,
            retrieved_at=NOW,
            notes=[
                "symbol 'x^' of Q15 not converted to MathML (MissingSuperScriptOrSubscriptError)",
                "unknown-value symbol of Q16 skipped",
                "concept Q17 not in the dump: no label or description",
            ],
        ),
        FormulaRecord(
            qid="Q300",
            label="broken formula",
            description="formula whose TeX does not convert",
            mathml=None,
            tex="\\frac{",
            other_formulae=[convert("x = 1")],
            concepts=[],
            source="dump",
            retrieved_at=NOW,
            notes=[
                "unknown-value defining formula skipped",
                "2 distinct defining formulas of the best rank; the first in mathml, "
                "the others in other_formulae",
                "defining formula TeX not converted to MathML (NoAvailableTokensError)",
            ],
        ),
        FormulaRecord(
            qid=FOLDED_QID,
            label="mass–energy equivalence",
            description="relation between mass and energy",
            mathml=convert("E = mc^2"),
            tex="E = mc^2",
            concepts=[
                c("Q11", "energy", "quantitative property", "E"),
                c("Q12", "mass", "property of matter", "m"),
                c("Q13", "speed of light", None, "c"),
            ],
            repeated_concepts=1,  # Q11 with E by P527 and again by P4934
            source="dump",
            enwiki="https://en.wikipedia.org/wiki/Mass%E2%80%93energy_equivalence_(Einstein%27s)",
            paper_fold=paper_folds()[FOLDED_QID],
            retrieved_at=NOW,
            notes=["P527 statement with an unknown-value concept skipped"],
        ),
    ]


# --- extraction ----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_dump_rows_match_exactly(tmp_path: Path, suffix: str) -> None:
    path = _write(tmp_path / f"latest-all{suffix}", _sample_lines())
    messages: list[str] = []

    scan = scan_dump(path, messages.append, lambda: NOW)

    assert scan.records == _expected()
    assert all(r.mathml is None or r.mathml.startswith("<math") for r in scan.records)
    assert all(
        c.symbol_mathml is None or c.symbol_mathml.startswith("<math")
        for r in scan.records
        for c in r.concepts
    )
    assert (scan.lines, scan.bad_lines, scan.second_pass) == (15, 1, True)
    assert scan.notes == ["1 malformed dump line(s) skipped", "1 concept(s) not in the dump"]
    assert any(m.startswith("dump line 8 skipped: not JSON") for m in messages)
    assert "dump pass 2: looking for 3 concept(s) not found after pass 1" in messages
    assert messages[-1].startswith("dump read: 15 lines, ")
    assert "3 formula items" in messages[-1]
    assert "1 malformed dump line(s) skipped" in messages[-1]


def test_dump_records_returns_the_rows(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.json.gz", _sample_lines())
    assert dump_records(path, now=lambda: NOW) == _expected()


def test_bare_lines_without_brackets(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.json", _sample_lines(), brackets=False)
    assert dump_records(path, now=lambda: NOW) == _expected()


def test_no_second_pass_when_concepts_follow(tmp_path: Path) -> None:
    item = _entity("Q7", "x", None, {"P2534": [_formula("y = x")], "P527": [_part("Q8", "x")]})
    path = _write(tmp_path / "d.json", [_line(item), _line(_entity("Q8", "ex", "a variable"))])
    scan = scan_dump(path, now=lambda: NOW)
    assert not scan.second_pass
    assert scan.records[0].concepts == [Concept("Q8", "ex", "a variable", convert("x"))]


def test_progress_is_logged(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.json", _sample_lines())
    messages: list[str] = []
    dump_records(path, messages.append, lambda: NOW, progress_every=5)
    assert "dump pass 1: 5 lines read, 1 formula items, 0/3 concepts found" in messages
    assert any(m.startswith("dump pass 2: 10 lines read") for m in messages)


def test_retrieved_at_is_utc(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.json", _sample_lines())
    plus_two = timezone(timedelta(hours=2))
    records = dump_records(path, now=lambda: datetime(2024, 5, 1, 14, 0, tzinfo=plus_two))
    assert {r.retrieved_at for r in records} == {NOW}
    assert all(r.retrieved_at is not None and r.retrieved_at.tzinfo is UTC for r in records)
    assert dump_records(path)[0].retrieved_at.tzinfo is UTC  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="timezone-aware"):
        dump_records(path, now=lambda: datetime(2024, 5, 1))


def test_the_dump_source_needs_a_path() -> None:
    from formula_assets.ingest.sources import load_records

    with pytest.raises(ValueError, match="set FORMULA_ASSETS_DUMP_PATH or the dump_path config"):
        load_records("dump", dump_path=None)


def test_no_latex2mathml_exception_escapes(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(_tex: str) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(dump_module.converter, "convert", explode)
    assert tex_to_mathml("x") == (None, "RecursionError: maximum recursion depth exceeded")


def test_enwiki_url_matches_wikidata_encoding() -> None:
    assert enwiki_url("De Morgan's laws") == "https://en.wikipedia.org/wiki/De_Morgan%27s_laws"
    assert enwiki_url("1 + 2 + 3 + 4 + ⋯") == (
        "https://en.wikipedia.org/wiki/1_%2B_2_%2B_3_%2B_4_%2B_%E2%8B%AF"
    )
    assert enwiki_url("(a,b,0) class of distributions") == (
        "https://en.wikipedia.org/wiki/(a,b,0)_class_of_distributions"
    )


# --- unreadable input ----------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match="no such dump file"):
        dump_records(tmp_path / "absent.json.gz")


def test_unsupported_extension(tmp_path: Path) -> None:
    path = tmp_path / "dump.csv"
    path.write_text("a,b\n")
    with pytest.raises(DumpError, match="unsupported dump file"):
        dump_records(path)


def test_not_a_dump(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_text("qid,label\nQ1,universe\n")
    with pytest.raises(DumpError, match=r"line 1 is neither '\[' nor a Wikidata entity"):
        dump_records(path)


def test_array_of_garbage(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.json", ["not json", "nor this"])
    with pytest.raises(DumpError, match="no entity line, 2 malformed"):
        dump_records(path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "dump.json.bz2"
    _write(path, [], brackets=False)
    with pytest.raises(DumpError, match="empty file"):
        dump_records(path)


def test_an_empty_array_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_text("[\n]\n")
    with pytest.raises(DumpError, match="no entity line; not a Wikidata dump"):
        dump_records(path)


def test_a_dump_without_formula_items_is_an_empty_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.json", [_line(_entity("Q5", "human", None))])
    assert dump_records(path) == []


# --- truncated dumps -----------------------------------------------------------------------------


def _two_formulae() -> list[str]:
    first = _entity("Q7", "x", None, {"P2534": [_formula("y = x")], "P527": [_part("Q8", "x")]})
    second = _entity("Q9", "law", "a law", {"P2534": [_formula("a = b")]})
    return [_line(_entity("Q8", "ex", "a variable")), _line(first), _line(second)]


def _cut(path: Path, text: str) -> Path:
    opener: Callable[..., Any] = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _whole(lines: list[str]) -> str:
    return "[\n" + ",\n".join(lines) + "\n]\n"


# The claims of the last formula item are cut off before "P2534": the quick path would pass it by.
CUT_INSIDE = _whole(_two_formulae()).rsplit('"claims"', 1)[0]
CUT_AT_A_LINE_END = _whole(_two_formulae()).rsplit("\n", 3)[0] + "\n"  # no last line, no "]"


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize(
    ("text", "where"),
    [(CUT_INSIDE, "ends at line 4, inside an entity"), (CUT_AT_A_LINE_END, "ends at line 3,")],
    ids=["inside an entity", "at a line end"],
)
def test_a_truncated_dump_is_an_error(tmp_path: Path, suffix: str, text: str, where: str) -> None:
    path = _cut(tmp_path / f"latest-all{suffix}", text)
    with pytest.raises(DumpError, match="truncated dump") as raised:
        dump_records(path, now=lambda: NOW)
    assert where in str(raised.value) and "without the closing ']'" in str(raised.value)
    assert "accept_partial_dump" in str(raised.value)
    assert "FORMULA_ASSETS_ACCEPT_PARTIAL_DUMP" in str(raised.value)


def test_a_bare_dump_cut_inside_its_last_line_is_an_error(tmp_path: Path) -> None:
    text = "\n".join(_two_formulae())
    path = _cut(tmp_path / "dump.json", text.rsplit('"claims"', 1)[0])
    with pytest.raises(DumpError, match=r"its last line \(3\) is not a complete entity"):
        dump_records(path, now=lambda: NOW)


def test_a_partial_dump_can_be_accepted_with_a_note(tmp_path: Path) -> None:
    path = _cut(tmp_path / "dump.json.gz", CUT_INSIDE)
    messages: list[str] = []

    scan = scan_dump(path, messages.append, lambda: NOW, accept_partial=True)

    assert [r.qid for r in scan.records] == ["Q7"]
    assert scan.truncated and "ends at line 4, inside an entity" in scan.truncated
    assert scan.notes == [
        f"partial dump accepted: {scan.truncated}; formula items past the cut are missing"
    ]
    assert "partial dump accepted" in messages[-1]


def test_a_complete_dump_is_not_partial(tmp_path: Path) -> None:
    for name, brackets in (("wrapped.json", True), ("bare.json", False)):
        scan = scan_dump(_write(tmp_path / name, _two_formulae(), brackets), now=lambda: NOW)
        assert scan.truncated is None and scan.notes == []
        assert [r.qid for r in scan.records] == ["Q7", "Q9"]


# --- statements missing their parts --------------------------------------------------------------


def test_statements_without_a_mainsnak_or_snaktype_say_what_is_missing(tmp_path: Path) -> None:
    untyped = {"property": "P7235", "datavalue": {"value": "x", "type": "string"}}
    item = _entity(
        "Q7",
        "x",
        None,
        {
            "P2534": [
                {"type": "statement", "rank": "normal"},
                _statement({"property": "P2534", "datavalue": {"value": "a", "type": "string"}}),
                _formula("y = x"),
            ],
            "P527": [
                {"type": "statement", "rank": "normal", "qualifiers": {"P7235": []}},
                _statement({"property": "P527"}, [_math_snak("P7235", "z")]),
                _statement(_item_snak("P527", "Q8"), [untyped, "x"]),  # type: ignore[list-item]
            ],
        },
    )
    path = _write(tmp_path / "dump.json", [_line(item), _line(_entity("Q8", "ex", None))])

    (record,) = dump_records(path, now=lambda: NOW)

    assert record.notes == [
        "defining formula statement without a mainsnak skipped",
        "defining formula statement whose mainsnak has no snaktype skipped",
        "P527 statement with a symbol without a mainsnak skipped",
        "P527 statement with a symbol whose mainsnak has no snaktype skipped",
        "symbol of Q8 without a snaktype skipped",
        "symbol of Q8 that is not a snak skipped",
    ]
    assert not any("None" in note for note in record.notes)


def test_corrupt_archive(tmp_path: Path) -> None:
    path = tmp_path / "dump.json.gz"
    path.write_bytes(b"this is not gzip")
    with pytest.raises(DumpError, match="unreadable"):
        dump_records(path)


def test_truncated_archive(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.json.gz", _sample_lines())
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(DumpError, match="unreadable after line"):
        dump_records(path)


# --- memory ---------------------------------------------------------------------------------------


def _filler_dump(path: Path, fillers: int) -> Path:
    """One formula item in the middle of `fillers` unrelated items, its concept at the end."""
    item = _entity("Q7", "x", None, {"P2534": [_formula("y = x")], "P527": [_part("Q8", "x")]})
    lines = []
    for n in range(fillers):
        if n == fillers // 2:
            lines.append(_line(item))
        filler = _entity(
            f"Q{1000 + n}",
            f"filler {n}",
            f"unrelated item number {n}",
            {"P31": [_statement(_item_snak("P31", "Q5"))]},
            enwiki=f"Filler {n}",
        )
        lines.append(_line(filler))
    lines.append(_line(_entity("Q8", "ex", "a variable")))
    return _write(path, lines)


def _peak(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        count = len(dump_records(path, now=lambda: NOW))
        return tracemalloc.get_traced_memory()[1], count
    finally:
        tracemalloc.stop()


def test_memory_stays_flat(tmp_path: Path) -> None:
    small = _filler_dump(tmp_path / "small.json.gz", 2_000)
    large = _filler_dump(tmp_path / "large.json.gz", 20_000)
    dump_records(small, now=lambda: NOW)  # warm caches (snapshot folds, regexes, imports)

    small_peak, small_count = _peak(small)
    large_peak, large_count = _peak(large)

    assert small_count == large_count == 1
    assert large_peak - small_peak < 1_000_000, (small_peak, large_peak)


# --- what a read counts and says ------------------------------------------------------------------


def test_lines_entities_and_parsed_lines_are_counted(tmp_path: Path) -> None:
    """Of the sample's 13 content lines, 12 are entities (one is malformed); 9 went through
    json.loads: the property P2534 and the five formula lines (the marker is in them), and the
    three concepts needed and not yet found (Q12, Q13, Q15). The quick path skips Q11 and Q16
    (met before an item needed them), Q400 and Q999."""
    scan = scan_dump(_write(tmp_path / "d.json", _sample_lines()), now=lambda: NOW)
    assert (scan.lines, scan.entity_lines, scan.parsed_lines, scan.bad_lines) == (15, 12, 9, 1)
    bare = scan_dump(_write(tmp_path / "b.json", _sample_lines(), brackets=False), now=lambda: NOW)
    assert (bare.lines, bare.entity_lines, bare.parsed_lines) == (13, 12, 9)


def test_five_bad_lines_are_logged_and_all_are_counted(tmp_path: Path) -> None:
    good = _line(_entity("Q7", "x", None, {"P2534": [_formula("y = x")]}))
    bad = [f'{{"broken": {n}' for n in range(7)]
    messages: list[str] = []
    scan = scan_dump(_write(tmp_path / "d.json", [good, *bad]), messages.append, lambda: NOW)
    skipped = [m for m in messages if m.startswith("dump line ")]
    assert len(skipped) == 5 and skipped[0].startswith("dump line 3 skipped: not JSON")
    assert scan.bad_lines == 7 and "7 malformed dump line(s) skipped" in scan.notes


@pytest.mark.parametrize(("length", "shown"), [(80, "x" * 80), (81, "x" * 80 + "…")])
def test_a_bad_line_is_shown_cut_at_80_characters(tmp_path: Path, length: int, shown: str) -> None:
    good = _line(_entity("Q7", "x", None, {"P2534": [_formula("y = x")]}))
    messages: list[str] = []
    scan_dump(_write(tmp_path / "d.json", [good, "x" * length]), messages.append, lambda: NOW)
    assert any(m.endswith(f": {shown!r}") for m in messages), messages


@pytest.mark.parametrize("line", ["[1, 2]", '{"type": "item"}', '{"id": 7}', '"Q7"'])
def test_json_that_is_not_an_entity_is_a_bad_line(tmp_path: Path, line: str) -> None:
    good = _line(_entity("Q7", "x", None, {"P2534": [_formula("y = x")]}))
    messages: list[str] = []
    scan = scan_dump(_write(tmp_path / "d.json", [good, line]), messages.append, lambda: NOW)
    assert scan.bad_lines == 1
    assert any("skipped: JSON but not an entity (no id)" in m for m in messages)


def test_progress_every_must_be_positive(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.json", _sample_lines())
    for every in (0, -5):
        with pytest.raises(ValueError, match="progress_every must be positive"):
            scan_dump(path, progress_every=every)
    messages: list[str] = []
    scan_dump(path, messages.append, lambda: NOW, progress_every=1)
    assert "dump pass 1: 1 lines read, 0 formula items, 0/0 concepts found" in messages


def test_progress_is_logged_every_100_000_lines_by_default(tmp_path: Path) -> None:
    filler = '{"type":"item","id":"Q5"}'
    item = _line(_entity("Q7", "x", None, {"P2534": [_formula("y = x")]}))
    messages: list[str] = []
    path = _write(tmp_path / "d.json", [item] + [filler] * 100_000, brackets=False)
    scan_dump(path, messages.append, lambda: NOW)
    progress = [m for m in messages if m.startswith("dump pass 1:")]
    assert progress == ["dump pass 1: 100,000 lines read, 1 formula items, 0/0 concepts found"]


def test_a_truncated_dump_is_an_error_by_default_in_both_readers(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.json", _sample_lines())
    path.write_text(path.read_text().rsplit("\n", 3)[0] + "\n")  # cut before the closing ']'
    for reader in (scan_dump, dump_records):
        with pytest.raises(DumpError, match="truncated dump"):
            reader(path)


def test_a_conversion_without_a_math_element_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for returned in ("", "<mrow/>", None):
        monkeypatch.setattr(dump_module.converter, "convert", lambda _tex, r=returned: r)
        assert tex_to_mathml("x") == (None, "latex2mathml returned no <math> element")


def test_concepts_given_by_numeric_id_only_and_values_that_are_not_items(tmp_path: Path) -> None:
    """Older dumps give an item value as `numeric-id` only; a property value is no concept."""

    def part(value: Json, symbol: str) -> Json:
        snak = {
            "snaktype": "value",
            "property": "P527",
            "datavalue": {"value": value, "type": "wikibase-entityid"},
        }
        return _statement(snak, [_math_snak("P7235", symbol)])

    item = _entity(
        "Q7",
        "x",
        None,
        {
            "P2534": [_formula("y = x + z")],
            "P527": [
                part({"entity-type": "item", "numeric-id": 8}, "x"),
                part({"entity-type": "property", "numeric-id": 9}, "y"),
                part({"entity-type": "item", "id": "P31"}, "z"),
                part({"entity-type": "item"}, "w"),
            ],
        },
    )
    path = _write(tmp_path / "d.json", [_line(item), _line(_entity("Q8", "ex", "a variable"))])
    (record,) = dump_records(path, now=lambda: NOW)
    assert record.concepts == [Concept("Q8", "ex", "a variable", convert("x"))]
    assert record.notes == ["P527 statement with a symbol but no item value skipped"]


def test_formula_statements_without_a_value_say_so(tmp_path: Path) -> None:
    not_text = _statement(
        {"snaktype": "value", "property": "P2534", "datavalue": {"value": {"tex": "x"}}}
    )
    unknown = _entity("Q7", "x", None, {"P2534": [_statement(_unknown("P2534"))]})
    odd = _entity("Q8", "y", None, {"P2534": [not_text]})
    records = dump_records(
        _write(tmp_path / "d.json", [_line(unknown), _line(odd)]), now=lambda: NOW
    )
    assert [r.notes for r in records] == [
        ["unknown-value defining formula skipped", "no defining formula value"],
        [
            "defining formula statement without a TeX string value skipped",
            "no defining formula value",
        ],
    ]
    assert all(r.tex is None and r.mathml is None for r in records)


def test_a_symbol_that_is_not_text_is_skipped_with_a_note(tmp_path: Path) -> None:
    number = {"snaktype": "value", "property": "P7235", "datavalue": {"value": 5}}
    item = _entity(
        "Q7",
        "x",
        None,
        {"P2534": [_formula("y = x")], "P527": [_statement(_item_snak("P527", "Q8"), [number])]},
    )
    path = _write(tmp_path / "d.json", [_line(item), _line(_entity("Q8", "ex", None))])
    (record,) = dump_records(path, now=lambda: NOW)
    assert record.concepts == [] and record.notes == ["non-text symbol of Q8 skipped"]


def test_a_concepts_converted_symbols_come_before_its_unconverted_ones(tmp_path: Path) -> None:
    item = _entity(
        "Q7",
        "x",
        None,
        {"P2534": [_formula("y = x")], "P527": [_part("Q8", "x^"), _part("Q8", "x")]},
    )
    path = _write(tmp_path / "d.json", [_line(item), _line(_entity("Q8", "ex", None))])
    (record,) = dump_records(path, now=lambda: NOW)
    assert [c.symbol_mathml for c in record.concepts] == [convert("x"), None]


def test_a_bad_line_met_again_in_the_second_pass_is_passed_over(tmp_path: Path) -> None:
    concept = _line(_entity("Q8", "ex", "a variable"))  # before the item: found in pass 2
    item = _line(
        _entity("Q7", "x", None, {"P2534": [_formula("y = x")], "P527": [_part("Q8", "x")]})
    )
    filler = _line(_entity("Q5", "filler", None))
    lines = [filler, "garbage", concept, item]  # pass 2 meets the bad line before the concept
    scan = scan_dump(_write(tmp_path / "d.json", lines), now=lambda: NOW)
    assert scan.second_pass and scan.bad_lines == 1
    assert scan.records[0].concepts == [Concept("Q8", "ex", "a variable", convert("x"))]


def test_an_archive_unreadable_from_the_start_says_line_0(tmp_path: Path) -> None:
    path = tmp_path / "dump.json.bz2"
    path.write_bytes(b"not bzip2 at all")
    with pytest.raises(DumpError, match="unreadable after line 0:"):
        dump_records(path)


def test_an_items_english_aliases_are_read_sorted_once_each(tmp_path: Path) -> None:
    """`aliases.en` is a list of {language, value}; other languages, blanks and repeats go."""
    item = _entity("Q7", "Ohm's law", None, {"P2534": [_formula("V = R I")]})
    item["aliases"] = {
        "en": [
            {"language": "en", "value": "Ohms law"},
            {"language": "en", "value": " "},
            {"language": "en", "value": "Ohm law"},
            {"language": "en", "value": "Ohms law"},
            "not an alias",
        ],
        "de": [{"language": "de", "value": "Ohmsches Gesetz"}],
    }
    bare = _entity("Q8", "bare", None, {"P2534": [_formula("x = 1")]})
    bare["aliases"] = []  # the dump writes an empty map as []
    path = _write(tmp_path / "d.json", [_line(item), _line(bare)])
    records = {r.qid: r for r in dump_records(path, now=lambda: NOW)}
    assert records["Q7"].aliases == ["Ohm law", "Ohms law"]
    assert records["Q8"].aliases == []


def test_every_distinct_defining_formula_is_kept(tmp_path: Path) -> None:
    """The first best-rank value is `mathml` (and `tex`); the others, each once, are
    `other_formulae` in statement order; a repeat, a lower rank and an unconvertible one are not."""
    item = _entity(
        "Q7",
        "Ohm's law",
        None,
        {
            "P2534": [
                _formula("V = R I"),
                _formula("I = V / R"),
                _formula("V = R I"),
                _formula("R = V / I"),
                _formula("x^"),
                _formula("V = 0", rank="deprecated"),
            ]
        },
    )
    one = _entity("Q8", "single", None, {"P2534": [_formula("x = 1"), _formula("x = 1")]})
    path = _write(tmp_path / "d.json", [_line(item), _line(one)])
    records = {r.qid: r for r in dump_records(path, now=lambda: NOW)}

    ohm = records["Q7"]
    assert (ohm.tex, ohm.mathml) == ("V = R I", convert("V = R I"))
    assert ohm.other_formulae == [convert("I = V / R"), convert("R = V / I")]
    assert ohm.notes == [
        "4 distinct defining formulas of the best rank; the first in mathml, "
        "the others in other_formulae",
        "defining formula 'x^' not converted to MathML (MissingSuperScriptOrSubscriptError)",
    ]
    assert records["Q8"].other_formulae == [] and records["Q8"].notes == []


def test_a_concept_stated_twice_with_one_symbol_is_listed_once_and_counted(
    tmp_path: Path,
) -> None:
    """Two statements of Q8 with `x` (one per formula) are one entry; `X` is another symbol, and
    two symbols that did not convert may differ: those stay."""
    item = _entity(
        "Q7",
        "two formulae",
        None,
        {
            "P2534": [_formula("y = x"), _formula("y = X")],
            "P527": [_part("Q8", "x", "X"), _part("Q8", "x"), _part("Q9", "a^", "b^")],
            "P4934": [_part("Q8", "x", prop="P4934")],
        },
    )
    lines = [_line(item), _line(_entity("Q8", "ex", None)), _line(_entity("Q9", "nine", None))]
    (record,) = dump_records(_write(tmp_path / "d.json", lines), now=lambda: NOW)

    assert [(c.qid, c.symbol_mathml) for c in record.concepts] == [
        ("Q8", convert("X")),
        ("Q8", convert("x")),
        ("Q9", None),
        ("Q9", None),
    ]
    assert record.repeated_concepts == 2
