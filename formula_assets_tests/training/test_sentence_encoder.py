"""The sentence tower on a BERT 8 numbers wide (the real architecture, files and tokenizer):
mean pooling over real tokens only, whatever the padding or chunking; frozen layers keep the
base weights and, run once (`lower`), give what the whole tower gives."""

from pathlib import Path

import numpy as np
import pytest
import torch

from formula_assets.semantics.bert import folder_weights
from formula_assets.training import sentence_encoder
from formula_assets.training.sentence_encoder import (
    EVAL_CHUNK,
    TRAIN_CHUNK,
    HiddenInputs,
    SentenceTower,
    TokenInputs,
    frozen_pass,
    token_ids,
)
from formula_assets.training.shared_chunks import StoreRefusedWarning
from formula_assets_tests.support.models import tiny_bert

TEXTS = ["x squared plus one", "a", "the mass of a body times its acceleration", "e equals m c"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("bert") / "tiny")


@pytest.fixture(scope="module")
def ids(folder) -> list[list[int]]:
    return token_ids(folder, 16, TEXTS)


def alone(tower: SentenceTower, item: list[int]) -> torch.Tensor:
    """The mean of the last layer's states of one text's tokens, with no padding anywhere."""
    with torch.no_grad():
        hidden = tower.bert.embed(torch.tensor([item]))
        mask = torch.ones((1, len(item)), dtype=torch.bool)
        return tower.bert.run_layers(hidden, mask)[0].mean(dim=0)


def test_token_ids_are_cls_text_sep_truncated(folder) -> None:
    ids = token_ids(folder, 16, ["a b", "one " * 40])
    assert ids[0][0] == 101 and ids[0][-1] == 102 and len(ids[0]) == 4  # [CLS] a b [SEP]
    assert len(ids[1]) == 16 and ids[1][-1] == 102


def test_inputs_give_the_rows_asked_for() -> None:
    tokens = TokenInputs([[1], [2, 3], [4]])
    assert tokens.batch(np.array([2, 0])) == [[4], [1]]
    assert tokens.batch(np.int64(1)) == [[2, 3]]  # one row
    hidden = HiddenInputs([torch.zeros(1), torch.ones(2), torch.full((3,), 2.0)])
    assert [h.tolist() for h in hidden.batch(np.array([1, 2]))] == [[1, 1], [2, 2, 2]]
    assert [h.tolist() for h in hidden.batch(np.int64(0))] == [[0]]


def test_the_tower_starts_from_the_folders_weights_all_trainable(folder) -> None:
    tower = SentenceTower(folder)
    base = folder_weights(folder)
    assert all(torch.equal(tower.bert.state_dict()[k], v) for k, v in base.items())
    assert all(p.requires_grad for p in tower.parameters())
    assert float(tower.temperature().detach()) == pytest.approx(0.05)  # sentence-transformers' 1/20


@pytest.mark.parametrize("frozen", [0, 1, 3])
def test_frozen_layers_keep_their_weights_fixed(folder, frozen: int) -> None:
    tower = SentenceTower(folder, frozen)
    fixed = ["bert.embeddings."] + [f"bert.encoder.layer.{i}." for i in range(frozen)]
    for name, parameter in tower.named_parameters():
        expected = not (frozen and any(name.startswith(f) for f in fixed))
        assert parameter.requires_grad == expected, name


@pytest.mark.parametrize("frozen", [0, 1, 3])
def test_a_stored_tower_leaves_out_exactly_its_frozen_weights(folder, frozen: int) -> None:
    """What a model does not store, it takes from the base model's files: only weights
    that training never moves."""
    tower = SentenceTower(folder, frozen)
    fixed = {name for name, p in tower.named_parameters() if not p.requires_grad}
    assert tower.base_keys() == fixed
    assert len(fixed) == (5 + 16 * frozen if frozen else 0)  # embeddings: 3 tables, LayerNorm
    assert "temperature.log_scale" not in tower.base_keys()


def test_an_mpnet_tower_freezes_the_shared_position_bias_with_its_lowest_layers(
    tmp_path: Path, ids
) -> None:
    """Every MPNet layer adds the same position bias: trained, it would change what the frozen
    layers computed, and a stored pass of them would no longer be the tower's."""
    folder = tiny_bert(tmp_path / "mpnet", architecture="mpnet")
    tower = SentenceTower(folder, frozen_layers=2)
    assert not tower.bert.encoder.relative_attention_bias.weight.requires_grad
    assert "bert.encoder.relative_attention_bias.weight" in tower.base_keys()
    assert not any(p.requires_grad for p in tower.bert.encoder.layer[1].parameters())
    assert all(p.requires_grad for p in tower.bert.encoder.layer[2].parameters())
    assert all(p.requires_grad for p in SentenceTower(folder).parameters())
    tower.eval()
    with torch.no_grad():
        from_hidden = tower.encode(tower.lower(ids).hidden)
        assert torch.allclose(from_hidden, tower.encode(ids), atol=1e-5)


@pytest.mark.parametrize("frozen", [-1, 4])
def test_frozen_layers_must_be_layers_of_the_model(folder, frozen: int) -> None:
    with pytest.raises(ValueError, match=r"frozen_layers must be 0\.\.3"):
        SentenceTower(folder, frozen)


def test_mean_pooling_reads_real_tokens_only(folder, ids) -> None:
    tower = SentenceTower(folder).eval()
    with torch.no_grad():
        batch = tower.encode(ids)  # padded to the longest
        single = tower.encode_structural([ids[2]])
    assert batch.shape == (4, 8)
    for row, item in enumerate(ids):
        assert torch.allclose(batch[row], alone(tower, item), atol=1e-5)
    assert torch.allclose(single[0], alone(tower, ids[2]), atol=1e-5)
    with torch.no_grad():
        assert torch.allclose(tower.encode_semantic(ids), batch)
        one_token = tower.encode([[101]])[0]  # the mean of one token is its state
    assert torch.allclose(one_token, alone(tower, [101]), atol=1e-5)


def test_many_rows_are_encoded_in_chunks_in_input_order(folder, ids) -> None:
    tower = SentenceTower(folder).eval()
    many = [[*ids[i % 4][: 2 + i % 5], 102] for i in range(EVAL_CHUNK + 6)]
    with torch.no_grad():
        vectors = tower.encode(many)
    assert vectors.shape == (len(many), 8)
    for row in (0, 1, 5, EVAL_CHUNK - 1, EVAL_CHUNK, len(many) - 1):
        assert torch.allclose(vectors[row], alone(tower, many[row]), atol=1e-5)


def test_frozen_layers_run_once_give_what_the_whole_tower_gives(folder, ids) -> None:
    tower = SentenceTower(folder, frozen_layers=2)
    tower.train()
    lowered = tower.lower(ids)
    assert tower.training  # lowering leaves the mode as it was
    assert [h.shape for h in lowered.hidden] == [(len(i), 8) for i in ids]
    again = tower.lower(ids)  # eval mode: no dropout, the same states every time
    assert all(torch.equal(a, b) for a, b in zip(lowered.hidden, again.hidden, strict=True))
    tower.eval()
    with torch.no_grad():
        from_hidden = tower.encode(lowered.hidden)
        from_ids = tower.encode(ids)
        single = tower.encode(lowered.batch(np.array([3])))
    assert torch.allclose(from_hidden, from_ids, atol=1e-5)
    assert torch.allclose(single[0], from_ids[3], atol=1e-5)
    many = [lowered.hidden[i % 4] for i in range(EVAL_CHUNK + 3)]
    with torch.no_grad():
        chunked = tower.encode(many)
    assert torch.allclose(chunked[EVAL_CHUNK + 2], from_ids[(EVAL_CHUNK + 2) % 4], atol=1e-5)


def test_training_mode_uses_dropout(folder, ids) -> None:
    tower = SentenceTower(folder).train()
    torch.manual_seed(0)
    a = tower.encode(ids)
    b = tower.encode(ids)
    assert a.requires_grad and not torch.allclose(a, b)


def test_a_training_batch_runs_in_length_sorted_groups_in_input_order(folder, ids) -> None:
    """In training a batch runs in groups of TRAIN_CHUNK rows of similar length (less
    padding); each row's vector is still its own, in input order, and gradients flow."""
    tower = SentenceTower(folder).train()
    tower.bert.dropout = tower.bert.attention_dropout = 0.0  # to compare with rows alone
    many = [ids[i % 4] for i in range(3 * TRAIN_CHUNK + 1)]
    encoded = tower.encode(many)
    assert encoded.requires_grad
    for row, item in enumerate(many):
        assert torch.allclose(encoded[row], alone(tower, item), atol=1e-5)
    encoded.sum().backward()
    assert tower.bert.encoder.layer[0].output.dense.weight.grad.abs().sum() > 0
    tower = SentenceTower(folder).train()
    torch.manual_seed(3)
    first = tower.encode(many)
    torch.manual_seed(3)
    assert torch.equal(first, tower.encode(many))  # the groups follow the lengths, not chance
    assert len({len(i) for i in many}) > 1 and len(many) > TRAIN_CHUNK


def test_only_training_runs_in_groups(folder, ids) -> None:
    """Groups of at most TRAIN_CHUNK rows in training; one padded pass in eval mode."""
    many = [ids[i % 4] for i in range(3 * TRAIN_CHUNK + 1)]
    for training, sizes in ((True, [TRAIN_CHUNK] * 3 + [1]), (False, [len(many)])):
        tower = SentenceTower(folder).train(training)
        seen: list[int] = []
        padded = tower._pooled_padded

        def spy(items, seen=seen, padded=padded):
            seen.append(len(items))
            return padded(items)

        tower._pooled_padded = spy
        tower.encode(many)
        assert seen == sizes, training


def test_inputs_follow_the_tower_to_its_device(folder, ids) -> None:
    """A tower moved to another device builds its padded inputs there (torch's `meta` device
    stands in for an accelerator: every machine has it, it computes shapes only)."""
    tower = SentenceTower(folder).eval().to("meta")
    encoded = tower.encode(ids)
    assert encoded.device.type == "meta" and encoded.shape == (4, 8)


def test_the_frozen_pass_runs_once_per_base_layers_device_and_texts(
    folder, ids, monkeypatch
) -> None:
    monkeypatch.setattr(sentence_encoder, "_FROZEN", type(sentence_encoder._FROZEN)())
    built: list[int] = []

    def tower() -> SentenceTower:
        built.append(1)
        return SentenceTower(folder, frozen_layers=1)

    first = frozen_pass("base", 1, "cpu", ids, tower)
    expected = SentenceTower(folder, frozen_layers=1).lower(ids)
    assert all(torch.equal(a, b) for a, b in zip(first.hidden, expected.hidden, strict=True))
    assert frozen_pass("base", 1, "cpu", [list(i) for i in ids], tower) is first
    assert len(built) == 1
    for other in (("other", 1, "cpu", ids), ("base", 2, "cpu", ids), ("base", 1, "meta", ids),
                  ("base", 1, "cpu", ids[:3])):  # fmt: skip
        assert frozen_pass(*other, tower) is not first
    assert len(built) == 5


def test_the_frozen_pass_keeps_the_latest_few(folder, ids, monkeypatch) -> None:
    monkeypatch.setattr(sentence_encoder, "_FROZEN", type(sentence_encoder._FROZEN)())
    built: list[int] = []

    def tower() -> SentenceTower:
        built.append(1)
        return SentenceTower(folder, frozen_layers=1)

    for row in range(sentence_encoder.FROZEN_KEPT):
        frozen_pass("base", 1, "cpu", [ids[row % len(ids)], [row]], tower)
    frozen_pass("base", 1, "cpu", [ids[0], [0]], tower)  # used again: now the newest
    frozen_pass("base", 1, "cpu", [[99]], tower)  # one more: the oldest unused one goes
    assert len(built) == sentence_encoder.FROZEN_KEPT + 1
    frozen_pass("base", 1, "cpu", [ids[0], [0]], tower)
    assert len(built) == sentence_encoder.FROZEN_KEPT + 1
    frozen_pass("base", 1, "cpu", [ids[1], [1]], tower)  # evicted: computed again
    assert len(built) == sentence_encoder.FROZEN_KEPT + 2
    assert len(sentence_encoder._FROZEN) == sentence_encoder.FROZEN_KEPT


def test_a_stored_frozen_pass_is_the_same_and_read_back_by_the_next_process(
    folder, ids, monkeypatch, tmp_path
) -> None:
    """Through a store the pass gives the very tensors `lower` gives; a process without the
    in-memory copy (emptied here) reads them back instead of building the tower."""
    monkeypatch.setattr(sentence_encoder, "_FROZEN", type(sentence_encoder._FROZEN)())
    monkeypatch.setattr(sentence_encoder, "EVAL_CHUNK", 2)  # several chunks for 4 texts
    built: list[int] = []

    def tower() -> SentenceTower:
        built.append(1)
        return SentenceTower(folder, frozen_layers=1)

    stored = frozen_pass("base", 1, "cpu", ids, tower, tmp_path)
    expected = SentenceTower(folder, frozen_layers=1).lower(ids)
    assert all(torch.equal(a, b) for a, b in zip(stored.hidden, expected.hidden, strict=True))
    assert len(list(tmp_path.glob("*/*.pt"))) == 2
    sentence_encoder._FROZEN.clear()
    again = frozen_pass("base", 1, "cpu", ids, tower, tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(again.hidden, expected.hidden, strict=True))
    assert len(built) == 1
    frozen_pass("base", 2, "cpu", ids, tower, tmp_path)  # other layers: a pass of its own
    assert len(built) == 2 and len(list(tmp_path.iterdir())) == 2
    for row in range(sentence_encoder.FROZEN_KEPT):  # the store keeps the latest few
        frozen_pass("base", 1, "cpu", [ids[row % len(ids)], [row]], tower, tmp_path)
    assert len(list(tmp_path.iterdir())) == sentence_encoder.FROZEN_KEPT


def test_a_store_that_refuses_writes_gives_the_same_pass(
    folder, ids, monkeypatch, tmp_path
) -> None:
    """An embedding cache on a read-only or full disk costs the sharing, not the fold."""
    monkeypatch.setattr(sentence_encoder, "_FROZEN", type(sentence_encoder._FROZEN)())
    (tmp_path / "file").write_text("not a folder")
    with pytest.warns(StoreRefusedWarning):
        got = frozen_pass(
            "base", 1, "cpu", ids, lambda: SentenceTower(folder, 1), tmp_path / "file"
        )
    expected = SentenceTower(folder, frozen_layers=1).lower(ids)
    assert all(torch.equal(a, b) for a, b in zip(got.hidden, expected.hidden, strict=True))
    heard: list[str] = []  # the asset's log, when it names one
    sentence_encoder._FROZEN.clear()
    frozen_pass(
        "base", 1, "cpu", ids, lambda: SentenceTower(folder, 1), tmp_path / "file", heard.append
    )
    assert len(heard) == 1 and "not shared" in heard[0]


def test_the_store_is_the_innermost_blocks() -> None:
    assert sentence_encoder.current_store() == (None, None, None)
    with sentence_encoder.frozen_store(Path("/a"), print, Path("/models")):
        with sentence_encoder.frozen_store(None):
            assert sentence_encoder.current_store() == (None, None, None)
        assert sentence_encoder.current_store() == (Path("/a"), print, Path("/models"))
    assert sentence_encoder.current_store() == (None, None, None)
