"""`formula-assets home`: the instance folder, and the training pool's limit from this
machine's share of cores and memory (a container's or `taskset`'s, not the host's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from formula_assets.cli import home

GIB = 2**30


def test_the_cores_are_this_process_share() -> None:
    """Pinned to one core (as `taskset -c 0` would), the process counts one, whatever the
    host has."""
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(before)})
        assert home.cpu_count() == 1
    finally:
        os.sched_setaffinity(0, before)
    assert home.cpu_count() == len(before)


def test_without_affinity_the_cores_are_the_hosts_and_at_least_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(os, "sched_getaffinity")  # as on macOS
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert home.cpu_count() == 8
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # undeterminable
    assert home.cpu_count() == 1


def test_unknown_memory_is_zero_and_leaves_the_cores_to_decide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert home.memory_bytes() == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    def unknown(name: str) -> int:
        raise ValueError(f"unknown sysconf name {name}")

    monkeypatch.setattr(os, "sysconf", unknown)
    assert home.memory_bytes() == 0
    assert home.training_slots(cpus=6) == 6


def test_each_slot_needs_the_memory_of_one_training_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert home.training_slots(cpus=8, memory=1) == 1  # a byte is known memory, not none
    monkeypatch.setattr(home, "TRAINING_GIB", 2.0)
    assert home.training_slots(cpus=16, memory=8 * GIB) == 4
    assert home.training_slots(cpus=3, memory=8 * GIB) == 3


def test_the_instance_file_says_what_machine_its_limit_was_written_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(home, "cpu_count", lambda: 4)
    monkeypatch.setattr(home, "memory_bytes", lambda: 12 * GIB + GIB // 4)
    text = home.instance_yaml()
    assert "written from this machine: 4 CPU" in text and "core(s), 12 GiB)" in text
    assert "default_limit: 4\n" in text
    monkeypatch.setattr(home, "memory_bytes", lambda: 3 * GIB)  # memory-bound
    assert "default_limit: 3\n" in home.instance_yaml()


def test_home_creates_its_folder_and_marks_the_ui_prompt_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # `ensure_dagster_home` points it away
    folder = home.ensure_dagster_home(tmp_path / "not" / "there" / "yet")
    assert folder == (tmp_path / "not" / "there" / "yet").resolve()
    assert os.environ["DAGSTER_HOME"] == str(folder)
    assert (folder / "dagster.yaml").read_text(encoding="utf-8") == home.instance_yaml()
    assert (folder / home.NUX_SEEN).read_text(encoding="utf-8") == "seen: 1\n"


def test_a_prompt_file_of_its_own_is_kept_and_a_missing_one_written_beside_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    kept = tmp_path / "kept"
    (kept / home.NUX_SEEN).parent.mkdir(parents=True)
    (kept / home.NUX_SEEN).write_text("seen: 2\n", encoding="utf-8")
    home.ensure_dagster_home(kept)
    assert (kept / home.NUX_SEEN).read_text(encoding="utf-8") == "seen: 2\n"
    emptied = tmp_path / "emptied"  # the folder is there, the file is not
    (emptied / home.NUX_SEEN).parent.mkdir(parents=True)
    home.ensure_dagster_home(emptied)
    assert (emptied / home.NUX_SEEN).read_text(encoding="utf-8") == "seen: 1\n"
