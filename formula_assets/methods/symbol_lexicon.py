"""`symbol_lexicon`: which symbols Wikidata writes each concept with, counted on the
training split (`training.models.SymbolLexicon`).

Wikidata declares, for most formulae, the symbol of each concept in it (`concept_symbols`:
`c` for the speed of light in vacuum, `ε_0` for the permittivity of vacuum). Counted over the
training formulae, those declarations are a lexicon: a concept label → the symbols it is
written with, and how often. A formula is then the set of its symbols; its semantics the
symbols its annotation texts' concepts are declared with (a text that is no concept label of
the training split contributes nothing); cosine compares them, rarer symbols weighing more.
Only training formulae's declarations are counted: the other splits' formulae are scored
from their MathML and their annotation texts alone, as every method scores them.

Fitted in closed form (no epochs): seconds per fold, the same in every profile. The trained
methods read symbols through sentence vectors or learn them from co-occurrence
(`bag_dual_cl`); none reads the declarations, so the ensemble gains what they miss.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from formula_assets.core.profiles import Profile
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods.base import FormulaQuery, LoadedModel, TextQuery, TrainedMethod
from formula_assets.syntax.symbols import formula_symbols
from formula_assets.training.settings import MethodSettings

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import torch

    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import BagInputs, FoldRows, Prepared

# Nothing to tune, in any profile: 0 epochs (fitted, not trained), one run; the schedule's
# other fields are unused.
SETTINGS = MethodSettings(
    epochs=0, batch_size=1, learning_rate=0.0, weight_decay=0.0, intra_weight=0.0, patience=0
)


def text_key(text: str) -> str:
    """An annotation text as the lexicon looks it up: case-folded, spaces collapsed."""
    return " ".join(text.casefold().split())


def graph_symbols(graphs: pa.Table) -> list[list[str]]:
    """Each `opt_graphs` row's symbols."""
    return [
        formula_symbols(tokens, parents, children)
        for tokens, parents, children in zip(
            graphs.column("node_tokens").to_pylist(),
            graphs.column("edge_parent").to_pylist(),
            graphs.column("edge_child").to_pylist(),
            strict=True,
        )
    ]


class SymbolLexiconMethod(TrainedMethod):
    name = "symbol_lexicon"
    ensemble_member = True
    training_cost = 0.05

    def settings(self, profile: Profile) -> MethodSettings:
        return SETTINGS

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared:
        """The lexicon and the symbols' weights, from the training rows only."""
        import torch

        from formula_assets.training.inputs import Prepared

        if data.declared_symbols is None:
            raise ValueError(f"{self.name} counts declared symbols: pass concept_symbols")
        train = [int(r) for r in rows.train]
        declarations = [
            (text_key(label), s) for r in train for label, s in data.declared_symbols[r]
        ]
        symbols = TokenVocabulary.build(s for _, s in declarations)
        texts = TokenVocabulary.build([key] for key, _ in declarations)
        description = dataclasses.replace(
            description, vocabulary=symbols.tokens, semantic_vocabulary=texts.tokens
        )
        # a symbol's weight: its inverse document frequency among the training formulae
        in_formulae = Counter(s for row in graph_symbols(data.graphs.take(train)) for s in row)
        weights = torch.zeros(len(symbols))
        for i, symbol in enumerate(symbols.tokens[2:], start=2):
            weights[i] = math.log((len(train) + 1) / (in_formulae[symbol] + 1)) + 1
        lexicon = torch.zeros(len(texts), len(symbols))
        for key, declared in declarations:
            lexicon[texts.ids([key])[0], symbols.ids(declared)] += 1
        lexicon /= lexicon.new_tensor(texts.counts).clamp(min=1).unsqueeze(1)
        state = {"symbol_weights": weights, "lexicon": lexicon * weights}
        return Prepared(self.inputs(description, data, device), description, state)

    def inputs(self, description: ModelDescription, data: AlignmentData, device: str) -> BagInputs:
        return _bags(description.vocabulary, graph_symbols(data.graphs), device)

    def semantic_inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> BagInputs:
        if data.annotation_texts is None:
            raise ValueError(f"{self.name} reads the annotation texts: pass concept_annotations")
        keys = [sorted({text_key(t) for t in texts}) for texts in data.annotation_texts]
        return _bags(description.semantic_vocabulary, keys, device)

    def network(self, description: ModelDescription) -> torch.nn.Module:
        from formula_assets.training.models import SymbolLexicon

        return SymbolLexicon(len(description.vocabulary), len(description.semantic_vocabulary))

    def query_input(self, description: ModelDescription, query: FormulaQuery):
        return _bags(description.vocabulary, graph_symbols(query.graphs()), "cpu").batch([0])

    def text_vectors(self, queries: Sequence[TextQuery], model: LoadedModel | None) -> np.ndarray:
        import numpy as np
        import torch

        if model is None:
            raise ValueError(f"{self.name} encodes queries with its fitted lexicon")
        bags = _bags(
            model.description.semantic_vocabulary, [[text_key(q.text)] for q in queries], "cpu"
        )
        with torch.no_grad():
            return model.module.encode_semantic(bags.batch(np.arange(len(queries)))).numpy()


def _bags(vocabulary: Sequence[str], features: list[list[str]], device: str) -> BagInputs:
    from formula_assets.training.inputs import BagInputs

    return BagInputs.known(vocabulary, features, device)


METHOD = SymbolLexiconMethod()
