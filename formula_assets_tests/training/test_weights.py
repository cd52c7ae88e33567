"""A trained model stores what training made and not its base model's frozen part; a load
builds the network from the base model and takes exactly the stored rest, or refuses."""

from pathlib import Path

import pytest
import torch
from torch import nn

from formula_assets.training.models import RunAverage
from formula_assets.training.sentence_encoder import SentenceTower, token_ids
from formula_assets.training.weights import (
    PretrainedPart,
    base_keys,
    kept_state,
    load_kept_state,
)
from formula_assets_tests.support.models import tiny_bert


class Part(PretrainedPart):
    """`base` is the pretrained part, `head` what training makes."""

    def __init__(self) -> None:
        super().__init__()
        self.base = nn.Linear(3, 3)
        self.head = nn.Linear(3, 2)
        self.register_buffer("counts", torch.zeros(2))

    def base_keys(self) -> set[str]:
        return {"base.weight", "base.bias"}


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.runs = nn.ModuleList([Part(), Part()])
        self.scale = nn.Parameter(torch.ones(1))


def test_base_keys_are_named_from_the_outermost_module() -> None:
    assert base_keys(Part()) == {"base.weight", "base.bias"}
    assert base_keys(Outer()) == {f"runs.{i}.base.{p}" for i in (0, 1) for p in ("weight", "bias")}
    assert base_keys(nn.Linear(2, 2)) == set()  # no pretrained part: everything is kept


def test_the_kept_state_is_everything_but_the_base_part() -> None:
    outer = Outer()
    kept = kept_state(outer)
    assert set(kept) == {
        "scale",
        *(f"runs.{i}.{name}" for i in (0, 1) for name in ("head.weight", "head.bias", "counts")),
    }
    assert torch.equal(kept["runs.1.head.weight"], outer.runs[1].head.weight)
    assert not kept["scale"].requires_grad  # detached, so a stored model holds no graph


def test_a_load_takes_the_kept_state_over_the_built_base_part() -> None:
    torch.manual_seed(0)
    trained = Outer()
    torch.manual_seed(1)
    built = Outer()
    base_before = built.runs[0].base.weight.detach().clone()
    load_kept_state(built, kept_state(trained))
    assert torch.equal(built.runs[0].head.weight, trained.runs[0].head.weight)
    assert torch.equal(built.scale, trained.scale)
    assert torch.equal(built.runs[0].base.weight, base_before)  # the base model's, as built


def test_a_stored_state_that_does_not_fit_is_refused() -> None:
    kept = kept_state(Outer())
    missing = {k: v for k, v in kept.items() if k != "runs.0.head.bias"}
    with pytest.raises(ValueError, match=r"missing runs\.0\.head\.bias \("):
        load_kept_state(Outer(), missing)
    whole = Outer().state_dict()  # the base part too: not what a model stores
    with pytest.raises(ValueError, match=r"unexpected runs\.0\.base\.bias, runs\.0\.base\.weight"):
        load_kept_state(Outer(), whole)
    other = {k: v for k, v in kept.items() if k != "scale"} | {"weight": torch.zeros(1)}
    with pytest.raises(ValueError, match=r"missing scale; unexpected weight \(.*retrain it\)$"):
        load_kept_state(Outer(), other)


def test_a_fine_tuned_tower_stores_its_trained_layers_and_loads_to_the_same_vectors(
    tmp_path: Path,
) -> None:
    folder = tiny_bert(tmp_path / "bert")
    ids = token_ids(folder, 16, ["x squared plus one", "the mass of a body"])
    trained = RunAverage([SentenceTower(folder, 2), SentenceTower(folder, 1)])
    with torch.no_grad():  # as if trained: every trainable weight moved
        for parameter in trained.parameters():
            if parameter.requires_grad:
                parameter.add_(0.1)
    kept = kept_state(trained)
    assert not any(".bert.embeddings." in k for k in kept)
    layers = {(k[:6], k.split(".layer.")[1].split(".")[0]) for k in kept if ".layer." in k}
    assert layers == {("runs.0", "2"), ("runs.1", "1"), ("runs.1", "2")}  # of layers 0..2
    assert {"runs.0.temperature.log_scale", "runs.1.temperature.log_scale"} <= set(kept)
    rebuilt = RunAverage([SentenceTower(folder, 2), SentenceTower(folder, 1)])
    load_kept_state(rebuilt, kept)
    trained.eval()
    rebuilt.eval()
    with torch.no_grad():
        assert torch.equal(rebuilt.encode_semantic(ids), trained.encode_semantic(ids))
