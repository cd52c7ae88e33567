"""Staged tables: where a version waits, that it is published only when every gating check
passed, that checks finishing together publish it exactly once and intact, and which staged
versions a sweep may remove."""

import json
import multiprocessing
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from upath import UPath

from formula_assets.core import lake, staging
from formula_assets.core.hashing import table_content_hash

OLD = pa.table({"qid": ["Q1", "Q2"], "v": [1.0, 2.0]})
NEW = pa.table({"qid": ["Q1", "Q2", "Q3"], "v": [3.0, 4.0, 5.0]})


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def staged(root: UPath, checks: list[str], name: str = "asset.parquet", run: str = "run-1"):
    published = root / name
    lake.write_parquet_atomic(OLD, published)
    version = staging.staged_version(root, published, run)
    staging.stage(version, NEW, checks)
    return version


def test_a_version_waits_under_staged_beside_a_manifest(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    version = staged(root, ["asset:b", "asset:a"])
    assert version.table == root / "_staged" / "asset" / "run-1.parquet"
    assert json.loads(version.manifest.read_text())["checks"] == ["asset:a", "asset:b"]
    assert staging.read_staged(version).equals(NEW)
    partition = staging.staged_version(root, root / "models" / "1|x.parquet", "r")
    assert partition.table == root / "_staged" / "models" / "1|x" / "r.parquet"
    assert staging.read_staged(partition) is None


def test_published_only_when_every_gating_check_passed(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    version = staged(root, ["asset:a", "asset:b"])
    assert not staging.record_pass(version, "asset:a")
    assert not staging.record_pass(version, "asset:not_gating")
    assert lake.read_parquet(version.published).equals(OLD)
    assert not version.marker("asset:not_gating").exists()
    assert staging.record_pass(version, "asset:b")
    assert lake.read_parquet(version.published).equals(NEW)
    assert files(tmp_path) == ["asset.parquet"]  # markers, manifest and empty folders gone
    assert not staging.record_pass(version, "asset:b")  # nothing left to publish
    assert not staging.publish(version)


def test_a_failed_check_leaves_the_version_staged(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    version = staged(root, ["asset:a", "asset:b"])
    staging.record_pass(version, "asset:a")  # asset:b failed: it records nothing
    assert lake.read_parquet(version.published).equals(OLD)
    assert staging.read_staged(version).equals(NEW)


def test_a_published_table_names_the_run_that_wrote_it(tmp_path: Path) -> None:
    """Whichever run publishes it, the file says whose materialization it is; the stamp is
    metadata, so the data version (the content hash) is the same with it or without."""
    root = UPath(tmp_path)
    published = root / "asset.parquet"
    assert staging.written_by(published) is None  # nothing published
    lake.write_parquet_atomic(OLD, published)
    assert staging.written_by(published) is None  # written before stamps
    version = staging.staged_version(root, published, "run-2")
    staging.stage(version, staging.stamped(NEW, "run-2"), ["asset:a"])
    assert staging.staged_runs(root, published) == ["run-2"]
    assert staging.record_pass(version, "asset:a")
    assert staging.written_by(published) == "run-2" and staging.staged_runs(root, published) == []
    assert table_content_hash(lake.read_parquet(published)) == table_content_hash(NEW)


def test_a_sweep_removes_versions_of_finished_runs_only(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    for run in ("done", "running", "unknown", "current"):
        version = staged(root, ["asset:a"], run=run)
        staging.record_pass(version, "not gating")
    done = staging.staged_version(root, root / "asset.parquet", "done")
    lake.write_bytes_atomic(b"", done.marker("asset:b"))
    debris = done.folder / f".done.parquet{lake.TMP_MARKER}host~1~x"
    debris.write_bytes(b"half")
    states = {"done": True, "running": False, "current": True}
    removed = staging.sweep(root, root / "asset.parquet", "current", lambda r: states.get(r, False))
    assert removed == ["done"]
    assert [n for n in files(tmp_path) if "done" in n] == []
    assert {n.split("/")[-1] for n in files(tmp_path)} >= {
        "running.parquet",
        "unknown.json",
        "current.parquet",
    }
    assert staging.sweep(root, root / "other.parquet", "current", lambda r: True) == []


def pass_one(root: str, run: str, check: str, barrier, results) -> None:
    version = staging.staged_version(UPath(root), UPath(root) / "asset.parquet", run)
    barrier.wait()
    results.put(staging.record_pass(version, check))


def test_checks_finishing_together_publish_once_and_intact(tmp_path: Path) -> None:
    """Each check in its own process, released at the same moment, three times over."""
    checks = [f"asset:c{i}" for i in range(4)]
    context = multiprocessing.get_context("fork")  # the workers import nothing new
    for round_ in range(3):
        run = f"run-{round_}"
        version = staged(UPath(tmp_path), checks, run=run)
        barrier, results = context.Barrier(len(checks)), context.Queue()
        workers = [
            context.Process(target=pass_one, args=(str(tmp_path), run, c, barrier, results))
            for c in checks
        ]
        for worker in workers:
            worker.start()
        published = [results.get(timeout=120) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        assert [w.exitcode for w in workers] == [0] * len(checks)
        assert sum(published) >= 1
        assert lake.read_parquet(version.published).equals(NEW)
        assert files(tmp_path) == ["asset.parquet"]


def test_an_object_store_publishes_by_one_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    root = UPath(f"memory://staging-{uuid.uuid4().hex}")
    version = staged(root, ["asset:a"])
    copies: list[tuple[str, str]] = []
    original = type(version.table.fs).copy

    def spy(fs, source: str, target: str, **kwargs) -> None:
        copies.append((source, target))
        original(fs, source, target, **kwargs)

    monkeypatch.setattr(type(version.table.fs), "copy", spy)
    assert staging.record_pass(version, "asset:a")
    assert copies == [(version.table.path, version.published.path)]
    assert lake.read_parquet(version.published).equals(NEW)
    assert not version.table.exists() and not version.manifest.exists()
    assert not staging.publish(version)
    root.fs.rm(root.path, recursive=True)


def test_publishing_a_partition_creates_its_folders_and_prunes_staging(tmp_path: Path) -> None:
    """A partition's first version is published under folders that do not exist yet; the
    staging folders left empty go, up to `_staged` itself, and never the lake above it."""
    root = UPath(tmp_path)
    published = root / "models" / "1" / "x.parquet"
    version = staging.staged_version(root, published, "run-1")
    staging.stage(version, NEW, ["m:a"])
    assert (tmp_path / "_staged" / "models" / "1" / "x").is_dir()
    assert staging.record_pass(version, "m:a") is True
    assert lake.read_parquet(published).equals(NEW)
    assert not (tmp_path / "_staged").exists() and tmp_path.is_dir()
    assert staging.publish(version) is False  # nothing staged any more


def test_a_pass_that_does_not_publish_says_false(tmp_path: Path) -> None:
    version = staged(UPath(tmp_path), ["asset:a", "asset:b"])
    assert staging.record_pass(version, "asset:a") is False
    assert staging.record_pass(version, "asset:other") is False
    assert staging.record_pass(version, "asset:b") is True
    assert staging.record_pass(version, "asset:b") is False


def test_a_sweep_that_empties_the_staging_folder_removes_it(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    staged(root, ["asset:a"], run="done")
    assert staging.sweep(root, root / "asset.parquet", "current", lambda r: True) == ["done"]
    assert files(tmp_path) == ["asset.parquet"] and not (tmp_path / "_staged").exists()


@pytest.mark.parametrize(("failures", "succeeds"), [(0, True), (2, True), (3, False)])
def test_staging_retries_a_manifest_whose_folder_was_pruned_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failures: int, succeeds: bool
) -> None:
    """Another run's publication may prune the empty folder between the manifest write's
    mkdir and its rename: the write is tried three times, then the error is raised."""
    root = UPath(tmp_path)
    version = staging.staged_version(root, root / "asset.parquet", "run-1")
    real, calls = lake.write_bytes_atomic, []

    def pruned_meanwhile(data: bytes, path: UPath) -> None:
        calls.append(path)
        if len(calls) <= failures:
            raise FileNotFoundError(path)
        real(data, path)

    monkeypatch.setattr(lake, "write_bytes_atomic", pruned_meanwhile)
    if succeeds:
        staging.stage(version, NEW, ["asset:a"])
        assert staging.required_checks(version) == ["asset:a"]
        assert staging.read_staged(version).equals(NEW)
        assert len(calls) == failures + 1
    else:
        with pytest.raises(FileNotFoundError):
            staging.stage(version, NEW, ["asset:a"])
        assert len(calls) == 3 and staging.read_staged(version) is None


def test_an_object_store_sees_what_other_processes_wrote(s3: str) -> None:
    """Object-store clients cache listings: a manifest or marker another process wrote after
    this one listed the folder must still be seen (a sweep finds the run, the check that
    completes the set publishes)."""
    import fsspec

    root = UPath(f"{s3}/staging-{uuid.uuid4().hex[:8]}")
    version = staged(root, ["asset:a", "asset:b"])
    other = fsspec.filesystem("s3", skip_instance_cache=True)  # another process's client
    assert staging.staged_runs(root, version.published) == ["run-1"]  # listed: now cached
    other.pipe(f"{version.folder.path}/run-2.json", b"{}")
    assert staging.staged_runs(root, version.published) == ["run-1", "run-2"]
    marker = version.marker("asset:a")
    assert not staging._exists(marker)  # the folder's listing is cached now
    other.pipe(marker.path, b"")
    assert staging._exists(marker)
    assert staging.record_pass(version, "asset:b") is True
    assert lake.read_parquet(version.published).equals(NEW)
