"""The GINE encoder's inputs and options: token-text features, the root readout, and token
dropout that trains the unknown-token embedding."""

import numpy as np
import pyarrow as pa
import pytest
import torch

from formula_assets.graphs.batch import graph_arrays
from formula_assets.graphs.encoder import UNK_ID, GineEncoder, GineLayer, mean_pool, to_tensors
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods import sbert_dual_cl
from formula_assets.syntax.opt import build_opt_graphs

FORMULAE = {
    "Q1": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",
    "Q2": "<math><mi>y</mi></math>",
    "Q3": "<math><mfrac><mi>a</mi><mi>b</mi></mfrac><mo>+</mo><mi>x</mi></math>",
}


@pytest.fixture(scope="module")
def graphs() -> pa.Table:
    return build_opt_graphs(FORMULAE.items()).graphs


def tokens_of(graphs: pa.Table) -> list[str]:
    return sorted({t for ts in graphs["node_tokens"].to_pylist() for t in ts})


def test_batches_carry_each_distinct_text_vector_once(graphs: pa.Table) -> None:
    tokens = tokens_of(graphs)
    text_vocabulary = TokenVocabulary.from_tokens(["[PAD]", "[UNK]", *tokens])
    table = np.vstack([np.zeros((2, 3)), np.arange(3 * len(tokens)).reshape(-1, 3)])
    arrays = graph_arrays(graphs, TokenVocabulary.build([]), text_vocabulary)
    batch = to_tensors(arrays, "cpu", table.astype(np.float32))
    flat = [t for ts in graphs["node_tokens"].to_pylist() for t in ts]
    expected = [table[2 + tokens.index(t)].tolist() for t in flat]
    assert batch["text"][batch["text_index"]].tolist() == expected
    # each distinct text once, however many nodes read it
    assert len(batch["text"]) == len(set(flat)) < len(flat)
    assert batch["text"].dtype == torch.float32
    assert "text" not in to_tensors(arrays, "cpu")
    with pytest.raises(ValueError, match="text vocabulary"):
        to_tensors(graph_arrays(graphs, TokenVocabulary.build([])), "cpu", table)


def encoder(size: int = 20, **options) -> GineEncoder:
    torch.manual_seed(0)
    return GineEncoder(size, hidden=8, out_dim=4, **options).eval()


def test_the_mean_readout_pools_the_node_states_and_others_are_refused(
    graphs: pa.Table,
) -> None:
    vocabulary = TokenVocabulary.build(graphs["node_tokens"].to_pylist())
    batch = to_tensors(graph_arrays(graphs, vocabulary))
    mean_only = encoder()
    assert mean_only.pool(batch).shape == (3, 8) and mean_only.proj.in_features == 8
    for readout in ("max", "mean+root"):  # mean+root: removed (docs/research-record.md)
        with pytest.raises(ValueError, match="readout"):
            GineEncoder(10, readout=readout)


def test_the_formula_readout_adds_the_formula_heads_reading(graphs: pa.Table) -> None:
    vocabulary = TokenVocabulary.build(graphs["node_tokens"].to_pylist())
    arrays = graph_arrays(graphs, vocabulary)
    formula = np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1
    batch = to_tensors(arrays, "cpu", formula_vectors=formula)
    plain = encoder(formula_dim=5)
    head = encoder(formula_dim=5, readout="mean+formula", head_hidden=6, head_dropout=0.0)
    pooled = head.pool(batch)
    assert pooled.shape == (3, 16) and head.proj.in_features == 16
    assert torch.equal(pooled[:, :8], plain.pool(batch))  # same seed, same layers
    reading = head.formula_head(torch.nn.functional.normalize(torch.from_numpy(formula), dim=-1))
    assert torch.allclose(pooled[:, 8:], reading)
    assert head.formula_head[0].out_features == 6
    assert plain.formula_head is None
    with pytest.raises(ValueError, match="set formula_dim"):
        encoder(readout="mean+formula")


def test_text_features_change_the_nodes_only_through_their_projection(graphs: pa.Table) -> None:
    tokens = tokens_of(graphs)
    text_vocabulary = TokenVocabulary.from_tokens(["[PAD]", "[UNK]", *tokens])
    arrays = graph_arrays(graphs, TokenVocabulary.build([]), text_vocabulary)
    zeros = np.zeros((2 + len(tokens), 5), dtype=np.float32)
    model = encoder(text_dim=5)
    assert model.text is not None and model.text.in_features == 5
    ones = zeros + 1
    with torch.no_grad():
        model.text.bias.zero_()
        a = model(to_tensors(arrays, "cpu", zeros))
        b = model(to_tensors(arrays, "cpu", ones))
        model.text.weight.zero_()
        c = model(to_tensors(arrays, "cpu", ones))
    assert not torch.allclose(a, b)
    assert torch.allclose(a, c)
    assert encoder().text is None


def test_token_dropout_only_in_training_and_never_on_padding() -> None:
    model = encoder(token_dropout=0.5)
    tokens = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 200)
    assert torch.equal(model._tokens(tokens), tokens)  # eval mode: untouched
    model.train()
    dropped = model._tokens(tokens)
    assert torch.equal(dropped[tokens == 0], tokens[tokens == 0])
    changed = dropped != tokens
    assert torch.all(dropped[changed] == UNK_ID)
    share = changed[tokens > UNK_ID].float().mean().item()
    assert 0.4 < share < 0.6
    assert torch.equal(encoder(token_dropout=0.0).train()._tokens(tokens), tokens)


def test_gine_layer_is_the_gine_update_written_densely() -> None:
    """h' = MLP((1 + ε) h + Σ_{j→i} ReLU(h_j + e_ji)): checked edge by edge, repeated edges
    and self-loops included, against the same sum over a dense edge loop."""
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    layer = GineLayer(mlp)
    with torch.no_grad():
        layer.eps.fill_(0.25)
    h = torch.randn(5, 4)
    edge_index = torch.tensor([[0, 1, 1, 3, 3, 4], [1, 2, 2, 3, 0, 0]])
    e = torch.randn(6, 4)
    expected = (1 + 0.25) * h.clone()
    for k in range(edge_index.shape[1]):
        j, i = int(edge_index[0, k]), int(edge_index[1, k])
        expected[i] += torch.relu(h[j] + e[k])
    assert torch.allclose(layer(h, edge_index, e), mlp(expected), atol=1e-6)
    assert sorted(layer.state_dict()) == [
        "eps",
        "nn.0.bias",
        "nn.0.weight",
        "nn.2.bias",
        "nn.2.weight",
    ]


def test_mean_pool_averages_each_graph_and_gives_zeros_to_an_empty_one() -> None:
    h = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    graph = torch.tensor([0, 0, 2, 2, 2, 0])
    pooled = mean_pool(h, graph, 3)
    assert torch.equal(pooled[0], h[[0, 1, 5]].mean(0))
    assert torch.equal(pooled[1], torch.zeros(2))
    assert torch.equal(pooled[2], h[[2, 3, 4]].mean(0))


def test_the_formula_context_reaches_every_node_of_its_own_graph_only(graphs: pa.Table) -> None:
    vocabulary = TokenVocabulary.build(graphs["node_tokens"].to_pylist())
    arrays = graph_arrays(graphs, vocabulary)
    context = np.zeros((3, 5), dtype=np.float32)
    context[:, 0] = 1.0
    model = encoder(formula_dim=5)
    assert model.formula is not None and model.formula.in_features == 5
    changed = context.copy()
    changed[1] = [0.0, 0.0, 3.0, 0.0, 0.0]
    with torch.no_grad():
        a = model.pool(to_tensors(arrays, "cpu", formula_vectors=context))
        b = model.pool(to_tensors(arrays, "cpu", formula_vectors=changed))
        scaled = model.pool(to_tensors(arrays, "cpu", formula_vectors=context * 7))
    assert torch.allclose(a[[0, 2]], b[[0, 2]])  # other graphs untouched
    assert not torch.allclose(a[1], b[1])
    assert torch.allclose(a, scaled, atol=1e-6)  # the context is L2-normalised first
    assert "formula" not in to_tensors(arrays, "cpu")
    assert encoder().formula is None
    with pytest.raises(ValueError, match="2 formula vectors for 3 graphs"):
        to_tensors(arrays, "cpu", formula_vectors=context[:2])


def reference_pool(model: GineEncoder, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The module docstring's recipe written out (eval mode): h⁽⁰⁾ = emb_label(token) +
    emb_type(type) [+ W_text text] [+ W_formula formulâ of its graph]; e = emb_role(role) +
    emb_pos(position); each layer h ← h + ReLU(LayerNorm(GINE(h, e))); each graph's mean."""
    h = model.token.weight[batch["tokens"]] + model.node_type.weight[batch["types"]]
    if "text" in batch:
        h = h + torch.stack([model.text(batch["text"][i]) for i in batch["text_index"]])
    if "formula" in batch:
        unit = batch["formula"] / batch["formula"].norm(dim=1, keepdim=True)
        h = h + model.formula(unit)[batch["batch"]]
    e = model.role.weight[batch["edge_role"]] + model.position.weight[batch["edge_position"]]
    for conv, norm in zip(model.convs, model.norms, strict=True):
        h = h + torch.relu(norm(conv(h, batch["edge_index"], e)))
    graph = batch["batch"].tolist()
    return torch.stack(
        [
            h[[i for i, g in enumerate(graph) if g == k]].mean(0)
            for k in range(int(batch["num_graphs"]))
        ]
    )


def test_pooling_follows_the_documented_recipe(graphs: pa.Table) -> None:
    tokens = tokens_of(graphs)
    text_vocabulary = TokenVocabulary.from_tokens(["[PAD]", "[UNK]", *tokens])
    table = np.random.default_rng(0).normal(size=(2 + len(tokens), 3)).astype(np.float32)
    vocabulary = TokenVocabulary.build(graphs["node_tokens"].to_pylist())
    arrays = graph_arrays(graphs, vocabulary, text_vocabulary)
    context = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float32) * 4
    for options, batch in (
        ({}, to_tensors(arrays, "cpu")),
        ({"text_dim": 3, "formula_dim": 5}, to_tensors(arrays, "cpu", table, context)),
    ):
        model = encoder(len(vocabulary), layers=3, **options)
        with torch.no_grad():
            # random embeddings everywhere, so no sum can hide behind a zero
            for embedding in (model.node_type, model.role, model.position):
                embedding.weight.normal_()
            assert torch.allclose(model.pool(batch), reference_pool(model, batch), atol=1e-5)
            assert torch.allclose(model(batch), model.proj(reference_pool(model, batch)), atol=1e-5)


def test_every_child_position_has_its_embedding() -> None:
    """Positions are clipped to MAX_POSITION, so the table has exactly its rows 0..MAX_POSITION."""
    from formula_assets.graphs.batch import MAX_POSITION

    assert encoder().position.num_embeddings == MAX_POSITION + 1


def test_a_one_node_graph_pools_to_its_node() -> None:
    h = torch.tensor([[2.0, -4.0], [1.0, 3.0], [5.0, 5.0]])
    pooled = mean_pool(h, torch.tensor([0, 1, 1]), 2)
    assert torch.equal(pooled[0], h[0])
    assert torch.equal(pooled[1], torch.tensor([3.0, 4.0]))


def test_padding_stays_zero_and_the_unknown_token_learns() -> None:
    model = encoder().train()
    assert torch.equal(model.token.weight[0], torch.zeros(8))
    assert model.token.weight[UNK_ID].abs().sum() > 0
    model.token(torch.tensor([0, 1, 1, 5])).sum().backward()
    grad = model.token.weight.grad
    assert torch.equal(grad[0], torch.zeros(8)) and grad[1].abs().sum() > 0


def test_dropped_tokens_become_the_vocabularys_unknown_token() -> None:
    unknown = TokenVocabulary.build([["a"]]).ids(["never seen"])[0]
    model = encoder(token_dropout=1.0).train()
    tokens = torch.tensor([0, 1, 2, 3, 7])
    assert model._tokens(tokens).tolist() == [0, unknown, unknown, unknown, unknown]


def test_without_token_dropout_no_random_number_is_drawn() -> None:
    """Models trained before token dropout existed train bit for bit as they did."""
    model = encoder(token_dropout=0.0).train()
    state = torch.random.get_rng_state()
    model._tokens(torch.tensor([0, 1, 2, 3]))
    assert torch.equal(torch.random.get_rng_state(), state)


def test_the_defaults_are_the_papers_encoder_and_the_dual_encoders_head() -> None:
    """Two stacked GINE layers, mean readout, no dropout of any kind; the formula head as wide
    and as dropped as sbert_dual_cl's heads in the default profile."""
    from formula_assets.graphs.encoder import HEAD_DROPOUT, HEAD_HIDDEN

    model = GineEncoder(10)
    assert len(model.convs) == 2 and model.readout == "mean"
    assert model.dropout.p == 0.0 and model.token_dropout == 0.0
    assert model.text is None and model.formula is None and model.formula_head is None
    dual = sbert_dual_cl.PROFILE_SETTINGS["default"]
    assert (dual.hidden, dual.dropout) == (HEAD_HIDDEN, HEAD_DROPOUT)
    head = GineEncoder(10, readout="mean+formula", formula_dim=4).formula_head
    assert head[0].out_features == dual.hidden and head[2].p == dual.dropout
