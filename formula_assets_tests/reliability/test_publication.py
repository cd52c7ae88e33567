"""Blocking checks protect readers: a new version of a table reaches its documented path
(`data_lake/<asset>.parquet`, what search, the report, notebooks and later runs read) only
after its blocking checks passed. After a failed one the last good version stays published,
and the rejected one waits under `_staged/<asset>/<run id>.parquet` for inspection.

Real assets run through Dagster: `wikidata_formulae` (two blocking checks in their own steps,
failed on purpose with a row-count floor above the sample) and `opt_graphs` /
`rejected_formulae` (blocking checks inside the parse step, failed with formulae that do
not parse), on a local data lake and on a non-local filesystem, with all steps in one process
and with each step in its own (as `dg dev` runs them).
"""

import uuid
from pathlib import Path

import dagster as dg
import fsspec
import pandas as pd
import pyarrow as pa
import pytest
from upath import UPath

from formula_assets.core import lake as data_lake
from formula_assets.core.checks import Outcome
from formula_assets.core.hashing import table_content_hash
from formula_assets.defs.checks import check_result
from formula_assets.defs.ingest.wikidata_formulae import (
    wikidata_formulae,
    wikidata_formulae_mathml_present,
    wikidata_formulae_row_count,
    wikidata_formulae_unique_qid,
)
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.plan import stale_entries
from formula_assets.defs.publication import REJECTED_RUN_TAG, settle
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.defs.syntax.opt_graphs import parse_formulae
from formula_assets.ingest.records import VOLATILE_COLUMNS, FormulaRecord, records_to_table

INGEST = [
    wikidata_formulae,
    wikidata_formulae_unique_qid,
    wikidata_formulae_row_count,
    wikidata_formulae_mathml_present,
    parse_formulae,
]
GOOD = "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>"
BAD = "<math><mfrac><mi>a</mi>"  # not well-formed: rejected by the parser


class Snapshot:
    """`wikidata_formulae` from the packaged snapshot, on one instance and one data lake."""

    def __init__(self, lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lake = lake
        self.monkeypatch = monkeypatch
        self.instance = dg.DagsterInstance.ephemeral()
        self.resources = {
            "io_manager": DataLakeIOManager(base_path=str(lake)),
            "wikidata": WikidataResource(source="snapshot"),
        }

    def materialize(
        self, selection: object, sample: int | None = None, floor: int = 10, assets=INGEST
    ) -> dg.ExecuteInProcessResult:
        self.monkeypatch.setenv("FORMULA_ASSETS_MIN_FORMULAE", str(floor))
        config = {"wikidata_formulae": {"config": {"sample": sample}}} if sample else {}
        return dg.materialize(
            assets,
            resources=self.resources,
            instance=self.instance,
            selection=selection,  # type: ignore[arg-type]
            run_config=dg.RunConfig(config),
            raise_on_error=False,
        )

    def published(self, name: str = "wikidata_formulae") -> pd.DataFrame:
        return pd.read_parquet(self.lake / f"{name}.parquet")

    def staged(self, run: dg.ExecuteInProcessResult, name: str = "wikidata_formulae") -> Path:
        return self.lake / "_staged" / name / f"{run.run_id}.parquet"

    def staged_files(self) -> list[Path]:
        return sorted(p for p in (self.lake / "_staged").rglob("*") if p.is_file())

    def published_version(self) -> str:
        """The data version of the published `wikidata_formulae`, from the file itself."""
        table = data_lake.read_parquet(UPath(self.lake / "wikidata_formulae.parquet"))
        return table_content_hash(table, VOLATILE_COLUMNS)

    def latest_version(self, name: str = "wikidata_formulae") -> str | None:
        event = self.instance.get_latest_materialization_event(dg.AssetKey(name))
        return event.asset_materialization.tags.get("dagster/data_version") if event else None

    def status(self, name: str, assets=INGEST) -> str:
        """Dagster's own staleness of an asset, as `formula-assets stale` reports it."""
        defs = dg.Definitions(assets=assets, resources=self.resources)
        entries = stale_entries(defs, self.instance)
        found = {str(e.target): f"{e.status} {'; '.join(e.causes)}" for e in entries}
        return found.get(name, "FRESH")


def input_version(run: dg.ExecuteInProcessResult, child: str, parent: str) -> str:
    """The data version of `parent` that `child`'s materialization in `run` records as read."""
    [event] = [e for e in run.get_asset_materialization_events() if e.asset_key.path == [child]]
    return event.materialization.tags[f"dagster/input_data_version/{parent}"]


def checks_of(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_a_failed_blocking_check_keeps_the_last_good_version_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = Snapshot(tmp_path, monkeypatch)
    good = snapshot.materialize(["wikidata_formulae"], sample=30)
    assert good.success
    first = snapshot.published()
    assert len(first) == 30 and snapshot.staged_files() == []

    # 20 items against a floor of 25: the blocking row-count check fails; the parse is skipped.
    rejected = snapshot.materialize(["wikidata_formulae", "opt_graphs"], sample=20, floor=25)
    assert not rejected.success
    assert checks_of(rejected)["wikidata_formulae_row_count"] is False
    assert checks_of(rejected)["wikidata_formulae_unique_qid"] is True
    assert "opt_graphs" not in {
        e.asset_key.to_user_string() for e in rejected.get_asset_materialization_events()
    }
    assert snapshot.published().equals(first)  # readers still get the last good version
    staged = snapshot.staged(rejected)
    assert staged.exists() and len(pd.read_parquet(staged)) == 20  # kept for inspection

    # The next run of a child reads the published version, not the rejected one.
    child = snapshot.materialize(["opt_graphs"])
    assert child.success
    assert set(snapshot.published("opt_graphs")["qid"]) == set(first["qid"])
    assert staged.exists()

    # Passing checks publish the new version, and the rejected one of the finished run goes.
    passing = snapshot.materialize(["wikidata_formulae"], sample=25)
    assert passing.success and all(checks_of(passing).values())
    assert len(snapshot.published()) == 25
    assert snapshot.staged_files() == []


def test_a_check_run_on_its_own_publishes_the_version_it_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check judges the asset's latest materialization; after a rule (here the floor) is
    corrected, running the failed check alone publishes that materialization."""
    snapshot = Snapshot(tmp_path, monkeypatch)
    assert snapshot.materialize(["wikidata_formulae"], sample=30).success
    rejected = snapshot.materialize(["wikidata_formulae"], sample=20, floor=25)
    assert not rejected.success and len(snapshot.published()) == 30

    rechecked = snapshot.materialize(dg.AssetSelection.checks(wikidata_formulae_row_count))
    assert rechecked.success and checks_of(rechecked) == {"wikidata_formulae_row_count": True}
    assert len(snapshot.published()) == 20
    assert not snapshot.staged(rejected).exists()


def test_after_a_failed_check_lineage_names_the_published_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The asset's latest materialization describes the table readers get: a child built
    after a rejection records the data version of the table it read, and so does one built
    after the failed check, run again on its own, published the staged version."""
    snapshot = Snapshot(tmp_path, monkeypatch)
    good = snapshot.materialize(["wikidata_formulae"], sample=30)
    assert good.success
    rejected = snapshot.materialize(["wikidata_formulae"], sample=20, floor=25)
    assert not rejected.success
    [rejected_version] = {
        e.materialization.tags["dagster/data_version"]
        for e in rejected.get_asset_materialization_events()
    }
    good_version = snapshot.published_version()
    assert rejected_version != good_version
    assert snapshot.latest_version() == good_version
    event = snapshot.instance.get_latest_materialization_event(wikidata_formulae.key)
    latest = event.asset_materialization if event else dg.AssetMaterialization("none")
    assert (latest.tags or {}).get(REJECTED_RUN_TAG) == rejected.run_id
    assert f"run {good.run_id}'s version, recorded again" in (latest.description or "")
    # The failed evaluation stays on the materialization it judged, the rejected one.
    [failed] = [e for e in rejected.get_asset_check_evaluations() if not e.passed]
    assert failed.target_materialization_data.run_id == rejected.run_id

    child = snapshot.materialize(["opt_graphs"])
    assert child.success
    assert input_version(child, "opt_graphs", "wikidata_formulae") == good_version
    assert snapshot.status("wikidata_formulae") == snapshot.status("opt_graphs") == "FRESH"

    rechecked = snapshot.materialize(dg.AssetSelection.checks(wikidata_formulae_row_count))
    assert rechecked.success and len(snapshot.published()) == 20
    assert snapshot.latest_version() == snapshot.published_version() == rejected_version
    assert snapshot.status("wikidata_formulae") == "FRESH"
    assert snapshot.status("opt_graphs") == (
        "STALE has a new dependency data version (wikidata_formulae)"
    )
    child = snapshot.materialize(["opt_graphs"])
    assert input_version(child, "opt_graphs", "wikidata_formulae") == rejected_version
    assert snapshot.status("opt_graphs") == "FRESH"


def test_a_rejected_code_version_leaves_the_asset_unsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rejected build ran new code; the published table was made by the old one, so the
    asset must still show the code change until a build of the new code is published."""
    snapshot = Snapshot(tmp_path, monkeypatch)
    assert snapshot.materialize(["wikidata_formulae"], sample=30).success
    changed = [
        wikidata_formulae.map_asset_specs(lambda spec: spec.replace_attributes(code_version="new")),
        *INGEST[1:],
    ]
    rejected = snapshot.materialize(["wikidata_formulae"], sample=20, floor=25, assets=changed)
    assert not rejected.success
    assert snapshot.status("wikidata_formulae", changed) == "STALE has a new code version"

    assert snapshot.materialize(["wikidata_formulae"], sample=25, assets=changed).success
    assert snapshot.status("wikidata_formulae", changed) == "FRESH"


def test_a_first_version_that_fails_its_check_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no earlier version there is nothing to show: a child run fails at once, saying
    why, and does not read the rejected table."""
    snapshot = Snapshot(tmp_path, monkeypatch)
    rejected = snapshot.materialize(["wikidata_formulae"], sample=20, floor=25)
    assert not rejected.success and not (tmp_path / "wikidata_formulae.parquet").exists()
    assert snapshot.staged(rejected).exists()

    child = snapshot.materialize(["opt_graphs"])
    assert not child.success
    [failure] = [e for e in child.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.to_string()
    assert "wikidata_formulae has no published version" in message
    assert rejected.run_id in message
    assert not (tmp_path / "opt_graphs.parquet").exists()


class RowsConfig(dg.Config):
    rows: int = 3


@dg.asset(name="counts")
def warned_counts(config: RowsConfig) -> dg.Output[pa.Table]:
    table = pa.table({"n": list(range(config.rows))})
    return dg.Output(table, data_version=dg.DataVersion(table_content_hash(table)))


@dg.asset_check(asset=warned_counts, blocking=True)
def counts_at_most_three(counts: pa.Table) -> dg.AssetCheckResult:
    outcome = Outcome(counts.num_rows <= 3, f"{counts.num_rows} rows")
    return settle(check_result(outcome, dg.AssetCheckSeverity.WARN))


@dg.asset
def counts_copy(counts: pa.Table) -> pa.Table:
    return counts


def test_a_failed_warning_publishes_and_lineage_stays_its_own(tmp_path: Path) -> None:
    """A blocking check of WARN severity lets the version through: it is published, its own
    materialization stays the latest, and a child of the same run records that version."""
    instance = dg.DagsterInstance.ephemeral()
    for rows in (3, 5):  # 5 rows: the warning fails
        run = dg.materialize(
            [warned_counts, counts_at_most_three, counts_copy],
            resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
            instance=instance,
            run_config=dg.RunConfig({"counts": RowsConfig(rows=rows)}),
        )
    assert checks_of(run) == {"counts_at_most_three": False}
    table = data_lake.read_parquet(UPath(tmp_path / "counts.parquet"))
    assert table.num_rows == 5
    latest = instance.get_latest_materialization_event(dg.AssetKey("counts"))
    assert latest is not None and latest.run_id == run.run_id
    assert latest.asset_materialization.tags["dagster/data_version"] == table_content_hash(table)
    assert input_version(run, "counts_copy", "counts") == table_content_hash(table)


# Step processes fork from a server that imported the project once (spawning each is slow).
# The server keeps the environment of its start, so the floor is set once, not per run.
FORKSERVER = dg.multiprocess_executor.configured(
    {"start_method": {"forkserver": {"preload_modules": [__name__]}}}
)


def ingest_job() -> dg.JobDefinition:
    """`wikidata_formulae` and its checks with each step in its own process, as `dg dev` runs
    them (module level, so the worker processes can rebuild it)."""
    return dg.Definitions(
        assets=[wikidata_formulae],
        asset_checks=[wikidata_formulae_unique_qid, wikidata_formulae_row_count],
        jobs=[dg.define_asset_job("ingest", executor_def=FORKSERVER)],
        resources={
            "io_manager": DataLakeIOManager.configure_at_launch(),
            "wikidata": WikidataResource(source="snapshot"),
        },
    ).resolve_job_def("ingest")


def test_check_steps_in_their_own_processes_publish_only_a_passing_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worker process sees a plan of its own step alone; the checks of the run must
    still gate the table, and the two checks passing side by side publish it."""
    lake, home = tmp_path / "lake", tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("FORMULA_ASSETS_MIN_FORMULAE", "25")
    published = lake / "wikidata_formulae.parquet"

    with dg.DagsterInstance.local_temp(str(home)) as instance:

        def run(sample: int) -> dg.JobExecutionResult:
            return dg.execute_job(
                dg.reconstructable(ingest_job),
                instance=instance,
                run_config={
                    "ops": {"wikidata_formulae": {"config": {"sample": sample}}},
                    "resources": {"io_manager": {"config": {"base_path": str(lake)}}},
                },
                raise_on_error=False,
            )

        assert run(30).success and len(pd.read_parquet(published)) == 30
        assert not (lake / "_staged").exists()
        rejected = run(20)
        assert not rejected.success and len(pd.read_parquet(published)) == 30
        staged = lake / "_staged" / "wikidata_formulae" / f"{rejected.run_id}.parquet"
        assert len(pd.read_parquet(staged)) == 20
        # The check step's own process records the published version again, as in one process.
        latest = instance.get_latest_materialization_event(wikidata_formulae.key)
        assert latest is not None and latest.run_id != rejected.run_id
        table = data_lake.read_parquet(UPath(published))
        expected = table_content_hash(table, VOLATILE_COLUMNS)
        assert latest.asset_materialization.tags["dagster/data_version"] == expected


class FormulaeConfig(dg.Config):
    good: int = 200
    bad: int = 0


@dg.asset(name="wikidata_formulae")
def fixture_formulae(config: FormulaeConfig) -> pa.Table:
    mathml = [GOOD] * config.good + [BAD] * config.bad
    return records_to_table(
        FormulaRecord(qid=f"Q{i}", label=f"Q{i}", description=None, mathml=m)
        for i, m in enumerate(mathml, start=1)
    )


def parse(base: str, instance: dg.DagsterInstance, **counts: int) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [fixture_formulae, parse_formulae],
        resources={"io_manager": DataLakeIOManager(base_path=base)},
        instance=instance,
        run_config=dg.RunConfig({"wikidata_formulae": FormulaeConfig(**counts)}),
        raise_on_error=False,
    )


@pytest.mark.parametrize("where", ["local", "memory"])
def test_in_step_checks_hold_back_both_tables_of_the_parse(tmp_path: Path, where: str) -> None:
    """The parse step's own checks gate both tables it writes; on a non-local filesystem a
    publication is one copy of the finished object."""
    base = str(tmp_path) if where == "local" else f"memory://lake-{uuid.uuid4().hex}"
    root, instance = UPath(base), dg.DagsterInstance.ephemeral()

    def published(name: str) -> pa.Table:
        return data_lake.read_parquet(root / f"{name}.parquet")

    def lineage_agrees() -> bool:
        """Each table's latest materialization has the data version of its published file."""
        return all(
            (event := instance.get_latest_materialization_event(dg.AssetKey(name))) is not None
            and event.asset_materialization.tags["dagster/data_version"]
            == table_content_hash(published(name))
            for name in ("opt_graphs", "rejected_formulae")
        )

    def staged_objects() -> list[str]:
        folder = root / "_staged"
        return sorted(folder.fs.find(folder.path)) if folder.exists() else []

    assert parse(base, instance, good=200).success
    assert (published("opt_graphs").num_rows, published("rejected_formulae").num_rows) == (200, 0)

    rejected = parse(base, instance, good=150, bad=50)  # 25 % rejected: the reject rate fails
    assert not rejected.success
    assert checks_of(rejected)["opt_graphs_reject_rate"] is False
    assert (published("opt_graphs").num_rows, published("rejected_formulae").num_rows) == (200, 0)
    assert lineage_agrees()
    for name, rows in (("opt_graphs", 150), ("rejected_formulae", 50)):
        staged = root / "_staged" / name / f"{rejected.run_id}.parquet"
        assert data_lake.read_parquet(staged).num_rows == rows

    assert parse(base, instance, good=180).success
    assert (published("opt_graphs").num_rows, published("rejected_formulae").num_rows) == (180, 0)
    assert staged_objects() == [] and lineage_agrees()
    if where == "memory":
        fsspec.filesystem("memory").rm(root.path, recursive=True)


def test_a_sweep_leaves_the_staged_versions_of_another_instances_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two instances share one data lake: a run of the other one, which this instance does
    not know, may still be waiting for its checks, so its staged version stays; a rejected
    version of this instance's own finished run is swept."""
    mine = Snapshot(tmp_path, monkeypatch)
    assert mine.materialize(["wikidata_formulae"], sample=30).success
    other = Snapshot(tmp_path, monkeypatch)  # a second instance on the same lake
    theirs = other.materialize(["wikidata_formulae"], sample=20, floor=25)
    own = mine.materialize(["wikidata_formulae"], sample=20, floor=25)
    assert not theirs.success and not own.success
    assert other.staged(theirs).exists() and mine.staged(own).exists()
    assert mine.instance.get_run_by_id(theirs.run_id) is None

    assert mine.materialize(["wikidata_formulae"], sample=25).success
    assert len(mine.published()) == 25
    assert other.staged(theirs).exists()  # not this instance's to judge
    assert not mine.staged(own).exists()  # this instance's finished run: swept
    assert {p.name.split(".")[0] for p in mine.staged_files()} == {theirs.run_id}
