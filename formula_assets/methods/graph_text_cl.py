"""`graph_text_cl`: the GINE encoder over OPT graphs against a semantic projection head,
trained contrastively (`training.models.GraphTextModel`).

The token vocabulary is built from the training split only, so test-only tokens are unknown,
as they would be for new formulae. Nodes may also read their token's sentence vector
(`token_text`) and the sentence vector of the whole linearised OPT (`formula_text`); the
description records the widths, and training and search build the inputs the same way
(`graph_inputs`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods.base import FormulaQuery, TrainedMethod
from formula_assets.training.settings import MethodSettings, settings_as

if TYPE_CHECKING:
    import torch

    from formula_assets.graphs.inputs import GraphInputs, TokenTexts
    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import FoldRows, Prepared


@dataclass(frozen=True, kw_only=True)
class GraphTextSettings(MethodSettings):
    layers: int = 2  # GINE layers
    token_text: bool = False  # node features include the sentence vector of the token's text
    token_dropout: float = 0.0  # share of training tokens replaced by UNK
    # every node also gets the sentence vector of the whole linearised OPT (formula context)
    formula_text: bool = False
    readout: str = "mean"  # "mean" or "mean+formula" (the formula context through a head)
    head_hidden: int = 1024  # that head's width and dropout
    head_dropout: float = 0.3
    # the semantic projection head's width and dropout (None: `hidden`, `dropout`)
    semantic_hidden: int | None = None
    semantic_dropout: float | None = None


# the options the ablation kept within the default's time budget: token texts, the formula
# context and its head, and a semantic head as wide (and as dropped) as sbert_dual_cl's
_DEFAULT = GraphTextSettings(
    hidden=256, out_dim=256, dropout=0.1, epochs=60, batch_size=256, learning_rate=1e-3,
    weight_decay=1e-4, intra_weight=0.1, patience=8,
    token_text=True, token_dropout=0.1, formula_text=True, readout="mean+formula",
    semantic_hidden=1024, semantic_dropout=0.3,
)  # fmt: skip
PROFILE_SETTINGS: dict[str, GraphTextSettings] = {
    # the default's node inputs and heads, so that tests exercise every path it takes
    "smoke": replace(
        _DEFAULT,
        hidden=64,
        out_dim=64,
        epochs=10,
        batch_size=64,
        learning_rate=3e-3,
        patience=10,
        head_hidden=128,
        semantic_hidden=128,
        semantic_dropout=0.1,
    ),
    # narrower than `medium`'s, which costs little validation MRR on the slowest CPU measured
    "default": replace(_DEFAULT, epochs=15, hidden=192),
    "medium": replace(_DEFAULT, epochs=15),
    "large": replace(_DEFAULT, hidden=512, patience=15),
    # the paper's aligner: hidden 768, 200 epochs, early stopping that never stops it
    "paper": GraphTextSettings(
        hidden=768,
        out_dim=768,
        dropout=0.1,
        epochs=200,
        batch_size=256,
        learning_rate=5e-4,
        weight_decay=1e-4,
        intra_weight=0.1,
        patience=200,
    ),
}


def unseen_tokens(
    graphs: pa.Table, rows: np.ndarray, vocabulary: TokenVocabulary
) -> dict[str, float]:
    """How many of the given rows' tokens the (training) vocabulary does not know."""
    known = set(vocabulary.tokens[2:])
    tokens = [t for r in rows for t in graphs["node_tokens"][int(r)].as_py()]
    unseen = [t for t in tokens if t not in known]
    return {
        "occurrences": len(unseen),
        "distinct": len(set(unseen)),
        "share_of_occurrences": len(unseen) / len(tokens) if tokens else 0.0,
        "formulae_with_any": int(
            sum(any(t not in known for t in graphs["node_tokens"][int(r)].as_py()) for r in rows)
        ),
    }


def graph_inputs(
    description: ModelDescription,
    graphs: pa.Table,
    device: str,
    token_texts: TokenTexts | None = None,
    formula_vectors: np.ndarray | None = None,
) -> GraphInputs:
    """The inputs the described model reads: its vocabulary's ids, and the token texts and
    formula contexts (row-aligned with `graphs`) when it was built for them."""
    from formula_assets.graphs.inputs import GraphInputs

    if description.token_text_dim and token_texts is None:
        raise ValueError("the model reads token texts: pass opt_token_embeddings")
    return GraphInputs(
        graphs,
        TokenVocabulary.from_tokens(description.vocabulary),
        device,
        token_texts if description.token_text_dim else None,
        formula_vectors if description.formula_text_dim else None,
    )


class GraphTextContrastive(TrainedMethod):
    name = "graph_text_cl"
    ensemble_member = True
    training_cost = 3.0
    settings_type = GraphTextSettings
    profile_settings = PROFILE_SETTINGS

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared:
        from formula_assets.training.inputs import Prepared

        settings = settings_as(description.settings, GraphTextSettings, self.name)
        vocabulary = TokenVocabulary.build(
            data.graphs.take(pa.array(rows.train)).column("node_tokens").to_pylist()
        )
        if settings.token_text and data.token_texts is None:
            raise ValueError("the profile uses token texts: pass opt_token_embeddings")
        description = dataclasses.replace(
            description,
            vocabulary=vocabulary.tokens,
            unseen_test_tokens=unseen_tokens(data.graphs, rows.test, vocabulary),
            token_text_dim=int(data.token_texts.vectors.shape[1])
            if settings.token_text and data.token_texts is not None
            else 0,
            formula_text_dim=int(data.opt_text.shape[1]) if settings.formula_text else 0,
        )
        return Prepared(self.inputs(description, data, device), description)

    def inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> GraphInputs:
        return graph_inputs(description, data.graphs, device, data.token_texts, data.opt_text)

    def network(self, description: ModelDescription) -> torch.nn.Module:
        from formula_assets.training.models import GraphTextModel

        settings = settings_as(description.settings, GraphTextSettings, self.name)
        return GraphTextModel(
            len(description.vocabulary),
            description.semantic_dim,
            settings.hidden,
            settings.out_dim,
            settings.dropout,
            layers=settings.layers,
            text_dim=description.token_text_dim,
            readout=settings.readout,
            token_dropout=settings.token_dropout,
            formula_dim=description.formula_text_dim,
            head_hidden=settings.head_hidden,
            head_dropout=settings.head_dropout,
            semantic_hidden=settings.semantic_hidden,
            semantic_dropout=settings.semantic_dropout,
        )

    def query_input(self, description: ModelDescription, query: FormulaQuery):
        graphs = query.graphs()
        texts = query.token_texts(graphs) if description.token_text_dim else None
        context = query.linearised_vector()[None, :] if description.formula_text_dim else None
        return graph_inputs(description, graphs, "cpu", texts, context).batch(np.array([0]))


METHOD = GraphTextContrastive()
