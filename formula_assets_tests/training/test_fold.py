"""One fold × method on tiny inputs (40 formulae, a 4-wide head, CPU): the model's seed and
each run's own seed, what the description records, the test fold kept out of training."""

import dataclasses
import time

import numpy as np
import pytest
import torch

from formula_assets.core.profiles import get_profile
from formula_assets.methods.base import TrainedMethod
from formula_assets.methods.sbert_dual_cl import SentenceDualEncoder
from formula_assets.training.data import AlignmentData
from formula_assets.training.fold import default_device, train_fold
from formula_assets.training.inputs import MatrixInputs, Prepared
from formula_assets.training.settings import MethodSettings

_rng = np.random.default_rng(1)
_X = _rng.normal(size=(40, 6)).astype(np.float32)
DATA = AlignmentData(
    qids=[f"Q{i}" for i in range(40)],
    graphs=None,  # type: ignore[arg-type]  (the dual encoder reads sentence vectors only)
    semantic=(_X @ _rng.normal(size=(6, 5)) + 0.1 * _rng.normal(size=(40, 5))).astype(np.float32),
    opt_text=_X,
    folds={f"Q{i}": 1 + i % 4 for i in range(40)},
)
SETTINGS = MethodSettings(
    hidden=8,
    out_dim=4,
    dropout=0.2,
    epochs=3,
    batch_size=8,
    learning_rate=0.05,
    weight_decay=0.01,
    intra_weight=0.0,
    patience=3,
)
PROFILE = dataclasses.replace(
    get_profile("smoke"),
    seed=3,
    validation_fraction=0.25,
    selection_fraction=0.1,
    torch_threads=0,
)


METHOD = SentenceDualEncoder().with_settings(SETTINGS)


def varied(method: TrainedMethod = METHOD, **settings) -> TrainedMethod:
    """The method with the tiny settings above, changed as given."""
    return method.with_settings(dataclasses.replace(SETTINGS, **settings))


def states_equal(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


def test_the_description_records_the_fold_seed_sizes_and_device() -> None:
    messages: list[str] = []
    started = time.perf_counter()
    model = train_fold(METHOD, 2, DATA, PROFILE, log=messages.append)
    elapsed = time.perf_counter() - started
    described = model.description
    assert described.seed == 3 * 1000 + 2  # a model's seed: profile seed × 1000 + fold
    assert [r.seed for r in described.runs] == [3002]
    assert (described.method, described.fold, described.profile) == ("sbert_dual_cl", 2, "smoke")
    assert (described.structural_dim, described.semantic_dim) == (6, 5)
    sizes = described.split_sizes
    assert sizes.test == 10 and sizes.train + sizes.validation + sizes.selection == 30
    assert described.device == default_device() in ("cpu", "cuda")
    assert described.deterministic is True
    assert described.epochs_run == len(model.history) == described.runs[0].epochs_run
    assert described.best_epoch == described.runs[0].best_epoch
    # rounded to 2 decimals, so at most half a hundredth above the time measured around it
    assert 0 < described.runs[0].train_seconds <= described.train_seconds <= elapsed + 0.005
    assert all(round(s, 2) == s for s in (described.train_seconds, described.runs[0].train_seconds))
    # the one network itself (not an average of one), its embeddings by split
    assert set(model.state) == set(METHOD.network(described).state_dict())
    splits = dict(
        zip(model.embeddings["qid"].to_pylist(), model.embeddings["split"].to_pylist(), strict=True)
    )
    assert {q for q, s in splits.items() if s == "test"} == {
        q for q, f in DATA.folds.items() if f == 2
    }
    assert messages[0].startswith("sbert_dual_cl fold 2: ")
    assert not any("not deterministic" in m for m in messages)


def test_a_run_torch_could_not_keep_deterministic_says_so_and_is_recorded(monkeypatch) -> None:
    """Where torch has no deterministic kernel (CUDA's scatter sums, say) it warns instead of
    failing: the run log names what was not deterministic, and the model records it, so that
    its data version names its recipe rather than its bits. (No GPU here: the determinism
    guard reports what it would report on one.)"""
    import contextlib

    from formula_assets.training import fold
    from formula_assets.training.determinism import Determinism

    warning = "scatter_add_cuda_kernel does not have a deterministic implementation"

    @contextlib.contextmanager
    def nondeterministic(device: str):
        yield Determinism(deterministic=False, warnings=(warning,))

    monkeypatch.setattr(fold, "deterministic", nondeterministic)
    messages: list[str] = []
    model = train_fold(varied(epochs=1), 1, DATA, PROFILE, log=messages.append)
    assert model.description.deterministic is False
    assert [m for m in messages if m.startswith("not deterministic on ")] == [
        f"not deterministic on {model.description.device}: {warning}"
    ]


def test_default_device_and_log() -> None:
    assert default_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    model = train_fold(varied(epochs=1), 1, DATA, PROFILE)  # no device, no log given
    assert model.description.device == default_device()


def test_each_run_trains_with_its_own_seed() -> None:
    """Run r trains with seed + 100 000 × r: run 0 is the one-run model and run 1 the
    one-run model of the profile seed 100 higher, bit for bit (initialised, shuffled and
    dropped out with its own seed, not run 0's)."""
    single = train_fold(METHOD, 1, DATA, PROFILE)
    model = train_fold(varied(runs=2), 1, DATA, PROFILE)
    runs = model.description.runs
    assert [r.seed for r in runs] == [3001, 3001 + 100_000]
    reseeded = train_fold(METHOD, 1, DATA, dataclasses.replace(PROFILE, seed=3 + 100))
    assert reseeded.description.seed == runs[1].seed
    assert states_equal({k: model.state[f"runs.0.{k}"] for k in single.state}, single.state)
    assert states_equal({k: model.state[f"runs.1.{k}"] for k in reseeded.state}, reseeded.state)
    assert sorted({h["run"] for h in model.history}) == [0, 1]
    assert [h["run"] for h in model.history] == [0] * runs[0].epochs_run + [1] * runs[1].epochs_run
    assert model.description.epochs_run == runs[0].epochs_run + runs[1].epochs_run
    _, structural, _ = model.split_vectors("test")
    assert structural.shape[1] == 2 * SETTINGS.out_dim


class NoisyDualEncoder(SentenceDualEncoder):
    """A method that draws random numbers while preparing its inputs (random features)."""

    name = "noisy_dual"

    def prepare(self, data, rows, description, device) -> Prepared:
        noise = torch.randn(data.opt_text.shape)
        return Prepared(MatrixInputs(torch.from_numpy(data.opt_text) + noise), description)


def test_preparing_inputs_is_seeded_with_the_model_seed() -> None:
    torch.manual_seed(1)
    a = train_fold(varied(NoisyDualEncoder(), epochs=1), 1, DATA, PROFILE)
    torch.manual_seed(2)
    b = train_fold(varied(NoisyDualEncoder(), epochs=1), 1, DATA, PROFILE)
    assert states_equal(a.state, b.state)


class FittedDualEncoder(SentenceDualEncoder):
    """A method fitted in closed form: `prepare` gives the network's weights (here those of
    another seed's network, a stand-in for counted ones)."""

    def prepare(self, data, rows, description, device) -> Prepared:
        torch.manual_seed(99)
        state = self.network(description).state_dict()
        return Prepared(self.inputs(description, data, device), description, state)


def test_a_model_fitted_in_closed_form_is_measured_not_trained() -> None:
    fitted = FittedDualEncoder()
    model = train_fold(varied(fitted, epochs=0), 1, DATA, PROFILE)
    torch.manual_seed(99)
    assert states_equal(model.state, fitted.network(model.description).state_dict())
    described = model.description
    assert model.history == [] and described.epochs_run == 0 and described.best_epoch == 0
    assert [r.best_epoch for r in described.runs] == [0]
    assert described.best_validation_mrr == pytest.approx(described.validation["mrr"])
    assert described.runs[0].best_validation_mrr == pytest.approx(described.validation["mrr"])
    # with epochs, training starts from the fitted weights: the first epoch's loss differs
    # from that of the network the seed alone would give
    started = train_fold(varied(fitted, epochs=1), 1, DATA, PROFILE).history[0]["loss"]
    assert started != pytest.approx(
        train_fold(varied(epochs=1), 1, DATA, PROFILE).history[0]["loss"]
    )


def test_zero_epochs_without_fitted_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="0 epochs train nothing, and nothing was fitted"):
        train_fold(varied(epochs=0), 1, DATA, PROFILE)


def test_the_test_fold_never_reaches_the_optimiser() -> None:
    """Other inputs for the test formulae: the same weights and history (their vectors
    change)."""
    test_rows = [i for i, q in enumerate(DATA.qids) if DATA.folds[q] == 1]
    semantic, opt_text = DATA.semantic.copy(), DATA.opt_text.copy()
    semantic[test_rows], opt_text[test_rows] = -semantic[test_rows], opt_text[test_rows] * 3 + 1
    scrambled = dataclasses.replace(DATA, semantic=semantic, opt_text=opt_text)
    a, b = train_fold(METHOD, 1, DATA, PROFILE), train_fold(METHOD, 1, scrambled, PROFILE)
    assert states_equal(a.state, b.state)
    assert [{k: v for k, v in h.items() if k != "seconds"} for h in a.history] == [
        {k: v for k, v in h.items() if k != "seconds"} for h in b.history
    ]
    assert not np.allclose(a.split_vectors("test")[1], b.split_vectors("test")[1])


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_torch_threads_are_set_only_when_asked(threads) -> None:
    torch.set_num_threads(2)
    assert train_fold(varied(epochs=1), 1, DATA, PROFILE).description.torch_threads == 2
    one = dataclasses.replace(PROFILE, torch_threads=1)
    assert train_fold(varied(epochs=1), 1, DATA, one).description.torch_threads == 1
    assert torch.get_num_threads() == 1
