"""A sentence-transformers BERT folder (Transformer → mean pooling → normalise) run in plain
torch, for a single query from a cold process.

Importing sentence-transformers (and with it transformers) takes seconds; a search encodes one
short text. This reads the same files — `tokenizer.json` through `tokenizers`, the weights
through safetensors — and computes the same vector (the tests hold it to the library's within
float rounding). Any folder of another shape is refused with `Unsupported`, and the caller
uses sentence-transformers instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

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
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(
            min(int(settings.get("max_seq_length") or 512), config["max_position_embeddings"])
        )
        self.w = {k.removeprefix("bert."): v.float() for k, v in load_file(weights_file).items()}
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])

    def _norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return torch.nn.functional.layer_norm(
            x, x.shape[-1:], self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps
        )

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    @torch.no_grad()
    def encode(self, text: str) -> np.ndarray:
        encoding = self.tokenizer.encode(text)
        ids = torch.tensor(encoding.ids)
        types = torch.tensor(encoding.type_ids)
        positions = torch.arange(len(ids))
        w = self.w
        h = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        h = self._norm(h, "embeddings.LayerNorm")
        n, width = h.shape
        head = width // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(x: torch.Tensor) -> torch.Tensor:
                return x.view(n, self.heads, head).transpose(0, 1)

            q = split(self._linear(h, f"{p}.attention.self.query"))
            k = split(self._linear(h, f"{p}.attention.self.key"))
            v = split(self._linear(h, f"{p}.attention.self.value"))
            attention = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(head), dim=-1)
            context = (attention @ v).transpose(0, 1).reshape(n, width)
            h = self._norm(
                self._linear(context, f"{p}.attention.output.dense") + h,
                f"{p}.attention.output.LayerNorm",
            )
            inner = torch.nn.functional.gelu(self._linear(h, f"{p}.intermediate.dense"))
            h = self._norm(self._linear(inner, f"{p}.output.dense") + h, f"{p}.output.LayerNorm")
        vector = h.mean(dim=0)
        if self.normalise:
            vector = vector / vector.norm().clamp(min=1e-12)
        return vector.numpy().astype(np.float32)
