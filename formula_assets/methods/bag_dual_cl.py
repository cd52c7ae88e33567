"""`bag_dual_cl`: a dual encoder over symbols and words, trained contrastively
(`training.models.BagDualEncoder`).

A formula is the bag of its OPT's distinct node tokens (`E`, `c`, `power`, `=`); its semantics
the bag of its distinct annotation texts, whole and word by word (`speed of light`, `speed`,
`light`). Each feature has a learned vector and a side's vector is their sum, so training
learns which symbols go with which concepts (`c` with the speed of light, `k_B` with
Boltzmann's constant) directly, as a translation lexicon would, where the other methods read
them through sentence vectors of the whole text. Both vocabularies come from the training
split; features only other splits have are left out (a bag may end up empty: its vector is
zero and it scores 0 against everything). Training costs seconds.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods.base import FormulaQuery, LoadedModel, TextQuery, TrainedMethod
from formula_assets.training.settings import MethodSettings

if TYPE_CHECKING:
    import numpy as np
    import torch

    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import BagInputs, FoldRows, Prepared

TEXT, WORD = "text:", "word:"  # the two kinds of semantic feature
_WORD = re.compile(r"\w+")

# a feature vector per symbol, text and word: `out_dim` is their width (no hidden layer)
_DEFAULT = MethodSettings(
    out_dim=512, epochs=60, batch_size=128, learning_rate=1e-2, weight_decay=0.01,
    intra_weight=0.0, patience=10, runs=2,
)  # fmt: skip
PROFILE_SETTINGS: dict[str, MethodSettings] = {
    "smoke": replace(_DEFAULT, out_dim=64, epochs=30, batch_size=32),
    "default": replace(_DEFAULT, runs=1),
    "medium": replace(_DEFAULT, runs=1),
    "large": _DEFAULT,
    "paper": _DEFAULT,
}


def formula_features(node_tokens: Iterable[str]) -> list[str]:
    """A formula's structural features: its distinct node tokens, sorted."""
    return sorted(set(node_tokens))


def text_features(texts: Iterable[str]) -> list[str]:
    """Annotation texts' semantic features: each distinct text (case-folded, spaces
    collapsed) and each word in it, sorted."""
    features: set[str] = set()
    for text in texts:
        folded = " ".join(text.casefold().split())
        if folded:
            features.add(TEXT + folded)
            features.update(WORD + w for w in _WORD.findall(folded))
    return sorted(features)


class BagContrastive(TrainedMethod):
    name = "bag_dual_cl"
    ensemble_member = True
    training_cost = 0.5
    profile_settings = PROFILE_SETTINGS

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared:
        """Both vocabularies from the training rows only."""
        from formula_assets.training.inputs import Prepared

        texts = self._annotation_texts(data)
        train = [int(r) for r in rows.train]
        tokens = data.graphs.take(pa.array(train, pa.int64())).column("node_tokens").to_pylist()
        description = dataclasses.replace(
            description,
            vocabulary=TokenVocabulary.build(formula_features(t) for t in tokens).tokens,
            semantic_vocabulary=TokenVocabulary.build(
                text_features(texts[r]) for r in train
            ).tokens,
        )
        return Prepared(self.inputs(description, data, device), description)

    def inputs(self, description: ModelDescription, data: AlignmentData, device: str) -> BagInputs:
        return self._bags(
            description.vocabulary,
            [formula_features(t) for t in data.graphs.column("node_tokens").to_pylist()],
            device,
        )

    def semantic_inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> BagInputs:
        texts = self._annotation_texts(data)
        return self._bags(
            description.semantic_vocabulary, [text_features(t) for t in texts], device
        )

    def _annotation_texts(self, data: AlignmentData) -> list[list[str]]:
        if data.annotation_texts is None:
            raise ValueError(f"{self.name} reads the annotation texts: pass concept_annotations")
        return data.annotation_texts

    @staticmethod
    def _bags(vocabulary: Sequence[str], features: list[list[str]], device: str) -> BagInputs:
        from formula_assets.training.inputs import BagInputs

        return BagInputs.known(vocabulary, features, device)

    def network(self, description: ModelDescription) -> torch.nn.Module:
        from formula_assets.training.models import BagDualEncoder as Network

        return Network(
            len(description.vocabulary),
            len(description.semantic_vocabulary),
            description.settings.out_dim,
        )

    def query_input(self, description: ModelDescription, query: FormulaQuery):
        tokens = query.graphs().column("node_tokens")[0].as_py()
        return self._bags(description.vocabulary, [formula_features(tokens)], "cpu").batch([0])

    def text_vector(self, query: TextQuery, model: LoadedModel | None) -> np.ndarray:
        return self.text_vectors([query], model)[0]

    def text_vectors(self, queries: Sequence[TextQuery], model: LoadedModel | None) -> np.ndarray:
        import numpy as np
        import torch

        if model is None:
            raise ValueError(f"{self.name} encodes queries with its trained model")
        bags = self._bags(
            model.description.semantic_vocabulary,
            [text_features([q.text]) for q in queries],
            "cpu",
        )
        with torch.no_grad():
            batch = bags.batch(np.arange(len(queries)))
            return model.module.encode_semantic(batch).numpy()


METHOD = BagContrastive()
