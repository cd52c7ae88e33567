"""Staged tables: a new version of a table becomes what readers see only once the checks
that gate it have passed.

A gated version is written (atomically, like every table) to
`<root>/_staged/<table>/<run_id>.parquet`, where `<table>` is the published path without
`.parquet` (`opt_graphs`, or `<asset>/<partition>`), after a manifest `<run_id>.json` that
names the gating checks. Each check that passes leaves a marker `<run_id>.passed.<check>`;
the marker that completes the set publishes the version: one rename over the published path
on a local disk, one server-side copy on an object store (visible all at once, like a PUT),
then the staged object is deleted. Checks finishing together may both publish: the second
finds nothing staged and changes nothing.

A version whose check failed stays staged, for inspection, and the published file keeps the
last good version. When the table is next written, the staged versions of finished runs are
removed; versions of runs still in progress are never touched.

Every table carries the id of the run that wrote it in its schema metadata (outside its
content hash), so the published file names the materialization it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
from upath import UPath

from formula_assets.core import lake

STAGED_FOLDER = "_staged"
PASSED = ".passed."
MANIFEST = ".json"
RUN_KEY = b"formula_assets.run_id"


@dataclass(frozen=True)
class StagedVersion:
    """One run's version of one table (or partition), waiting for its gating checks."""

    published: UPath
    folder: UPath
    run_id: str

    @property
    def table(self) -> UPath:
        return self.folder / f"{self.run_id}.parquet"

    @property
    def manifest(self) -> UPath:
        return self.folder / f"{self.run_id}{MANIFEST}"

    def marker(self, check: str) -> UPath:
        return self.folder / f"{self.run_id}{PASSED}{re.sub(r'[^A-Za-z0-9_.-]+', '_', check)}"


def staged_folder(root: UPath, published: UPath) -> UPath:
    """`<root>/_staged/<published path relative to root, without its extension>`."""
    *folders, name = published.relative_to(root).parts
    return root.joinpath(STAGED_FOLDER, *folders, name.removesuffix(published.suffix))


def staged_version(root: UPath, published: UPath, run_id: str) -> StagedVersion:
    return StagedVersion(published, staged_folder(root, published), run_id)


def stage(version: StagedVersion, table: pa.Table, checks: Sequence[str]) -> None:
    """The manifest goes first, so every staged file has one and a sweep can find it."""
    manifest = {
        "run_id": version.run_id,
        "published": str(version.published),
        "checks": sorted(checks),
    }
    for attempt in range(3):  # an empty folder may be pruned between its mkdir and the write
        try:
            lake.write_bytes_atomic(json.dumps(manifest, indent=1).encode(), version.manifest)
            break
        except FileNotFoundError:
            if attempt == 2:
                raise
    lake.write_parquet_atomic(table, version.table)


def stamped(table: pa.Table, run_id: str) -> pa.Table:
    """The table with `run_id` as the run that wrote it."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), RUN_KEY: run_id})


def written_by(path: UPath) -> str | None:
    """The run that wrote the table at `path`; None when there is none, or it is unstamped."""
    try:
        run_id = (lake.read_parquet_schema(path).metadata or {}).get(RUN_KEY)
    except FileNotFoundError:
        return None
    return run_id.decode() if run_id else None


def read_staged(version: StagedVersion) -> pa.Table | None:
    """The staged table, or None when there is none (never staged, published or swept)."""
    try:
        return lake.read_parquet(version.table)
    except FileNotFoundError:
        return None


def required_checks(version: StagedVersion) -> list[str] | None:
    """The checks that gate this version; None once it is published or swept."""
    try:
        return list(json.loads(version.manifest.read_bytes())["checks"])
    except FileNotFoundError:
        return None


def record_pass(version: StagedVersion, check: str) -> bool:
    """Mark `check` passed; publish when it completes the set. True when this call published.

    Each pass writes its marker before it looks for the others, so of two checks finishing
    together at least one sees both markers."""
    required = required_checks(version)
    if required is None or check not in required:
        return False
    lake.write_bytes_atomic(b"", version.marker(check))
    if all(_exists(version.marker(name)) for name in required):
        return publish(version, required)
    return False


def publish(version: StagedVersion, required: Sequence[str] = ()) -> bool:
    """Move the staged table onto the published path, then drop its markers and manifest.
    False when nothing was staged any more (another check step published it first)."""
    moved = _move(version.table, version.published)
    for name in required:
        _remove(version.marker(name))
    _remove(version.manifest)
    _prune(version.folder)
    return moved


def sweep(root: UPath, published: UPath, keep: str, finished: Callable[[str], bool]) -> list[str]:
    """Remove the staged versions of `published` left by finished runs (failed checks, or a
    crash mid-publication), except run `keep`'s. Returns the run ids removed."""
    folder = staged_folder(root, published)
    names = _names(folder)
    removed = []
    for run_id in _runs(names):
        if run_id == keep or not finished(run_id):
            continue
        mine = (f"{run_id}.", f".{run_id}.")  # its files and its writes' temporary files
        for name in names:
            if name.startswith(mine) and name != f"{run_id}{MANIFEST}":
                _remove(folder / name)
        _remove(folder / f"{run_id}{MANIFEST}")  # last: a partial sweep is found again
        removed.append(run_id)
    if removed:
        _prune(folder)
    return removed


def staged_runs(root: UPath, published: UPath) -> list[str]:
    """The runs with a version of `published` staged."""
    return _runs(_names(staged_folder(root, published)))


def _runs(names: Sequence[str]) -> list[str]:
    return sorted(
        n.removesuffix(MANIFEST) for n in names if n.endswith(MANIFEST) and not n.startswith(".")
    )


def _names(folder: UPath) -> list[str]:
    _forget_listings(folder)
    try:
        return sorted(p.name for p in folder.iterdir() if p.name)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _exists(path: UPath) -> bool:
    _forget_listings(path.parent)
    return path.exists()


def _forget_listings(folder: UPath) -> None:
    """Object-store clients cache listings; other processes write markers meanwhile."""
    if not lake.is_local(folder):
        folder.fs.invalidate_cache(folder.path)


def _move(source: UPath, target: UPath) -> bool:
    try:
        if lake.is_local(source):
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source.path, target.path)  # one rename: readers see old or new
            return True
        source.fs.copy(source.path, target.path)  # one server-side copy, visible at once
    except FileNotFoundError:
        return False
    _remove(source)
    return True


def _prune(folder: UPath) -> None:
    """Drop staging folders left empty, up to `_staged` itself (local disks: object stores
    have no folders)."""
    if not lake.is_local(folder):
        return
    while True:
        try:
            folder.rmdir()
        except OSError:  # not empty (another run's version), or already gone
            return
        if folder.name == STAGED_FOLDER:
            return
        folder = folder.parent


def _remove(path: UPath) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
