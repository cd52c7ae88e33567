"""Remote faults at the Dagster level: a failing or implausible pull never replaces good data.

A local SPARQL endpoint first serves a good pull; then each fault is injected and the
materialization must fail with a clear message while the stored `wikidata_formulae` file and
its last materialization stay exactly as they were. Shrunken pulls are refused unless forced.
"""

import dataclasses
import hashlib
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.defs.ingest.wikidata_formulae import wikidata_formulae
from formula_assets.defs.ingest.wikidata_probe import wikidata_probe
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets_tests.support.sparql_server import (
    FakeWdqs,
    is_detail_query,
    is_list_query,
    is_probe_query,
)


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def resources(lake: Path, endpoint: str) -> dict:
    return {
        "io_manager": DataLakeIOManager(base_path=str(lake)),
        "wikidata": WikidataResource(
            source="sparql", sparql_endpoint=endpoint, max_retries=1, timeout_s=1.0
        ),
    }


def pull(lake: Path, endpoint: str, instance, **config) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [wikidata_formulae],
        instance=instance,
        resources=resources(lake, endpoint),
        run_config=dg.RunConfig({"wikidata_formulae": {"config": config}}) if config else None,
        raise_on_error=False,
    )


def fingerprint(lake: Path, instance) -> tuple[str, int]:
    data = (lake / "wikidata_formulae.parquet").read_bytes()
    records = instance.fetch_materializations(dg.AssetKey("wikidata_formulae"), limit=1).records
    return hashlib.sha256(data).hexdigest(), records[0].storage_id


def error_text(result: dg.ExecuteInProcessResult) -> str:
    error = result.get_step_failure_events()[0].step_failure_data.error
    texts = []
    while error is not None:
        texts.append(error.message)
        error = error.cause
    return "\n".join(texts)


FAULTS = {
    "500 for ever": (lambda s: s.fail(500, times=99), "failed after 2 attempt(s)"),
    "a hang": (lambda s: s.hang(5, times=99), "timeout"),
    "truncated JSON": (lambda s: s.truncate(times=99), "truncated or invalid JSON"),
    "valid JSON missing expected variables": (
        lambda s: s.without_variables("item", times=99),
        "without the required variable",
    ),
    "an empty result": (lambda s: s.empty(times=99), "refusing"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_failed_pull_keeps_the_last_good_data(
    fault: str, tmp_path: Path, sparql_server: FakeWdqs, instance
) -> None:
    lake = tmp_path / "lake"
    assert pull(lake, sparql_server.endpoint, instance).success
    before = fingerprint(lake, instance)
    inject, message = FAULTS[fault]
    inject(sparql_server)
    result = pull(lake, sparql_server.endpoint, instance)
    assert not result.success
    assert message in error_text(result)
    assert fingerprint(lake, instance) == before
    assert not [p for p in lake.iterdir() if p.name.startswith(".")]  # no temp files left


def test_429_with_retry_after_is_retried(tmp_path: Path, sparql_server: FakeWdqs, instance) -> None:
    sparql_server.fail(429, headers={"Retry-After": "1"}, times=1, when=is_list_query)
    assert pull(tmp_path / "lake", sparql_server.endpoint, instance).success
    assert len(sparql_server.list_requests()) == 2


def shrink(server: FakeWdqs, keep: int) -> None:
    formulae = [q for q, e in server.world.items() if e.formulae]
    for qid in formulae[keep:]:
        server.world[qid] = dataclasses.replace(server.world[qid], formulae=())


def test_drastically_smaller_pull_is_refused_unless_forced(
    tmp_path: Path, sparql_server: FakeWdqs, instance
) -> None:
    lake = tmp_path / "lake"
    assert pull(lake, sparql_server.endpoint, instance).success
    before = fingerprint(lake, instance)
    shrink(sparql_server, keep=1)  # 5 items → 1: below half of the last good pull
    refused = pull(lake, sparql_server.endpoint, instance)
    assert not refused.success
    assert "refusing" in error_text(refused) and "force" in error_text(refused)
    assert fingerprint(lake, instance) == before
    forced = pull(lake, sparql_server.endpoint, instance, force=True)
    assert forced.success
    assert fingerprint(lake, instance) != before


def test_probe_faults_keep_the_last_fingerprint(
    tmp_path: Path, sparql_server: FakeWdqs, instance
) -> None:
    defs = dg.Definitions(
        assets=[wikidata_probe],
        jobs=[dg.define_asset_job("observe", selection=[wikidata_probe.key])],
        resources=resources(tmp_path / "lake", sparql_server.endpoint),
    )
    job = defs.resolve_job_def("observe")

    def last() -> str:
        records = instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=1).records
        return records[0].asset_observation.data_version

    assert job.execute_in_process(instance=instance).success
    good = last()
    sparql_server.fail(500, times=99, when=is_probe_query)
    assert not job.execute_in_process(instance=instance, raise_on_error=False).success
    assert last() == good
    sparql_server._faults.clear()
    shrink(sparql_server, keep=0)
    refused = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not refused.success and last() == good
    assert not any(is_detail_query(r.query) for r in sparql_server.requests)
