"""The aligners' parts on tiny inputs: the projection head reads directions only, CLIP's
temperature and its floor, dropout views, the bag encoder's sums, the symbol lexicon's two
sides, and the seed ensemble's joined vectors."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from formula_assets.graphs.inputs import GraphInputs
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.syntax.opt import build_opt_graphs
from formula_assets.training.models import (
    BagDualEncoder,
    DualEncoder,
    GraphTextModel,
    ProjectionHead,
    RunAverage,
    SymbolLexicon,
    Temperature,
    views,
)

GRAPHS = build_opt_graphs(
    {
        "Q1": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",
        "Q2": "<math><mi>x</mi><mo>+</mo><mi>z</mi></math>",
        "Q3": "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>",
    }.items()
).graphs
VOCABULARY = TokenVocabulary.build(GRAPHS["node_tokens"].to_pylist())
BATCH = GraphInputs(GRAPHS, VOCABULARY, "cpu").batch(np.arange(3))


def test_projection_head_reads_the_direction_of_each_vector() -> None:
    torch.manual_seed(0)
    head = ProjectionHead(3, 8, 2).eval()
    x = torch.tensor([[1.0, 2.0, 2.0], [0.0, -3.0, 4.0]])
    out = head(x)
    assert out.shape == (2, 2)
    assert torch.allclose(head(x * torch.tensor([[5.0], [0.2]])), out, atol=1e-6)
    assert torch.allclose(head.net(x / x.norm(dim=1, keepdim=True)), out, atol=1e-6)
    assert torch.allclose(head(x[1]), out[1], atol=1e-6)  # one vector alone, as in a batch
    assert head.net[2].p == 0.1  # the default dropout


def tau(temperature: Temperature) -> float:
    return float(temperature().detach())


def test_temperature_starts_at_clips_value_and_is_floored_at_a_hundredth() -> None:
    assert tau(Temperature()) == pytest.approx(0.07)
    assert tau(Temperature(0.5)) == pytest.approx(0.5)
    assert Temperature().log_scale.requires_grad
    assert not Temperature(learnable=False).log_scale.requires_grad
    floored = Temperature(0.001)  # below the floor: clamped to 1 / 100
    assert tau(floored) == pytest.approx(0.01)
    with torch.no_grad():
        floored.log_scale.fill_(math.log(50.0))
    assert tau(floored) == pytest.approx(1 / 50)


def test_dual_encoder_sides_and_dropout_views() -> None:
    torch.manual_seed(0)
    model = DualEncoder(3, 4, hidden=16, out_dim=2, dropout=0.5)
    x, y = torch.randn(5, 3), torch.randn(5, 4)
    model.eval()
    assert torch.equal(model.encode_structural(x), model.structural(x))
    assert torch.equal(model.encode_semantic(y), model.semantic(y))
    a, b = model.structural_views(x)
    assert torch.equal(a, b) and torch.equal(a, model.encode_structural(x))
    model.train()
    a, b = model.structural_views(x)
    assert a.shape == b.shape == (5, 2) and not torch.equal(a, b)  # independent masks
    assert tau(model.temperature) == pytest.approx(0.07)


def test_views_are_two_calls() -> None:
    calls = []
    assert views(lambda v: calls.append(v) or len(calls), "x") == (1, 2)
    assert calls == ["x", "x"]


def test_graph_text_model_defaults_read_tokens_and_types_only() -> None:
    torch.manual_seed(0)
    model = GraphTextModel(len(VOCABULARY), 4, hidden=8, out_dim=3, dropout=0.0)
    assert len(model.graph.convs) == 2  # two GINE layers
    assert model.graph.text is None and model.graph.formula is None
    assert model.semantic.net[0].out_features == 8  # the semantic head as wide as `hidden`
    model.train()  # no dropout anywhere: training mode encodes as eval mode does
    trained = model.encode_structural(BATCH)
    model.eval()
    assert torch.allclose(trained, model.encode_structural(BATCH))
    assert trained.shape == (3, 3)
    assert torch.allclose(model.encode_structural(BATCH), model.graph(BATCH))
    a, b = model.structural_views(BATCH)
    assert torch.allclose(a, trained) and torch.allclose(b, trained)
    y = torch.randn(3, 4)
    assert torch.equal(model.encode_semantic(y), model.semantic(y))


def test_graph_text_model_semantic_head_of_its_own() -> None:
    torch.manual_seed(0)
    model = GraphTextModel(
        len(VOCABULARY), 4, 8, 3, dropout=0.2, semantic_hidden=6, semantic_dropout=0.4
    )
    assert model.semantic.net[0].out_features == 6
    assert model.semantic.net[2].p == 0.4
    assert model.view_dropout.p == 0.2
    default = GraphTextModel(len(VOCABULARY), 4, 8, 3, dropout=0.2)
    assert default.semantic.net[2].p == 0.2  # no dropout of its own: the views' dropout


def test_graph_text_views_share_one_gine_pass_but_not_the_dropout() -> None:
    torch.manual_seed(0)
    model = GraphTextModel(len(VOCABULARY), 4, hidden=8, out_dim=3, dropout=0.5).train()
    a, b = model.structural_views(BATCH)
    assert a.shape == b.shape == (3, 3) and not torch.equal(a, b)
    model.eval()
    a, b = model.structural_views(BATCH)
    assert torch.equal(a, b)
    assert torch.allclose(a, model.graph.proj(model.graph.pool(BATCH)))


class Fixed(torch.nn.Module):
    def __init__(self, structural: torch.Tensor, semantic: torch.Tensor) -> None:
        super().__init__()
        self.s, self.m = structural, semantic

    def encode_structural(self, x):
        return self.s

    def encode_semantic(self, x):
        return self.m


def test_bag_encoder_sums_its_features_and_never_learns_the_padding_row() -> None:
    torch.manual_seed(0)
    network = BagDualEncoder(2000, 300, 64)
    structural, semantic = network.structural.weight, network.semantic.weight
    assert structural.shape == (2000, 64) and semantic.shape == (300, 64)
    assert structural[0].abs().sum() == 0 and semantic[0].abs().sum() == 0
    # small random starts (std 0.1) and CLIP's starting temperature lowered to 0.05
    assert abs(float(structural[1:].std()) - 0.1) < 0.005
    assert abs(float(semantic[1:].std()) - 0.1) < 0.01
    assert abs(float(structural[1:].mean())) < 0.005
    assert float(network.temperature()) == pytest.approx(0.05)
    bags = (torch.tensor([0, 1, 2, 1]), torch.tensor([0, 2]))  # [pad, 1] and [2, 1]
    vectors = network.encode_structural(bags)
    assert torch.allclose(vectors[0], structural[1]) and torch.allclose(
        vectors[1], structural[2] + structural[1]
    )
    assert torch.allclose(network.encode_semantic(bags)[1], semantic[2] + semantic[1])
    vectors.sum().backward()
    assert structural.grad[0].abs().sum() == 0  # padding: never learned
    assert structural.grad[1].abs().sum() > 0 and structural.grad[3].abs().sum() == 0


def test_run_average_cosines_are_the_mean_of_the_runs_cosines() -> None:
    torch.manual_seed(0)
    runs = [Fixed(torch.randn(3, 4) * 3, torch.randn(3, 4)) for _ in range(3)]
    average = RunAverage(runs)
    zs, zm = average.encode_structural(None), average.encode_semantic(None)
    assert zs.shape == zm.shape == (3, 12)
    assert torch.allclose(zs.norm(dim=1), torch.ones(3))
    assert torch.allclose(zm.norm(dim=1), torch.ones(3))
    expected = sum(F.normalize(r.s, dim=-1) @ F.normalize(r.m, dim=-1).T for r in runs) / 3
    assert torch.allclose(zs @ zm.T, expected, atol=1e-6)
    assert len(list(RunAverage(runs).runs)) == 3


class Scaled(torch.nn.Module):
    """A run that encodes its input times its own factor: which input it read shows."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def encode_structural(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor

    def encode_semantic(self, x: torch.Tensor) -> torch.Tensor:
        return -x * self.factor


def test_each_run_reads_its_own_part_of_a_part_batch_and_the_parts_match_the_runs() -> None:
    from formula_assets.training.inputs import PartBatch

    first, second = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    average = RunAverage([Scaled(2.0), Scaled(3.0)])
    joined = average.encode_structural(PartBatch([first, second]))
    assert torch.allclose(joined, torch.tensor([[1.0, 0.0, 0.0, 1.0]]) / math.sqrt(2))
    shared = average.encode_semantic(first)  # not a PartBatch: every run reads it all
    assert torch.allclose(shared, torch.tensor([[-1.0, 0.0, -1.0, 0.0]]) / math.sqrt(2))
    with pytest.raises(ValueError):  # a part more than there are runs is an error, not dropped
        average.encode_structural(PartBatch([first, second, first]))


def test_the_symbol_lexicon_sides_by_hand() -> None:
    """A formula: its symbols' weights at their ids; a text bag: the sum of its lexicon rows;
    an empty bag: zeros. Nothing to train."""
    lexicon = SymbolLexicon(symbols=5, texts=4)
    assert not list(lexicon.parameters())
    lexicon.load_state_dict(
        {
            "symbol_weights": torch.tensor([0.0, 0.0, 1.5, 2.0, 3.0]),
            "lexicon": torch.tensor(
                [[0.0] * 5, [0.0] * 5, [0, 0, 1.5, 0, 0], [0, 0, 0.75, 1.0, 0]]
            ),
        }
    )
    # rows: {2, 4}, {}, {3}
    bag = (torch.tensor([2, 4, 3]), torch.tensor([0, 2, 2]))
    assert lexicon.encode_structural(bag).tolist() == [
        [0, 0, 1.5, 0, 3.0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 2.0, 0],
    ]
    texts = (torch.tensor([2, 3, 3]), torch.tensor([0, 0, 2]))  # {}, {2, 3}, {3}
    assert lexicon.encode_semantic(texts).tolist() == [
        [0, 0, 0, 0, 0],
        [0, 0, 2.25, 1.0, 0],
        [0, 0, 0.75, 1.0, 0],
    ]
