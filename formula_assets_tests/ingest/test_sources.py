"""One entry point over the three sources, and the stable sample of a pull."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from pathlib import Path

import pytest

from formula_assets.core.settings import DUMP_PATH_ENV, SOURCES
from formula_assets.ingest.dump import DumpError
from formula_assets.ingest.records import FormulaRecord
from formula_assets.ingest.snapshot import snapshot_records
from formula_assets.ingest.sources import (
    Pull,
    load_records,
    required_dump_path,
    required_sparql_config,
    sample_records,
)
from formula_assets.ingest.sparql import SparqlConfig, sparql_records
from formula_assets_tests.support.sparql_server import FakeWdqs

AGENT = "formula_assets-tests/1.0 (https://example.org; tests@example.org)"


def _record(qid: str) -> FormulaRecord:
    return FormulaRecord(qid=qid, label=None, description=None, mathml=None)


def _without_time(records: list[FormulaRecord]) -> list[FormulaRecord]:
    return [dataclasses.replace(r, retrieved_at=None) for r in records]


# --- a two-item dump in Wikidata's layout --------------------------------------------------------


def _formula_item(qid: str, label: str, tex: str) -> str:
    snak = {
        "snaktype": "value",
        "property": "P2534",
        "datavalue": {"value": tex, "type": "string"},
        "datatype": "math",
    }
    entity = {
        "type": "item",
        "id": qid,
        "labels": {"en": {"language": "en", "value": label}},
        "descriptions": [],
        "claims": {"P2534": [{"mainsnak": snak, "type": "statement", "rank": "normal"}]},
        "sitelinks": [],
    }
    return json.dumps(entity, separators=(",", ":"))


DUMP = (
    "[\n"
    + ",\n".join([_formula_item("Q7", "x law", "y = x"), _formula_item("Q9", "law", "a = b")])
    + "\n]\n"
)
# Cut inside the last item's claims: a copy that stopped part way.
CUT_DUMP = DUMP.rsplit('"claims"', 1)[0]


def _dump(tmp_path: Path, text: str) -> str:
    path = tmp_path / "latest-all.json"
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- which source a pull reads -------------------------------------------------------------------


def test_the_snapshot_source_reads_the_packaged_snapshot() -> None:
    pull = load_records("snapshot")
    assert isinstance(pull, Pull)
    assert pull.records == list(snapshot_records())
    assert pull.records and pull.notes == []


def test_the_sparql_source_reads_the_endpoint(sparql_server: FakeWdqs) -> None:
    config = SparqlConfig(endpoint=sparql_server.endpoint, user_agent=AGENT, timeout_s=5.0)
    lines: list[str] = []

    pull = load_records("sparql", sparql_config=config, log=lines.append)

    assert isinstance(pull, Pull)
    assert pull.records and {r.source for r in pull.records} == {"sparql"}
    assert _without_time(pull.records) == _without_time(sparql_records(config))
    assert pull.notes == []
    assert lines  # the pull's progress reaches the caller's log
    assert sparql_server.requests  # it went over HTTP


def test_the_dump_source_reads_the_file(tmp_path: Path) -> None:
    lines: list[str] = []
    pull = load_records("dump", dump_path=_dump(tmp_path, DUMP), log=lines.append)

    assert isinstance(pull, Pull)
    assert [(r.qid, r.label, r.tex, r.source) for r in pull.records] == [
        ("Q7", "x law", "y = x", "dump"),
        ("Q9", "law", "a = b", "dump"),
    ]
    assert pull.notes == []
    assert lines


def test_a_partial_dump_is_an_error_unless_accepted(tmp_path: Path) -> None:
    path = _dump(tmp_path, CUT_DUMP)
    with pytest.raises(DumpError, match="truncated dump"):
        load_records("dump", dump_path=path)

    pull = load_records("dump", dump_path=path, accept_partial_dump=True)
    assert [r.qid for r in pull.records] == ["Q7"]
    assert len(pull.notes) == 1 and pull.notes[0].startswith("partial dump accepted: ")


def test_an_unknown_source_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown formula source 'wdqs'") as raised:
        load_records("wdqs")
    assert all(name in str(raised.value) for name in SOURCES)


def test_a_pull_is_immutable() -> None:
    pull = Pull([_record("Q1")])
    with pytest.raises(dataclasses.FrozenInstanceError):
        pull.records = []  # type: ignore[misc]
    assert Pull([]).notes == [] and Pull([]).notes is not Pull([]).notes


# --- the configs each source needs ---------------------------------------------------------------


def test_the_sparql_source_needs_its_config() -> None:
    with pytest.raises(ValueError, match="needs its endpoint and User-Agent"):
        load_records("sparql")
    with pytest.raises(ValueError, match="SparqlConfig"):
        required_sparql_config(None)
    config = SparqlConfig(endpoint="http://127.0.0.1:9/sparql", user_agent=AGENT)
    assert required_sparql_config(config) is config


@pytest.mark.parametrize("path", [None, ""])
def test_the_dump_source_needs_a_path_and_names_its_settings(path: str | None) -> None:
    for call in (lambda: required_dump_path(path), lambda: load_records("dump", dump_path=path)):
        with pytest.raises(ValueError, match="needs a Wikidata JSON dump") as raised:
            call()
        assert DUMP_PATH_ENV in str(raised.value) and "dump_path" in str(raised.value)


def test_a_given_dump_path_is_used_as_given() -> None:
    assert required_dump_path("/data/latest-all.json.bz2") == "/data/latest-all.json.bz2"


# --- the deterministic sample --------------------------------------------------------------------


RECORDS = [_record(f"Q{n}") for n in range(1, 61)]


def _digest(qid: str) -> bytes:
    """Recomputed here: the sample's rank is the 8-byte blake2b of "sample:<QID>"."""
    return hashlib.blake2b(f"sample:{qid}".encode(), digest_size=8).digest()


@pytest.mark.parametrize("size", [0, 1, 7, 30, 59])
def test_the_sample_is_the_records_with_the_smallest_digests(size: int) -> None:
    expected = sorted((r.qid for r in RECORDS), key=_digest)[:size]
    sample = sample_records(RECORDS, size)
    assert len(sample) == size
    assert {r.qid for r in sample} == set(expected)


def test_the_sample_does_not_depend_on_input_order_and_nests() -> None:
    shuffled = list(RECORDS)
    random.Random(3).shuffle(shuffled)
    assert {r.qid for r in sample_records(shuffled, 10)} == {
        r.qid for r in sample_records(RECORDS, 10)
    }
    smaller = {r.qid for r in sample_records(RECORDS, 10)}
    assert smaller < {r.qid for r in sample_records(RECORDS, 11)}


@pytest.mark.parametrize("size", [None, len(RECORDS), len(RECORDS) + 1, 10**6])
def test_no_size_or_one_not_below_the_count_keeps_every_record_in_order(size: int | None) -> None:
    # The input is not in digest order, so a sorted result would show.
    assert [r.qid for r in RECORDS] != sorted((r.qid for r in RECORDS), key=_digest)
    kept = sample_records(tuple(RECORDS), size)
    assert isinstance(kept, list)
    assert kept == RECORDS


def test_sampling_an_empty_pull_gives_nothing() -> None:
    assert sample_records([], None) == []
    assert sample_records([], 5) == []
