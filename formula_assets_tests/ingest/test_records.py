"""The row shape every source produces: item ids, text cleaning, surrogate repair, order."""

import io
from datetime import UTC, datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest

from formula_assets.ingest.records import (
    FORMULA_SCHEMA,
    VOLATILE_COLUMNS,
    Concept,
    FormulaRecord,
    clean_text,
    qid_from_uri,
    records_to_table,
    utc,
    valid_text,
    with_distinct_concepts,
)


@pytest.mark.parametrize(
    "value",
    ["Q42", " Q42\n", "http://www.wikidata.org/entity/Q42", "https://www.wikidata.org/entity/Q42"],
)
def test_an_item_id_or_entity_uri_gives_the_qid(value: str) -> None:
    assert qid_from_uri(value) == "Q42"


@pytest.mark.parametrize(
    "value",
    [
        "Q0",
        "Q042",
        "P31",
        "Q1234567890123",  # 13 digits: longer than any item id
        "http://www.wikidata.org/entity/Q42x",
        "http://www.wikidata.org/entity/P31",
        "http://example.org/entity/Q42",
        "",
    ],
)
def test_anything_else_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="not a Wikidata item"):
        qid_from_uri(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(" mass ", "mass"), ("mass", "mass"), ("   ", None), ("", None), (None, None), (3, None)],
)
def test_clean_text(value: object, expected: str | None) -> None:
    assert clean_text(value) == expected


def test_utc_converts_aware_times_and_refuses_naive_ones() -> None:
    moment = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    converted = utc(moment)
    assert converted == moment and converted.tzinfo == UTC and converted.hour == 10
    with pytest.raises(ValueError, match="timezone-aware"):
        utc(datetime(2026, 1, 1, 12, 0))


def test_lone_surrogates_become_replacement_characters() -> None:
    assert valid_text(None) is None
    assert valid_text("énergie E = mc²") == "énergie E = mc²"
    assert valid_text("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert valid_text("é\udc80") == "é\ufffd"


def _record(qid: str, **fields) -> FormulaRecord:
    return FormulaRecord(qid=qid, label=None, description=None, mathml=None, **fields)


def test_rows_are_sorted_by_numeric_qid_with_every_field_kept() -> None:
    when = datetime(2026, 3, 4, 5, 6, tzinfo=UTC)
    concept = Concept("Q11", "mass", "quantity of matter", "<mi>m</mi>")
    records = [
        _record(
            "Q10",
            concepts=[concept],
            tex="m",
            enwiki="Mass",
            paper_fold=3,
            retrieved_at=when,
            unassigned_descriptions=["loose"],
            notes=["a note"],
            source="sparql",
            other_formulae=["<math><mi>n</mi></math>"],
            repeated_concepts=2,
        ),
        _record("Q9"),
        _record("Q100"),
    ]
    table = records_to_table(records)
    assert table.schema == FORMULA_SCHEMA
    rows = table.to_pylist()
    assert [r["qid"] for r in rows] == ["Q9", "Q10", "Q100"]  # not "Q10" < "Q100" < "Q9"
    ten = rows[1]
    assert ten["concepts"] == [
        {
            "qid": "Q11",
            "label": "mass",
            "description": "quantity of matter",
            "symbol_mathml": "<mi>m</mi>",
        }
    ]
    assert [ten[k] for k in ("tex", "enwiki", "paper_fold", "source")] == ["m", "Mass", 3, "sparql"]
    assert ten["retrieved_at"] == when
    assert ten["other_formulae"] == ["<math><mi>n</mi></math>"] and ten["repeated_concepts"] == 2
    assert rows[0]["other_formulae"] == [] and rows[0]["repeated_concepts"] == 0
    assert ten["unassigned_descriptions"] == ["loose"] and ten["notes"] == ["a note"]
    assert rows[0]["concepts"] == [] and rows[0]["source"] == "snapshot"
    assert rows[0]["notes"] == [] and rows[0]["retrieved_at"] is None


def test_the_notes_are_copied_not_shared() -> None:
    record = _record("Q1", notes=["first"])
    table = records_to_table([record])
    record.notes.append("later")
    assert table.column("notes").to_pylist() == [["first"]]


def test_undecodable_text_in_any_field_still_writes_parquet() -> None:
    bad = "x\ud83d"
    record = FormulaRecord(
        qid="Q5",
        label=bad,
        description=bad,
        mathml=bad,
        tex=bad,
        concepts=[Concept("Q6", bad, bad, bad)],
        unassigned_descriptions=[bad],
    )
    table = records_to_table([record])
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    [row] = pq.read_table(io.BytesIO(buffer.getvalue())).to_pylist()
    fixed = "x\ufffd"
    assert row["label"] == row["description"] == row["mathml"] == row["tex"] == fixed
    assert row["concepts"][0] == {"qid": "Q6", "label": fixed, "description": fixed,
                                  "symbol_mathml": fixed}  # fmt: skip
    assert row["unassigned_descriptions"] == [fixed]


def test_only_the_pull_time_is_volatile() -> None:
    assert VOLATILE_COLUMNS == ("retrieved_at",)
    assert set(VOLATILE_COLUMNS) <= set(FORMULA_SCHEMA.names)


def test_a_concept_repeated_with_its_symbol_is_kept_once_and_counted() -> None:
    """The first of each (qid, symbol) stays, in order; another symbol of the same concept and a
    concept whose symbol is unknown are no repeats."""
    m, v = "<mi>m</mi>", "<mi>v</mi>"
    mass, speed = Concept("Q11", "mass", None, m), Concept("Q12", "speed", None, v)
    record = _record(
        "Q1",
        concepts=[
            mass,
            speed,
            mass,
            Concept("Q11", "mass", None, v),
            speed,
            mass,
            Concept("Q13", "time", None, None),
            Concept("Q13", "time", None, None),
        ],
        repeated_concepts=1,
    )

    distinct = with_distinct_concepts(record)

    assert distinct.concepts == [
        mass,
        speed,
        Concept("Q11", "mass", None, v),
        Concept("Q13", "time", None, None),
        Concept("Q13", "time", None, None),
    ]
    assert distinct.repeated_concepts == 1 + 3  # a count given by the reader is kept
    assert len(record.concepts) == 8  # the record read is left as it was
    assert with_distinct_concepts(distinct) == distinct
