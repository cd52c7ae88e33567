"""`formula-assets distributed`: the pipeline on a distributed deployment, for real, on one
machine — PostgreSQL as the shared Dagster instance storage and the Celery broker, Celery
worker processes that run the steps, and the `refresh` loop driving it.

Each refresh round becomes Dagster runs of the Celery code location (`deploy/celery.py`):
the round's unpartitioned assets as one run whose steps the workers share, and every
partition of `fold_models` as a run of its own, all launched at once; the `training` pool
of the instance limits how many models train at the same time. When it is done (or
interrupted), every process it started is stopped and, unless kept, its folder removed.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from formula_assets.cli.refresh import RefreshReport, refresh
from formula_assets.cli.runs import Job, Print, RefreshError, data_versions, plan_jobs
from formula_assets.core import settings
from formula_assets.core.settings import CELERY_BROKER_ENV as BROKER_ENV
from formula_assets.core.settings import POSTGRES_URL_ENV, PROFILE_ENV
from formula_assets.defs.dagster_internals import location_asset_job
from formula_assets.defs.plan import Entry
from formula_assets.deploy.local import (
    Postgres,
    Process,
    celery_worker,
    stopped_on_signals,
    wait_until_ready,
)

LOCATION_MODULE = "formula_assets.deploy.celery"
BACKEND = "rpc://"
TRAINING_POOL = "training"
CELERY_WORKER_KEY = "Celery worker"


@dataclass(frozen=True)
class Placement:
    """Where one step ran."""

    run_id: str
    step: str
    partition: str | None
    worker: str
    pid: int | None
    started: float
    finished: float


@dataclass
class DistributedReport:
    refresh: RefreshReport
    placements: list[Placement] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 0
    training_slots: int = 0
    root: Path | None = None
    data_versions: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "workers": self.workers,
            "training_slots": self.training_slots,
            "max_concurrent_training": self.max_concurrent("fold_models"),
            "ran": self.refresh.ran,
            "placements": [asdict(p) for p in self.placements],
            "data_versions": self.data_versions,
        }

    def max_concurrent(self, step: str) -> int:
        """How many steps named `step` ran at the same time, at most."""
        edges = sorted(
            [(p.started, 1) for p in self.placements if p.step == step]
            + [(p.finished, -1) for p in self.placements if p.step == step],
            key=lambda edge: (edge[0], edge[1]),
        )
        running = peak = 0
        for _, change in edges:
            running += change
            peak = max(peak, running)
        return peak


# The run processes of the Celery runner: each loads the Celery code location once.
_JOB: Any = None


def _initialize_launcher() -> None:
    global _JOB
    _JOB = location_asset_job(LOCATION_MODULE, "defs", str(settings.project_root() or Path.cwd()))
    _JOB.get_definition()


def _launch(job: Job) -> tuple[Job, bool, str]:
    """One run of the Celery code location: its steps go to the workers as Celery tasks."""
    keys = job.asset_keys
    tags = job.tags()
    if job.partition is not None:
        definition = _JOB.get_definition()
        tags |= definition.get_tags_for_partition_key(job.partition, selected_asset_keys=keys)
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(_JOB, instance, tags=tags, asset_selection=keys)
        return job, result.success, result.run_id


class CeleryRunner:
    """Runs each refresh round as runs of the Celery code location. The runs are driven from
    a few processes (a run mostly waits for its steps); the workers do the work."""

    def __init__(self, launchers: int) -> None:
        self.launchers = launchers
        self.run_ids: list[str] = []

    def plan(self, defs: dg.Definitions, frontier: Sequence[Entry]) -> list[Job]:
        return plan_jobs(defs, frontier, together=True)

    def expect(self, defs: dg.Definitions, entries: Sequence[Entry]) -> None:
        """Nothing to get ready: the workers are the deployment's, already running."""

    def run(
        self, defs: dg.Definitions, instance: dg.DagsterInstance, jobs: list[Job], echo: Print
    ) -> list[Job]:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            min(self.launchers, len(jobs)), context, initializer=_initialize_launcher
        ) as pool:
            results = list(pool.map(_launch, jobs))
        self.run_ids += [run_id for _, _, run_id in results]
        return [job for job, success, _ in results if not success]


def placements(instance: dg.DagsterInstance, run_ids: Sequence[str]) -> list[Placement]:
    """Worker hostname, pid and times of every step of the runs, from the event log."""
    out = []
    for run_id in run_ids:
        run = instance.get_run_by_id(run_id)
        partition = run.tags.get("dagster/partition") if run else None
        records = instance.all_logs(run_id)
        workers: dict[str, str] = {}
        starts: dict[str, tuple[float, int | None]] = {}
        for record in records:
            event = record.dagster_event
            if event is None or record.step_key is None:
                continue
            data = event.event_specific_data
            metadata = getattr(data, "metadata", None) or {}
            if CELERY_WORKER_KEY in metadata:
                workers[record.step_key] = str(metadata[CELERY_WORKER_KEY].value)
            if event.event_type_value == "STEP_START":
                starts[record.step_key] = (record.timestamp, event.pid)
            if event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
                began, pid = starts.get(record.step_key, (record.timestamp, None))
                out.append(
                    Placement(
                        run_id,
                        record.step_key,
                        partition,
                        workers.get(record.step_key, "?"),
                        pid,
                        began,
                        record.timestamp,
                    )
                )
    return sorted(out, key=lambda p: p.started)


INSTANCE_SETTINGS = Path(__file__).resolve().parent.parent / "deploy" / "dagster.yaml"


def _refresh_through_workers(
    workers: int, slots: int
) -> tuple[RefreshReport, list[Placement], dict[str, str]]:
    """The refresh loop over the Celery code location, in a process started with the
    deployment's environment: it loads the definitions under the settings the workers load
    them with (the profile fixes the method partitions when the registry is first imported,
    and this command's own process imported it before the profile was chosen)."""
    from formula_assets.cli.runs import say
    from formula_assets.deploy.celery import defs as location

    with dg.DagsterInstance.get() as instance:
        instance.event_log_storage.set_concurrency_slots(TRAINING_POOL, slots)
        runner = CeleryRunner(launchers=2 * workers)
        report = refresh(location, instance, echo=say, workers=workers, runner=runner)
        return report, placements(instance, runner.run_ids), data_versions(location, instance)


def _drive_child(send: Connection, workers: int, slots: int) -> None:
    try:
        send.send((True, _refresh_through_workers(workers, slots)))
    except RefreshError as exc:  # a failed run: said in this process, as a local refresh does
        send.send((False, str(exc)))


def _drive(workers: int, slots: int) -> tuple[RefreshReport, list[Placement], dict[str, str]]:
    """`_refresh_through_workers` in a new process, which starts with this process's
    environment (the deployment's, set by the caller); killed if this one is interrupted."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_drive_child, args=(send, workers, slots), name="refresh")
    child.start()
    send.close()
    try:
        ok, outcome = receive.recv()
    except EOFError:
        child.join()
        raise RefreshError(
            f"the refresh process ended without a result (exit code {child.exitcode}); "
            "its error is printed above"
        ) from None
    except BaseException:
        child.kill()
        raise
    finally:
        child.join()
    if not ok:
        raise RefreshError(outcome)
    return outcome


def run_distributed(
    *,
    workers: int = 2,
    profile: str = "smoke",
    training_slots: int | None = None,
    root: Path | None = None,
    lake: str | None = None,
    keep: bool = False,
    env: Mapping[str, str] | None = None,
    echo: Print = print,
) -> DistributedReport:
    """Start PostgreSQL and `workers` Celery workers, refresh everything through them, stop."""
    started = time.perf_counter()
    folder = Path(root) if root else Path(tempfile.mkdtemp(prefix="formula-assets-distributed-"))
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    home = folder / "dagster_home"
    home.mkdir(exist_ok=True)
    slots = workers if training_slots is None else training_slots
    # PostgreSQL runs as its own user: its folder must be reachable by it (a fresh folder in the
    # system's temporary directory, wherever `root` is).
    postgres = Postgres(Path(tempfile.mkdtemp(prefix="formula-assets-postgres-")))
    processes: list[Process] = []
    previous_env = dict(os.environ)
    try:
        with stopped_on_signals():
            echo(f"starting PostgreSQL (unix socket in {postgres.socket})")
            postgres.start()
            broker = "sqla+" + postgres.url()
            shutil.copy(INSTANCE_SETTINGS, home / "dagster.yaml")  # the shipped settings
            celery_yaml = folder / "celery.yaml"
            celery_yaml.write_text(
                yaml.safe_dump({"execution": {"config": {"broker": broker, "backend": BACKEND}}})
            )
            shared = {
                **(env or os.environ),
                "DAGSTER_HOME": str(home),
                settings.DATA_LAKE_ENV: lake or str(folder / "lake"),
                PROFILE_ENV: profile,
                BROKER_ENV: broker,
                POSTGRES_URL_ENV: postgres.url(),
                "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "HF_HUB_OFFLINE": "1",
                # dagster-celery starts `celery` from the PATH: this environment's first
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            }
            os.environ.clear()
            os.environ.update(shared)
            echo(f"starting {workers} Celery worker(s)")
            cwd = settings.project_root() or Path.cwd()
            # The first worker creates the broker's tables; workers starting together race
            # to create them and all but one fail, so the others start once it is ready.
            for batch in ([1], range(2, workers + 1)):
                group = [
                    celery_worker(f"w{i}", celery_yaml, shared, folder / f"w{i}.log", cwd, 1)
                    for i in batch
                ]
                processes.extend(group)
                wait_until_ready(group)
            # the environment is the deployment's now: the refresh starts in it
            report, found, versions = _drive(workers, slots)
    finally:
        for process in processes:
            process.stop()
        postgres.stop()
        shutil.rmtree(postgres.root, ignore_errors=True)
        os.environ.clear()
        os.environ.update(previous_env)
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return DistributedReport(
        report,
        found,
        time.perf_counter() - started,
        workers,
        slots,
        folder if keep else None,
        versions,
    )


def print_report(report: DistributedReport, echo: Print = print) -> None:
    width = max((len(p.step) for p in report.placements), default=4)
    echo(f"{'step':<{width}}  {'partition':<16} {'worker':<20} {'pid':>7} {'seconds':>8}")
    for p in report.placements:
        echo(
            f"{p.step:<{width}}  {p.partition or '':<16} {p.worker:<20} {p.pid or '?':>7} "
            f"{p.finished - p.started:8.1f}"
        )
    hosts = sorted({p.worker for p in report.placements})
    echo(
        f"{len(report.placements)} steps on {len(hosts)} worker(s) ({', '.join(hosts)}); "
        f"at most {report.max_concurrent('fold_models')} of {report.training_slots} training "
        f"slot(s) in use; wall time {report.seconds:.1f} s"
    )
