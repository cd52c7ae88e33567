"""A sentence-transformers BERT folder (Transformer → mean pooling → normalise) run in plain
torch, for a single query from a cold process, and as a trainable network.

Importing sentence-transformers (and with it transformers) takes seconds; a search encodes one
short text. This reads the same files — `tokenizer.json` through `tokenizers`, the weights
through safetensors — and computes the same vector (the tests hold it to the library's within
float rounding). Any folder of another shape is refused with `Unsupported`, and the caller
uses sentence-transformers instead. `BertEncoder` is that transformer as a torch module whose
parameters are named as the folder's weights, so the fine-tuned encoder
(`training.sentence_encoder`) trains it and a search loads its weights without transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"


class Unsupported(ValueError):
    """The folder is not a BERT with mean pooling: use sentence-transformers."""


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Unsupported(f"{path.name} is missing") from None


class BertEncoder(nn.Module):
    """BERT's embeddings and transformer layers (post-LayerNorm, GELU), parameters named as
    in the folder's `model.safetensors`; dropout as the folder's config says, in training."""

    def __init__(self, config: dict) -> None:
        super().__init__()
        width = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.dropout = float(config.get("hidden_dropout_prob", 0.0))
        self.attention_dropout = float(config.get("attention_probs_dropout_prob", 0.0))
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(int(config["vocab_size"]), width)
        self.embeddings.position_embeddings = nn.Embedding(
            int(config["max_position_embeddings"]), width
        )
        self.embeddings.token_type_embeddings = nn.Embedding(
            int(config.get("type_vocab_size", 2)), width
        )
        self.embeddings.LayerNorm = nn.LayerNorm(width, eps=self.eps)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(
            _layer(width, int(config["intermediate_size"]), self.eps)
            for _ in range(int(config["num_hidden_layers"]))
        )

    @property
    def layers(self) -> int:
        return len(self.encoder.layer)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """[batch, tokens] ids (one segment) → the embeddings' output."""
        e = self.embeddings
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = (
            e.word_embeddings(ids)
            + e.position_embeddings(positions)[None]
            + e.token_type_embeddings(torch.zeros_like(ids))
        )
        return F.dropout(e.LayerNorm(h), self.dropout, self.training)

    def run_layers(
        self, h: torch.Tensor, mask: torch.Tensor, start: int = 0, stop: int | None = None
    ) -> torch.Tensor:
        """Layers `start`..`stop` over [batch, tokens, width] states; `mask` (bool, [batch,
        tokens]) marks the real tokens."""
        batch, tokens, width = h.shape
        head = width // self.heads
        keep = mask[:, None, None, :]
        for layer in self.encoder.layer[start:stop]:
            attention = layer.attention

            def split(x: torch.Tensor) -> torch.Tensor:
                return x.view(batch, tokens, self.heads, head).transpose(1, 2)

            context = F.scaled_dot_product_attention(
                split(attention.self.query(h)),
                split(attention.self.key(h)),
                split(attention.self.value(h)),
                attn_mask=keep,
                dropout_p=self.attention_dropout if self.training else 0.0,
            )
            context = context.transpose(1, 2).reshape(batch, tokens, width)
            out = F.dropout(attention.output.dense(context), self.dropout, self.training)
            h = attention.output.LayerNorm(out + h)
            inner = F.gelu(layer.intermediate.dense(h))
            out = F.dropout(layer.output.dense(inner), self.dropout, self.training)
            h = layer.output.LayerNorm(out + h)
        return h


def _layer(width: int, inner: int, eps: float) -> nn.Module:
    """One transformer layer's parameters, named as BERT's."""
    layer = nn.Module()
    layer.attention = nn.Module()
    layer.attention.self = nn.Module()
    for name in ("query", "key", "value"):
        setattr(layer.attention.self, name, nn.Linear(width, width))
    layer.attention.output = nn.Module()
    layer.attention.output.dense = nn.Linear(width, width)
    layer.attention.output.LayerNorm = nn.LayerNorm(width, eps=eps)
    layer.intermediate = nn.Module()
    layer.intermediate.dense = nn.Linear(width, inner)
    layer.output = nn.Module()
    layer.output.dense = nn.Linear(inner, width)
    layer.output.LayerNorm = nn.LayerNorm(width, eps=eps)
    return layer


def folder_weights(folder: Path) -> dict[str, torch.Tensor]:
    """The folder's transformer weights, named as `BertEncoder`'s parameters (float32)."""
    from safetensors.torch import load_file

    state = load_file(folder / "model.safetensors")
    return {
        k.removeprefix("bert."): v.float()
        for k, v in state.items()
        if not k.removeprefix("bert.").startswith("pooler.") and not k.endswith("position_ids")
    }


def load_encoder(folder: Path) -> BertEncoder:
    """The folder's transformer with its weights (loaded strictly)."""
    encoder = BertEncoder(_json(folder / "config.json"))
    encoder.load_state_dict(folder_weights(folder))
    return encoder


def folder_tokenizer(folder: Path, max_length: int | None = None):
    """The folder's fast tokenizer, padding nothing, truncating to `max_length` tokens (None:
    what the folder's sentence-transformers config says)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    if max_length is None:
        settings = _json(folder / "sentence_bert_config.json")
        config = _json(folder / "config.json")
        max_length = min(
            int(settings.get("max_seq_length") or 512), config["max_position_embeddings"]
        )
    tokenizer.enable_truncation(max_length)
    return tokenizer


class BertSentenceEncoder:
    def __init__(self, folder: Path) -> None:
        modules = _json(folder / "modules.json")
        types = [m.get("type") for m in modules]
        if types not in ([TRANSFORMER, POOLING], [TRANSFORMER, POOLING, NORMALIZE]):
            raise Unsupported(f"modules {types}")
        if modules[0].get("path"):
            raise Unsupported("the transformer lives in a subfolder")
        self.normalise = NORMALIZE in types
        pooling = _json(folder / modules[1]["path"] / "config.json")
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        if modes != {"pooling_mode_mean_tokens"}:
            raise Unsupported(f"pooling {sorted(modes)}")
        config = _json(folder / "config.json")
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise Unsupported(f"model {config.get('model_type')}, {config.get('hidden_act')}")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise Unsupported("relative position embeddings")
        settings = _json(folder / "sentence_bert_config.json")
        if settings.get("do_lower_case"):
            raise Unsupported("lower-casing outside the tokenizer")
        weights_file = folder / "model.safetensors"
        if not weights_file.exists() or not (folder / "tokenizer.json").exists():
            raise Unsupported("no model.safetensors or tokenizer.json")
        self.tokenizer = folder_tokenizer(folder)
        self.encoder = load_encoder(folder).eval()

    @torch.no_grad()
    def encode(self, text: str) -> np.ndarray:
        ids = torch.tensor([self.tokenizer.encode(text).ids])
        mask = torch.ones_like(ids, dtype=torch.bool)
        vector = self.encoder.run_layers(self.encoder.embed(ids), mask)[0].mean(dim=0)
        if self.normalise:
            vector = vector / vector.norm().clamp(min=1e-12)
        return vector.numpy().astype(np.float32)
