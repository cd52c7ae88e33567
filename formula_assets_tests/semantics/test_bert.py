"""The plain-torch BERT (or MPNet) sentence encoder of the embedding assets and the search:
the library's vectors, alone and in padded batches, or a refusal."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from formula_assets.semantics.bert import BertSentenceEncoder, Unsupported, refusal
from formula_assets.semantics.models import TextEmbedder, packaged_default_path, resolve_model

TEXTS = [
    "kinetic energy",
    "group E = T + V",
    "x",
    "",
    "Ünïcödé ∑ formulae and a text long enough to be truncated " * 40,
]


@pytest.fixture(scope="module")
def embedder() -> TextEmbedder:
    return TextEmbedder(resolve_model(None, "the default"), library=True)


@pytest.fixture(scope="module")
def encoder() -> BertSentenceEncoder:
    return BertSentenceEncoder(packaged_default_path())


def test_vectors_equal_sentence_transformers(encoder, embedder: TextEmbedder) -> None:
    expected = embedder.encode(TEXTS)
    for text, row in zip(TEXTS, expected, strict=True):
        got = encoder.encode(text)
        assert got.dtype == np.float32 and got.shape == row.shape
        assert np.abs(got - row).max() < 1e-5, text[:30]


def test_a_padded_batch_gives_the_librarys_vectors(encoder, embedder: TextEmbedder) -> None:
    """Texts of 3 to 256 tokens in one batch, padded to the longest: each row is the library's
    vector of that text (the padding is in neither the attention nor the mean)."""
    expected = embedder.encode(TEXTS)
    rows = [encoder.tokens(t) for t in TEXTS]
    assert len({len(r) for r in rows}) == len(rows)  # every row padded but the longest
    got = encoder.encode_ids(rows)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-5)


def folder_like_default(tmp_path: Path) -> Path:
    """The packaged folder's small files copied, its weights linked."""
    source = packaged_default_path()
    target = tmp_path / "model"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors"))
    (target / "model.safetensors").symlink_to(source / "model.safetensors")
    return target


@pytest.mark.parametrize(
    ("file", "change", "reason"),
    [
        (
            "1_Pooling/config.json",
            {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True},
            "pooling",
        ),
        ("config.json", {"model_type": "roberta"}, "model roberta"),
        ("config.json", {"hidden_act": "relu"}, "relu"),
        ("sentence_bert_config.json", {"do_lower_case": True}, "lower-casing"),
    ],
)
def test_other_shapes_are_refused(tmp_path: Path, file: str, change: dict, reason: str) -> None:
    folder = folder_like_default(tmp_path)
    BertSentenceEncoder(folder)  # the copy itself is supported
    path = folder / file
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(Unsupported, match=reason):
        BertSentenceEncoder(folder)


@pytest.mark.parametrize(
    ("file", "content", "reason"),
    [
        ("modules.json", "not json", "modules.json is not JSON"),
        ("config.json", "{", "config.json is not JSON"),
        ("config.json", None, "config.json is missing"),
    ],
)
def test_a_file_that_cannot_be_read_is_the_reason_given(
    tmp_path: Path, file: str, content: str | None, reason: str
) -> None:
    """The engine choice asks `refusal` first: a folder it cannot read is refused with the
    file named (the library then says what is wrong in its own error), never read on."""
    folder = folder_like_default(tmp_path)
    assert refusal(folder) is None
    if content is None:
        (folder / file).unlink()
    else:
        (folder / file).write_text(content)
    assert refusal(folder) == reason
    with pytest.raises(Unsupported, match=reason):
        BertSentenceEncoder(folder)


def test_an_extra_module_is_refused(tmp_path: Path) -> None:
    folder = folder_like_default(tmp_path)
    modules = json.loads((folder / "modules.json").read_text())
    modules.append(
        {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    )
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(Unsupported, match="Dense"):
        BertSentenceEncoder(folder)


def test_a_padded_batch_equals_each_text_alone(encoder) -> None:
    """The mask keeps the padding out of attention: two texts of different lengths, padded
    into one batch, give each one's own token states."""
    import torch

    short, long = (encoder.tokenizer.encode(t).ids for t in ("force", "kinetic energy of a body"))
    ids = torch.tensor([short + [0] * (len(long) - len(short)), long])
    mask = torch.tensor(
        [[True] * len(short) + [False] * (len(long) - len(short)), [True] * len(long)]
    )
    with torch.no_grad():
        batch = encoder.encoder.run_layers(encoder.encoder.embed(ids), mask)
        alone = encoder.encoder.run_layers(
            encoder.encoder.embed(torch.tensor([short])),
            torch.ones(1, len(short), dtype=torch.bool),
        )
    assert torch.allclose(batch[0, : len(short)], alone[0], atol=1e-5)


def test_layers_run_in_two_parts_equal_all_at_once(encoder) -> None:
    import torch

    bert = encoder.encoder
    assert bert.layers == 6
    ids = torch.tensor([encoder.tokenizer.encode("group E = T + V").ids])
    mask = torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        h = bert.embed(ids)
        whole = bert.run_layers(h, mask)
        parts = bert.run_layers(bert.run_layers(h, mask, 0, 2), mask, 2)
        first_two = bert.run_layers(h, mask, 0, 2)
    assert torch.allclose(whole, parts, atol=1e-6)
    assert not torch.allclose(whole, first_two, atol=1e-3)


def test_dropout_acts_in_training_only(encoder) -> None:
    """The folder's dropout (0.1 in the embeddings, the layers and the attention) makes two
    training passes differ; in eval mode a pass is deterministic."""
    import torch

    from formula_assets.semantics.bert import load_encoder

    bert = load_encoder(packaged_default_path())
    assert (bert.dropout, bert.attention_dropout) == (0.1, 0.1)
    ids = torch.tensor([encoder.tokenizer.encode("kinetic energy").ids])
    mask = torch.ones_like(ids, dtype=torch.bool)
    bert.train()
    torch.manual_seed(0)
    with torch.no_grad():
        embedded = [bert.embed(ids) for _ in range(2)]
        layered = [bert.run_layers(embedded[0], mask) for _ in range(2)]
    assert not torch.allclose(*embedded) and not torch.allclose(*layered)
    bert.eval()
    with torch.no_grad():
        assert torch.equal(bert.embed(ids), bert.embed(ids))
        assert torch.equal(
            bert.run_layers(bert.embed(ids), mask),
            encoder.encoder.run_layers(encoder.encoder.embed(ids), mask),
        )


def test_attention_dropout_alone_changes_a_training_pass() -> None:
    import torch

    from formula_assets.semantics.bert import load_encoder

    bert = load_encoder(packaged_default_path())
    bert.dropout = 0.0  # only the attention's dropout left
    bert.train()
    ids = torch.tensor([[101, 2000, 2001, 2002, 102]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        h = bert.embed(ids)
        assert torch.equal(h, bert.embed(ids))
        assert not torch.allclose(bert.run_layers(h, mask), bert.run_layers(h, mask))


def test_the_tokenizer_truncates_at_the_sentence_length_and_pads_nothing() -> None:
    from formula_assets.semantics.bert import folder_tokenizer

    folder = packaged_default_path()
    long = "energy " * 600
    assert len(folder_tokenizer(folder).encode(long).ids) == 256  # max_seq_length
    assert len(folder_tokenizer(folder, 20).encode(long).ids) == 20
    assert len(folder_tokenizer(folder).encode("x").ids) == 3  # [CLS] x [SEP], no padding


def test_the_tokenizer_never_exceeds_the_position_table(tmp_path: Path) -> None:
    from formula_assets.semantics.bert import folder_tokenizer

    folder = folder_like_default(tmp_path)
    settings = folder / "sentence_bert_config.json"
    settings.write_text(json.dumps({"max_seq_length": 4096, "do_lower_case": False}))
    assert len(folder_tokenizer(folder).encode("energy " * 900).ids) == 512
    settings.write_text(json.dumps({"max_seq_length": None, "do_lower_case": False}))
    assert len(folder_tokenizer(folder).encode("energy " * 900).ids) == 512


def test_without_normalize_the_vector_keeps_its_length(tmp_path: Path, encoder) -> None:
    folder = folder_like_default(tmp_path)
    modules = json.loads((folder / "modules.json").read_text())[:2]
    (folder / "modules.json").write_text(json.dumps(modules))
    plain = BertSentenceEncoder(folder)
    assert not plain.normalise and encoder.normalise
    raw, unit = plain.encode("kinetic energy"), encoder.encode("kinetic energy")
    assert abs(float(np.linalg.norm(unit)) - 1.0) < 1e-5
    assert abs(float(np.linalg.norm(raw)) - 1.0) > 0.01
    assert np.allclose(raw / np.linalg.norm(raw), unit, atol=1e-5)


def test_the_weights_are_named_as_the_encoders_parameters(tmp_path: Path) -> None:
    """A folder saved with `bert.`-prefixed names, a pooler and position ids loads the same."""
    import torch
    from safetensors.torch import load_file, save_file

    from formula_assets.semantics.bert import folder_weights, load_encoder

    folder = folder_like_default(tmp_path)
    state = load_file(packaged_default_path() / "model.safetensors")
    prefixed = {f"bert.{k}": v.half() for k, v in state.items()}
    prefixed["bert.pooler.dense.weight"] = torch.zeros(2, 2)
    prefixed["bert.embeddings.position_ids"] = torch.arange(4)
    (folder / "model.safetensors").unlink()
    save_file(prefixed, folder / "model.safetensors")
    weights = folder_weights(folder)
    assert set(weights) == set(load_encoder(packaged_default_path()).state_dict())
    assert all(w.dtype == torch.float32 for w in weights.values())
    load_encoder(folder)  # strict: nothing missing, nothing left over


def _merge(path: Path, change: dict) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))


def _transformer_in_a_subfolder(folder: Path) -> None:
    modules = json.loads((folder / "modules.json").read_text())
    modules[0]["path"] = "0_Transformer"
    (folder / "modules.json").write_text(json.dumps(modules))


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda f: (f / "sentence_bert_config.json").unlink(), "sentence_bert_config.json is"),
        (lambda f: (f / "model.safetensors").unlink(), "no model.safetensors"),
        (lambda f: (f / "tokenizer.json").unlink(), "no model.safetensors or tokenizer.json"),
        (
            lambda f: _merge(f / "config.json", {"position_embedding_type": "relative_key"}),
            "relative position embeddings",
        ),
        (_transformer_in_a_subfolder, "subfolder"),
        (
            lambda f: _merge(f / "1_Pooling" / "config.json", {"pooling_mode_max_tokens": True}),
            "pooling",
        ),
    ],
    ids=["no settings", "no weights", "no tokenizer", "relative", "subfolder", "two poolings"],
)
def test_more_shapes_are_refused(tmp_path: Path, edit, reason: str) -> None:
    folder = folder_like_default(tmp_path)
    edit(folder)
    with pytest.raises(Unsupported, match=reason):
        BertSentenceEncoder(folder)


def test_a_config_without_the_optional_keys_loads_with_berts_defaults(tmp_path: Path) -> None:
    """No dropout probabilities: no dropout; no type_vocab_size: BERT's two segment types
    (the weights have two rows, and load strictly)."""
    from formula_assets.semantics.bert import BertEncoder, load_encoder

    folder = folder_like_default(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "type_vocab_size"):
        del config[key]
    (folder / "config.json").write_text(json.dumps(config))
    bare = BertEncoder(config)
    assert (bare.dropout, bare.attention_dropout) == (0.0, 0.0)
    assert bare.embeddings.token_type_embeddings.num_embeddings == 2
    load_encoder(folder)


def test_without_a_sentence_length_a_wide_position_table_truncates_at_512(tmp_path: Path) -> None:
    from formula_assets.semantics.bert import folder_tokenizer

    folder = folder_like_default(tmp_path)
    _merge(folder / "config.json", {"max_position_embeddings": 1024})
    _merge(folder / "sentence_bert_config.json", {"max_seq_length": None})
    assert len(folder_tokenizer(folder).encode("energy " * 900).ids) == 512


# MPNet (all-mpnet-base-v2's architecture), held to transformers' own implementation on a
# small random model: long enough for the position buckets past 128 tokens, padded in a batch


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    import torch
    from transformers import MPNetConfig, MPNetModel

    torch.manual_seed(0)
    config = MPNetConfig(
        vocab_size=60,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=200,
    )
    model = MPNetModel(config, add_pooling_layer=True).eval()
    with torch.no_grad():  # a trained model's bias differs per bucket and head; init's is 0.02·N
        model.encoder.relative_attention_bias.weight.normal_(0.0, 1.0)
    folder = tmp_path_factory.mktemp("mpnet")
    model.save_pretrained(folder, safe_serialization=True)
    return folder, model


def _padded(rows: list[list[int]]):
    import torch

    width = max(map(len, rows))
    ids = torch.tensor([r + [1] * (width - len(r)) for r in rows])  # 1: MPNet's padding id
    mask = torch.tensor([[True] * len(r) + [False] * (width - len(r)) for r in rows])
    return ids, mask


def test_mpnet_states_equal_transformers(tiny_mpnet) -> None:
    import torch

    from formula_assets.semantics.bert import load_encoder

    folder, reference = tiny_mpnet
    generator = torch.Generator().manual_seed(1)
    rows = [torch.randint(3, 60, (n,), generator=generator).tolist() for n in (170, 9, 1)]
    ids, mask = _padded(rows)
    ours = load_encoder(folder).eval()
    with torch.no_grad():
        got = ours.run_layers(ours.embed(ids), mask)
        expected = reference(input_ids=ids, attention_mask=mask.long()).last_hidden_state
    for row, tokens in enumerate(rows):
        assert torch.allclose(got[row, : len(tokens)], expected[row, : len(tokens)], atol=1e-5)


def test_mpnet_position_buckets_equal_transformers() -> None:
    import torch
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    from formula_assets.semantics.bert import relative_position_buckets

    distance = torch.arange(-300, 301)[None, :]
    for buckets in (32, 16):
        expected = MPNetEncoder.relative_position_bucket(distance, num_buckets=buckets)
        assert torch.equal(relative_position_buckets(distance, buckets), expected)


def test_mpnet_layers_run_in_two_parts_and_freeze_with_their_shared_bias(tiny_mpnet) -> None:
    """The position bias is shared by every layer: freezing the lowest layers freezes it too,
    or a stored output of those layers would no longer be what the tower computes."""
    import torch

    from formula_assets.semantics.bert import load_encoder

    folder, _ = tiny_mpnet
    mpnet = load_encoder(folder).eval()
    ids, mask = _padded([[5, 6, 7, 8], [9, 10]])
    with torch.no_grad():
        h = mpnet.embed(ids)
        whole = mpnet.run_layers(h, mask)
        parts = mpnet.run_layers(mpnet.run_layers(h, mask, 0, 2), mask, 2)
    assert torch.allclose(whole, parts, atol=1e-6)
    below = mpnet.below(2)
    assert mpnet.encoder.relative_attention_bias in below
    assert mpnet.encoder.layer[2] not in below and mpnet.below(0) == []


def test_a_bert_has_no_position_bias_and_other_architectures_are_refused() -> None:
    from formula_assets.semantics.bert import BertEncoder

    config = json.loads((packaged_default_path() / "config.json").read_text())
    bert = BertEncoder(config)
    assert not hasattr(bert.encoder, "relative_attention_bias")
    assert bert.below(1) == [bert.embeddings, bert.encoder.layer[0]]
    with pytest.raises(Unsupported, match="model roberta"):
        BertEncoder({**config, "model_type": "roberta"})


def test_the_fine_tuned_towers_encoder_draws_its_tables_as_before() -> None:
    """Built for training, the encoder draws its embedding tables first, as nn.Embedding does,
    so the layers a tower adds after start from the same random numbers (its trained models
    stay the same); built to be loaded, it draws none."""
    import torch

    from formula_assets.semantics.bert import BertEncoder

    config = json.loads((packaged_default_path() / "config.json").read_text())
    torch.manual_seed(0)
    reference = torch.nn.Embedding(config["vocab_size"], config["hidden_size"]).weight
    torch.manual_seed(0)
    drawn = BertEncoder(config)
    assert torch.equal(drawn.embeddings.word_embeddings.weight, reference)
    after_drawing = torch.rand(1)
    torch.manual_seed(0)
    BertEncoder(config, draw_tables=False)
    assert not torch.equal(torch.rand(1), after_drawing)  # it drew none of them


def test_an_mpnet_sentence_folder_gives_the_librarys_vectors(tmp_path: Path) -> None:
    """all-mpnet-base-v2's shape (MPNet, mean pooling) in plain torch: the vectors the
    library computes, so that a search of the `large` lake skips importing it too."""
    from formula_assets_tests.support.models import tiny_sentence_model

    folder = tiny_sentence_model(tmp_path / "mpnet", architecture="mpnet")
    model = resolve_model(str(folder), "a test")
    expected = TextEmbedder(model, device="cpu", library=True).encode(TEXTS)
    plain = BertSentenceEncoder(folder)
    assert plain.encoder.architecture == "mpnet"
    for text, row in zip(TEXTS, expected, strict=True):
        assert np.abs(plain.encode(text) - row).max() < 1e-5, text[:30]


def test_an_mpnet_config_without_its_optional_keys_takes_transformers_defaults() -> None:
    """A config that names neither the position buckets nor a padding id: MPNet's own 32
    buckets, and positions counted from its padding id 1."""
    from transformers import MPNetConfig

    from formula_assets.semantics.bert import BertEncoder

    bare = {
        "model_type": "mpnet",
        "hidden_size": 8,
        "num_attention_heads": 2,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "max_position_embeddings": 16,
        "vocab_size": 40,
        "layer_norm_eps": 1e-5,
    }
    mpnet = BertEncoder(bare)
    reference = MPNetConfig()
    buckets = mpnet.encoder.relative_attention_bias.num_embeddings
    assert buckets == reference.relative_attention_num_buckets == 32
    assert mpnet.first_position == reference.pad_token_id + 1 == 2
