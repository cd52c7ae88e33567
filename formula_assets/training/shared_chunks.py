"""One chunked, deterministic computation shared by the processes that need it at once.

Two refresh workers that start fine-tuning folds together both need the frozen layers' output
of every text (`training.sentence_encoder.frozen_pass`): the same chunks, the same result.
Through a directory they split it: each process claims the chunks no one has claimed (an
exclusive create), computes and publishes them (written aside, then renamed), and reads the
others' chunks once they appear. Each chunk is computed exactly as a single process would
compute it, so the assembled result does not depend on who computed what.

A claim whose process has died, or that has not been published within `stale_s`, is taken
over; a chunk that cannot be read back is computed here. The directory is a cache: a later
call with the same key reads every chunk without computing any. A directory that refuses
writes (read-only, full, not a directory) costs only the sharing: what it already holds is
read, the rest is computed here, and a `StoreRefusedWarning` says so.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

Chunk = list[torch.Tensor]

POLL_S = 0.05
STALE_S = 600.0  # no chunk takes this long; a claim this old is abandoned


class StoreRefusedWarning(RuntimeWarning):
    """The store refused a claim or a chunk: the work was done in this process alone."""


def shared_chunks(
    directory: Path,
    count: int,
    compute: Callable[[int], Chunk],
    stale_s: float = STALE_S,
    poll_s: float = POLL_S,
    warn: Callable[[str], None] | None = None,
) -> list[Chunk]:
    """`[compute(k) for k in range(count)]`, computed once between the processes that call
    this with the same directory. `warn` hears of a store that refused writes (by default a
    `StoreRefusedWarning`)."""
    with contextlib.suppress(OSError):  # a store that cannot be made refuses each claim below
        directory.mkdir(parents=True, exist_ok=True)
    refusals: list[OSError] = []
    results: dict[int, Chunk] = {}
    for k in range(count):  # claim and compute what no one else is computing
        if not _published(directory, k).exists():
            _take(directory, k, compute, results, refusals)
    for k in range(count):  # then read (or take over) the others
        while k not in results:
            try:
                found = _read(directory, k)
                abandoned = found is None and _abandoned(directory, k, stale_s)
                if abandoned:
                    _release(directory, k)
            except OSError as refused:  # a claim the store will not let go: no one can publish
                refusals.append(refused)
                results[k] = compute(k)
                continue
            if found is not None:
                results[k] = found
            elif abandoned:
                _take(directory, k, compute, results, refusals)
            else:
                time.sleep(poll_s)
    if refusals:
        message = (
            f"{directory} refused {len(refusals)} of {count} chunks ({refusals[0]}): "
            "computed in this process, not shared"
        )
        if warn is None:
            warnings.warn(message, StoreRefusedWarning, stacklevel=2)
        else:
            warn(message)
    with contextlib.suppress(OSError):
        os.utime(directory)  # used now: the newest to keep (`prune`)
    return [results[k] for k in range(count)]


def _take(
    directory: Path,
    k: int,
    compute: Callable[[int], Chunk],
    results: dict[int, Chunk],
    refusals: list[OSError],
) -> None:
    """Claim chunk k, compute it and publish it into `results`; nothing when another process
    holds the claim. A store that refuses the claim or the chunk leaves it computed here."""
    try:
        claimed = _claim(directory, k)
    except OSError as refused:
        refusals.append(refused)
        results[k] = compute(k)
        return
    if claimed:
        results[k] = compute(k)
        try:
            _publish(directory, k, results[k])
        except OSError as refused:
            refusals.append(refused)
            with contextlib.suppress(OSError):  # if it stays, it goes stale (`_abandoned`)
                _release(directory, k)  # the others compute it for themselves


def prune(root: Path, keep: int) -> None:
    """Remove all but the `keep` most recently used directories under `root`."""
    if not root.is_dir():
        return
    entries = sorted(
        (p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True
    )
    for stale in entries[keep:]:
        shutil.rmtree(stale, ignore_errors=True)


def _published(directory: Path, k: int) -> Path:
    return directory / f"{k}.pt"


def _claim_path(directory: Path, k: int) -> Path:
    return directory / f"{k}.claim"


def _claim(directory: Path, k: int) -> bool:
    try:
        descriptor = os.open(_claim_path(directory, k), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    try:
        with os.fdopen(descriptor, "w") as claim:
            claim.write(str(os.getpid()))
    except OSError:  # an empty claim would hold the chunk until it goes stale
        with contextlib.suppress(OSError):
            _release(directory, k)
        raise
    return True


def _release(directory: Path, k: int) -> None:
    _claim_path(directory, k).unlink(missing_ok=True)


def _publish(directory: Path, k: int, chunk: Chunk) -> None:
    aside = directory / f"{k}.{os.getpid()}.tmp"
    try:
        torch.save([t.detach().cpu() for t in chunk], aside)
        os.replace(aside, _published(directory, k))
    finally:
        aside.unlink(missing_ok=True)


def _read(directory: Path, k: int) -> Chunk | None:
    path = _published(directory, k)
    if not path.exists():
        return None
    try:
        return torch.load(path, weights_only=True)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError):
        pass  # cut short, removed under us, or not tensors: computed again (and replaced)
    _release(directory, k)  # its OSError: a store that keeps the chunk as it is
    return None


def _abandoned(directory: Path, k: int, stale_s: float) -> bool:
    """No claim at all, a claim whose process is gone, or one older than `stale_s`."""
    path = _claim_path(directory, k)
    try:
        text = path.read_text()
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return True
    if age > stale_s:
        return True
    if not text.isdigit():  # claimed a moment ago, its process id not yet written
        return False
    pid = int(text)
    if pid == os.getpid():  # left by an earlier call here: this call claims in its first loop
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False
