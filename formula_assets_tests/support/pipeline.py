"""Run the real `formula-assets` command against a throw-away instance and data lake."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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

    def materialize(self, *assets: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        """Only these assets, through Dagster's API, with this pipeline's package and
        instance (run outside the checkout: `python -c` puts its working directory first on
        the path, before an edited package on PYTHONPATH)."""
        script = (
            "import sys, dagster as dg; from formula_assets.definitions import defs;"
            "job = defs.resolve_implicit_global_asset_job_def();"
            "keys = [dg.AssetKey(a) for a in sys.argv[1:]];"
            "r = job.execute_in_process(instance=dg.DagsterInstance.get(), asset_selection=keys);"
            "sys.exit(0 if r.success else 1)"
        )
        return subprocess.run(
            [sys.executable, "-c", script, *assets],
            cwd=self.home.parent,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def copy_pipeline(source: Pipeline, tmp: Path) -> Pipeline:
    """The same materialized state (instance and lake) in a new place, to change freely."""
    home, lake = tmp / "dagster_home", tmp / "lake"
    shutil.copytree(source.home, home)
    shutil.copytree(source.lake, lake)
    env = {**source.env, "DAGSTER_HOME": str(home), "FORMULA_ASSETS_DATA_LAKE": str(lake)}
    return replace(source, home=home, lake=lake, env=env)


def edited_package(tmp: Path, edits: Mapping[str, Callable[[str], str]]) -> Path:
    """A copy of the package with some modules' source changed; put it first on PYTHONPATH."""
    root = tmp / "edited_package"
    shutil.copytree(
        ROOT / "formula_assets",
        root / "formula_assets",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for relative, edit in edits.items():
        path = root / "formula_assets" / relative
        before = path.read_text()
        after = edit(before)
        assert after != before, f"the edit of {relative} changed nothing"
        path.write_text(after)
    return root


def with_package(run: Pipeline, package: Path) -> Pipeline:
    return replace(run, env={**run.env, "PYTHONPATH": str(package)})


def ran(stdout: str) -> set[str]:
    """Assets a refresh materialized, from its output; partitioned ones as `asset×N`."""
    out: set[str] = set()
    for line in stdout.splitlines():
        if not line.startswith("materializing ") or "[" in line:  # `[` : a worker's own line
            continue
        rest = line.removeprefix("materializing ")
        if ": " in rest:
            name, tail = rest.split(": ", 1)
            out.add(f"{name}×{tail.split()[0]}")
        else:
            out |= {name.strip() for name in rest.split(",")}
    return out


def listed(stdout: str) -> dict[str, str]:
    """`stale`'s listing: each asset's reasons; a partitioned asset's as `asset×N` with the
    reasons of its partitions joined."""
    reasons: dict[str, set[str]] = {}
    partitions: Counter[str] = Counter()
    for line in stdout.splitlines():
        name, _status, reason = line.split("\t")
        asset = name.split("[")[0]
        reasons.setdefault(asset, set()).add(reason)
        partitions[asset] += "[" in name
    return {
        f"{asset}×{partitions[asset]}" if partitions[asset] else asset: "; ".join(sorted(why))
        for asset, why in reasons.items()
    }


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


def sparql_pipeline(tmp: Path, endpoint: str, min_formulae: int, **extra: str) -> Pipeline:
    """A pipeline whose formulae come from a (local) SPARQL endpoint."""
    return pipeline(
        tmp,
        tmp / "embedding_cache",
        FORMULA_ASSETS_SOURCE="sparql",
        FORMULA_ASSETS_SPARQL_ENDPOINT=endpoint,
        FORMULA_ASSETS_MIN_FORMULAE=str(min_formulae),
        **extra,
    )
