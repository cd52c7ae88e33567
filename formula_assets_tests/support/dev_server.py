"""A real `dg dev` (web server, daemon, code server) on 127.0.0.1 for tests, and its GraphQL.

`dg dev` runs in a process group of its own, with SIGINT handled (a test process started in
the background of a shell inherits it ignored), and the group is stopped as a whole, however
the test ends. A few helpers of its runs (log tailers and their watchers) outlive the group
for a moment: every process of that instance (its DAGSTER_HOME in the environment) is waited
for, then killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from formula_assets.core.processes import stop_group

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(base: str, query: str, variables: Mapping[str, Any] | None = None) -> dict:
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query, "variables": dict(variables or {})}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    if body.get("errors"):
        raise RuntimeError(f"GraphQL errors: {body['errors']}")
    return body["data"]


def location_name(base: str) -> str:
    entries = graphql(
        base, "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"
    )
    (location,) = [e["name"] for e in entries["workspaceOrError"]["locationEntries"]]
    return location


def launch_job(base: str, job: str) -> str:
    """Launch a job as the UI's Launch button does (through the run queue); its run id."""
    data = graphql(
        base,
        """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
            __typename
            ... on LaunchRunSuccess { run { runId } }
            ... on PythonError { message }
        } }""",
        {
            "params": {
                "selector": {
                    "repositoryLocationName": location_name(base),
                    "repositoryName": "__repository__",
                    "jobName": job,
                },
                "runConfigData": {},
            }
        },
    )["launchRun"]
    if data["__typename"] != "LaunchRunSuccess":
        raise RuntimeError(f"launching {job} failed: {data}")
    return data["run"]["runId"]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def dagster_dev(env: Mapping[str, str], log: Path, timeout: float = 180) -> Iterator[str]:
    """`dg dev` on a free port of 127.0.0.1 with `env` (its DAGSTER_HOME); yields the base
    URL once the web server answers. The whole process group is stopped afterwards."""
    port = free_port()
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(BIN / "dg"), "dev", "-h", "127.0.0.1", "-p", str(port)],
            cwd=ROOT,
            env={**env, "VIRTUAL_ENV": sys.prefix},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole below
            # a test run started in the background of a non-interactive shell inherits SIGINT
            # ignored; so started, `dg dev` outlived SIGTERM until the SIGKILL 30 s later
            # (with SIGINT handled, it stopped in 3.6 s)
            preexec_fn=_default_sigint,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"{base}/server_info", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "dg dev did not come up:\n" + log.read_text()[-3000:]
                    ) from None
                time.sleep(1)
        yield base
    finally:
        stop_group(server, grace_s=30)  # run workers that outlived it are in its group
        stop_processes_of(env["DAGSTER_HOME"])


def processes_of(dagster_home: str) -> list[int]:
    """Processes (other than this one) whose environment names this instance."""
    marker = f"DAGSTER_HOME={dagster_home}\0".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes() + b"\0":
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return [pid for pid in found if pid != os.getpid()]


def stop_processes_of(dagster_home: str, grace_s: float = 30) -> None:
    deadline = time.monotonic() + grace_s
    while processes_of(dagster_home) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in processes_of(dagster_home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
