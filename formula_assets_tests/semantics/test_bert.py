"""The plain-torch BERT sentence encoder used by search: the library's vectors, or a refusal."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from formula_assets.semantics.bert import BertSentenceEncoder, Unsupported
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
    return TextEmbedder(resolve_model(None, "the default"))


@pytest.fixture(scope="module")
def encoder() -> BertSentenceEncoder:
    return BertSentenceEncoder(packaged_default_path())


def test_vectors_equal_sentence_transformers(encoder, embedder: TextEmbedder) -> None:
    expected = embedder.encode(TEXTS)
    for text, row in zip(TEXTS, expected, strict=True):
        got = encoder.encode(text)
        assert got.dtype == np.float32 and got.shape == row.shape
        assert np.abs(got - row).max() < 1e-5, text[:30]


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
        ("config.json", {"model_type": "mpnet"}, "model mpnet"),
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


def test_an_extra_module_is_refused(tmp_path: Path) -> None:
    folder = folder_like_default(tmp_path)
    modules = json.loads((folder / "modules.json").read_text())
    modules.append(
        {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    )
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(Unsupported, match="Dense"):
        BertSentenceEncoder(folder)
