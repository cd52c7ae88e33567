"""Run the real `formula-assets` command against a throw-away instance and data lake."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "formula-assets"
SAMPLE = 400


@dataclass
class Pipeline:
    home: Path
    lake: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI), *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def pipeline(tmp: Path, embedding_cache: Path, **extra: str) -> Pipeline:
    home, lake = tmp / "dagster_home", tmp / "lake"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "FORMULA_ASSETS_DATA_LAKE": str(lake),
        "FORMULA_ASSETS_EMBEDDING_CACHE": str(embedding_cache),
        "FORMULA_ASSETS_SAMPLE": str(SAMPLE),
        "FORMULA_ASSETS_MIN_FORMULAE": "100",
        "FORMULA_ASSETS_PROFILE": "smoke",
        "HF_HUB_OFFLINE": "1",
        **extra,
    }
    for name in ("FORMULA_ASSETS_SOURCE", "FORMULA_ASSETS_EMBEDDING_MODEL"):
        if name not in extra:
            env.pop(name, None)
    return Pipeline(home, lake, env)
