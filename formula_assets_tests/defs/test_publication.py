"""When a staged table becomes what readers see (`defs.publication`), on tiny assets.

Each run is a real in-process Dagster run on a temporary data lake with the project's IO
manager, so staging, settling and recording again go through Dagster as in production; the
parts that do not need a run are called directly, with Dagster's `build_*_context` helpers.
The slower end-to-end cases (the real ingest assets, step processes, object stores) are in
`formula_assets_tests/reliability/test_publication.py`.
"""

import logging
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest
from upath import UPath

from formula_assets.core import lake, staging
from formula_assets.core.hashing import table_content_hash
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.publication import (
    PUBLISHED_RUN_TAG,
    REJECTED_RUN_TAG,
    Publication,
    Staged,
    _check_key,
    check_id,
    gating_checks,
    settle,
    source_run,
    stamp,
    sweep,
    unpublished,
)

# The rule of `numbers_within_limit`: a test corrects it (raises the limit) and runs the check
# again on its own, as an editor would after a wrong rejection.
LIMIT = {"rows": 5}
# What each check saw at the published path while it ran: (check, rows there or None).
SEEN: list[tuple[str, int | None]] = []


class Rows(dg.Config):
    n: int = 3


def _output(table: pa.Table) -> dg.Output[pa.Table]:
    return dg.Output(table, data_version=dg.DataVersion(table_content_hash(table)))


def _published_rows(name: str) -> int | None:
    """Rows of the published table `name` in the lake of the running IO manager, if any."""
    context = dg.AssetCheckExecutionContext.get()
    root = context.resources.io_manager._base_path
    path = root / f"{name}.parquet"
    return lake.read_parquet(path).num_rows if path.exists() else None


@dg.asset
def numbers(config: Rows) -> dg.Output[pa.Table]:
    return _output(pa.table({"i": list(range(config.n))}))


@dg.asset_check(asset=numbers, blocking=True)
def numbers_within_limit(numbers: pa.Table) -> dg.AssetCheckResult:
    SEEN.append(("numbers_within_limit", _published_rows("numbers")))
    return settle(dg.AssetCheckResult(passed=numbers.num_rows <= LIMIT["rows"]))


@dg.asset_check(asset=numbers, blocking=True)
def numbers_not_empty(numbers: pa.Table) -> dg.AssetCheckResult:
    SEEN.append(("numbers_not_empty", _published_rows("numbers")))
    return settle(dg.AssetCheckResult(passed=numbers.num_rows > 0))


@dg.asset_check(asset=numbers, blocking=True)
def numbers_within_limit_or_raises(numbers: pa.Table) -> dg.AssetCheckResult:
    """A check with a bug: past the limit it raises instead of failing."""
    if numbers.num_rows > LIMIT["rows"]:
        raise RuntimeError("the check itself is broken")
    return settle(dg.AssetCheckResult(passed=True))


@dg.asset
def plain() -> pa.Table:
    return pa.table({"i": [1, 2]})


@dg.asset_check(asset=plain)  # not blocking: it never holds the table back
def plain_noted(plain: pa.Table) -> dg.AssetCheckResult:
    return settle(dg.AssetCheckResult(passed=False))


@dg.asset
def warned(config: Rows) -> dg.Output[pa.Table]:
    return _output(pa.table({"i": list(range(config.n))}))


@dg.asset_check(asset=warned, blocking=True)
def warned_within_limit(warned: pa.Table) -> dg.AssetCheckResult:
    passed = warned.num_rows <= LIMIT["rows"]
    return settle(dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.WARN))


@dg.multi_asset(
    outs={"kept": dg.AssetOut(), "dropped": dg.AssetOut()},
    check_specs=[dg.AssetCheckSpec("kept_not_empty", asset="kept", blocking=True)],
)
def split(config: Rows) -> Iterator[dg.Output[pa.Table] | dg.AssetCheckResult]:
    """Writes two tables and judges them in its own step, like the parse step."""
    yield dg.Output(pa.table({"i": list(range(config.n))}), output_name="kept")
    yield dg.Output(pa.table({"i": [-1]}), output_name="dropped")
    yield settle(dg.AssetCheckResult(check_name="kept_not_empty", passed=config.n > 0))


LETTERS = dg.StaticPartitionsDefinition(["a", "b"])


@dg.asset(partitions_def=LETTERS)
def letters(config: Rows) -> dg.Output[pa.Table]:
    return _output(pa.table({"i": list(range(config.n))}))


@dg.asset_check(asset=letters, blocking=True, partitions_def=LETTERS)
def letters_within_limit(letters: pa.Table) -> dg.AssetCheckResult:
    return settle(dg.AssetCheckResult(passed=letters.num_rows <= LIMIT["rows"]))


NUMBERS = [numbers, numbers_within_limit, numbers_not_empty]


class Lake:
    """One data lake and one instance, as the CLI and `dg dev` share them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.instance = dg.DagsterInstance.ephemeral()

    def run(
        self,
        assets: list,
        selection: object = None,
        partition: str | None = None,
        **rows: int,
    ) -> dg.ExecuteInProcessResult:
        config = {name: Rows(n=n) for name, n in rows.items()}
        return dg.materialize(
            assets,
            resources={"io_manager": DataLakeIOManager(base_path=str(self.root))},
            instance=self.instance,
            selection=selection,  # type: ignore[arg-type]
            partition_key=partition,
            run_config=dg.RunConfig(config),  # type: ignore[arg-type]
            raise_on_error=False,
        )

    def published(self, name: str) -> list[int] | None:
        path = self.root / f"{name}.parquet"
        return lake.read_parquet(UPath(path)).column("i").to_pylist() if path.exists() else None

    def written_by(self, name: str) -> str | None:
        return staging.written_by(UPath(self.root / f"{name}.parquet"))

    def staged(self) -> list[str]:
        """Staged files as `<table>/<name>`."""
        folder = self.root / staging.STAGED_FOLDER
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())

    def records(self, key: str, partition: str | None = None) -> list[dg.EventLogRecord]:
        """The asset's (partition's) materialization records, newest first."""
        records_filter = dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(key),
            asset_partitions=[partition] if partition is not None else None,
        )
        return list(self.instance.fetch_materializations(records_filter, limit=100).records)

    def latest_tags(self, key: str, partition: str | None = None) -> dict[str, str]:
        return dict(self.records(key, partition)[0].asset_materialization.tags or {})

    def messages(self, run: dg.ExecuteInProcessResult, level: int = logging.INFO) -> list[str]:
        """The run's own log lines (not Dagster's events) at `level` or above."""
        return [
            entry.user_message
            for entry in self.instance.all_logs(run.run_id)
            if not entry.is_dagster_event and entry.level >= level
        ]


def data_version(run: dg.ExecuteInProcessResult, key: str) -> str:
    [event] = [e for e in run.get_asset_materialization_events() if e.asset_key == dg.AssetKey(key)]
    return event.materialization.tags["dagster/data_version"]


def checks_of(run: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in run.get_asset_check_evaluations()}


@pytest.fixture
def data_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lake:
    monkeypatch.setitem(LIMIT, "rows", 5)
    SEEN.clear()
    return Lake(tmp_path)


# ------------------------------------------------------------------ without a run


def test_check_id_names_the_asset_and_the_check() -> None:
    assert check_id(dg.AssetCheckKey(dg.AssetKey(["lake", "numbers"]), "fits")) == (
        "lake/numbers:fits"
    )


def test_a_check_result_is_matched_to_the_one_selected_check_it_can_be() -> None:
    """A result names its check fully, partly or not at all; it settles a check only when
    exactly one of the step's selected checks fits what it names."""
    a_fits = dg.AssetCheckKey(dg.AssetKey("a"), "fits")
    a_full = dg.AssetCheckKey(dg.AssetKey("a"), "full")
    b_fits = dg.AssetCheckKey(dg.AssetKey("b"), "fits")
    selected = {a_fits, a_full, b_fits}

    def key(**names: object) -> dg.AssetCheckKey | None:
        return _check_key(dg.AssetCheckResult(passed=True, **names), selected)  # type: ignore[arg-type]

    # Named fully: that check, selected or not.
    assert key(asset_key="b", check_name="fits") == b_fits
    assert key(asset_key="c", check_name="other") == dg.AssetCheckKey(dg.AssetKey("c"), "other")
    # Named partly: the one selected check it fits, else none.
    assert key(check_name="full") == a_full
    assert key(check_name="fits") is None  # two assets have a check `fits`
    assert key(check_name="other") is None
    assert key(asset_key="b") == b_fits
    assert key(asset_key="a") is None  # `a` has two checks
    # Not named: only a step that evaluates exactly one check knows which.
    assert _check_key(dg.AssetCheckResult(passed=True), {a_full}) == a_full
    assert _check_key(dg.AssetCheckResult(passed=True), selected) is None
    assert _check_key(dg.AssetCheckResult(passed=True), set()) is None


def test_settle_outside_a_run_returns_its_argument() -> None:
    """A check function called directly (a unit test) gets its own result back."""
    result = dg.AssetCheckResult(passed=False, metadata={"rows": 3})
    assert settle(result) is result


def test_outside_a_run_nothing_is_gated_stamped_read_from_staging_or_swept(
    tmp_path: Path,
) -> None:
    """An IO manager called directly (a test, `load_asset_value`) publishes at once, reads
    the published table and leaves the staged versions alone."""
    root = UPath(tmp_path)
    path = root / "numbers.parquet"
    version = staging.staged_version(root, path, "finished-or-not")
    staging.stage(version, pa.table({"i": [1]}), ["numbers:fits"])

    assert gating_checks(dg.build_output_context(asset_key=dg.AssetKey("numbers"))) == []
    table = pa.table({"i": [1, 2]})
    assert stamp(dg.OutputContext(asset_key=dg.AssetKey("numbers")), table) is table
    assert source_run(dg.build_input_context(asset_key=dg.AssetKey("numbers"))) is None
    sweep(dg.build_output_context(asset_key=dg.AssetKey("numbers")), root, path)
    assert staging.staged_runs(root, path) == ["finished-or-not"]


def test_stamp_names_the_run_that_writes_the_table() -> None:
    table = stamp(dg.build_output_context(run_id="run-1"), pa.table({"i": [1]}))
    assert table.schema.metadata[staging.RUN_KEY] == b"run-1"
    assert table.column("i").to_pylist() == [1]


def test_record_published_outside_a_run_records_nothing(tmp_path: Path) -> None:
    """Resources built by hand have an instance but no run: nothing to record after."""
    instance = dg.DagsterInstance.ephemeral()
    root = UPath(tmp_path)
    publication = Publication()
    version = staging.staged_version(root, root / "numbers.parquet", "run-2")
    publication.settled["x"] = Staged(version, dg.AssetKey("numbers"), None)
    publication.record_published(dg.build_init_resource_context(instance=instance))
    assert instance.fetch_materializations(dg.AssetKey("numbers"), limit=1).records == []


def test_unpublished_says_whether_a_version_waits_on_its_checks(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    path = root / "numbers.parquet"
    context = dg.build_input_context(asset_key=dg.AssetKey("numbers"))
    assert str(unpublished(context, root, path)) == f"{path} does not exist"

    for run_id in ("run-b", "run-a"):
        version = staging.staged_version(root, path, run_id)
        staging.stage(version, pa.table({"i": [1]}), ["numbers:fits"])
    error = unpublished(context, root, path)
    assert isinstance(error, FileNotFoundError)
    message = str(error)
    assert message.startswith("numbers has no published version")
    assert "run run-a, run-b has not passed its blocking checks" in message
    assert str(staging.staged_folder(root, path)) in message
    assert "materialize numbers again" in message


# ------------------------------------------------------------------ in a run


def test_a_table_no_blocking_check_of_the_run_judges_is_published_at_once(
    data_lake: Lake,
) -> None:
    """Its blocking checks left out of the run, or only a non-blocking check: nothing to wait
    for, so the documented path gets the table as it is written."""
    selection = dg.AssetSelection.assets(numbers, plain).without_checks() | (
        dg.AssetSelection.checks(plain_noted)
    )
    run = data_lake.run([*NUMBERS, plain, plain_noted], selection=selection, numbers=7)
    assert run.success and checks_of(run) == {"plain_noted": False}
    assert data_lake.published("numbers") == list(range(7))
    assert data_lake.published("plain") == [1, 2]
    assert data_lake.written_by("numbers") == run.run_id
    assert not (data_lake.root / staging.STAGED_FOLDER).exists()


def test_the_last_of_several_gating_checks_publishes(data_lake: Lake) -> None:
    """Both checks judge the staged version while readers still see nothing new; the pass
    that completes the set publishes it. A passing run records nothing again and warns of
    nothing."""
    run = data_lake.run(NUMBERS, numbers=3)
    assert run.success and checks_of(run) == {
        "numbers_within_limit": True,
        "numbers_not_empty": True,
    }
    assert sorted(SEEN) == [("numbers_not_empty", None), ("numbers_within_limit", None)]
    assert data_lake.published("numbers") == [0, 1, 2]
    assert data_lake.written_by("numbers") == run.run_id
    assert data_lake.staged() == []

    [record] = data_lake.records("numbers")
    assert record.run_id == run.run_id and PUBLISHED_RUN_TAG not in data_lake.latest_tags("numbers")
    assert data_lake.messages(run, logging.WARNING) == []
    messages = data_lake.messages(run)
    staged_at = [m for m in messages if m.startswith("staged at")]
    assert len(staged_at) == 1
    assert "numbers:numbers_not_empty, numbers:numbers_within_limit" in staged_at[0]
    assert any(m.startswith("reading the staged version") for m in messages)
    [published] = [m for m in messages if "passed: published" in m]
    assert str(data_lake.root / "numbers.parquet") in published


def test_a_failed_check_keeps_the_last_good_version_and_its_record(data_lake: Lake) -> None:
    """Readers keep the last good table; the rejected one waits in `_staged/`, and the
    asset's latest materialization is the published table's again, naming both runs."""
    good = data_lake.run(NUMBERS, numbers=3)
    rejected = data_lake.run(NUMBERS, numbers=7)  # 7 rows, limit 5
    assert not rejected.success
    assert checks_of(rejected) == {"numbers_within_limit": False, "numbers_not_empty": True}
    assert sorted(SEEN[2:]) == [("numbers_not_empty", 3), ("numbers_within_limit", 3)]
    assert data_lake.published("numbers") == [0, 1, 2]
    assert data_lake.written_by("numbers") == good.run_id
    staged = {f"numbers/{rejected.run_id}.parquet", f"numbers/{rejected.run_id}.json"}
    assert staged <= set(data_lake.staged())

    latest, *older = data_lake.records("numbers")
    assert [r.run_id for r in older] == [rejected.run_id, good.run_id]
    assert latest.run_id == ""  # recorded again, without a run
    tags = data_lake.latest_tags("numbers")
    assert tags[PUBLISHED_RUN_TAG] == good.run_id
    assert tags[REJECTED_RUN_TAG] == rejected.run_id
    assert tags["dagster/data_version"] == data_version(good, "numbers")
    assert latest.asset_materialization.metadata["dagster/row_count"].value == 3
    assert f"run {rejected.run_id}'s failed a blocking check" in (
        latest.asset_materialization.description or ""
    )
    # The run log names the rejection and where the rejected version waits.
    [warning] = data_lake.messages(rejected, logging.WARNING)
    assert warning.startswith("numbers:numbers_within_limit failed")
    assert f"{data_lake.root}/_staged/numbers/{rejected.run_id}.parquet" in warning
    assert any("recorded again" in m for m in data_lake.messages(rejected))


def test_a_check_that_raises_keeps_the_last_good_version_and_its_record(
    data_lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blocking check that ends without a result (it raised) rejects the version like a
    failure: readers keep the last good table, the record follows it, and once the check is
    mended, run on its own it publishes the version it then passes."""
    assets = [numbers, numbers_not_empty, numbers_within_limit_or_raises]
    good = data_lake.run(assets, numbers=3)
    rejected = data_lake.run(assets, numbers=7)
    assert good.success and not rejected.success
    assert checks_of(rejected) == {"numbers_not_empty": True}
    assert data_lake.published("numbers") == [0, 1, 2]
    assert f"numbers/{rejected.run_id}.parquet" in data_lake.staged()
    tags = data_lake.latest_tags("numbers")
    assert (tags[PUBLISHED_RUN_TAG], tags[REJECTED_RUN_TAG]) == (good.run_id, rejected.run_id)
    assert tags["dagster/data_version"] == data_version(good, "numbers")
    [warning] = data_lake.messages(rejected, logging.WARNING)
    assert warning.startswith("numbers:numbers_within_limit_or_raises ended without a result")
    assert f"{data_lake.root}/_staged/numbers/{rejected.run_id}.parquet" in warning

    monkeypatch.setitem(LIMIT, "rows", 10)
    mended = dg.AssetSelection.checks(numbers_within_limit_or_raises)
    assert data_lake.run(assets, selection=mended).success
    assert data_lake.published("numbers") == list(range(7))
    assert data_lake.latest_tags("numbers")[PUBLISHED_RUN_TAG] == rejected.run_id


def test_a_published_table_another_instance_made_is_left_unrecorded_with_a_warning(
    data_lake: Lake,
) -> None:
    """Two instances share the data lake: this one has no record of the run that made the
    published table, so it cannot record it again, and says so."""
    theirs = Lake(data_lake.root).run(NUMBERS, numbers=3)
    rejected = data_lake.run(NUMBERS, numbers=7)
    assert theirs.success and not rejected.success
    assert data_lake.written_by("numbers") == theirs.run_id
    assert [r.run_id for r in data_lake.records("numbers")] == [rejected.run_id]
    warnings = data_lake.messages(rejected, logging.WARNING)
    assert f"numbers: run {theirs.run_id} made the published table, but it is gone" in warnings


def test_a_check_run_on_its_own_judges_the_rejected_version(
    data_lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failing again, it changes nothing (not even the record); once its rule is corrected,
    it publishes the rejected version, and the record follows."""
    good = data_lake.run(NUMBERS, numbers=3)
    rejected = data_lake.run(NUMBERS, numbers=7)
    within = dg.AssetSelection.checks(numbers_within_limit)
    before = len(data_lake.records("numbers"))

    again = data_lake.run(NUMBERS, selection=within)
    assert checks_of(again) == {"numbers_within_limit": False}
    [warning] = data_lake.messages(again, logging.WARNING)  # a failure, and nothing else
    assert warning.startswith("numbers:numbers_within_limit failed")
    assert data_lake.published("numbers") == [0, 1, 2]
    assert len(data_lake.records("numbers")) == before  # already the published table's

    monkeypatch.setitem(LIMIT, "rows", 10)
    passed = data_lake.run(NUMBERS, selection=within)
    assert passed.success and checks_of(passed) == {"numbers_within_limit": True}
    assert data_lake.published("numbers") == list(range(7))
    assert data_lake.written_by("numbers") == rejected.run_id
    assert data_lake.staged() == []
    tags = data_lake.latest_tags("numbers")
    assert tags[PUBLISHED_RUN_TAG] == rejected.run_id and REJECTED_RUN_TAG not in tags
    assert tags["dagster/data_version"] == data_version(rejected, "numbers")
    assert good.run_id != rejected.run_id


def test_a_first_version_that_fails_waits_for_its_check_to_pass_on_its_own(
    data_lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing published yet: nothing to record again. Run on its own with a corrected rule,
    the check publishes the run's version, whose own record is already the latest."""
    rejected = data_lake.run(NUMBERS, numbers=7)
    assert not rejected.success and data_lake.published("numbers") is None
    [record] = data_lake.records("numbers")
    assert record.run_id == rejected.run_id

    monkeypatch.setitem(LIMIT, "rows", 10)
    passed = data_lake.run(NUMBERS, selection=dg.AssetSelection.checks(numbers_within_limit))
    assert passed.success
    assert data_lake.published("numbers") == list(range(7))
    assert data_lake.staged() == []
    assert [r.run_id for r in data_lake.records("numbers")] == [rejected.run_id]


def test_a_failed_warning_publishes(data_lake: Lake) -> None:
    """Dagster lets downstream steps run after a failed WARN check, so they must see the
    version it judged: it is published, and its own record stays the latest."""
    data_lake.run([warned, warned_within_limit], warned=3)
    run = data_lake.run([warned, warned_within_limit], warned=7)
    assert run.success and checks_of(run) == {"warned_within_limit": False}
    assert data_lake.published("warned") == list(range(7))
    assert data_lake.staged() == []
    assert data_lake.records("warned")[0].run_id == run.run_id
    assert REJECTED_RUN_TAG not in data_lake.latest_tags("warned")


def test_in_step_checks_gate_every_table_of_their_step(data_lake: Lake) -> None:
    """`kept_not_empty` judges `kept` only, yet `dropped`, written by the same step, is
    published with it or not at all."""
    first = data_lake.run([split], split=2)
    assert first.success
    assert (data_lake.published("kept"), data_lake.published("dropped")) == ([0, 1], [-1])
    assert data_lake.written_by("dropped") == first.run_id

    rejected = data_lake.run([split], split=0)
    assert not rejected.success
    assert data_lake.written_by("kept") == data_lake.written_by("dropped") == first.run_id
    assert sorted(p for p in data_lake.staged() if p.endswith(".parquet")) == [
        f"dropped/{rejected.run_id}.parquet",
        f"kept/{rejected.run_id}.parquet",
    ]
    for name in ("kept", "dropped"):
        assert data_lake.latest_tags(name)[PUBLISHED_RUN_TAG] == first.run_id


def test_a_rejected_partition_records_its_own_published_version(data_lake: Lake) -> None:
    """The record made again is the partition's, found however many records (earlier
    records made again) lie between it and the rejected one; other partitions keep theirs."""
    assets = [letters, letters_within_limit]
    good = data_lake.run(assets, partition="a", letters=3)
    other = data_lake.run(assets, partition="b", letters=4)
    for _ in range(12):  # more than a page of later records without a run
        data_lake.instance.report_runless_asset_event(
            dg.AssetMaterialization(asset_key="letters", partition="a")
        )
    rejected = data_lake.run(assets, partition="a", letters=7)
    assert good.success and other.success and not rejected.success

    assert data_lake.published("letters/a") == [0, 1, 2]
    assert data_lake.published("letters/b") == [0, 1, 2, 3]
    latest = data_lake.records("letters", "a")[0]
    assert latest.asset_materialization.partition == "a"
    tags = data_lake.latest_tags("letters", "a")
    assert (tags[PUBLISHED_RUN_TAG], tags[REJECTED_RUN_TAG]) == (good.run_id, rejected.run_id)
    assert tags["dagster/data_version"] == data_version(good, "letters")
    assert data_lake.records("letters", "b")[0].run_id == other.run_id


def _stage_by_hand(root: Path, name: str, run_ids: Iterable[str]) -> None:
    """Versions left staged by runs whose checks never published them."""
    published = UPath(root) / f"{name}.parquet"
    for run_id in run_ids:
        version = staging.staged_version(UPath(root), published, run_id)
        staging.stage(version, pa.table({"i": [9]}), [f"{name}:{name}_within_limit"])


def test_a_sweep_removes_only_the_versions_of_this_instances_finished_runs(
    data_lake: Lake,
) -> None:
    """Writing the table sweeps the staged versions of finished runs; a run still in progress
    may yet publish its version, and a run this instance does not know may be another
    instance's (sharing the data lake), so theirs stay."""
    finished = data_lake.run(NUMBERS, numbers=3)
    assert finished.success
    in_progress = str(uuid.uuid4())
    data_lake.instance.add_run(
        dg.DagsterRun(job_name="elsewhere", run_id=in_progress, status=dg.DagsterRunStatus.STARTED)
    )
    unknown = str(uuid.uuid4())
    _stage_by_hand(data_lake.root, "numbers", [finished.run_id, in_progress, unknown])

    selection = dg.AssetSelection.assets(numbers).without_checks()
    writer = data_lake.run(NUMBERS, selection=selection, numbers=4)
    assert writer.success and data_lake.published("numbers") == [0, 1, 2, 3]
    runs = staging.staged_runs(UPath(data_lake.root), UPath(data_lake.root) / "numbers.parquet")
    assert runs == sorted([in_progress, unknown])
