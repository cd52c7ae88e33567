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
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods.base import FormulaQuery, TrainedMethod

if TYPE_CHECKING:
    import torch

    from formula_assets.graphs.inputs import GraphInputs, TokenTexts
    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import FoldRows, Prepared


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

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared:
        from formula_assets.training.inputs import Prepared

        settings = description.settings
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

        settings = description.settings
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
