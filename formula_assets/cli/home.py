"""The persistent Dagster instance folder shared by the CLI, `dagster dev` and tests."""

from __future__ import annotations

import os
from pathlib import Path

from formula_assets.core import settings

INSTANCE_YAML = """\
# The formula_assets Dagster instance (runs, materializations, schedules).
telemetry:
  enabled: false
"""


# Where Dagster records that the "join the community" prompt was shown for this instance; the
# web UI otherwise opens with a modal over the asset graph on localhost.
NUX_SEEN = Path(".nux") / "nux.yaml"


def ensure_dagster_home(home: Path | None = None) -> Path:
    """Create the instance folder (telemetry off, onboarding prompt marked seen) and point
    DAGSTER_HOME at it. Existing files are never overwritten."""
    home = (home or settings.dagster_home()).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML, encoding="utf-8")
    nux = home / NUX_SEEN
    if not nux.exists():
        nux.parent.mkdir(parents=True, exist_ok=True)
        nux.write_text("seen: 1\n", encoding="utf-8")
    os.environ[settings.DAGSTER_HOME_ENV] = str(home)
    return home
