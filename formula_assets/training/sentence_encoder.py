"""A sentence-transformer (BERT or MPNet, mean pooling) as a trainable network: one shared
tower reads both sides as text, the linearised OPT and the annotation texts, so contrastive
training fine-tunes the encoder itself rather than heads over its frozen vectors.

The tower is built from a sentence-transformers folder's own files — `config.json`,
`tokenizer.json`, `model.safetensors` — as `semantics.bert.BertEncoder` (plain torch: a search
loads it without importing transformers) and the `tokenizers` library, offline: nothing is
downloaded. A trained tower's weights are the model's
safetensors; the folder only supplies the architecture and the tokenizer, and its content
hash is recorded with the model so that a different folder is refused (`base_identity`).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from formula_assets.training.models import Temperature
from formula_assets.training.weights import PretrainedPart

# the initial temperature of sentence-transformers' in-batch-negatives loss (scale 20)
INITIAL_TEMPERATURE = 0.05
# rows encoded at once in eval mode, sorted by length so that little is padding
EVAL_CHUNK = 64
# rows run through the layers at once in training: a random batch of 32 linearised OPTs is
# more than half padding when padded to its longest; length-sorted groups of 4 cut an epoch's
# time by a third or more here (docs/training.md), the batch's loss unchanged
TRAIN_CHUNK = 4


def token_ids(folder: Path, max_length: int, texts: Sequence[str]) -> list[list[int]]:
    """Each text's token ids ([CLS] … [SEP]), at most `max_length` of them."""
    from formula_assets.semantics.bert import folder_tokenizer

    return [e.ids for e in folder_tokenizer(folder, max_length).encode_batch(list(texts))]


@dataclass
class TokenInputs:
    """Tokenised texts by row; a batch is the rows' id lists (the tower pads them)."""

    ids: list[list[int]]

    def batch(self, rows: np.ndarray) -> list[list[int]]:
        return [self.ids[int(r)] for r in np.asarray(rows).reshape(-1)]


@dataclass
class HiddenInputs:
    """The frozen lower layers' output of each row's text (one [tokens, width] tensor each),
    computed once: training and encoding then run only the layers being fine-tuned."""

    hidden: list[torch.Tensor]

    def batch(self, rows: np.ndarray) -> list[torch.Tensor]:
        return [self.hidden[int(r)] for r in np.asarray(rows).reshape(-1)]


Texts = list[list[int]] | list[torch.Tensor]

# The frozen layers' outputs this process keeps (one per side of a fold, one vocabulary):
# a few hundred MB at most on the snapshot.
FROZEN_KEPT = 4
_FROZEN: OrderedDict[tuple[str, int, str, str], HiddenInputs] = OrderedDict()


class Store(NamedTuple):
    """Where frozen passes are shared (None: this process only), who hears of a store that
    refuses writes (None: a `StoreRefusedWarning`), and where part-packaged base models
    (all-mpnet-base-v2) are unpacked (None: they are not looked for)."""

    path: Path | None = None
    warn: Callable[[str], None] | None = None
    model_dir: Path | None = None


_STORES: list[Store] = [Store()]


@contextmanager
def frozen_store(
    store: Path | None,
    warn: Callable[[str], None] | None = None,
    model_dir: Path | None = None,
) -> Iterator[None]:
    """Within the block, frozen passes this process runs go through `store` (`frozen_pass`)
    and base models named by a packaged name are found under `model_dir`: an asset (or the
    search) that trains or encodes with `sbert_finetuned_cl` names its cache directory, its
    log and the `model_dir` setting here, at its edge, and the method's code below it needs
    no parameter for them."""
    _STORES.append(Store(store, warn, model_dir))
    try:
        yield
    finally:
        _STORES.pop()


def current_store() -> Store:
    """The innermost `frozen_store` block's store and log."""
    return _STORES[-1]


def frozen_pass(
    base_identity: str,
    frozen_layers: int,
    device: str,
    ids: list[list[int]],
    tower: Callable[[], SentenceTower],
    store: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> HiddenInputs:
    """`tower().lower(ids)`, kept for the next call with the same base model (by content
    hash), layers, device and token ids: the frozen layers hold the base model's weights in
    every tower trained from it, so their output depends on nothing else.

    `store`: a directory (`<embedding cache>/frozen_layers` for a refresh) through which the
    processes that need the same pass split it chunk by chunk and later calls read it
    (`training.shared_chunks`); the chunks are `lower`'s own, so the result is the same.
    `warn` hears of a store that refuses writes (the pass is then computed here)."""
    digest = hashlib.sha256(json.dumps(ids, separators=(",", ":")).encode()).hexdigest()
    key = (base_identity, frozen_layers, device, digest)
    if key in _FROZEN:
        _FROZEN.move_to_end(key)
        return _FROZEN[key]
    lower = tower().lower(ids) if store is None else _shared_pass(store, key, ids, tower, warn)
    _FROZEN[key] = lower
    while len(_FROZEN) > FROZEN_KEPT:
        _FROZEN.popitem(last=False)
    return lower


def _shared_pass(
    store: Path,
    key: tuple[str, int, str, str],
    ids: list[list[int]],
    tower: Callable[[], SentenceTower],
    warn: Callable[[str], None] | None,
) -> HiddenInputs:
    from formula_assets.training.shared_chunks import prune, shared_chunks

    chunks = length_sorted_chunks(ids)
    built: list[SentenceTower] = []

    def compute(k: int) -> list[torch.Tensor]:
        if not built:  # only a process that computes a chunk builds the tower
            built.append(tower())
        return built[0].lower_part([ids[i] for i in chunks[k]])

    name = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]
    parts = shared_chunks(store / name, len(chunks), compute, warn=warn)
    prune(store, FROZEN_KEPT)
    hidden: list[torch.Tensor] = [torch.empty(0)] * len(ids)
    for rows, part in zip(chunks, parts, strict=True):
        for i, h in zip(rows, part, strict=True):
            hidden[i] = h.to(device=key[2])
    return HiddenInputs(hidden)


def length_sorted_chunks(items: Sequence[Sequence]) -> list[list[int]]:
    """Item positions by length, in runs of EVAL_CHUNK: little padding per forward pass."""
    order = sorted(range(len(items)), key=lambda i: len(items[i]))
    return [order[start : start + EVAL_CHUNK] for start in range(0, len(order), EVAL_CHUNK)]


class SentenceTower(PretrainedPart):
    """`sbert_finetuned_cl`'s network: one BERT (or MPNet) with mean pooling for both sides
    (its vectors are compared by cosine, as the frozen model's are).

    With `frozen_layers` k > 0 the embeddings and the lowest k layers (and what they share
    with the layers above: MPNet's position bias) keep the base model's weights; a batch may
    then be those layers' output (`HiddenInputs`, made by `lower`) instead of token ids, and
    only the layers above run."""

    def __init__(self, folder: Path, frozen_layers: int = 0) -> None:
        """Always from the folder's weights: training starts from them, and a stored tower
        holds only what training moved (`base_keys` are the folder's)."""
        super().__init__()
        from formula_assets.semantics.bert import BertEncoder, folder_weights

        self.bert = BertEncoder(json.loads((folder / "config.json").read_text("utf-8")))
        if not 0 <= frozen_layers <= self.bert.layers:
            raise ValueError(f"frozen_layers must be 0..{self.bert.layers}, not {frozen_layers}")
        self.frozen_layers = frozen_layers
        self.bert.load_state_dict(folder_weights(folder))
        if frozen_layers:
            for module in self.bert.below(frozen_layers):
                module.requires_grad_(False)
        self.temperature = Temperature(INITIAL_TEMPERATURE)

    def base_keys(self) -> set[str]:
        """The frozen part's weights: the base model's, which a stored model leaves out."""
        below = self.bert.below(self.frozen_layers)
        frozen = {id(p) for module in below for p in module.parameters()}
        return {name for name, p in self.named_parameters() if id(p) in frozen}

    def _device(self) -> torch.device:
        return self.bert.embeddings.word_embeddings.weight.device

    def _run(self, items: Texts, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layers `start`..`stop` over padded items (token ids: from the embeddings; hidden
        states: from layer `start`); (hidden states, mask of the real tokens)."""
        device = self._device()
        width = max(len(i) for i in items)
        mask = torch.zeros((len(items), width), dtype=torch.bool)
        for row, item in enumerate(items):
            mask[row, : len(item)] = True
        mask = mask.to(device)
        if isinstance(items[0], torch.Tensor):
            hidden = torch.zeros((len(items), width, items[0].shape[-1]), device=device)
            for row, item in enumerate(items):
                hidden[row, : len(item)] = item
        else:
            ids = torch.zeros((len(items), width), dtype=torch.long)
            for row, item in enumerate(items):
                ids[row, : len(item)] = torch.tensor(item, dtype=torch.long)
            hidden = self.bert.embed(ids.to(device))
        return self.bert.run_layers(hidden, mask, start, stop), mask

    def _pooled(self, items: Texts) -> torch.Tensor:
        if self.training and len(items) > TRAIN_CHUNK:
            return self._grouped(items)
        return self._pooled_padded(items)

    def _grouped(self, items: Texts) -> torch.Tensor:
        """`_pooled_padded` over length-sorted groups of TRAIN_CHUNK rows, in input order."""
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        parts = [
            self._pooled_padded([items[i] for i in order[start : start + TRAIN_CHUNK]])
            for start in range(0, len(order), TRAIN_CHUNK)
        ]
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return torch.cat(parts)[inverse.to(parts[0].device)]

    def _pooled_padded(self, items: Texts) -> torch.Tensor:
        start = self.frozen_layers if isinstance(items[0], torch.Tensor) else 0
        hidden, mask = self._run(items, start, self.bert.layers)
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)

    def _chunked(self, items: Texts, encode) -> list[torch.Tensor]:
        """`encode` over length-sorted chunks; one result per item, in input order."""
        out: list[torch.Tensor] = [torch.empty(0)] * len(items)
        for part in length_sorted_chunks(items):
            for i, vector in zip(part, encode([items[i] for i in part]), strict=True):
                out[i] = vector
        return out

    def lower(self, ids: list[list[int]]) -> HiddenInputs:
        """The frozen layers' output of each text (eval mode: no dropout), for `HiddenInputs`."""
        return HiddenInputs(self._chunked(ids, self.lower_part))

    @torch.no_grad()
    def lower_part(self, items: list[list[int]]) -> list[torch.Tensor]:
        """The frozen layers' output of a few texts padded together (one of `lower`'s chunks)."""
        was_training = self.training
        self.eval()
        hidden, _ = self._run(items, 0, self.frozen_layers)
        self.train(was_training)
        return [h[: len(i)].clone() for h, i in zip(hidden, items, strict=True)]

    def encode(self, items: Texts) -> torch.Tensor:
        """Mean-pooled vectors of tokenised texts (or of their frozen layers' output); in
        eval mode in length-sorted chunks (the same vectors, less padding)."""
        if self.training or len(items) <= EVAL_CHUNK:
            return self._pooled(items)
        return torch.stack(self._chunked(items, lambda part: list(self._pooled(part))))

    def encode_structural(self, items: Texts) -> torch.Tensor:
        return self.encode(items)

    def encode_semantic(self, items: Texts) -> torch.Tensor:
        return self.encode(items)
