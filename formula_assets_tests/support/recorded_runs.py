"""Runs as Dagster records them, made by hand: a small real code location and its instance,
runs in a given state begun by a given process, and the pid of a process that is gone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.remote_origin import (
    InProcessCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from formula_assets_tests.support.automation import definitions
from formula_assets_tests.support.sparql_server import FakeWdqs

KEY = dg.AssetKey("wikidata_formulae")


@pytest.fixture
def small(
    tmp_path: Path, sparql_server: FakeWdqs
) -> Iterator[tuple[dg.Definitions, dg.DagsterInstance]]:
    """Four real assets and an instance in SQLite (as the project's)."""
    defs = definitions(tmp_path / "lake", sparql_server.endpoint)
    with dg.instance_for_test() as instance:
        yield defs, instance


def a_run(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    status: dg.DagsterRunStatus,
    pid: int,
    key: dg.AssetKey = KEY,
) -> str:
    """A run of `key` (`wikidata_formulae` unless said): created (announcing what it will
    build), then queued, or begun by process `pid`."""
    job = defs.resolve_implicit_global_asset_job_def()
    location = InProcessCodeLocationOrigin(LoadableTargetOrigin(python_file=__file__))
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(location, "__repository__"), job.name)
    run = instance.create_run_for_job(
        job, asset_selection=frozenset({key}), remote_job_origin=origin
    )
    event = {
        dg.DagsterRunStatus.QUEUED: DagsterEventType.RUN_ENQUEUED,
        dg.DagsterRunStatus.STARTED: DagsterEventType.RUN_START,
    }[status]
    instance.report_dagster_event(DagsterEvent(event.value, job.name, pid=pid), run.run_id)
    assert instance.get_run_by_id(run.run_id).status == status
    return run.run_id


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid
