"""Trained models on disk: safetensors weights, JSON config and history, Parquet embeddings.

A model is described by a `ModelDescription` (typed, frozen): its `config.json`.

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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
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
from formula_assets.training.settings import MethodSettings

MODELS = "fold_models"  # the asset whose partitions the store holds
POINTER = "CURRENT"
WEIGHTS = "weights.safetensors"
CONFIG = "config.json"
HISTORY = "history.json"
EMBEDDINGS = "embeddings.parquet"
KEEP_VERSIONS = 2
LOAD_ATTEMPTS = 10


class ModelLoadError(RuntimeError):
    """Every attempt to load lost its version to concurrent saves."""


@dataclass(frozen=True)
class SplitSizes:
    """How many formulae of the fold each split holds."""

    train: int
    validation: int
    selection: int
    test: int


@dataclass(frozen=True)
class RunSummary:
    """One independently seeded training of a model (a model averages `settings.runs`)."""

    seed: int
    best_epoch: int
    best_validation_mrr: float
    epochs_run: int
    stopped_early: bool
    train_seconds: float


@dataclass(frozen=True)
class ModelDescription:
    """What one fold × method model is: how to rebuild its network, how it was trained and
    what came of it. Stored as the model's `config.json` (`to_json` / `from_json`); files of
    earlier versions, which lack later fields, load with those fields' defaults."""

    method: str
    fold: int
    profile: str
    settings: MethodSettings
    seed: int
    semantic_dim: int  # width of the semantic input (the sentence vectors)
    structural_dim: int  # width of the sentence vector of the linearised OPT
    split_sizes: SplitSizes
    validation_fraction: float
    selection_fraction: float = 0.0
    # graph inputs (methods over OPT graphs): token ids (row = id), the widths of the
    # token-text and formula-context vectors each node reads (0: none)
    vocabulary: tuple[str, ...] = ()
    # the semantic side's features by id (a method over bags of annotation texts and words)
    semantic_vocabulary: tuple[str, ...] = ()
    token_text_dim: int = 0
    formula_text_dim: int = 0
    unseen_test_tokens: Mapping[str, float] | None = None
    # a fine-tuned sentence encoder: the folder it started from (None: the packaged default)
    # and that folder's content hash (its architecture and tokenizer rebuild the network)
    base_model: str | None = None
    base_model_identity: str = ""
    # the outcome of training (defaults: not trained yet)
    runs: tuple[RunSummary, ...] = ()
    best_epoch: int = 0  # the latest best epoch of any run
    best_validation_mrr: float = 0.0  # of the model as a whole (its runs averaged)
    validation: Mapping[str, float] = field(default_factory=dict)
    epochs_run: int = 0  # every epoch of every run
    stopped_early: bool = False
    train_seconds: float = 0.0
    device: str = ""
    deterministic: bool | None = None  # None: not recorded (files before it was)
    torch_threads: int = 0
    torch_version: str = ""
    python_version: str = ""
    # the hash of what training read (`training.recipe`): the same recipe, the model reused
    recipe: str = ""
    # entries this class does not name (another writer's), kept as they are
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The `config.json` object; entries that do not apply to the method are left out."""
        out: dict[str, Any] = dict(self.extra)
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and value == _OPTIONAL[f.name]:
                continue
            out[_JSON_NAMES.get(f.name, f.name)] = _jsonable(value)
        return out

    @classmethod
    def from_json(
        cls, config: Mapping[str, Any], settings_type: type[MethodSettings] = MethodSettings
    ) -> ModelDescription:
        """The description a `config.json` holds, its settings as the method's own class
        (`settings_type`: the method's; the base class for methods without their own)."""
        names = {_JSON_NAMES.get(f.name, f.name): f.name for f in fields(cls) if f.name != "extra"}
        missing = sorted(k for k in _REQUIRED if k not in config)
        if missing:
            raise ValueError(f"the model's config lacks {', '.join(missing)}")
        values: dict[str, Any] = {names[k]: v for k, v in config.items() if k in names}
        values["settings"] = _settings(config["settings"], settings_type)
        sizes = config["split_sizes"]
        values["split_sizes"] = SplitSizes(
            int(sizes["train"]),
            int(sizes["validation"]),
            int(sizes.get("selection", 0)),  # before the selection split existed
            int(sizes["test"]),
        )
        values["runs"] = tuple(RunSummary(**run) for run in config.get("runs", ()))
        values["vocabulary"] = tuple(config.get("vocabulary", ()))
        values["semantic_vocabulary"] = tuple(config.get("semantic_vocabulary", ()))
        values["fold"] = int(config["fold"])
        values["extra"] = {k: v for k, v in config.items() if k not in names}
        return cls(**values)


_JSON_NAMES = {"torch_version": "torch", "python_version": "python"}
_REQUIRED = (
    "method",
    "fold",
    "profile",
    "settings",
    "seed",
    "semantic_dim",
    "structural_dim",
    "split_sizes",
    "validation_fraction",
)
# written only when set: a method without graph inputs has none of these
_OPTIONAL: dict[str, Any] = {
    "vocabulary": (),
    "semantic_vocabulary": (),
    "token_text_dim": 0,
    "formula_text_dim": 0,
    "unseen_test_tokens": None,
    "base_model": None,
    "base_model_identity": "",
    "deterministic": None,
    "recipe": "",
}


# Settings a config.json may record that no settings class has any more, with the value every
# model this code can rebuild had: `hard_negatives` (removed), and the fields of the one
# settings class all methods once shared, at the value a method that never read them recorded
# (a model's own fields are its class's, so these load only into a class without them). Any
# other value is a model this code cannot rebuild.
_FORMER_SETTINGS: dict[str, Any] = {
    "hard_negatives": 0.0,
    "layers": 2,
    "token_text": False,
    "token_dropout": 0.0,
    "readout": "mean",
    "head_hidden": 1024,
    "head_dropout": 0.3,
    "semantic_hidden": None,
    "semantic_dropout": None,
    "formula_text": False,
    "base_model": None,
    "max_seq_len": 128,
    "frozen_layers": 0,
}


def _settings(values: Mapping[str, Any], settings_type: type[MethodSettings]) -> MethodSettings:
    """Settings as recorded, as `settings_type`; a field added since takes its default, an
    unknown one is an error (the recorded model was built with something this code cannot
    rebuild)."""
    known = {f.name for f in fields(settings_type)}
    values = {
        k: v
        for k, v in values.items()
        if k in known or not (k in _FORMER_SETTINGS and v == _FORMER_SETTINGS[k])
    }
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"the model's settings name entries {settings_type.__name__} does not have: {unknown}"
        )
    if isinstance(values.get("frozen_layers"), list):  # one per base model, as JSON writes it
        values = {**values, "frozen_layers": tuple(values["frozen_layers"])}
    return settings_type(**values)


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


@dataclass
class TrainedModel:
    """Everything one fold × method partition produces."""

    description: ModelDescription
    state: dict[str, torch.Tensor]
    history: list[dict[str, float]] = field(default_factory=list)
    # qid, split (train/validation/test), structural and semantic vectors in the shared space
    embeddings: pa.Table | None = None

    @property
    def method(self) -> str:
        return self.description.method

    @property
    def fold(self) -> int:
        return self.description.fold

    def split_vectors(self, split: str | None) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(qids, structural, semantic) of one split (None: of every formula), in the order
        they were stored, rows L2-normalised."""
        if self.embeddings is None:
            raise ValueError(f"{self.method} fold {self.fold}: no embeddings stored")
        table = self.embeddings
        if split is not None:
            table = table.filter(pa.compute.equal(table["split"], split))
        column = table.column("structural")
        width = column.type.list_size
        return (
            table.column("qid").to_pylist(),
            vectors(column, width),
            vectors(table.column("semantic"), width),
        )


def model_directory(root: UPath, fold: int, method: str) -> UPath:
    """Where the model store keeps one fold × method model under a data lake root: the
    layout the `fold_models` IO manager writes (asset key, then the partition's dimensions
    in name order: fold, method)."""
    return root / MODELS / str(fold) / method


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
    config = model.description.to_json()
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


def stored_description(
    directory: UPath, settings_type: type[MethodSettings] = MethodSettings
) -> ModelDescription:
    """The description (`config.json`) of the current version, without its weights."""
    config = json.loads(_read(current_version(directory) / CONFIG))
    return ModelDescription.from_json(config, settings_type)


def stored_method(directory: UPath) -> str:
    """The method the current version's description names: which settings class to load it
    as (a reader that knows only the folder, such as the model store's IO manager)."""
    return str(json.loads(_read(current_version(directory) / CONFIG))["method"])


def _read(path: UPath) -> bytes:
    """The whole file in one read (one GET on an object store, never ranged reads)."""
    return path.fs.cat_file(path.path)


class _VersionRemoved(Exception):
    """The version being read was removed by a concurrent prune."""


def _read_version(
    version: UPath, settings_type: type[MethodSettings], embeddings_too: bool
) -> TrainedModel:
    """Every file from this one version folder, or `_VersionRemoved` if it vanished meanwhile."""
    config = json.loads(_read_or_removed(version, CONFIG))
    state = load_safetensors(_read_or_removed(version, WEIGHTS))
    history = json.loads(_read_or_removed(version, HISTORY))
    embeddings: pa.Table | None = None
    try:
        if embeddings_too:
            embeddings = lake.read_parquet(version / EMBEDDINGS)
    except FileNotFoundError:
        _read_or_removed(version, CONFIG)  # still there: a model saved without embeddings
    return TrainedModel(
        description=ModelDescription.from_json(config, settings_type),
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


def load_model(
    directory: UPath,
    settings_type: type[MethodSettings] = MethodSettings,
    *,
    embeddings: bool = True,
) -> TrainedModel:
    """The current version of a saved model; safetensors and JSON only, never pickle. Its
    settings load as `settings_type` (the method's: `TrainedMethod.settings_type`);
    `embeddings=False` leaves the items' vectors unread (a network that encodes queries).

    All files come from one version. If a concurrent save removes it mid-load, the load starts
    again from a fresh pointer read, at most `LOAD_ATTEMPTS` times."""
    removed: list[str] = []
    for _ in range(LOAD_ATTEMPTS):
        try:
            return _read_version(current_version(directory), settings_type, embeddings)
        except _VersionRemoved as exc:
            removed.append(str(exc))
    raise ModelLoadError(
        f"{directory}: concurrent saves removed the version being loaded {LOAD_ATTEMPTS} times "
        f"in a row ({', '.join(removed)}); saves are outpacing loads, retry later"
    )
