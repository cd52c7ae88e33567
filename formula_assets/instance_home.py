"""The persistent Dagster instance folder shared by the CLI, `dagster dev` and tests."""

from __future__ import annotations

import os
from pathlib import Path

from formula_assets import settings

INSTANCE_YAML = """\
# The formula_assets Dagster instance (runs, materializations, schedules).
telemetry:
  enabled: false
"""


def ensure_dagster_home(home: Path | None = None) -> Path:
    """Create the instance folder with telemetry off, and point DAGSTER_HOME at it."""
    home = (home or settings.dagster_home()).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML, encoding="utf-8")
    os.environ[settings.DAGSTER_HOME_ENV] = str(home)
    return home
