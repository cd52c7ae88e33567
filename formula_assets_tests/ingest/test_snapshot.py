"""The embedded snapshot source: shipped in the package, aligned descriptions, published folds."""

import gzip
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa

from formula_assets.ingest.records import FORMULA_SCHEMA, records_to_table
from formula_assets.ingest.snapshot import (
    AMBIGUOUS,
    align_descriptions,
    paper_folds,
    read_snapshot_items,
    snapshot_path,
    snapshot_records,
)


def test_snapshot_ships_inside_the_package() -> None:
    path = snapshot_path()
    assert path.is_file()
    assert "formula_assets" in path.parts and "shared" not in path.parts


def test_snapshot_records_shape() -> None:
    records = list(snapshot_records())
    assert len(records) == 1758
    assert len({r.qid for r in records}) == 1758
    assert Counter(r.paper_fold for r in records) == {1: 352, 2: 352, 3: 352, 4: 351, 5: 351}
    assert all(
        r.source == "snapshot" and r.mathml and r.mathml.startswith("<math") for r in records
    )
    table = records_to_table(records)
    assert table.schema == FORMULA_SCHEMA
    assert table.column("qid").to_pylist() == sorted(
        table.column("qid").to_pylist(), key=lambda q: int(q[1:])
    )


def test_descriptions_are_aligned_not_zipped() -> None:
    blake = next(r for r in snapshot_records() if r.qid == "Q3343009")
    by_label = {c.label: c.description for c in blake.concepts}
    # The raw list has 4 descriptions for 6 concepts: zipping would misplace the last ones.
    assert by_label == {
        "porosity": "ratio of void volume and total volume of a porous material",
        "characteristic length": "dimension that defines the scale of a physical system",
        "Blake number": (
            "nondimensional number showing the ratio of inertial force to viscous force"
        ),
        "dynamic viscosity": "physical property of a moving fluid",
        "fluid mass density": None,
        "fluid speed": None,
    }
    assert blake.unassigned_descriptions == []


def test_every_description_is_kept_somewhere() -> None:
    raw = {i["item"].rsplit("/", 1)[1]: i for i in read_snapshot_items()}
    for record in snapshot_records():
        kept = {c.description for c in record.concepts if c.description}
        kept |= set(record.unassigned_descriptions)
        assert set(raw[record.qid]["conceptDescriptions"]) <= kept | {record.description}
        assert not record.unassigned_descriptions or any(
            "not determined" in n for n in record.notes
        )


def test_alignment_from_other_rows_and_ambiguity() -> None:
    rows = [
        # Row 1 fixes A's description; row 2 then has exactly one place for "b-desc".
        ("Q10", None, ["Q1", "Q2"], ["a-desc", "b2"]),
        ("Q11", None, ["Q1", "Q3", "Q4"], ["a-desc", "c-or-d"]),
        ("Q12", None, ["Q5", "Q6"], ["only one"]),  # ambiguous: Q5 or Q6
        ("Q3", "c-desc", [], []),  # the item Q3's own description is known
    ]
    results = align_descriptions(rows)
    assert results[0] == ({"Q1": "a-desc", "Q2": "b2"}, [])
    mapping, unassigned = results[1]
    # The row contradicts Q3's own description: nothing in it is guessed.
    assert mapping == {"Q1": "a-desc", "Q3": "c-desc", "Q4": AMBIGUOUS}
    assert unassigned == ["c-or-d"]
    mapping, unassigned = results[2]
    assert mapping == {"Q5": AMBIGUOUS, "Q6": AMBIGUOUS}
    assert unassigned == ["only one"]


def test_repeated_concepts_share_one_description() -> None:
    determined, symmetric = align_descriptions(
        [
            ("Q8", None, ["Q1", "Q2", "Q1"], ["x", "x"]),  # only Q1 occurs twice
            ("Q9", None, ["Q3", "Q4", "Q3", "Q4"], ["y", "y"]),  # Q3 or Q4: undecidable
        ]
    )
    assert determined == ({"Q1": "x", "Q2": None}, [])
    assert symmetric == ({"Q3": AMBIGUOUS, "Q4": AMBIGUOUS}, ["y"])


def test_a_concept_the_snapshot_repeats_per_formula_is_kept_once() -> None:
    """The snapshot keeps one formula of an item but the concept statements of all: 109 items
    list concepts again with the same symbol (571 entries); each is kept once, and counted."""
    records = list(snapshot_records())
    raw = {i["item"].rsplit("/", 1)[1]: i for i in read_snapshot_items()}
    sign = next(r for r in records if r.qid == "Q105356164")  # complex sign function

    assert len(raw["Q105356164"]["concepts"]) == 14
    assert (len(sign.concepts), sign.repeated_concepts) == (7, 7)
    assert sum(r.repeated_concepts > 0 for r in records) == 109
    assert sum(r.repeated_concepts for r in records) == 571
    for record in records:
        pairs = [(c.qid, c.symbol_mathml) for c in record.concepts if c.symbol_mathml]
        assert len(pairs) == len(set(pairs)), record.qid
    assert all(r.other_formulae == [] for r in records)


def test_paper_folds_cover_the_snapshot() -> None:
    folds = paper_folds()
    assert len(folds) == 1758 and set(folds.values()) == {1, 2, 3, 4, 5}


def test_table_roundtrips_through_arrow() -> None:
    table = records_to_table(list(snapshot_records())[:5])
    assert isinstance(table, pa.Table) and table.num_rows == 5
    concepts = table.column("concepts").to_pylist()[0]
    assert set(concepts[0]) == {"qid", "label", "description", "symbol_mathml"}


def test_facts_found_by_hypotheses_propagate_until_nothing_changes() -> None:
    first, second, third = align_descriptions(
        [
            # Q1 or Q2 holds "p": undecided until the next row is read.
            ("Q20", None, ["Q1", "Q2"], ["p"]),
            # Only the twice-listed Q1 can take both "p": Q1 = "p", Q3 has none.
            ("Q21", None, ["Q1", "Q3", "Q1"], ["p", "p"]),
            # Q2 or Q4 holds "q": decided once the first row, revisited, says Q2 has none.
            ("Q22", None, ["Q2", "Q4"], ["q"]),
        ]
    )
    assert first == ({"Q1": "p", "Q2": None}, [])
    assert second == ({"Q1": "p", "Q3": None}, [])
    assert third == ({"Q2": None, "Q4": "q"}, [])


def test_a_concept_the_snapshot_describes_two_ways_is_known_nowhere() -> None:
    silent, populated, needs_global = align_descriptions(
        [
            ("Q10", None, ["Q1"], []),  # Q1 has no description here ...
            ("Q11", None, ["Q1", "Q2"], ["a", "b"]),  # ... and "a" here
            ("Q12", None, ["Q1", "Q3"], ["c"]),  # would need Q1's one true value
        ]
    )
    # Each row keeps what it says itself; neither value is carried to another row.
    assert silent == ({"Q1": None}, [])
    assert populated == ({"Q1": "a", "Q2": "b"}, [])
    assert needs_global == ({"Q1": AMBIGUOUS, "Q3": AMBIGUOUS}, ["c"])


def test_a_shared_description_left_undetermined_stays_a_candidate() -> None:
    _, (mapping, unassigned) = align_descriptions(
        [
            ("Q40", None, ["Q1"], ["x"]),
            # Q1 takes one "x"; the second "x" belongs to Q2 or Q3.
            ("Q41", None, ["Q1", "Q2", "Q3"], ["x", "x"]),
        ]
    )
    assert mapping == {"Q1": "x", "Q2": AMBIGUOUS, "Q3": AMBIGUOUS}
    assert unassigned == ["x"]


def _limit_row(unknowns: int) -> tuple[str, None, list[str], list[str]]:
    """Q1 listed twice among `unknowns` concepts (2**unknowns hypotheses), one description short.

    Only hypotheses in which Q1 has a description reach the count, so Q1's is determined;
    which other concept lacks one is not.
    """
    others = [f"Q{i}" for i in range(2, unknowns + 1)]
    descriptions = ["d1", "d1"] + [f"d{i}" for i in range(2, unknowns)]
    return ("Q100", None, ["Q1", "Q1", *others], descriptions)


def test_hypotheses_are_enumerated_up_to_the_limit_and_not_beyond() -> None:
    (at_limit, unassigned_at), (beyond, unassigned_beyond) = (
        align_descriptions([_limit_row(16)])[0],
        align_descriptions([_limit_row(17)])[0],
    )
    assert at_limit["Q1"] == "d1"
    assert [q for q, v in at_limit.items() if v is AMBIGUOUS] == [f"Q{i}" for i in range(2, 17)]
    assert unassigned_at == [f"d{i}" for i in range(2, 16)]
    # One more unknown concept: 2**17 hypotheses are not tried, nothing in the row is guessed.
    assert all(v is AMBIGUOUS for v in beyond.values()) and len(beyond) == 17
    assert unassigned_beyond == ["d1"] + [f"d{i}" for i in range(2, 17)]


_ENTITY = "http://www.wikidata.org/entity/"
_BLANK = "http://www.wikidata.org/.well-known/genid/"


def _write_snapshot(path: Path, items: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps({"formula": "<math><mi>x</mi></math>", **item}) + "\n")
    return path


def _item(qid: str, concepts: list[str], **fields: object) -> dict:
    uris = [c if c.startswith("http") else _ENTITY + c for c in concepts]
    return {"item": _ENTITY + qid, "itemLabel": f"formula {qid}", "concepts": uris, **fields}


def test_snapshot_records_attribute_symbols_labels_and_notes(tmp_path: Path) -> None:
    path = _write_snapshot(
        tmp_path / "snapshot.jsonl.gz",
        [
            _item(
                "Q1000",
                ["Q1", "Q2"],
                itemDescription=" a clean row ",
                conceptLabels=["one", "two"],
                symbols=["<math>s1</math>", "<math>s2</math>"],
                conceptDescriptions=["first", "second"],
                paper_fold=3,
            ),
            _item(
                "Q1001",
                ["Q3", f"{_BLANK}abc", "Q4", f"{_BLANK}def"],
                conceptLabels=["three", f"{_BLANK}abc", "four", f"{_BLANK}def"],
                symbols=["<math>s3</math>", "<math>b</math>", "<math>s4</math>", "<math>c</math>"],
                conceptDescriptions=["third", "fourth"],
            ),
            _item("Q1002", ["Q5", "Q6"], conceptLabels=["five"], symbols=["<math>s5</math>"]),
            _item(
                "Q1003",
                ["Q100", "Q12"],
                conceptLabels=["hundred", "twelve"],
                symbols=["<math>h</math>", "<math>t</math>"],
                conceptDescriptions=["one of them"],
            ),
        ],
    )
    clean, blank, mismatched, ambiguous = snapshot_records(path)

    assert (clean.qid, clean.description, clean.paper_fold) == ("Q1000", "a clean row", 3)
    assert [(c.qid, c.label, c.description, c.symbol_mathml) for c in clean.concepts] == [
        ("Q1", "one", "first", "<math>s1</math>"),
        ("Q2", "two", "second", "<math>s2</math>"),
    ]
    assert clean.notes == [] and clean.unassigned_descriptions == []

    # An unknown-value statement has no description, so the two QIDs take both of them.
    assert [(c.qid, c.label, c.description, c.symbol_mathml) for c in blank.concepts] == [
        ("Q3", "three", "third", "<math>s3</math>"),
        ("Q4", "four", "fourth", "<math>s4</math>"),
    ]
    assert blank.notes == ["2 statement(s) with an unknown-value concept skipped"]
    assert blank.paper_fold is None

    # Lists of another length than the concepts cannot be attributed: none is guessed.
    assert [(c.qid, c.label, c.symbol_mathml) for c in mismatched.concepts] == [
        ("Q5", None, None),
        ("Q6", None, None),
    ]
    assert mismatched.notes == [
        "1 concept labels for 2 concepts: not attributed",
        "1 symbols for 2 concepts: not attributed",
    ]

    assert [c.description for c in ambiguous.concepts] == [None, None]
    assert ambiguous.unassigned_descriptions == ["one of them"]
    # Listed by number, not as text (Q100 after Q12) nor as the row lists them.
    assert ambiguous.notes == [
        "descriptions of Q12, Q100 not determined by the snapshot; "
        "their candidates are in unassigned_descriptions"
    ]
