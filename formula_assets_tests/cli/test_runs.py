"""What the refresh loop, its workers and the distributed runner share: a line of output goes
out whole, a round is cut into runs, a run reports how it went, and data versions are read back."""

import io
import os
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.cli.runs import (
    JOB_TAG,
    REFRESH_TAG,
    Job,
    data_versions,
    load_definitions,
    materialize,
    plan_jobs,
    say,
)
from formula_assets.defs.plan import Entry, Target


def test_a_workers_line_is_one_write_with_its_newline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers share the parent's stdout: each line, newline included, goes out in one
    write, so another worker's line cannot come between a line and its end; what this
    process wrote before (still in its buffer) goes out first."""
    writes: list[tuple[int, bytes]] = []
    real_write = os.write

    def recorded(fd: int, data: bytes) -> int:
        writes.append((fd, data))
        return real_write(fd, data)

    path = tmp_path / "out"
    with path.open("w", encoding="latin-1") as stream:
        stream.write("earlier ")  # buffered
        monkeypatch.setattr("sys.stdout", stream)
        monkeypatch.setattr(os, "write", recorded)
        say("materializing opt_text_embeddings é")  # in the stream's own encoding
        monkeypatch.setattr(os, "write", real_write)
        line = "materializing opt_text_embeddings é\n".encode("latin-1")
        assert writes == [(stream.fileno(), line)]
        # read while the stream is open: nothing of it is left behind in a buffer
        assert path.read_bytes() == b"earlier " + line


def test_a_stream_without_a_descriptor_gets_the_whole_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's capture has no file descriptor: the line still comes out whole, at once."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8")  # buffered, and fileno() raises
    monkeypatch.setattr("sys.stdout", stream)
    say("materializing cv_folds")
    assert raw.getvalue() == b"materializing cv_folds\n"


def test_the_definitions_are_loaded_once_per_process() -> None:
    defs = load_definitions()
    assert dg.AssetKey("fold_models") in defs.resolve_asset_graph().materializable_asset_keys
    assert load_definitions() is defs


# --- what one round runs, and what it left -------------------------------------------------------

PARTS = dg.StaticPartitionsDefinition(["1", "2"])


@dg.asset
def alone() -> dg.Output[int]:
    return dg.Output(1, data_version=dg.DataVersion("alone-v1"))


@dg.multi_asset(specs=[dg.AssetSpec("left"), dg.AssetSpec("right")])
def pair():
    yield dg.Output(None, output_name="left", data_version=dg.DataVersion("left-v1"))
    yield dg.Output(None, output_name="right", data_version=dg.DataVersion("right-v1"))


@dg.asset(partitions_def=PARTS)
def per_fold(context: dg.AssetExecutionContext) -> dg.Output[str]:
    if context.partition_key == "2":
        raise ValueError("fold 2 fails")
    return dg.Output("ok", data_version=dg.DataVersion(f"fold-{context.partition_key}"))


ROUND = dg.Definitions(
    assets=[alone, pair, per_fold], resources={"io_manager": dg.InMemoryIOManager()}
)


def _entry(name: str, partition: str | None = None) -> Entry:
    return Entry(Target(dg.AssetKey(name), partition), "MISSING", ())


def test_partitions_run_alone_and_a_multi_assets_keys_together() -> None:
    frontier = [_entry("alone"), _entry("left"), _entry("per_fold", "1"), _entry("per_fold", "2")]
    jobs = plan_jobs(ROUND, frontier)
    assert sorted(map(str, jobs)) == ["alone", "left, right", "per_fold[1]", "per_fold[2]"]
    assert Job(("left", "right")) in jobs  # `right` comes with `left`, though not stale


def test_together_puts_every_unpartitioned_step_in_one_job() -> None:
    frontier = [_entry("alone"), _entry("right"), _entry("per_fold", "1")]
    jobs = plan_jobs(ROUND, frontier, together=True)
    assert jobs == [Job(("per_fold",), "1"), Job(("alone", "left", "right"))]


def test_a_job_names_itself_in_its_tags() -> None:
    assert str(Job(("a", "b"))) == "a, b"
    assert str(Job(("per_fold",), "2")) == "per_fold[2]"
    assert Job(("per_fold",), "2").tags() == {REFRESH_TAG: "true", JOB_TAG: "per_fold[2]"}
    assert Job(("x/y",)).asset_keys == [dg.AssetKey(["x", "y"])]
    held = {Job(("a",)): 1}  # the refresh keys what it holds by job
    assert held[Job(("a",))] == 1


def test_materialize_reports_success_and_data_versions_read_back() -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        assert materialize(ROUND, instance, Job(("alone",)))
        assert materialize(ROUND, instance, Job(("left", "right")))
        assert materialize(ROUND, instance, Job(("per_fold",), "1"))
        assert not materialize(ROUND, instance, Job(("per_fold",), "2"))  # failed, not raised
        run = instance.get_runs(limit=1)[0]
        assert run.tags[JOB_TAG] == "per_fold[2]"
        assert data_versions(ROUND, instance) == {
            "alone": "alone-v1",
            "left": "left-v1",
            "right": "right-v1",
            "per_fold[1]": "fold-1",  # fold 2 never materialized: absent, not empty
        }
