"""The training loop: contrastive steps on the training split, early stopping on validation.

The test split is not an argument here: nothing in training can see it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from formula_assets.evaluation.ranking import DotScorer, gold_ranks, normalise_rows
from formula_assets.training.inputs import Inputs
from formula_assets.training.losses import alignment_loss

Log = Callable[[str], None]


@dataclass(frozen=True)
class TrainSettings:
    epochs: int
    batch_size: int
    learning_rate: float
    weight_decay: float
    intra_weight: float
    patience: int
    seed: int
    min_delta: float = 1e-4


@dataclass
class TrainingResult:
    best_epoch: int
    best_validation_mrr: float
    history: list[dict[str, float]] = field(default_factory=list)
    stopped_early: bool = False
    seconds: float = 0.0


def encode(
    model: torch.nn.Module,
    structural: Inputs,
    semantic: Inputs,
    rows: np.ndarray,
    batch_size: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """L2-normalised (structural, semantic) vectors of the given rows, in eval mode."""
    model.eval()
    zs, zm = [], []
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            part = rows[start : start + batch_size]
            zs.append(model.encode_structural(structural.batch(part)).float().cpu().numpy())
            zm.append(model.encode_semantic(semantic.batch(part)).float().cpu().numpy())
    return normalise_rows(np.concatenate(zs)), normalise_rows(np.concatenate(zm))


def retrieval_quality(zs: np.ndarray, zm: np.ndarray) -> dict[str, float]:
    """MRR and R@10 in both directions, and their mean MRR (the selection criterion)."""
    scorer = DotScorer(zs, zm)
    forward = gold_ranks(scorer).summary()
    backward = gold_ranks(scorer.reverse()).summary()
    return {
        "mrr_syntactic_to_semantic": forward["mrr"],
        "mrr_semantic_to_syntactic": backward["mrr"],
        "recall_at_10_syntactic_to_semantic": forward["recall_at_10"],
        "recall_at_10_semantic_to_syntactic": backward["recall_at_10"],
        "mrr": (forward["mrr"] + backward["mrr"]) / 2,
    }


def one_cycle(
    optimizer: torch.optim.Optimizer, max_lr: float, total_steps: int
) -> torch.optim.lr_scheduler.LRScheduler:
    """One-cycle schedule with 10 % warm-up, safe for short runs.

    torch's OneCycleLR divides by the length of each phase, which is zero when the warm-up
    rounds to one step (10 steps in all) and negative below that; short runs get two warm-up
    steps, and runs under four steps a constant rate.
    """
    if total_steps < 4:
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _step: 1.0)
    return torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=max_lr, total_steps=total_steps, pct_start=max(0.1, 2 / total_steps)
    )


def train(
    model: torch.nn.Module,
    structural: Inputs,
    semantic: Inputs,
    train_rows: np.ndarray,
    validation_rows: np.ndarray,
    settings: TrainSettings,
    log: Log | None = None,
) -> TrainingResult:
    """Train in place; the model ends with the weights of its best validation epoch (with
    `settings.epochs` 0, untouched: a model fitted in closed form is only measured)."""
    log = log or (lambda _message: None)
    if settings.epochs == 0:  # fitted in closed form (counts): the model as it is
        quality = retrieval_quality(*encode(model, structural, semantic, validation_rows))
        log(f"no epochs: validation MRR {quality['mrr']:.4f} as fitted")
        return TrainingResult(best_epoch=0, best_validation_mrr=quality["mrr"])
    generator = np.random.default_rng(settings.seed)
    torch.manual_seed(settings.seed)
    # fused: one vectorised pass over each parameter instead of a dozen (the bag encoder's
    # large tables spent half its training in the optimizer: a fold 17.5 s → 9.2 s, the same
    # model; docs/performance.md)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=settings.learning_rate,
        weight_decay=settings.weight_decay,
        fused=True,
    )
    steps_per_epoch = max(1, int(np.ceil(len(train_rows) / settings.batch_size)))
    scheduler = one_cycle(optimizer, settings.learning_rate, settings.epochs * steps_per_epoch)
    started = time.perf_counter()
    result = TrainingResult(best_epoch=0, best_validation_mrr=-1.0)
    best_state: dict[str, torch.Tensor] | None = None
    waited = 0
    for epoch in range(1, settings.epochs + 1):
        epoch_started = time.perf_counter()
        model.train()
        order = generator.permutation(train_rows)
        totals: dict[str, float] = {}
        for rows in batches(order, settings.batch_size):
            if len(rows) < 2:
                continue
            loss, parts = _step_loss(model, structural, semantic, rows, settings.intra_weight)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            for key, value in {"loss": float(loss.detach()), **parts}.items():
                totals[key] = totals.get(key, 0.0) + value * len(rows)
        quality = retrieval_quality(*encode(model, structural, semantic, validation_rows))
        entry = {
            "epoch": epoch,
            **{k: v / len(order) for k, v in totals.items()},
            **{f"validation_{k}": v for k, v in quality.items()},
            "temperature": float(model.temperature().detach()),
            "seconds": time.perf_counter() - epoch_started,
        }
        result.history.append(entry)
        improved = quality["mrr"] > result.best_validation_mrr + settings.min_delta
        if improved:
            result.best_epoch, result.best_validation_mrr = epoch, quality["mrr"]
            best_state = copy.deepcopy(model.state_dict())
            waited = 0
        else:
            waited += 1
        log(
            f"epoch {epoch}/{settings.epochs}: loss {entry['loss']:.4f}, validation MRR "
            f"{quality['mrr']:.4f}{' (best)' if improved else ''}, {entry['seconds']:.1f} s"
        )
        if waited >= settings.patience:
            result.stopped_early = True
            log(f"early stop: no validation gain for {settings.patience} epochs")
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    result.seconds = time.perf_counter() - started
    return result


def batches(order: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """`order` (a permutation of row numbers) cut into batches: in-batch negatives are
    random rows of the training split."""
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def _step_loss(
    model: torch.nn.Module,
    structural: Inputs,
    semantic: Inputs,
    rows: np.ndarray,
    intra_weight: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    s_in, m_in = structural.batch(rows), semantic.batch(rows)
    temperature = model.temperature()
    if intra_weight > 0:
        zs, zs_view = model.structural_views(s_in)
        zm, zm_view = model.encode_semantic(m_in), model.encode_semantic(m_in)
        return alignment_loss(zs, zm, temperature, intra_weight, zs_view, zm_view)
    return alignment_loss(model.encode_structural(s_in), model.encode_semantic(m_in), temperature)
