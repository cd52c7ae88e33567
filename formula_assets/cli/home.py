"""The persistent Dagster instance folder shared by the CLI, `dagster dev` and tests.

Its `dagster.yaml` holds the limits every entry point obeys (the automation sensor's runs, the
UI's, `formula-assets refresh`): Dagster enforces pools in every executor and in its run
queue, so a limit written here holds whoever launched the run.
"""

from __future__ import annotations

import os
from pathlib import Path

from formula_assets.core.settings import DAGSTER_HOME_ENV, Settings

TRAINING_POOL = "training"
# Peak memory of one training process (`default` profile, measured about 1.0 GiB).
TRAINING_GIB = 1.0

# What `formula-assets home` wrote before the instance carried limits: still replaced.
LEGACY_INSTANCE_YAML = """\
# The formula_assets Dagster instance (runs, materializations, schedules).
telemetry:
  enabled: false
"""

INSTANCE_YAML = """\
# The formula_assets Dagster instance (runs, materializations, schedules), shared by the
# automation sensor, the UI and `formula-assets refresh`.
telemetry:
  enabled: false

concurrency:
  pools:
    # fold_models trains in the `training` pool, one torch thread per model: at most this
    # many train at once, whoever launched them (written from this machine: {cpus} CPU
    # core(s), {memory_gib:.0f} GiB). Runs beyond it wait in the run queue (no process, no
    # memory); steps of an in-process run (`formula-assets refresh`) wait for a slot.
    default_limit: {slots}
    granularity: op
{run_queue}
# Pool slots held by runs that ended without giving them back (a killed process) are freed.
run_monitoring:
  enabled: true
  free_slots_after_run_end_seconds: 30
"""


RUN_QUEUE = """
# Queued runs (the sensor's, the UI's) are looked at every second, not every 5 s: on one
# machine the queue is short, and a change flowing down level by level waits at each level.
run_queue:
  dequeue_interval_seconds: 1
"""
# What it wrote before the run queue was polled every second: replaced too.
PREVIOUS_INSTANCE_YAML = INSTANCE_YAML.replace("{run_queue}", "")
INSTANCE_YAML = INSTANCE_YAML.replace("{run_queue}", RUN_QUEUE)

# Where Dagster records that the "join the community" prompt was shown for this instance; the
# web UI otherwise opens with a modal over the asset graph on localhost.
NUX_SEEN = Path(".nux") / "nux.yaml"


def cpu_count() -> int:
    """CPU cores this process may use (a container's or `taskset`'s share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0  # unknown: CPU cores alone decide


def training_slots(cpus: int | None = None, memory: int | None = None) -> int:
    """Models this machine trains well at once: one per core (each trains on one torch
    thread; more threads per process were slower here), and no more than memory holds."""
    cpus = cpu_count() if cpus is None else cpus
    memory = memory_bytes() if memory is None else memory
    slots = cpus
    if memory > 0:
        slots = min(slots, int(memory / 2**30 / TRAINING_GIB))
    return max(1, slots)


def instance_yaml(template: str = INSTANCE_YAML) -> str:
    return template.format(
        slots=training_slots(), cpus=cpu_count(), memory_gib=memory_bytes() / 2**30
    )


def ensure_dagster_home(home: Path | None = None) -> Path:
    """Create the instance folder (telemetry off, training pool limited, onboarding prompt
    marked seen) and point DAGSTER_HOME at it. A `dagster.yaml` of one's own is never
    overwritten; the ones earlier versions wrote (unlimited, or a slower queue) are replaced."""
    home = (home or Settings.from_environment().dagster_home).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    generated = (LEGACY_INSTANCE_YAML, instance_yaml(PREVIOUS_INSTANCE_YAML))
    if not config.exists() or config.read_text(encoding="utf-8") in generated:
        config.write_text(instance_yaml(), encoding="utf-8")
    nux = home / NUX_SEEN
    if not nux.exists():
        nux.parent.mkdir(parents=True, exist_ok=True)
        nux.write_text("seen: 1\n", encoding="utf-8")
    os.environ[DAGSTER_HOME_ENV] = str(home)  # for Dagster, and the processes it starts
    return home
