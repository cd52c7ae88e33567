"""A sentence-transformer (BERT, mean pooling) as a trainable network: one shared tower reads
both sides as text, the linearised OPT and the annotation texts, so contrastive training
fine-tunes the encoder itself rather than heads over its frozen vectors.

The tower is built from a sentence-transformers folder's own files — `config.json`,
`tokenizer.json`, `model.safetensors` — by transformers' `BertModel` and the `tokenizers`
library, offline: nothing is downloaded. A trained tower's weights are the model's
safetensors; the folder only supplies the architecture and the tokenizer, and its content
hash is recorded with the model so that a different folder is refused (`base_identity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from formula_assets.training.models import Temperature

# the initial temperature of sentence-transformers' in-batch-negatives loss (scale 20)
INITIAL_TEMPERATURE = 0.05
# rows encoded at once in eval mode, sorted by length so that little is padding
EVAL_CHUNK = 64
WEIGHTS_FILE = "model.safetensors"


def tokenizer(folder: Path, max_length: int):
    """The folder's fast tokenizer, truncating to `max_length` tokens, padding nothing."""
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(folder / "tokenizer.json"))
    loaded.no_padding()
    loaded.enable_truncation(max_length)
    return loaded


def token_ids(folder: Path, max_length: int, texts: Sequence[str]) -> list[list[int]]:
    """Each text's token ids ([CLS] … [SEP]), at most `max_length` of them."""
    return [e.ids for e in tokenizer(folder, max_length).encode_batch(list(texts))]


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


class SentenceTower(nn.Module):
    """`sbert_finetuned_cl`'s network: one BERT with mean pooling for both sides (its
    vectors are compared by cosine, as the frozen model's are).

    With `frozen_layers` k > 0 the embeddings and the lowest k layers keep the base model's
    weights; a batch may then be those layers' output (`HiddenInputs`, made by `lower`)
    instead of token ids, and only the layers above run."""

    def __init__(self, folder: Path, frozen_layers: int = 0, pretrained: bool = True) -> None:
        """`pretrained`: start from the folder's weights (training); otherwise only its
        architecture (a trained tower's weights are loaded over it)."""
        super().__init__()
        from transformers import BertConfig, BertModel

        config = BertConfig.from_json_file(str(folder / "config.json"))
        config._attn_implementation = "sdpa"
        if not 0 <= frozen_layers <= config.num_hidden_layers:
            raise ValueError(
                f"frozen_layers must be 0..{config.num_hidden_layers}, not {frozen_layers}"
            )
        self.bert = BertModel(config, add_pooling_layer=False)
        self.frozen_layers = frozen_layers
        if pretrained:
            from safetensors.torch import load_file

            state = load_file(folder / WEIGHTS_FILE)
            state = {k.removeprefix("bert."): v for k, v in state.items()}
            state = {k: v for k, v in state.items() if not k.startswith("pooler.")}
            self.bert.load_state_dict(state, strict=False)
            missing = set(self.bert.state_dict()) - set(state)
            if {k for k in missing if not k.endswith("position_ids")}:
                raise ValueError(f"{folder}: the weights lack {sorted(missing)[:5]}")
        if frozen_layers:
            for module in (self.bert.embeddings, *self.bert.encoder.layer[:frozen_layers]):
                module.requires_grad_(False)
        self.temperature = Temperature(INITIAL_TEMPERATURE)

    def _device(self) -> torch.device:
        return self.bert.embeddings.word_embeddings.weight.device

    def _run(self, items: Texts, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layers `start`..`stop` over padded items (token ids: from the embeddings; hidden
        states: from layer `start`); (hidden states, mask)."""
        device = self._device()
        width = max(len(i) for i in items)
        mask = torch.zeros((len(items), width), dtype=torch.long)
        for row, item in enumerate(items):
            mask[row, : len(item)] = 1
        mask = mask.to(device)
        if isinstance(items[0], torch.Tensor):
            hidden = torch.zeros((len(items), width, items[0].shape[-1]), device=device)
            for row, item in enumerate(items):
                hidden[row, : len(item)] = item
        else:
            ids = torch.zeros((len(items), width), dtype=torch.long)
            for row, item in enumerate(items):
                ids[row, : len(item)] = torch.tensor(item, dtype=torch.long)
            hidden = self.bert.embeddings(input_ids=ids.to(device))
        additive = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        for layer in self.bert.encoder.layer[start:stop]:
            hidden = layer(hidden, additive)
        return hidden, mask

    def _pooled(self, items: Texts) -> torch.Tensor:
        start = self.frozen_layers if isinstance(items[0], torch.Tensor) else 0
        hidden, mask = self._run(items, start, len(self.bert.encoder.layer))
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)

    def _chunked(self, items: Texts, encode) -> list[torch.Tensor]:
        """`encode` over length-sorted chunks; one result per item, in input order."""
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        out: list[torch.Tensor] = [torch.empty(0)] * len(items)
        for start in range(0, len(order), EVAL_CHUNK):
            part = order[start : start + EVAL_CHUNK]
            for i, vector in zip(part, encode([items[i] for i in part]), strict=True):
                out[i] = vector
        return out

    @torch.no_grad()
    def lower(self, ids: list[list[int]]) -> HiddenInputs:
        """The frozen layers' output of each text (eval mode: no dropout), for `HiddenInputs`."""
        was_training = self.training
        self.eval()

        def run(items: Texts) -> list[torch.Tensor]:
            hidden, _ = self._run(items, 0, self.frozen_layers)
            return [h[: len(i)].clone() for h, i in zip(hidden, items, strict=True)]

        hidden = self._chunked(ids, run)
        self.train(was_training)
        return HiddenInputs(hidden)

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
