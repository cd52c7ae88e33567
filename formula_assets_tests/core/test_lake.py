"""Atomic writes to the data lake: what a reader can see, at every step of a write.

The crash tests run a real writer process and kill it with SIGKILL at each step of a
Parquet write in turn (see `support/crash_writer.py`); the unit tests pin down the
temporary files, who may remove them, and the object-store path.
"""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from upath import UPath

from formula_assets.core import lake
from formula_assets_tests.support.crash_writer import table

ROOT = Path(__file__).resolve().parents[2]


def temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if lake.TMP_MARKER in p.name]


def writer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "formula_assets_tests.support.crash_writer", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_final_file_is_the_temporary_file_renamed(tmp_path: Path, monkeypatch) -> None:
    """Same inode before and after: a rename, never a copy that a reader could see half of."""
    target = UPath(tmp_path / "asset.parquet")
    synced: list[os.stat_result] = []
    original = lake.os.fsync

    def spy(fd: int) -> None:
        synced.append(os.fstat(fd))
        original(fd)

    monkeypatch.setattr(lake.os, "fsync", spy)
    lake.write_parquet_atomic(table(1.0, 5), target)
    final = os.stat(target.path)
    assert [s.st_ino for s in synced] == [final.st_ino]
    # everything was flushed to the file before it was synced: durable before it is renamed
    assert [s.st_size for s in synced] == [final.st_size] and final.st_size > 0
    assert temporaries(tmp_path) == []


def test_temporary_files_are_hidden_siblings_tagged_with_their_writer(tmp_path: Path) -> None:
    target = UPath(tmp_path / "asset.parquet")
    tmp = lake.temporary_sibling(target)
    assert tmp.parent == target.parent and tmp.name.startswith(".asset.parquet.tmp-")
    writer_ = lake.parse_writer_tag(tmp.name.removeprefix(".asset.parquet.tmp-"))
    assert writer_ == lake.Writer(lake.HOST, os.getpid())
    assert lake.temporary_sibling(target) != tmp  # random: two writes never share one


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = UPath(tmp_path / "asset.parquet")
    lake.write_parquet_atomic(table(1.0, 3), target)
    with pytest.raises(RuntimeError, match="boom"), lake.atomic_file(target) as fh:
        fh.write(b"half a file")
        raise RuntimeError("boom")
    assert lake.read_parquet(target)["value"].to_pylist() == [1.0] * 3
    assert temporaries(tmp_path) == []


def test_bytes_and_tables_round_trip_and_parents_are_created(tmp_path: Path) -> None:
    target = UPath(tmp_path / "a" / "b" / "figure.png")
    lake.write_bytes_atomic(b"\x89PNG data", target)
    assert target.read_bytes() == b"\x89PNG data"
    lake.write_bytes_atomic(b"second", target)
    assert target.read_bytes() == b"second"
    data = pa.table({"x": [1, 2, None]})
    lake.write_parquet_atomic(data, UPath(tmp_path / "t.parquet"))
    assert lake.read_parquet(UPath(tmp_path / "t.parquet")).equals(data)


def orphan(folder: Path, name: str, host: str, pid: int) -> Path:
    path = folder / f".{name}{lake.TMP_MARKER}{host}~{pid}~{uuid.uuid4().hex}"
    path.write_bytes(b"debris")
    return path


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture
def live_pid():
    """A process of our own that runs for the test (never signal processes we did not start)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process.pid
    process.kill()
    process.wait()


def test_the_sweep_removes_only_a_dead_writer_of_this_host(tmp_path: Path, live_pid: int) -> None:
    target = UPath(tmp_path / "asset.parquet")
    gone = orphan(tmp_path, "asset.parquet", lake.HOST, dead_pid())
    alive = orphan(tmp_path, "asset.parquet", lake.HOST, live_pid)
    mine = orphan(tmp_path, "asset.parquet", lake.HOST, os.getpid())
    elsewhere = orphan(tmp_path, "asset.parquet", "another-host", dead_pid())
    other_file = orphan(tmp_path, "other.parquet", lake.HOST, dead_pid())
    untagged = tmp_path / f".asset.parquet{lake.TMP_MARKER}not-a-tag"
    untagged.write_bytes(b"?")
    assert lake.sweep_orphans(target) == [gone.name]
    assert not gone.exists()
    assert all(p.exists() for p in (alive, mine, elsewhere, other_file, untagged))


def test_the_next_write_sweeps_before_writing(tmp_path: Path) -> None:
    target = UPath(tmp_path / "asset.parquet")
    gone = orphan(tmp_path, "asset.parquet", lake.HOST, dead_pid())
    lake.write_parquet_atomic(table(2.0, 2), target)
    assert not gone.exists() and temporaries(tmp_path) == []


def test_a_missing_folder_has_nothing_to_sweep(tmp_path: Path) -> None:
    assert lake.sweep_orphans(UPath(tmp_path / "nowhere" / "asset.parquet")) == []


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("host~12~abc", lake.Writer("host", 12)),
        ("a.b-c~7~ff", lake.Writer("a.b-c", 7)),
        ("host~x~abc", None),
        ("host~12", None),
        ("host~1~2~3", None),
    ],
)
def test_writer_tags_parse(tag: str, expected: lake.Writer | None) -> None:
    assert lake.parse_writer_tag(tag) == expected


def test_a_writer_is_a_value() -> None:
    """Writers compare and hash by host and pid, and cannot be changed after parsing."""
    import dataclasses

    writer_ = lake.Writer("host", 3)
    assert {writer_, lake.Writer("host", 3)} == {writer_}
    with pytest.raises(dataclasses.FrozenInstanceError):
        writer_.pid = 4  # type: ignore[misc]


def test_pid_alive(live_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    assert lake.pid_alive(live_pid) is True
    assert lake.pid_alive(os.getpid()) is True
    assert lake.pid_alive(dead_pid()) is False

    def refused(pid: int, signal: int) -> None:
        raise PermissionError(pid)

    monkeypatch.setattr(lake.os, "kill", refused)
    assert lake.pid_alive(12345)  # a process we may not signal exists: never "gone"


def test_without_proc_a_process_that_answers_the_signal_is_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where there is no /proc (not Linux) the zombie test cannot run: the signal decides."""

    class NoProc(type(Path())):
        def read_text(self, *args, **kwargs) -> str:
            raise FileNotFoundError(str(self))

    monkeypatch.setattr(lake, "Path", NoProc)
    assert lake.pid_alive(os.getpid()) is True
    assert lake.pid_alive(dead_pid()) is False


def test_object_stores_get_one_complete_object_and_no_temporary() -> None:
    root = UPath(f"memory://lake-{uuid.uuid4().hex}")
    target = root / "asset.parquet"
    lake.write_parquet_atomic(table(1.0, 4), target)
    assert [p.name for p in root.iterdir()] == ["asset.parquet"]
    with pytest.raises(RuntimeError), lake.atomic_file(target) as fh:
        fh.write(b"partial")
        raise RuntimeError("the write fails before it is complete")
    assert lake.read_parquet(target)["value"].to_pylist() == [1.0] * 4
    lake.write_bytes_atomic(b"new", root / "f.bin")
    assert (root / "f.bin").read_bytes() == b"new"
    assert lake.sweep_orphans(target) == []


def test_a_writer_killed_at_any_step_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    target = tmp_path / "lake" / "asset.parquet"
    counted = writer("parquet", str(tmp_path / "count.parquet"), "2.0", "20", "1", "--count")
    assert counted.returncode == 0, counted.stderr
    steps = int(counted.stdout.split("steps")[1])
    assert steps == 4  # named, written, before and after the rename
    for step in range(steps):
        lake.write_parquet_atomic(table(1.0, 10), UPath(target))
        killed = writer("parquet", str(target), "2.0", "20", "1", "--kill-at", str(step))
        assert killed.returncode == -9, (step, killed.stderr)
        values = lake.read_parquet(UPath(target))["value"].to_pylist()
        assert values in ([1.0] * 10, [2.0] * 20), step
        expect_new = step == steps - 1  # killed after the rename: the new file is in place
        assert (values == [2.0] * 20) == expect_new, step
        lake.write_parquet_atomic(table(3.0, 5), UPath(target))  # the next write works
        assert lake.read_parquet(UPath(target))["value"].to_pylist() == [3.0] * 5
        assert temporaries(target.parent) == [], step  # and removed the dead writer's debris


def test_object_store_tables_are_read_in_one_get(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ranged read could span two versions of an object replaced meanwhile: one GET."""
    target = UPath(f"memory://lake-{uuid.uuid4().hex}") / "asset.parquet"
    lake.write_parquet_atomic(table(1.0, 3), target)

    def no_ranged_reads(self, *args, **kwargs):
        raise AssertionError("opened for ranged reads")

    monkeypatch.setattr(type(target), "open", no_ranged_reads)
    assert lake.read_parquet(target)["value"].to_pylist() == [1.0] * 3


@pytest.mark.parametrize("where", ["local", "memory"])
def test_arrow_reads_the_lake_through_no_python_object(tmp_path: Path, where: str) -> None:
    """Arrow's worker threads can drop a reader's last reference after the read has
    returned; dropping a Python file or `bytes` takes the GIL, and a thread that asks for it
    while the interpreter shuts down aborted the process at exit ("terminate called without
    an active exception", a `formula-assets search` whose output was complete)."""
    root = UPath(tmp_path) if where == "local" else UPath(f"memory://lake-{uuid.uuid4().hex}")
    target = root / "asset.parquet"
    lake.write_parquet_atomic(table(1.0, 3), target)
    with lake.native_source(target) as source:
        assert isinstance(source, pa.OSFile if where == "local" else pa.BufferReader)
        assert pq.ParquetFile(source).read()["value"].to_pylist() == [1.0] * 3
    data = target.read_bytes()
    held = sys.getrefcount(data)
    reader = lake.arrow_buffer_reader(data)
    assert sys.getrefcount(data) == held  # a copy in Arrow's memory, not a view of `data`
    del data
    assert pq.ParquetFile(reader).read()["value"].to_pylist() == [1.0] * 3


def blocks(rows_per_group: int | None) -> pa.Table:
    """Four blocks of three rows, (fold, method) ordered as the search index is."""
    keys = [(fold, method) for fold in (1, 2) for method in ("a", "b")]
    data = pa.table(
        {
            "fold": pa.array([f for f, _ in keys for _ in range(3)], pa.int8()),
            "method": [m for _, m in keys for _ in range(3)],
            "value": [float(i) for i in range(12)],
        }
    )
    if rows_per_group is None:
        return data
    return data.replace_schema_metadata({lake.ROW_GROUP_ROWS_KEY: str(rows_per_group)})


@pytest.mark.parametrize("where", ["local", "memory"])
def test_a_reader_gets_the_rows_and_columns_it_names(tmp_path: Path, where: str) -> None:
    root = UPath(tmp_path) if where == "local" else UPath(f"memory://lake-{uuid.uuid4().hex}")
    target = root / "index.parquet"
    lake.write_parquet_atomic(blocks(3), target)
    assert lake.read_parquet(target).equals(blocks(3))  # whole, schema metadata included
    part = lake.read_parquet(target, ["value"], {"fold": [2], "method": ["a", "b"]})
    assert part.column_names == ["value"]
    assert part["value"].to_pylist() == [6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
    assert lake.read_parquet(target, where={"fold": [3]}).num_rows == 0
    one = lake.read_parquet(target, where={"method": ["b"], "fold": [1]})
    assert one.column_names == ["fold", "method", "value"]
    assert one["value"].to_pylist() == [3.0, 4.0, 5.0]
    if where == "local":
        schema = lake.read_parquet_schema(target)
        assert schema.names == ["fold", "method", "value"]
        assert schema.metadata[lake.ROW_GROUP_ROWS_KEY] == b"3"


def test_row_groups_follow_the_table_and_a_read_skips_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    grouped, whole = UPath(tmp_path / "grouped.parquet"), UPath(tmp_path / "whole.parquet")
    lake.write_parquet_atomic(blocks(3), grouped)
    lake.write_parquet_atomic(blocks(None), whole)
    assert pq.ParquetFile(str(grouped)).num_row_groups == 4
    assert pq.ParquetFile(str(whole)).num_row_groups == 1
    read: list[list[int]] = []
    original = pq.ParquetFile.read_row_groups

    def recording(self, row_groups, *args, **kwargs):
        read.append(list(row_groups))
        return original(self, row_groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", recording)
    values = lake.read_parquet(grouped, ["value"], {"fold": [2], "method": ["b"]})
    assert values["value"].to_pylist() == [9.0, 10.0, 11.0]
    assert read == [[3]]
