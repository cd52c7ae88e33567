"""The embedded snapshot source: shipped in the package, aligned descriptions, published folds."""

from collections import Counter

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


def test_paper_folds_cover_the_snapshot() -> None:
    folds = paper_folds()
    assert len(folds) == 1758 and set(folds.values()) == {1, 2, 3, 4, 5}


def test_table_roundtrips_through_arrow() -> None:
    table = records_to_table(list(snapshot_records())[:5])
    assert isinstance(table, pa.Table) and table.num_rows == 5
    concepts = table.column("concepts").to_pylist()[0]
    assert set(concepts[0]) == {"qid", "label", "description", "symbol_mathml"}
