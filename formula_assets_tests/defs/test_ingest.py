"""`wikidata_formulae`: each source through Dagster, its data version, and its checks."""

import gzip
import json
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from formula_assets.defs.ingest.wikidata_formulae import (
    wikidata_formulae,
    wikidata_formulae_has_concepts,
    wikidata_formulae_mathml_present,
    wikidata_formulae_row_count,
    wikidata_formulae_unique_qid,
)
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.ingest.dump import DumpError
from formula_assets.ingest.records import Concept, FormulaRecord, records_to_table
from formula_assets_tests.support.sparql_server import FakeWdqs, default_world


def materialize(lake: Path, source: str, **resource: object) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [wikidata_formulae],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(lake)),
            "wikidata": WikidataResource(**resource),
        },
        run_config=dg.RunConfig({"wikidata_formulae": {"config": {"source": source}}}),
    )


def stored(lake: Path) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(lake / "wikidata_formulae.parquet")


def data_version(result: dg.ExecuteInProcessResult) -> str:
    materialization = result.asset_materializations_for_node("wikidata_formulae")[0]
    return materialization.tags["dagster/data_version"]


def test_snapshot_source_and_stable_data_version(tmp_path: Path) -> None:
    first = materialize(tmp_path, "snapshot")
    table = stored(tmp_path)
    assert table.num_rows == 1758
    assert set(table.column("source").to_pylist()) == {"snapshot"}
    assert table.column("paper_fold").null_count == 0
    again = materialize(tmp_path, "snapshot")
    assert data_version(first) == data_version(again)


def test_sparql_source_against_a_local_endpoint(tmp_path: Path, sparql_server: FakeWdqs) -> None:
    result = materialize(
        tmp_path, "sparql", sparql_endpoint=sparql_server.endpoint, user_agent="tests/1.0"
    )
    table = stored(tmp_path)
    formula_items = sorted(
        (e.qid for e in default_world().values() if e.formulae), key=lambda q: int(q[1:])
    )
    assert table.column("qid").to_pylist() == formula_items
    assert set(table.column("source").to_pylist()) == {"sparql"}
    assert all(r.user_agent == "tests/1.0" for r in sparql_server.requests)
    first_version = data_version(result)
    # retrieved_at changes on every pull; the data version must not.
    assert data_version(
        materialize(tmp_path, "sparql", sparql_endpoint=sparql_server.endpoint)
    ) == (first_version)


def test_source_from_environment(
    tmp_path: Path, sparql_server: FakeWdqs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_SOURCE", "sparql")
    monkeypatch.setenv("FORMULA_ASSETS_SPARQL_ENDPOINT", sparql_server.endpoint)
    result = dg.materialize(
        [wikidata_formulae],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(tmp_path)),
            "wikidata": WikidataResource(),
        },
    )
    assert result.success
    assert set(stored(tmp_path).column("source").to_pylist()) == {"sparql"}
    assert sparql_server.requests


def test_dump_source(tmp_path: Path) -> None:
    dump = tmp_path / "latest-all.json.gz"
    entities = [
        {
            "type": "item",
            "id": "Q11518",
            "labels": {"en": {"language": "en", "value": "Pythagorean theorem"}},
            "descriptions": {"en": {"language": "en", "value": "relation in geometry"}},
            "claims": {
                "P2534": [
                    {
                        "mainsnak": {
                            "snaktype": "value",
                            "property": "P2534",
                            "datavalue": {"value": "a^2 + b^2 = c^2", "type": "string"},
                            "datatype": "math",
                        },
                        "type": "statement",
                        "rank": "normal",
                    }
                ]
            },
            "sitelinks": {},
        }
    ]
    with gzip.open(dump, "wt", encoding="utf-8") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(e) for e in entities) + "\n]\n")
    assert materialize(tmp_path / "lake", "dump", dump_path=str(dump)).success
    row = stored(tmp_path / "lake").to_pylist()[0]
    assert (row["qid"], row["tex"], row["source"]) == ("Q11518", "a^2 + b^2 = c^2", "dump")
    assert row["mathml"].startswith("<math")


def _formula_item(qid: str, tex: str) -> dict:
    snak = {"snaktype": "value", "property": "P2534", "datavalue": {"value": tex}}
    statement = {"mainsnak": snak, "type": "statement", "rank": "normal"}
    return {"type": "item", "id": qid, "labels": {}, "claims": {"P2534": [statement]}}


def test_a_truncated_dump_fails_unless_accepted_then_the_data_says_so(tmp_path: Path) -> None:
    dump = tmp_path / "latest-all.json"
    lines = [json.dumps(_formula_item(f"Q{n}", f"x_{n} = {n}")) for n in range(1, 4)]
    whole = "[\n" + ",\n".join(lines) + "\n]\n"
    dump.write_text(whole[: whole.rindex('"claims"')])  # cut inside the last item's line
    lake = tmp_path / "lake"

    with pytest.raises(DumpError, match=r"truncated dump: .* set accept_partial_dump"):
        materialize(lake, "dump", dump_path=str(dump))
    assert not (lake / "wikidata_formulae.parquet").exists()

    accepted = materialize(lake, "dump", dump_path=str(dump), accept_partial_dump=True)
    assert accepted.success
    assert stored(lake).column("qid").to_pylist() == ["Q1", "Q2"]
    metadata = accepted.asset_materializations_for_node("wikidata_formulae")[0].metadata
    (note,) = metadata["source_notes"].value
    assert note.startswith("partial dump accepted: it opens with '[' but ends at line 4")


def test_unknown_source_is_a_clear_error(tmp_path: Path) -> None:
    result = dg.materialize(
        [wikidata_formulae],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(tmp_path)),
            "wikidata": WikidataResource(),
        },
        run_config=dg.RunConfig({"wikidata_formulae": {"config": {"source": "nope"}}}),
        raise_on_error=False,
    )
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error
    assert "unknown formula source 'nope'" in str(error)
    assert not (tmp_path / "wikidata_formulae.parquet").exists()


# --- checks -----------------------------------------------------------------------------------


def table(*records: FormulaRecord) -> pa.Table:
    return records_to_table(records)


def record(qid: str, mathml: str | None = "<math><mi>x</mi></math>", concepts: int = 1):
    return FormulaRecord(
        qid=qid,
        label=qid,
        description=None,
        mathml=mathml,
        concepts=[Concept(f"Q{900 + i}", "c") for i in range(concepts)],
    )


def test_unique_qid_check() -> None:
    assert wikidata_formulae_unique_qid(table(record("Q1"), record("Q2"))).passed
    result = wikidata_formulae_unique_qid(table(record("Q1"), record("Q1")))
    assert not result.passed
    assert result.metadata["duplicates"].value == 1


def test_mathml_present_check() -> None:
    assert wikidata_formulae_mathml_present(table(record("Q1"))).passed
    bad = wikidata_formulae_mathml_present(
        table(record("Q1"), record("Q2", None), record("Q3", " "))
    )
    assert not bad.passed
    assert bad.metadata["missing"].value == 2


def test_has_concepts_check_warns() -> None:
    assert wikidata_formulae_has_concepts(table(record("Q1"))).passed
    result = wikidata_formulae_has_concepts(table(record("Q1"), record("Q2", concepts=0)))
    assert not result.passed
    assert result.severity == dg.AssetCheckSeverity.WARN


def test_row_count_floor_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_MIN_FORMULAE", "2")
    assert wikidata_formulae_row_count(table(record("Q1"), record("Q2"))).passed
    result = wikidata_formulae_row_count(table(record("Q1")))
    assert not result.passed
    assert result.severity == dg.AssetCheckSeverity.ERROR


def test_blocking_checks() -> None:
    blocking = {spec.name: spec.blocking for spec in wikidata_formulae_row_count.check_specs}
    blocking |= {spec.name: spec.blocking for spec in wikidata_formulae_unique_qid.check_specs}
    assert blocking == {"wikidata_formulae_row_count": True, "wikidata_formulae_unique_qid": True}
