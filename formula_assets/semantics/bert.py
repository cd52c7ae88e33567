"""A sentence-transformers BERT or MPNet folder (Transformer → mean pooling → normalise) run in
plain torch: the embedding assets' and a search's vectors, and a trainable network.

Importing sentence-transformers (and with it transformers) takes seconds in every process that
embeds, the critical path of a cold build's embedding step and all of a search's start. This
reads the same files — `tokenizer.json` through `tokenizers`, the weights through safetensors —
and computes the same vectors (the tests hold them to the library's within float rounding,
alone and in padded batches). Any folder of another shape is refused (`refusal`), and the
caller uses sentence-transformers instead. `BertEncoder` is that transformer as a torch module
whose parameters are named as the folder's weights, so the fine-tuned encoder
(`training.sentence_encoder`) trains it and a search loads its weights without transformers.
It also reads MPNet folders (all-mpnet-base-v2): the same post-LayerNorm layers under other
names, no segment embeddings, positions counted from the padding id, and a relative-position
bias (T5's buckets) added to every layer's attention scores.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"


class Unsupported(ValueError):
    """The folder is not a BERT or MPNet with mean pooling: use sentence-transformers."""


def _json(path: Path) -> dict:
    """A folder's JSON file; missing or unreadable, the folder is the library's to judge (it
    says what is wrong with it in one error)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Unsupported(f"{path.name} is missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Unsupported(f"{path.name} is not JSON") from None


ARCHITECTURES = ("bert", "mpnet")  # config.json's model_type; BERT where it names none
MPNET_PADDING_ID = 1  # transformers' MPNetEmbeddings count positions from it, not from the config


def _undrawn(rows: int, width: int) -> nn.Embedding:
    """An embedding table awaiting the folder's weights (not initialised)."""
    return nn.Embedding.from_pretrained(torch.empty(rows, width), freeze=False)


class BertEncoder(nn.Module):
    """BERT's (or MPNet's) embeddings and transformer layers (post-LayerNorm, GELU),
    parameters named as in the folder's `model.safetensors`; dropout as the folder's config
    says, in training. `draw_tables=False` leaves its embedding tables undrawn, for a caller
    that loads the folder's weights next (drawing 12 million random numbers took a tenth of a
    cold query). The fine-tuned tower draws them: the layers it adds after take their initial
    weights from the same random stream, so its trained models stay what they were."""

    def __init__(self, config: dict, *, draw_tables: bool = True) -> None:
        super().__init__()
        self.architecture = str(config.get("model_type", "bert"))
        if self.architecture not in ARCHITECTURES:
            raise Unsupported(f"model {self.architecture} (reads {', '.join(ARCHITECTURES)})")
        width = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.dropout = float(config.get("hidden_dropout_prob", 0.0))
        self.attention_dropout = float(config.get("attention_probs_dropout_prob", 0.0))
        self.embeddings = nn.Module()
        table = nn.Embedding if draw_tables else _undrawn
        self.embeddings.word_embeddings = table(int(config["vocab_size"]), width)
        self.embeddings.position_embeddings = table(int(config["max_position_embeddings"]), width)
        if self.architecture == "bert":
            self.embeddings.token_type_embeddings = table(
                int(config.get("type_vocab_size", 2)), width
            )
        else:  # MPNet: positions start after its padding id, which its embeddings fix at 1
            self.first_position = MPNET_PADDING_ID + 1  # (whatever the config's pad_token_id)
        self.embeddings.LayerNorm = nn.LayerNorm(width, eps=self.eps)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(
            _layer(width, int(config["intermediate_size"]), self.eps, self.architecture)
            for _ in range(int(config["num_hidden_layers"]))
        )
        if self.architecture == "mpnet":
            self.encoder.relative_attention_bias = table(
                int(config.get("relative_attention_num_buckets", 32)), self.heads
            )

    @property
    def layers(self) -> int:
        return len(self.encoder.layer)

    def below(self, layers: int) -> list[nn.Module]:
        """What the output of the lowest `layers` layers depends on: the embeddings, those
        layers and (MPNet) the position bias every layer shares. Frozen together, a stored
        output of those layers stays what the module computes."""
        shared = [self.encoder.relative_attention_bias] if self.architecture == "mpnet" else []
        return [self.embeddings, *self.encoder.layer[:layers], *shared] if layers else []

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """[batch, tokens] ids (one segment, padding on the right) → the embeddings' output."""
        e = self.embeddings
        positions = torch.arange(ids.shape[1], device=ids.device)
        if self.architecture == "bert":
            h = (
                e.word_embeddings(ids)
                + e.position_embeddings(positions)[None]
                + e.token_type_embeddings(torch.zeros_like(ids))
            )
        else:  # padding's positions differ from MPNet's own, and nothing attends to it
            h = e.word_embeddings(ids) + e.position_embeddings(positions + self.first_position)
        return F.dropout(e.LayerNorm(h), self.dropout, self.training)

    def _scores_bias(self, tokens: int, keep: torch.Tensor) -> torch.Tensor:
        """What attention adds to its scores: −inf at padding; MPNet also its position bias,
        [1, heads, tokens, tokens]."""
        if self.architecture == "bert":
            return keep
        positions = torch.arange(tokens, device=keep.device)
        table = self.encoder.relative_attention_bias
        buckets = relative_position_buckets(
            positions[None, :] - positions[:, None], table.num_embeddings
        )
        bias = table(buckets).permute(2, 0, 1)[None]
        return bias.masked_fill(~keep, float("-inf"))

    def run_layers(
        self, h: torch.Tensor, mask: torch.Tensor, start: int = 0, stop: int | None = None
    ) -> torch.Tensor:
        """Layers `start`..`stop` over [batch, tokens, width] states; `mask` (bool, [batch,
        tokens]) marks the real tokens."""
        batch, tokens, width = h.shape
        head = width // self.heads
        scores_bias = self._scores_bias(tokens, mask[:, None, None, :])
        for layer in self.encoder.layer[start:stop]:
            query, key, value, output, norm = _attention_parts(layer, self.architecture)

            def split(x: torch.Tensor) -> torch.Tensor:
                return x.view(batch, tokens, self.heads, head).transpose(1, 2)

            context = F.scaled_dot_product_attention(
                split(query(h)),
                split(key(h)),
                split(value(h)),
                attn_mask=scores_bias,
                dropout_p=self.attention_dropout if self.training else 0.0,
            )
            context = context.transpose(1, 2).reshape(batch, tokens, width)
            out = F.dropout(output(context), self.dropout, self.training)
            h = norm(out + h)
            inner = F.gelu(layer.intermediate.dense(h))
            out = F.dropout(layer.output.dense(inner), self.dropout, self.training)
            h = layer.output.LayerNorm(out + h)
        return h


def relative_position_buckets(distance: torch.Tensor, buckets: int) -> torch.Tensor:
    """MPNet's (T5's) bucket of each key − query distance: half the buckets per sign, exact
    below a quarter of them, logarithmic up to 128 tokens, the last bucket beyond."""
    half = buckets // 2
    bucket = (distance > 0).long() * half
    n = distance.abs()
    exact = half // 2
    far = (
        exact
        + (
            torch.log(n.float().clamp(min=1) / exact) / math.log(128 / exact) * (half - exact)
        ).long()
    )
    return bucket + torch.where(n < exact, n, far.clamp(max=half - 1))


def _attention_parts(layer: nn.Module, architecture: str) -> tuple[nn.Module, ...]:
    """A layer's query, key, value and output projections and its attention LayerNorm."""
    a = layer.attention
    if architecture == "bert":
        return a.self.query, a.self.key, a.self.value, a.output.dense, a.output.LayerNorm
    return a.attn.q, a.attn.k, a.attn.v, a.attn.o, a.LayerNorm


def _layer(width: int, inner: int, eps: float, architecture: str) -> nn.Module:
    """One transformer layer's parameters, named as the architecture's."""
    layer = nn.Module()
    layer.attention = nn.Module()
    if architecture == "bert":
        layer.attention.self = nn.Module()
        for name in ("query", "key", "value"):
            setattr(layer.attention.self, name, nn.Linear(width, width))
        layer.attention.output = nn.Module()
        layer.attention.output.dense = nn.Linear(width, width)
        layer.attention.output.LayerNorm = nn.LayerNorm(width, eps=eps)
    else:
        layer.attention.attn = nn.Module()
        for name in ("q", "k", "v", "o"):
            setattr(layer.attention.attn, name, nn.Linear(width, width))
        layer.attention.LayerNorm = nn.LayerNorm(width, eps=eps)
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
    names = {k: k.removeprefix("bert.").removeprefix("mpnet.") for k in state}
    return {
        names[k]: v.float()
        for k, v in state.items()
        if not names[k].startswith("pooler.") and not k.endswith("position_ids")
    }


def load_encoder(folder: Path) -> BertEncoder:
    """The folder's transformer with its weights (loaded strictly)."""
    encoder = BertEncoder(_json(folder / "config.json"), draw_tables=False)
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


def refusal(folder: Path) -> str | None:
    """Why the plain encoder cannot compute the folder's sentence vectors as the library does
    (None: it can), read from the folder's small files alone."""
    try:
        modules = _json(folder / "modules.json")
        types = [m.get("type") for m in modules]
        if types not in ([TRANSFORMER, POOLING], [TRANSFORMER, POOLING, NORMALIZE]):
            return f"modules {types}"
        if modules[0].get("path"):
            return "the transformer lives in a subfolder"
        pooling = _json(folder / modules[1]["path"] / "config.json")
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        if modes != {"pooling_mode_mean_tokens"}:
            return f"pooling {sorted(modes)}"
        config = _json(folder / "config.json")
        architecture = config.get("model_type")
        if architecture not in ARCHITECTURES or config.get("hidden_act", "gelu") != "gelu":
            return f"model {architecture}, {config.get('hidden_act')}"
        if config.get("position_embedding_type", "absolute") != "absolute":
            return "relative position embeddings"  # BERT's own; MPNet has a bias
        if _json(folder / "sentence_bert_config.json").get("do_lower_case"):
            return "lower-casing outside the tokenizer"
    except Unsupported as exc:
        return str(exc)
    if not (folder / "model.safetensors").exists() or not (folder / "tokenizer.json").exists():
        return "no model.safetensors or tokenizer.json"
    return None


def width(folder: Path) -> int:
    """The vector width of a folder the plain encoder reads (its config's hidden size)."""
    return int(_json(folder / "config.json")["hidden_size"])


class BertSentenceEncoder:
    """A sentence-transformers folder's vectors, as the library computes them; a folder of any
    other shape is refused (`Unsupported`) when it is opened. On `device` (default: CUDA when
    present, else the CPU)."""

    def __init__(self, folder: Path, device: str | None = None) -> None:
        reason = refusal(folder)
        if reason is not None:
            raise Unsupported(reason)
        modules = _json(folder / "modules.json")
        self.normalise = NORMALIZE in {m.get("type") for m in modules}
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.tokenizer = folder_tokenizer(folder)
        self.encoder = load_encoder(folder).eval().to(self.device)

    def tokens(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).ids

    @torch.no_grad()
    def encode_ids(self, rows: Sequence[Sequence[int]]) -> np.ndarray:
        """One float32 vector per row of token ids: padded on the right into one batch, the
        padding kept out of attention and of the mean."""
        longest = max(len(row) for row in rows)
        ids = torch.zeros(len(rows), longest, dtype=torch.long)
        mask = torch.zeros(len(rows), longest, dtype=torch.bool)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = True
        ids, mask = ids.to(self.device), mask.to(self.device)
        states = self.encoder.run_layers(self.encoder.embed(ids), mask)
        weights = mask.unsqueeze(-1).to(states.dtype)
        vectors = (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
        if self.normalise:
            vectors = F.normalize(vectors, p=2, dim=1)
        return vectors.cpu().numpy().astype(np.float32, copy=False)

    def encode(self, text: str) -> np.ndarray:
        return self.encode_ids([self.tokens(text)])[0]
