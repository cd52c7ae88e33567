"""Stopping a process started in a session of its own (`start_new_session=True`), with
everything it started: a server's workers, a daemon's runs.

Signals go to the process group, so children are stopped with their leader; SIGKILL follows
SIGTERM after a grace period, and members that outlive the leader are killed last (orphaned,
they would hold ports and files)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_group(process: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM to the group; SIGKILL after `grace_s` if the leader still runs; then SIGKILL to
    whatever of the group remains. Returns once the leader is reaped."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    _signal_group(process.pid, signal.SIGKILL)


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # no member left
        os.killpg(group, signum)
