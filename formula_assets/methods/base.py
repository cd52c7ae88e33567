"""The one interface of a method: what it is, how Table 2 and the search index read its
vectors, how a query is encoded, and (for a trained method) how it is trained.

A method is an object (a `Method`) whose class attributes say what it is:

* `trained`: it learns, one `fold_models` partition per fold (a `TrainedMethod`);
* `ensemble_member`: `score_ensemble` weighs its scores (it must have vectors);
* `indexed`: its vectors are in `search_index` and `formula-assets search --method` offers it;
* `training_cost`: how long one fold trains, relative to `sbert_dual_cl` (1.0), for schedulers.

Its hooks:

* Table 2 and the index — `space(data, split, qids)`: the (structural, semantic) vectors of
  some formulae of one fold in one shared space (scored by cosine); a method without vectors
  (BM25) returns None and scores with `scorers`.
* search — `formula_vector(query, model)` / `text_vector(query, model)`: a query encoded into
  that space, as `space` has the corpus.
* training — `settings`, `base_models`, `prepare` / `inputs` / `semantic_inputs`, `network`
  (see `TrainedMethod`); the loop
  itself is `training.fold.train_fold`, the same for every method.

Heavy libraries (torch, BM25) are imported where they are used: the registry lists every
method, and the command line reads it before doing anything.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
import pyarrow as pa

from formula_assets.core.profiles import Profile
from formula_assets.training.settings import MethodSettings

if TYPE_CHECKING:
    import torch
    from upath import UPath

    from formula_assets.evaluation.hubness import Space
    from formula_assets.evaluation.lineup import FoldData
    from formula_assets.evaluation.ranking import Scorer
    from formula_assets.graphs.inputs import TokenTexts
    from formula_assets.training.artifacts import ModelDescription, TrainedModel
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import FoldRows, Inputs, Prepared


class RegistrationError(RuntimeError):
    """The methods the settings name cannot be registered (`methods.registry`, when first
    imported): a profile or FORMULA_ASSETS_EXTRA_METHODS names something that is no method, or
    a method lacks settings for a profile. Defined here so that a caller can catch it while
    the registry itself failed to import."""


class FormulaQuery(Protocol):
    """A formula being searched for, and what a method may encode it from (each computed
    when first asked for, by the searcher)."""

    def linearised(self) -> str:
        """Its linearised OPT (as `opt_graphs` has them)."""
        ...

    def linearised_vector(self) -> np.ndarray:
        """The sentence vector of its linearised OPT (as `opt_text_embeddings` has them)."""
        ...

    def graphs(self) -> pa.Table:
        """Its OPT as a one-row `opt_graphs` table."""
        ...

    def token_texts(self, graphs: pa.Table) -> TokenTexts:
        """The sentence vectors of the graphs' token texts (as `opt_token_embeddings`)."""
        ...


class TextQuery(Protocol):
    """A text being searched for: the text itself, and its sentence vector (computed when
    first asked for, as `semantic_embeddings` embeds an annotation text)."""

    text: str

    def vector(self) -> np.ndarray: ...


@dataclass(frozen=True)
class LoadedModel:
    """A trained model ready to encode queries: its description and its network (eval mode)."""

    description: ModelDescription
    module: torch.nn.Module


class Method:
    """A method of the comparison; subclasses set the attributes and implement the hooks."""

    name: ClassVar[str] = ""
    trained: ClassVar[bool] = False
    ensemble_member: ClassVar[bool] = False
    indexed: ClassVar[bool] = True
    training_cost: ClassVar[float] = 0.0

    def space(self, data: FoldData, split: str | None, qids: Sequence[str]) -> Space | None:
        """The (structural, semantic) vectors of `qids` of `split` (None: of every formula
        the fold's models hold); None when the method has no vectors."""
        raise NotImplementedError

    def scorers(self, data: FoldData, split: str, qids: Sequence[str]) -> tuple[Scorer, Scorer]:
        """(syntactic → semantic, semantic → syntactic) scorers of a method without vectors."""
        raise NotImplementedError(f"{self.name} has vectors: Table 2 scores them by cosine")

    def formula_vector(self, query: FormulaQuery, model: LoadedModel | None) -> np.ndarray:
        """A formula query in the structural side of the method's space."""
        raise NotImplementedError(f"{self.name} does not answer searches")

    def text_vector(self, query: TextQuery, model: LoadedModel | None) -> np.ndarray:
        """A text query in the semantic side of the method's space."""
        raise NotImplementedError(f"{self.name} does not answer searches")

    def text_vectors(self, queries: Sequence[TextQuery], model: LoadedModel | None) -> np.ndarray:
        """Many text queries at once (rows), as `text_vector` encodes each; a method whose
        network can take a batch says so here (the audit maps the whole concept vocabulary)."""
        return np.stack([self.text_vector(q, model) for q in queries])

    def __repr__(self) -> str:
        return f"<method {self.name}>"


class TrainedMethod(Method):
    """A method trained per fold by the shared loop, `training.fold.train_fold(method, …)`:
    the method names its settings, prepares its structural inputs and builds its network;
    the semantic side is the sentence vectors of `semantic_embeddings` unless
    `semantic_inputs` says otherwise (the fine-tuned encoder reads the annotation texts).

    The loop is not imported here: Table 2 and the search index read a method's vectors,
    and their code versions need not follow the loop's source."""

    trained = True
    training_cost = 1.0
    # its settings' class (`MethodSettings` or the method's own subclass: what its stored
    # descriptions load as) and its settings in each profile, by profile name
    settings_type: ClassVar[type[MethodSettings]] = MethodSettings
    profile_settings: ClassVar[Mapping[str, MethodSettings]] = {}

    # -- training ------------------------------------------------------------------------

    def settings(self, profile: Profile) -> MethodSettings:
        """Its sizes and schedule in a training profile (by default its `profile_settings`
        entry for the profile's name)."""
        try:
            return self.profile_settings[profile.name]
        except KeyError:
            raise ValueError(
                f"{self.name} has no settings for the profile {profile.name!r} (it has "
                f"{', '.join(self.profile_settings) or 'none'}): give it one in its module"
            ) from None

    def with_settings(self, settings: MethodSettings) -> TrainedMethod:
        """This method training with `settings` in every profile (experiments and tests
        that vary a setting without a profile of their own)."""
        if not isinstance(settings, self.settings_type):
            raise TypeError(
                f"{self.name} takes {self.settings_type.__name__}, not {type(settings).__name__}"
            )
        varied = copy.copy(self)
        varied.settings = lambda profile: settings  # type: ignore[method-assign]
        return varied

    def base_models(self, profile: Profile) -> list[str]:
        """The pretrained models it starts from besides the embedding model's vectors (names
        as `embedding_model` takes them): `sentence_model` observes their files, so lineage
        sees one changed in place. None by default."""
        return []

    def base_identities(self, profile: Profile) -> list[str]:
        """The content hashes of the `base_models` it would start from now: a training
        recipe holds them, so a model is not reused once one changed in place. Called inside
        `training.sentence_encoder.frozen_store` (where packaged models are unpacked)."""
        return []

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared:
        """The description completed with what rebuilding the network needs (fitted on
        `rows.train` only, e.g. a vocabulary), and the structural inputs it reads. By
        default nothing is fitted."""
        from formula_assets.training.inputs import Prepared

        return Prepared(self.inputs(description, data, device), description)

    def inputs(self, description: ModelDescription, data: AlignmentData, device: str) -> Inputs:
        """The structural inputs of every formula of `data`, as the described model reads
        them (rows: `data.qids`)."""
        raise NotImplementedError

    def semantic_inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> Inputs:
        """The semantic inputs of every formula of `data` (rows: `data.qids`): by default the
        sentence vectors of `semantic_embeddings`."""
        import torch

        from formula_assets.training.inputs import MatrixInputs

        return MatrixInputs(torch.from_numpy(data.semantic.copy()).to(device))

    def network(self, description: ModelDescription) -> torch.nn.Module:
        """One untrained network of the described architecture (created after the loop
        seeded torch: parameters are initialised in construction order)."""
        raise NotImplementedError

    def query_input(self, description: ModelDescription, query: FormulaQuery) -> Any:
        """The structural input of one query, as `prepare`'s inputs give a batch of one."""
        raise NotImplementedError

    def run_count(self, description: ModelDescription) -> int:
        """How many independently trained runs the described model averages."""
        return description.settings.runs

    def run_description(self, description: ModelDescription, run: int) -> ModelDescription:
        """The description of one run's network (by default every run's is the model's;
        a method whose runs differ, e.g. in their base model, says how)."""
        return description

    def build(self, description: ModelDescription) -> torch.nn.Module:
        """The untrained model a description names: one network, or the average of its
        runs (weights come from safetensors)."""
        from formula_assets.training.models import RunAverage

        runs = range(self.run_count(description))
        networks = [self.network(self.run_description(description, r)) for r in runs]
        return networks[0] if len(networks) == 1 else RunAverage(networks)

    def loaded(self, trained: TrainedModel) -> LoadedModel:
        """A trained model (a `fold_models` value) as a network that encodes queries: built
        as its description says (a base model's frozen part from its files), its stored
        weights loaded strictly (a network they do not fit is an error, not a half-trained
        model) and in eval mode, so dropout is off and a query always gets the same vector.
        The search and the audit both load models here."""
        from formula_assets.training.weights import load_kept_state

        module = self.build(trained.description)
        load_kept_state(module, trained.state)
        module.eval()
        return LoadedModel(trained.description, module)

    def read_model(self, directory: UPath, *, embeddings: bool = True) -> TrainedModel:
        """The model stored in `directory` (the model store's layout), its settings as this
        method's class (`embeddings=False`: without the items' vectors)."""
        from formula_assets.training.artifacts import load_model

        return load_model(directory, self.settings_type, embeddings=embeddings)

    def load(self, directory: UPath) -> LoadedModel:
        """The model stored in `directory`, as `loaded` makes it (the items' vectors it
        stored are not read: a query needs only the network)."""
        return self.loaded(self.read_model(directory, embeddings=False))

    # -- Table 2 and the index -----------------------------------------------------------

    def space(self, data: FoldData, split: str | None, qids: Sequence[str]) -> Space:
        """The vectors the fold's model gave these formulae when it was trained."""
        stored, structural, semantic = data.models[self.name].split_vectors(split)
        if stored != list(qids):
            what = f"{split} split" if split else "formulae"
            raise ValueError(f"{self.name} used another {what} than the other methods")
        return structural, semantic

    # -- search --------------------------------------------------------------------------

    def formula_vector(self, query: FormulaQuery, model: LoadedModel | None) -> np.ndarray:
        import torch

        if model is None:
            raise ValueError(f"{self.name} encodes queries with its trained model")
        with torch.no_grad():
            batch = self.query_input(model.description, query)
            return model.module.encode_structural(batch)[0].numpy()

    def text_vector(self, query: TextQuery, model: LoadedModel | None) -> np.ndarray:
        return self.text_vectors([query], model)[0]

    def text_vectors(self, queries: Sequence[TextQuery], model: LoadedModel | None) -> np.ndarray:
        import torch

        if model is None:
            raise ValueError(f"{self.name} encodes queries with its trained model")
        vectors = np.stack([np.asarray(q.vector(), dtype=np.float32) for q in queries])
        with torch.no_grad():
            return model.module.encode_semantic(torch.from_numpy(vectors)).numpy()
