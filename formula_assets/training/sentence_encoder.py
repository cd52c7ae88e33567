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


class SentenceTower(nn.Module):
    """`sbert_finetuned_cl`'s network: one BERT with mean pooling for both sides (its
    vectors are compared by cosine, as the frozen model's are)."""

    def __init__(self, folder: Path, pretrained: bool = True) -> None:
        """`pretrained`: start from the folder's weights (training); otherwise only its
        architecture (a trained tower's weights are loaded over it)."""
        super().__init__()
        from transformers import BertConfig, BertModel

        config = BertConfig.from_json_file(str(folder / "config.json"))
        config._attn_implementation = "sdpa"
        self.bert = BertModel(config, add_pooling_layer=False)
        if pretrained:
            from safetensors.torch import load_file

            state = load_file(folder / WEIGHTS_FILE)
            state = {k.removeprefix("bert."): v for k, v in state.items()}
            state = {k: v for k, v in state.items() if not k.startswith("pooler.")}
            self.bert.load_state_dict(state, strict=False)
            missing = set(self.bert.state_dict()) - set(state)
            if {k for k in missing if not k.endswith("position_ids")}:
                raise ValueError(f"{folder}: the weights lack {sorted(missing)[:5]}")
        self.temperature = Temperature(INITIAL_TEMPERATURE)

    def _pooled(self, ids: list[list[int]]) -> torch.Tensor:
        device = self.bert.embeddings.word_embeddings.weight.device
        width = max(len(i) for i in ids)
        padded = torch.zeros((len(ids), width), dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, sequence in enumerate(ids):
            padded[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
            mask[row, : len(sequence)] = 1
        padded, mask = padded.to(device), mask.to(device)
        hidden = self.bert(input_ids=padded, attention_mask=mask).last_hidden_state
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)

    def encode(self, ids: list[list[int]]) -> torch.Tensor:
        """Mean-pooled vectors of tokenised texts; in eval mode in length-sorted chunks (the
        same vectors, less padding)."""
        if self.training or len(ids) <= EVAL_CHUNK:
            return self._pooled(ids)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: torch.Tensor | None = None
        for start in range(0, len(order), EVAL_CHUNK):
            part = order[start : start + EVAL_CHUNK]
            vectors = self._pooled([ids[i] for i in part])
            if out is None:
                out = vectors.new_empty((len(ids), vectors.shape[1]))
            out[torch.tensor(part, device=vectors.device)] = vectors
        assert out is not None
        return out

    def encode_structural(self, ids: list[list[int]]) -> torch.Tensor:
        return self.encode(ids)

    def encode_semantic(self, ids: list[list[int]]) -> torch.Tensor:
        return self.encode(ids)
