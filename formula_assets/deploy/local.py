"""The processes of a distributed deployment, started on one machine: PostgreSQL (the shared
Dagster instance storage, and the Celery broker) and Celery workers.

Everything listens on a unix socket or nothing at all: PostgreSQL gets `listen_addresses=''`
and a socket folder of its own; the broker is kombu's SQLAlchemy transport on that database,
so no other server is needed. Each process is started in its own process group and stopped
with it, also when the caller is interrupted.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formula_assets.core.processes import stop_group

POSTGRES_USER = "postgres"
DATABASE = "dagster"
PORT = 5432  # the socket file's name only: no TCP listener is opened
READY_TIMEOUT_S = 60.0


class DeploymentError(RuntimeError):
    """A process of the deployment did not start; the message says which and why."""


def postgres_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)
    if candidates:
        return str(candidates[0])
    raise DeploymentError(
        f"PostgreSQL's {name} is not installed (Debian: apt-get install postgresql)"
    )


def _run(command: Sequence[str], what: str, **kwargs: object) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, **kwargs)
    if done.returncode != 0:
        raise DeploymentError(f"{what} failed: {(done.stderr or done.stdout).strip()[-1500:]}")


@dataclass
class Postgres:
    """A throw-away PostgreSQL server in `root`, reachable only through its unix socket."""

    root: Path
    data: Path = field(init=False)
    socket: Path = field(init=False)

    def __post_init__(self) -> None:
        self.data = self.root / "pgdata"
        self.socket = self.root / "pgsocket"

    def _as_server_user(self) -> list[str]:
        """PostgreSQL refuses to run as root: as root, run it as the `postgres` user."""
        if os.geteuid() != 0:
            return []
        try:
            pwd.getpwnam(POSTGRES_USER)
        except KeyError:
            raise DeploymentError("running as root needs a `postgres` system user") from None
        return ["runuser", "-u", POSTGRES_USER, "--"]

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        self.data.mkdir(parents=True)
        self.socket.mkdir(parents=True)
        prefix = self._as_server_user()
        if prefix:
            for path in (self.root, self.data, self.socket):
                shutil.chown(path, POSTGRES_USER, POSTGRES_USER)
        _run(
            [*prefix, postgres_bin("initdb"), "-D", str(self.data), "-U", POSTGRES_USER,
             "--auth=trust", "-E", "UTF8", "--no-sync"],
            "initdb",
        )  # fmt: skip
        options = f"-k {self.socket} -p {PORT} -c listen_addresses='' -c fsync=off"
        _run(
            [*prefix, postgres_bin("pg_ctl"), "-D", str(self.data), "-o", options,
             "-l", str(self.root / "postgres.log"), "-w", "-t", "60", "start"],
            "pg_ctl start",
        )  # fmt: skip
        _run(
            [postgres_bin("psql"), "-h", str(self.socket), "-p", str(PORT), "-U", POSTGRES_USER,
             "-c", f"CREATE DATABASE {DATABASE}"],
            "creating the dagster database",
        )  # fmt: skip

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                [*self._as_server_user(), postgres_bin("pg_ctl"), "-D", str(self.data),
                 "-m", "fast", "-w", "stop"],
                capture_output=True, timeout=60,
            )  # fmt: skip

    def url(self, driver: str = "postgresql+psycopg2") -> str:
        """SQLAlchemy URL over the unix socket (psycopg2: a plain `postgresql://` would mean
        psycopg 3, which dagster-postgres does not install)."""
        return f"{driver}://{POSTGRES_USER}@/{DATABASE}?host={self.socket}&port={PORT}"


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def stop(self, grace_s: float = 15.0) -> None:
        stop_group(self.popen, grace_s)


def start_process(
    name: str, command: Sequence[str], env: Mapping[str, str], log: Path, cwd: Path
) -> Process:
    handle = log.open("wb")
    popen = subprocess.Popen(
        list(command), env=dict(env), cwd=cwd, stdout=handle, stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped as a whole
    )  # fmt: skip
    handle.close()
    return Process(name, popen, log)


def celery_worker(
    name: str, config_yaml: Path, env: Mapping[str, str], log: Path, cwd: Path, concurrency: int
) -> Process:
    """`dagster-celery worker start`: one Celery worker taking steps from the broker; its
    Celery node name is `name@<hostname>`. It reserves no more steps than it can run
    (prefetch multiplier 1): steps last minutes, and a worker that reserved a queue's worth
    would leave the others idle."""
    command = [
        str(Path(sys.executable).parent / "dagster-celery"), "worker", "start",
        "-A", "dagster_celery.app", "-y", str(config_yaml), "-n", name,
        "--", f"--concurrency={concurrency}", "--prefetch-multiplier=1",
        "--without-gossip", "--without-mingle",
    ]  # fmt: skip
    return start_process(name, command, env, log, cwd)


def wait_until_ready(workers: Sequence[Process], timeout_s: float = READY_TIMEOUT_S) -> None:
    """Until every worker's log says it is ready (Celery prints `ready.`)."""
    deadline = time.monotonic() + timeout_s
    pending = list(workers)
    while pending:
        for worker in list(pending):
            if worker.popen.poll() is not None:
                raise DeploymentError(
                    f"{worker.name} exited: {worker.log.read_text(errors='replace')[-2000:]}"
                )
            if " ready." in worker.log.read_text(errors="replace"):
                pending.remove(worker)
        if time.monotonic() > deadline:
            raise DeploymentError(f"workers not ready after {timeout_s:.0f} s: {pending}")
        time.sleep(0.25)


@contextlib.contextmanager
def stopped_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end the deployment as Ctrl-C does: through `finally` blocks."""

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
