"""The networks of the trained methods (one per method: `graph_text_cl`, `sbert_dual_cl`,
`bag_dual_cl`, `symbol_lexicon`) and their projection heads."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from formula_assets.graphs.encoder import HEAD_DROPOUT, HEAD_HIDDEN, GineEncoder
from formula_assets.training.inputs import PartBatch

INITIAL_TEMPERATURE = 0.07
MIN_TEMPERATURE = 0.01
# bag_dual_cl: feature vectors start small and random, the temperature where in-batch
# negatives losses over normalised vectors usually settle
BAG_INIT_STD = 0.1
BAG_INITIAL_TEMPERATURE = 0.05


class ProjectionHead(nn.Module):
    """Linear–ReLU–Linear over a frozen vector (L2-normalised first, so Σ and mean agree)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, out_dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(F.normalize(x, dim=-1))


class Temperature(nn.Module):
    """CLIP's learnable temperature, stored as a log scale and kept above MIN_TEMPERATURE."""

    def __init__(self, initial: float = INITIAL_TEMPERATURE, learnable: bool = True) -> None:
        super().__init__()
        value = torch.tensor(math.log(1 / initial))
        self.log_scale = nn.Parameter(value, requires_grad=learnable)

    def forward(self) -> torch.Tensor:
        return 1 / self.log_scale.exp().clamp(max=1 / MIN_TEMPERATURE)


class DualEncoder(nn.Module):
    """`sbert_dual_cl`: projection heads over frozen sentence vectors of OPT text and semantics."""

    def __init__(
        self, structural_dim: int, semantic_dim: int, hidden: int, out_dim: int, dropout: float
    ) -> None:
        super().__init__()
        self.structural = ProjectionHead(structural_dim, hidden, out_dim, dropout)
        self.semantic = ProjectionHead(semantic_dim, hidden, out_dim, dropout)
        self.temperature = Temperature()

    def encode_structural(self, x: torch.Tensor) -> torch.Tensor:
        return self.structural(x)

    def structural_views(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return views(self.structural, x)

    def encode_semantic(self, x: torch.Tensor) -> torch.Tensor:
        return self.semantic(x)


class GraphTextModel(nn.Module):
    """`graph_text_cl`: the GINE encoder over OPT graphs against a semantic projection head.

    Views for the intra-modal loss differ by dropout on the pooled graph vector before W_proj.
    """

    def __init__(
        self,
        vocabulary_size: int,
        semantic_dim: int,
        hidden: int,
        out_dim: int,
        dropout: float,
        layers: int = 2,
        text_dim: int = 0,
        readout: str = "mean",
        token_dropout: float = 0.0,
        formula_dim: int = 0,
        head_hidden: int = HEAD_HIDDEN,
        head_dropout: float = HEAD_DROPOUT,
        semantic_hidden: int | None = None,
        semantic_dropout: float | None = None,
    ) -> None:
        """`semantic_hidden`, `semantic_dropout`: the semantic head's (None: `hidden`,
        `dropout`)."""
        super().__init__()
        self.graph = GineEncoder(
            vocabulary_size,
            hidden,
            out_dim,
            layers,
            dropout=0.0,
            text_dim=text_dim,
            readout=readout,
            token_dropout=token_dropout,
            formula_dim=formula_dim,
            head_hidden=head_hidden,
            head_dropout=head_dropout,
        )
        self.view_dropout = nn.Dropout(dropout)
        self.semantic = ProjectionHead(
            semantic_dim,
            hidden if semantic_hidden is None else semantic_hidden,
            out_dim,
            dropout if semantic_dropout is None else semantic_dropout,
        )
        self.temperature = Temperature()

    def encode_structural(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.graph.proj(self.view_dropout(self.graph.pool(batch)))

    def structural_views(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """One GINE pass, two dropout views of its pooled vector."""
        pooled = self.graph.pool(batch)
        return views(lambda p: self.graph.proj(self.view_dropout(p)), pooled)

    def encode_semantic(self, x: torch.Tensor) -> torch.Tensor:
        return self.semantic(x)


class BagDualEncoder(nn.Module):
    """`bag_dual_cl`: one learned vector per feature (a formula's symbols, its annotation's
    texts and words), a side's vector the sum over its bag. Id 0 is padding, never learned."""

    def __init__(self, structural_size: int, semantic_size: int, out_dim: int) -> None:
        super().__init__()
        self.structural = nn.EmbeddingBag(structural_size, out_dim, mode="sum", padding_idx=0)
        self.semantic = nn.EmbeddingBag(semantic_size, out_dim, mode="sum", padding_idx=0)
        for bag in (self.structural, self.semantic):
            nn.init.normal_(bag.weight, std=BAG_INIT_STD)
            with torch.no_grad():
                bag.weight[0].zero_()
        self.temperature = Temperature(BAG_INITIAL_TEMPERATURE)

    def encode_structural(self, bag: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return self.structural(*bag)

    def encode_semantic(self, bag: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return self.semantic(*bag)


def views(encode, x) -> tuple[torch.Tensor, torch.Tensor]:
    """Two stochastic projections of the same input (independent dropout masks)."""
    return encode(x), encode(x)


class RunAverage(nn.Module):
    """Independently trained runs as one model: of one architecture (a seed ensemble), or
    fine-tunings of several base models, each run reading its own inputs (`PartBatch`).

    Each run's vectors are L2-normalised and set side by side, scaled by 1/√runs: the joined
    vectors are unit vectors whose cosine is the mean of the runs' cosines.
    """

    def __init__(self, runs: list[nn.Module]) -> None:
        super().__init__()
        self.runs = nn.ModuleList(runs)

    def encode_structural(self, x) -> torch.Tensor:
        return joined_runs([run.encode_structural(x) for run, x in self._each(x)])

    def encode_semantic(self, x) -> torch.Tensor:
        return joined_runs([run.encode_semantic(x) for run, x in self._each(x)])

    def _each(self, x) -> list[tuple[nn.Module, object]]:
        """Each run with its input: a `PartBatch` holds one per run, else all read `x`."""
        if isinstance(x, PartBatch):
            return list(zip(self.runs, x, strict=True))
        return [(run, x) for run in self.runs]


def joined_runs(parts: Sequence[torch.Tensor]) -> torch.Tensor:
    """Several models' vectors of the same rows as one: each L2-normalised, side by side,
    scaled by 1/√models, so that a cosine of the joined vectors is the mean of theirs."""
    return torch.cat([F.normalize(p, dim=-1) for p in parts], dim=-1) / math.sqrt(len(parts))


class SymbolLexicon(nn.Module):
    """`symbol_lexicon`: counts, not gradients. Both sides are vectors over the symbols
    declared on the training split: a formula the indicator of its symbols, a semantic text
    its concept's declared symbols (the share of its declarations each took), both weighted
    by each symbol's inverse document frequency, so that the cosine counts the rare symbols
    most. Ids 0 and 1 (padding, unknown) have no symbol and weigh nothing."""

    def __init__(self, symbols: int, texts: int) -> None:
        super().__init__()
        self.register_buffer("symbol_weights", torch.zeros(symbols))
        self.register_buffer("lexicon", torch.zeros(texts, symbols))

    def encode_structural(self, bag: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ids, starts = bag
        lengths = torch.diff(starts, append=torch.tensor([len(ids)], device=starts.device))
        rows = torch.repeat_interleave(torch.arange(len(starts), device=ids.device), lengths)
        out = torch.zeros(len(starts), len(self.symbol_weights), device=ids.device)
        out[rows, ids] = self.symbol_weights[ids]
        return out

    def encode_semantic(self, bag: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ids, starts = bag
        return F.embedding_bag(ids, self.lexicon, starts, mode="sum")
