"""Stopping a process group: the leader by SIGTERM, or SIGKILL when it ignores SIGTERM, and
every member that outlives it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from formula_assets.core.processes import stop_group


def running(pid: int) -> bool:
    """Alive and not a zombie awaiting its parent."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def group(tmp_path: Path, leader_ignores_term: bool) -> tuple[subprocess.Popen, int]:
    """A leader in its own session and a child of it that ignores SIGTERM; the child's pid."""
    pid_file = tmp_path / "child.pid"
    child = (  # its pid written once SIGTERM is ignored
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    )
    leader = (
        "import signal, subprocess, sys, time\n"
        f"if {leader_ignores_term}: signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "time.sleep(300)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", leader], start_new_session=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    return process, int(pid_file.read_text())


def test_the_leader_stops_on_sigterm_and_a_member_that_ignores_it_is_killed(tmp_path) -> None:
    process, child = group(tmp_path, leader_ignores_term=False)
    started = time.monotonic()
    stop_group(process, grace_s=20)
    assert process.returncode == -15 and time.monotonic() - started < 10
    deadline = time.monotonic() + 5
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(child)


def test_a_leader_that_ignores_sigterm_is_killed_after_the_grace(tmp_path) -> None:
    process, child = group(tmp_path, leader_ignores_term=True)
    started = time.monotonic()
    stop_group(process, grace_s=1)
    assert process.returncode == -9 and time.monotonic() - started >= 1
    deadline = time.monotonic() + 5
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(child)


def test_a_group_already_gone_is_no_error() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    process.wait(timeout=30)
    stop_group(process, grace_s=1)
    assert process.returncode == 0
