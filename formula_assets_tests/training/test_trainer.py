"""The training loop on tiny inputs (CPU, a few rows, a few epochs): one epoch is exactly the
documented recipe, early stopping follows validation MRR alone, the model ends with its best
epoch's weights, and the run's seed alone decides shuffling and dropout."""

import copy
import dataclasses
import time

import numpy as np
import pytest
import torch
from torch import nn

from formula_assets.training.inputs import MatrixInputs
from formula_assets.training.losses import info_nce
from formula_assets.training.models import DualEncoder, Temperature
from formula_assets.training.trainer import (
    TrainSettings,
    batches,
    encode,
    one_cycle,
    retrieval_quality,
    train,
)

# 16 formulae whose semantic vectors are a noisy linear map of their structural ones
_rng = np.random.default_rng(0)
X = _rng.normal(size=(16, 6)).astype(np.float32)
Y = (X @ _rng.normal(size=(6, 5)) + 0.1 * _rng.normal(size=(16, 5))).astype(np.float32)
STRUCTURAL, SEMANTIC = MatrixInputs(torch.from_numpy(X)), MatrixInputs(torch.from_numpy(Y))
TRAIN, VALIDATION = np.arange(10), np.arange(10, 16)  # 10 rows, batches of 4: sizes 4, 4, 2
SETTINGS = TrainSettings(
    epochs=2,
    batch_size=4,
    learning_rate=0.05,
    weight_decay=0.01,
    intra_weight=0.0,
    patience=5,
    seed=7,
)


def network() -> DualEncoder:
    torch.manual_seed(3)
    return DualEncoder(6, 5, hidden=8, out_dim=4, dropout=0.2)


def states_equal(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


# ----------------------------------------------------------------------------- encode


def test_encode_gives_unit_vectors_in_eval_mode_whatever_the_batch_size() -> None:
    model = network()
    model.train()  # encode switches dropout off itself
    zs, zm = encode(model, STRUCTURAL, SEMANTIC, np.array([3, 0, 5, 1, 2]), batch_size=2)
    assert zs.shape == (5, 4) and zm.shape == (5, 4)
    assert np.allclose(np.linalg.norm(zs, axis=1), 1) and np.allclose(np.linalg.norm(zm, axis=1), 1)
    with torch.no_grad():
        raw_s = model.encode_structural(torch.from_numpy(X[[3, 0, 5, 1, 2]])).numpy()
        raw_m = model.encode_semantic(torch.from_numpy(Y[[3, 0, 5, 1, 2]])).numpy()
    assert not model.training
    assert np.allclose(zs, raw_s / np.linalg.norm(raw_s, axis=1, keepdims=True), atol=1e-6)
    assert np.allclose(zm, raw_m / np.linalg.norm(raw_m, axis=1, keepdims=True), atol=1e-6)
    again, _ = encode(model, STRUCTURAL, SEMANTIC, np.array([3, 0, 5, 1, 2]))
    assert np.allclose(again, zs, atol=1e-6)


def test_retrieval_quality_by_hand() -> None:
    """Scores zs zmᵀ = [[1, 2, 3], [0, 1, 0], [0, 0, 1]]: syntactic → semantic gold ranks
    3, 1, 1 (MRR 7/9); semantic → syntactic (columns) 1, 2, 2 (MRR 2/3); mean 13/18."""
    scores = np.array([[1.0, 2, 3], [0, 1, 0], [0, 0, 1]])
    quality = retrieval_quality(np.eye(3), scores.T.copy())
    assert quality == pytest.approx(
        {
            "mrr_syntactic_to_semantic": 7 / 9,
            "mrr_semantic_to_syntactic": 2 / 3,
            "recall_at_10_syntactic_to_semantic": 1.0,
            "recall_at_10_semantic_to_syntactic": 1.0,
            "mrr": 13 / 18,
        }
    )


# ----------------------------------------------------------------------------- schedule


def rates(total_steps: int, max_lr: float = 1.0) -> list[float]:
    parameter = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([parameter], lr=max_lr)
    scheduler = one_cycle(optimizer, max_lr, total_steps)
    out = []
    for _ in range(total_steps):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


@pytest.mark.parametrize("total_steps", [1, 2, 3])
def test_runs_under_four_steps_keep_a_constant_rate(total_steps: int) -> None:
    assert rates(total_steps, 0.3) == [0.3] * total_steps


@pytest.mark.parametrize(
    ("total_steps", "peak"),
    # 10 % warm-up, at least two steps' worth (pct_start = max(0.1, 2 / steps)):
    # the rate peaks at step round(pct × steps) − 1
    [(4, 1), (10, 1), (20, 1), (100, 9)],
)
def test_longer_runs_warm_up_then_anneal(total_steps: int, peak: int) -> None:
    lrs = rates(total_steps)
    assert int(np.argmax(lrs)) == peak
    assert lrs[peak] == pytest.approx(1.0)
    assert lrs[0] < 0.1 and lrs[-1] < lrs[0]
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1 :], strict=False))


# ----------------------------------------------------------------------------- one epoch


def reference(
    settings: TrainSettings, train_rows: np.ndarray, batcher=None
) -> tuple[list[dict], list[dict], list[float]]:
    """The documented recipe, written out: seed numpy and torch with the run's seed; per
    epoch shuffle the training rows, step AdamW (fused) on each batch of at least 2 rows (gradients
    clipped to norm 1), one-cycle over epochs × ⌈rows / batch⌉ steps; record the batch-size
    weighted mean loss and the validation MRR. Returns each epoch's weights and history and
    every step's gradient norm before clipping."""
    model = network()
    generator = np.random.default_rng(settings.seed)
    torch.manual_seed(settings.seed)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=settings.learning_rate,
        weight_decay=settings.weight_decay,
        fused=True,
    )
    total = settings.epochs * int(np.ceil(len(train_rows) / settings.batch_size))
    if total < 4:
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _step: 1.0)
    else:
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, settings.learning_rate, total_steps=total, pct_start=max(0.1, 2 / total)
        )
    size = settings.batch_size
    cut = batcher or (lambda o: [o[s : s + size] for s in range(0, len(o), size)])
    states, history, norms = [], [], []
    for _ in range(settings.epochs):
        model.train()
        order = generator.permutation(train_rows)
        loss_sum = 0.0
        for rows in cut(order):
            if len(rows) < 2:
                continue
            loss = info_nce(
                model.encode_structural(STRUCTURAL.batch(rows)),
                model.encode_semantic(SEMANTIC.batch(rows)),
                model.temperature(),
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
            optimizer.step()
            scheduler.step()
            loss_sum += float(loss.detach()) * len(rows)
        quality = retrieval_quality(*encode(model, STRUCTURAL, SEMANTIC, VALIDATION))
        history.append({"loss": loss_sum / len(order), "validation_mrr": quality["mrr"]})
        states.append(copy.deepcopy(model.state_dict()))
    return states, history, norms


@pytest.mark.parametrize(
    ("rows", "batch_size", "epochs"),
    # batches of 4, 4, 2 (a 2-row batch trains); of 4, 4, 1 (a 1-row batch is skipped);
    # one batch per epoch, 2 steps in all (a constant rate)
    [(10, 4, 2), (9, 4, 3), (10, 16, 2)],
)
def test_each_epoch_follows_the_recipe(rows: int, batch_size: int, epochs: int) -> None:
    settings = dataclasses.replace(SETTINGS, batch_size=batch_size, epochs=epochs)
    states, expected, norms = reference(settings, np.arange(rows))
    model = network()
    torch.manual_seed(12345)  # whatever torch's state before: the run's seed decides
    result = train(model, STRUCTURAL, SEMANTIC, np.arange(rows), VALIDATION, settings)
    assert max(norms) > 2.0 and min(norms) != max(norms)  # clipping is exercised
    assert [h["epoch"] for h in result.history] == list(range(1, epochs + 1))
    assert [h["loss"] for h in result.history] == pytest.approx([h["loss"] for h in expected])
    assert [h["cross"] for h in result.history] == pytest.approx([h["loss"] for h in expected])
    assert [h["validation_mrr"] for h in result.history] == [h["validation_mrr"] for h in expected]
    best = int(np.argmax([h["validation_mrr"] for h in expected]))  # first of the best
    assert result.best_epoch == best + 1
    assert result.best_validation_mrr == expected[best]["validation_mrr"]
    assert states_equal(model.state_dict(), states[best])


# ----------------------------------------------------------------------------- batches


def test_batches_are_slices_of_the_order() -> None:
    order = np.array([5, 2, 7, 0, 1, 6, 3, 4])
    assert [b.tolist() for b in batches(order, 3)] == [[5, 2, 7], [0, 1, 6], [3, 4]]
    assert [b.tolist() for b in batches(order, 8)] == [order.tolist()]


def test_the_run_seed_decides_shuffling_and_dropout() -> None:
    def trained(seed: int, torch_state: int) -> dict:
        model = network()
        torch.manual_seed(torch_state)
        train(
            model, STRUCTURAL, SEMANTIC, TRAIN, VALIDATION, dataclasses.replace(SETTINGS, seed=seed)
        )
        return model.state_dict()

    assert states_equal(trained(7, 1), trained(7, 2))
    assert not states_equal(trained(7, 1), trained(8, 1))


def test_intra_modal_views_add_their_weighted_losses() -> None:
    settings = dataclasses.replace(SETTINGS, intra_weight=0.5)
    result = train(network(), STRUCTURAL, SEMANTIC, TRAIN, VALIDATION, settings)
    for h in result.history:  # each batch's loss is L_cross + λ (L_struct + L_sem)
        assert h["loss"] == pytest.approx(h["cross"] + 0.5 * (h["struct"] + h["sem"]))
        assert h["struct"] > 0 and h["sem"] > 0
    plain = train(network(), STRUCTURAL, SEMANTIC, TRAIN, VALIDATION, SETTINGS)
    assert all("struct" not in h and "sem" not in h for h in plain.history)


def test_history_times_and_log() -> None:
    messages: list[str] = []
    started = time.perf_counter()
    result = train(network(), STRUCTURAL, SEMANTIC, TRAIN, VALIDATION, SETTINGS, messages.append)
    elapsed = time.perf_counter() - started
    assert 0 < sum(h["seconds"] for h in result.history) <= result.seconds <= elapsed
    assert [m.split(":")[0] for m in messages] == ["epoch 1/2", "epoch 2/2"]
    for h in result.history:
        assert h["temperature"] > 0
    assert not result.stopped_early


def test_zero_epochs_train_nothing() -> None:
    model = network()
    before = copy.deepcopy(model.state_dict())
    settings = dataclasses.replace(SETTINGS, epochs=0)
    messages: list[str] = []
    result = train(model, STRUCTURAL, SEMANTIC, TRAIN, VALIDATION, settings, messages.append)
    assert result.best_epoch == 0 and result.history == [] and not result.stopped_early
    assert states_equal(model.state_dict(), before)
    # a model fitted in closed form is measured as it is, and says so
    quality = retrieval_quality(*encode(model, STRUCTURAL, SEMANTIC, VALIDATION))
    assert result.best_validation_mrr == pytest.approx(quality["mrr"]) and quality["mrr"] > 0
    assert messages == [f"no epochs: validation MRR {quality['mrr']:.4f} as fitted"]


def test_train_settings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SETTINGS.seed = 1  # type: ignore[misc]


# ----------------------------------------------------------------------------- early stopping

N_VALIDATION = 20
SCRIPT_ROWS = N_VALIDATION + 4  # 4 training rows after the validation ones
IDENTITY = MatrixInputs(torch.eye(SCRIPT_ROWS))


def scripted_mrr(rank: int) -> float:
    """Validation MRR when formula 0's semantic vector ranks `rank` for its structure and
    every other gold ranks first: ½ [(19 + 1/rank) / 20 + 1]."""
    return ((N_VALIDATION - 1 + 1 / rank) / N_VALIDATION + 1) / 2


class Scripted(nn.Module):
    """A model whose validation ranking in epoch e is given: formula 0's gold ranks
    `ranks[e - 1]` from structure to semantics, every other gold first. Inputs are one-hot
    rows; structural vector i is row i of a table in which formula 0's row scores
    `rank − 1` other semantic vectors above its own. Its weights (a scale that weight decay
    shrinks at every step, a temperature) differ after every epoch; each epoch's are kept."""

    def __init__(self, ranks: list[int]) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.temperature = Temperature()
        self.ranks, self.epoch, self.states = ranks, 0, {}

    def train(self, mode: bool = True):
        if mode:
            self.epoch += 1
        elif self.epoch:  # encoding the validation rows at the end of an epoch
            self.states[self.epoch] = copy.deepcopy(self.state_dict())
        return super().train(mode)

    def table(self) -> torch.Tensor:
        rank = self.ranks[min(max(self.epoch, 1), len(self.ranks)) - 1]
        table = 10 * torch.eye(SCRIPT_ROWS)
        table[0, 0] = 1.0
        table[0, 1:rank] = 2.0
        return table

    def encode_structural(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.table() * self.scale

    def encode_semantic(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


def scripted(ranks: list[int], log=None, **changes) -> tuple[Scripted, object]:
    model = Scripted(ranks)
    settings = dataclasses.replace(
        SETTINGS, epochs=len(ranks), weight_decay=0.5, **({"patience": 10} | changes)
    )
    result = train(
        model,
        IDENTITY,
        IDENTITY,
        np.arange(N_VALIDATION, SCRIPT_ROWS),
        np.arange(N_VALIDATION),
        settings,
        log,
    )
    return model, result


def test_scripted_rankings_give_the_hand_computed_mrr() -> None:
    _, result = scripted([1, 13, 12, 2])
    assert [h["validation_mrr"] for h in result.history] == pytest.approx(
        [1.0, scripted_mrr(13), scripted_mrr(12), 0.9875]
    )
    assert scripted_mrr(12) - scripted_mrr(13) == pytest.approx(1 / (12 * 13 * 40))


def test_the_model_ends_with_its_best_validation_epoch() -> None:
    model, result = scripted([3, 1, 2, 2])
    assert result.best_epoch == 2 and result.best_validation_mrr == 1.0
    assert len(result.history) == 4 and not result.stopped_early
    assert not states_equal(model.states[2], model.states[4])
    assert states_equal(model.state_dict(), model.states[2])


def test_a_gain_must_exceed_min_delta() -> None:
    """Rank 13 → 12 gains 1/6240 ≈ 1.6e-4 in MRR: above the default min_delta of 1e-4."""
    assert scripted([13, 12])[1].best_epoch == 2
    assert scripted([13, 13])[1].best_epoch == 1  # no gain
    assert scripted([13, 13], min_delta=0.0)[1].best_epoch == 1  # equal is no gain
    assert scripted([13, 12], min_delta=2e-4)[1].best_epoch == 1


def test_early_stopping_waits_patience_epochs_without_gain() -> None:
    """Ranks 5, 3 (gain), 4, 4, 2 (gain), 6, 7, 8 …, patience 3: three epochs without gain
    after epoch 5 stop the run at epoch 8."""
    model, result = scripted([5, 3, 4, 4, 2, 6, 7, 8, 9, 10], patience=3)
    assert len(result.history) == 8 and result.stopped_early
    assert result.best_epoch == 5 and result.best_validation_mrr == scripted_mrr(2)
    assert states_equal(model.state_dict(), model.states[5])
    messages: list[str] = []
    _, result = scripted([5, 3, 4, 4, 2, 6, 7, 8, 9, 10], patience=1, log=messages.append)
    assert len(result.history) == 3 and result.stopped_early and result.best_epoch == 2
    assert messages[-1] == "early stop: no validation gain for 1 epochs"
