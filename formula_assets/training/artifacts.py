"""Trained models on disk: safetensors weights, JSON config and history, Parquet embeddings.

Loading never unpickles: weights are safetensors, everything else is JSON or Parquet.

A model directory is versioned: each save writes a new `v-<time>-<host~pid~random>` folder
(config.json last, as the mark of a complete version), then swaps a one-line `CURRENT`
pointer atomically. A crash
mid-save leaves the previous version current; readers always get a complete one. Older
versions beyond the last two are removed (config.json first, so a version being removed is
never taken for a complete one), and so is the debris of saves whose process died.

A load reads the pointer once and every file from the version it names. A concurrent save's
prune may remove that version meanwhile; the load then starts over from a fresh pointer read,
a bounded number of times, so it never returns files of two versions nor a partial model.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from upath import UPath

from formula_assets.core import lake
from formula_assets.core.arrow import vector_column, vectors
from formula_assets.core.hashing import bytes_hash, table_content_hash

POINTER = "CURRENT"
WEIGHTS = "weights.safetensors"
CONFIG = "config.json"
HISTORY = "history.json"
EMBEDDINGS = "embeddings.parquet"
KEEP_VERSIONS = 2
LOAD_ATTEMPTS = 10


class ModelLoadError(RuntimeError):
    """Every attempt to load lost its version to concurrent saves."""


@dataclass
class TrainedModel:
    """Everything one fold × method partition produces."""

    method: str
    fold: int
    config: dict[str, Any]
    state: dict[str, torch.Tensor]
    history: list[dict[str, float]] = field(default_factory=list)
    # qid, split (train/validation/test), structural and semantic vectors in the shared space
    embeddings: pa.Table | None = None

    def split_vectors(self, split: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(qids, structural, semantic) of one split, rows L2-normalised."""
        if self.embeddings is None:
            raise ValueError(f"{self.method} fold {self.fold}: no embeddings stored")
        table = self.embeddings.filter(pa.compute.equal(self.embeddings["split"], split))
        column = table.column("structural")
        width = column.type.list_size
        return (
            table.column("qid").to_pylist(),
            vectors(column, width),
            vectors(table.column("semantic"), width),
        )


def embeddings_table(
    qids: list[str], splits: list[str], structural: np.ndarray, semantic: np.ndarray
) -> pa.Table:
    return pa.table(
        {
            "qid": pa.array(qids, pa.string()),
            "split": pa.array(splits, pa.string()),
            "structural": vector_column(structural),
            "semantic": vector_column(semantic),
        }
    )


def _json(data: Any) -> bytes:
    return json.dumps(data, indent=2, sort_keys=True, default=_plain).encode("utf-8")


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | set):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def weights_bytes(model: TrainedModel) -> bytes:
    """The safetensors encoding of the weights (deterministic: sorted keys, raw tensors)."""
    return save_safetensors({k: v.detach().cpu().contiguous() for k, v in model.state.items()})


def content_hash(model: TrainedModel) -> str:
    """The model's data version: its tensors (names, dtypes, shapes, values) and the vectors
    it gives every formula; independent of the file format and library versions."""
    parts: list[bytes | str] = []
    for name in sorted(model.state):
        tensor = model.state[name].detach().cpu().contiguous()
        raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes()
        parts += [name, str(tensor.dtype), repr(tuple(tensor.shape)), raw]
    if model.embeddings is not None:
        parts.append(table_content_hash(model.embeddings))
    return bytes_hash(*parts)


def save_model(model: TrainedModel, directory: UPath) -> UPath:
    """Write a new version of the model under `directory` and make it current."""
    version = f"v-{time.time_ns():020d}-{lake.writer_tag()}"
    target = directory / version
    lake.write_bytes_atomic(weights_bytes(model), target / WEIGHTS)
    lake.write_bytes_atomic(_json(model.history), target / HISTORY)
    if model.embeddings is not None:
        lake.write_parquet_atomic(model.embeddings, target / EMBEDDINGS)
    config = {**model.config, "method": model.method, "fold": model.fold}
    lake.write_bytes_atomic(_json(config), target / CONFIG)  # last: marks the version complete
    lake.write_bytes_atomic(version.encode(), directory / POINTER)
    _prune(directory, keep=version)
    return target


def _complete(version: UPath) -> bool:
    """`config.json` is written last, so its presence means every file is in place."""
    return (version / CONFIG).exists()


def _writer_gone(version: UPath) -> bool:
    """An incomplete version may still be written by a live process, here or on another host
    sharing the lake; only one whose writer is certainly gone (this host, dead pid) goes."""
    _, _, tag = version.name.partition("-")[2].partition("-")
    writer = lake.parse_writer_tag(tag)
    return writer is not None and writer.gone()


def _prune(directory: UPath, keep: str) -> None:
    """Keep the newest complete versions and whatever the pointer names; drop the rest,
    and drop the debris of saves whose process died."""
    versions = sorted(p for p in directory.iterdir() if p.name.startswith("v-"))
    complete = [v for v in versions if _complete(v)]
    try:
        current = _read(directory / POINTER).decode().strip()
    except FileNotFoundError:
        current = keep
    keep_names = {keep, current, *(v.name for v in complete[-KEEP_VERSIONS:])}
    for old in versions:
        if old.name in keep_names or (not _complete(old) and not _writer_gone(old)):
            continue
        _remove(old)


def _remove(version: UPath) -> None:
    """config.json goes first: from then on neither readers nor other prunes take the version
    for a complete one, and a reader that misses a file can tell it was removed (see
    `_read_version`)."""
    try:
        version.fs.rm_file((version / CONFIG).path)
    except FileNotFoundError:
        pass  # an incomplete version, or one another prune is removing
    except OSError:
        return  # still complete: left for a later prune
    with contextlib.suppress(OSError):
        version.fs.rm(version.path, recursive=True)


def current_version(directory: UPath) -> UPath:
    """The version the pointer names; if a concurrent save pruned it, the newest complete one."""
    pointer = directory / POINTER
    try:
        name = _read(pointer).decode().strip()
    except FileNotFoundError:
        raise FileNotFoundError(f"no trained model at {directory}") from None
    named = directory / name
    if _complete(named):
        return named
    complete = sorted(v for v in directory.iterdir() if v.name.startswith("v-") and _complete(v))
    if not complete:
        raise FileNotFoundError(f"no complete trained model at {directory}")
    return complete[-1]


def _read(path: UPath) -> bytes:
    """The whole file in one read (one GET on an object store, never ranged reads)."""
    return path.fs.cat_file(path.path)


class _VersionRemoved(Exception):
    """The version being read was removed by a concurrent prune."""


def _read_version(version: UPath) -> TrainedModel:
    """Every file from this one version folder, or `_VersionRemoved` if it vanished meanwhile."""
    config = json.loads(_read_or_removed(version, CONFIG))
    state = load_safetensors(_read_or_removed(version, WEIGHTS))
    history = json.loads(_read_or_removed(version, HISTORY))
    try:
        embeddings: pa.Table | None = lake.read_parquet(version / EMBEDDINGS)
    except FileNotFoundError:
        _read_or_removed(version, CONFIG)  # still there: a model saved without embeddings
        embeddings = None
    return TrainedModel(
        method=config["method"],
        fold=int(config["fold"]),
        config=config,
        state=state,
        history=history,
        embeddings=embeddings,
    )


def _read_or_removed(version: UPath, name: str) -> bytes:
    """One file of a version. A missing file means the version is being removed when its
    config.json (written last, removed first) is gone too; otherwise the version is damaged
    and the error stands."""
    try:
        return _read(version / name)
    except FileNotFoundError:
        if name == CONFIG:
            raise _VersionRemoved(version.name) from None
        _read_or_removed(version, CONFIG)  # read, not a listing that a cache may answer
        raise


def load_model(directory: UPath) -> TrainedModel:
    """The current version of a saved model; safetensors and JSON only, never pickle.

    All files come from one version. If a concurrent save removes it mid-load, the load starts
    again from a fresh pointer read, at most `LOAD_ATTEMPTS` times."""
    removed: list[str] = []
    for _ in range(LOAD_ATTEMPTS):
        try:
            return _read_version(current_version(directory))
        except _VersionRemoved as exc:
            removed.append(str(exc))
    raise ModelLoadError(
        f"{directory}: concurrent saves removed the version being loaded {LOAD_ATTEMPTS} times "
        f"in a row ({', '.join(removed)}); saves are outpacing loads, retry later"
    )
