"""One fold × method: split, prepare the method's inputs, train with early stopping (once per
run, each with its own seed), encode every formula, describe the model.

What differs between methods — their settings, their structural inputs and their network —
comes from the method (`Trainable`: a `formula_assets.methods` TrainedMethod); everything
else is this one loop, so every method is trained, seeded, split and recorded the same way.
"""

from __future__ import annotations

import dataclasses
import platform
import time
from collections.abc import Callable
from typing import Protocol

import numpy as np
import torch

from formula_assets.core.profiles import Profile
from formula_assets.training.artifacts import (
    ModelDescription,
    RunSummary,
    SplitSizes,
    TrainedModel,
    embeddings_table,
)
from formula_assets.training.data import AlignmentData
from formula_assets.training.determinism import deterministic
from formula_assets.training.folds import split_rows
from formula_assets.training.inputs import FoldRows, Inputs, Prepared, run_inputs
from formula_assets.training.models import RunAverage
from formula_assets.training.settings import MethodSettings
from formula_assets.training.trainer import TrainSettings, encode, retrieval_quality, train
from formula_assets.training.weights import kept_state

# The training profile (sizes, epochs, seeds) changes every model: it enters the code version.
RESULT_SETTINGS = ("profile",)
# Run r of a model trains with seed `seed + RUN_SEED_STRIDE × r` (run 0: the model's seed).
RUN_SEED_STRIDE = 100_000
Log = Callable[[str], None]


class Trainable(Protocol):
    """What the loop needs of a trained method."""

    name: str

    def settings(self, profile: Profile) -> MethodSettings: ...

    def prepare(
        self, data: AlignmentData, rows: FoldRows, description: ModelDescription, device: str
    ) -> Prepared: ...

    def semantic_inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> Inputs: ...

    def network(self, description: ModelDescription) -> torch.nn.Module:
        """One untrained network of the described architecture."""
        ...

    def run_count(self, description: ModelDescription) -> int: ...

    def run_description(self, description: ModelDescription, run: int) -> ModelDescription: ...


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def train_fold(
    method: Trainable,
    fold: int,
    data: AlignmentData,
    profile: Profile,
    device: str | None = None,
    log: Log | None = None,
) -> TrainedModel:
    log = log or (lambda _message: None)
    device = device or default_device()
    if profile.torch_threads > 0:
        torch.set_num_threads(profile.torch_threads)
    split, train_rows, validation_rows = split_rows(
        data.qids, data.folds, fold, profile.validation_fraction, profile.selection_fraction
    )
    index = {q: i for i, q in enumerate(data.qids)}
    split_test_rows = np.array([index[q] for q in split.test], dtype=np.int64)
    settings = method.settings(profile)
    seed = profile.seed * 1000 + fold
    torch.manual_seed(seed)
    untrained = ModelDescription(
        method=method.name,
        fold=fold,
        profile=profile.name,
        settings=settings,
        seed=seed,
        semantic_dim=int(data.semantic.shape[1]),
        structural_dim=int(data.opt_text.shape[1]),
        split_sizes=SplitSizes(
            train=len(split.train),
            validation=len(split.validation),
            selection=len(split.selection),
            test=len(split.test),
        ),
        validation_fraction=profile.validation_fraction,
        selection_fraction=profile.selection_fraction,
    )
    prepared = method.prepare(data, FoldRows(train_rows, split_test_rows), untrained, device)
    description, structural = prepared.description, prepared.structural
    if settings.epochs == 0 and prepared.state is None:
        raise ValueError(f"{method.name}: 0 epochs train nothing, and nothing was fitted")
    semantic = method.semantic_inputs(description, data, device)
    run_count = method.run_count(description)
    log(
        f"{method.name} fold {fold}: {len(train_rows)} train, {len(validation_rows)} "
        f"validation, {len(split.test)} test formulae; {profile.name} profile on {device}"
        + (f", {run_count} runs" if run_count > 1 else "")
    )
    started = time.perf_counter()
    trained: list[torch.nn.Module] = []
    runs: list[RunSummary] = []
    history: list[dict[str, float]] = []
    run_settings = TrainSettings(
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        weight_decay=settings.weight_decay,
        intra_weight=settings.intra_weight,
        patience=settings.patience,
        seed=seed,
    )
    with deterministic(device) as determinism:
        for run in range(run_count):
            run_seed = seed + RUN_SEED_STRIDE * run
            torch.manual_seed(run_seed)
            module = method.network(method.run_description(description, run))
            if prepared.state is not None:
                module.load_state_dict(prepared.state)
            module = module.to(device)
            run_started = time.perf_counter()
            result = train(
                module,
                run_inputs(structural, run),
                run_inputs(semantic, run),
                train_rows,
                validation_rows,
                dataclasses.replace(run_settings, seed=run_seed),
                log,
            )
            trained.append(module)
            history += [{"run": run, **entry} for entry in result.history]
            runs.append(
                RunSummary(
                    seed=run_seed,
                    best_epoch=result.best_epoch,
                    best_validation_mrr=result.best_validation_mrr,
                    epochs_run=len(result.history),
                    stopped_early=result.stopped_early,
                    train_seconds=round(time.perf_counter() - run_started, 2),
                )
            )
    if not determinism.deterministic:
        log(f"not deterministic on {device}: {'; '.join(determinism.warnings)[:500]}")
    model = trained[0] if len(trained) == 1 else RunAverage(trained)
    validation = retrieval_quality(*encode(model, structural, semantic, validation_rows))
    roles = split.roles()
    all_rows = np.arange(len(data.qids))
    z_struct, z_sem = encode(model, structural, semantic, all_rows)
    description = dataclasses.replace(
        description,
        runs=tuple(runs),
        # the model as a whole: its validation MRR, the latest best epoch of any run, every
        # epoch trained
        best_epoch=max(r.best_epoch for r in runs),
        best_validation_mrr=validation["mrr"],
        validation=validation,
        epochs_run=sum(r.epochs_run for r in runs),
        stopped_early=all(r.stopped_early for r in runs),
        train_seconds=round(time.perf_counter() - started, 2),
        device=device,
        deterministic=determinism.deterministic,
        torch_threads=torch.get_num_threads(),
        torch_version=torch.__version__,
        python_version=platform.python_version(),
    )
    return TrainedModel(
        description=description,
        state=kept_state(model),
        history=history,
        embeddings=embeddings_table(data.qids, [roles[q] for q in data.qids], z_struct, z_sem),
    )
