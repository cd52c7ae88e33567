"""Copies of the packaged sentence model, and a fine-tune saved over its files in place."""

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np

from formula_assets.semantics.models import packaged_default_path

WEIGHTS = "embeddings.word_embeddings.weight"


def copy_model(target: Path) -> Path:
    shutil.copytree(packaged_default_path(), target)
    return target


def keeping_times(paths: list[Path]):
    """Restore the access and modification times of `paths` after an edit."""
    times = {p: (p.stat().st_atime_ns, p.stat().st_mtime_ns) for p in paths}

    def restore() -> None:
        for path, ns in times.items():
            os.utime(path, ns=ns)

    return restore


def fine_tune_in_place(folder: Path, scale: float = 0.05, replace: bool = False) -> None:
    """Overwrite one tensor of model.safetensors: same name, same size, and the file's and the
    folder's mtimes set back, as a training run saving over its input may leave them. In place
    (the same inode), or, with `replace`, written beside and renamed over it (a new inode)."""
    weights = folder / "model.safetensors"
    restore = keeping_times([weights, folder])
    size = weights.stat().st_size
    data = bytearray(weights.read_bytes())
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    entry = header.get(WEIGHTS) or header[f"bert.{WEIGHTS}"]
    assert entry["dtype"] == "F32"
    start, end = (8 + length + offset for offset in entry["data_offsets"])
    values = np.frombuffer(bytes(data[start:end]), dtype="<f4")
    noise = np.random.default_rng(0).standard_normal(values.shape).astype("<f4")
    data[start:end] = (values + scale * noise).astype("<f4").tobytes()
    if replace:
        scratch = folder / "model.safetensors.new"
        scratch.write_bytes(data)
        scratch.replace(weights)
    else:
        with weights.open("r+b") as file:  # no truncation: a process mapping it does not crash
            file.write(data)
    restore()
    assert weights.stat().st_size == size


def tiny_bert(
    target: Path, layers: int = 3, width: int = 8, seed: int = 0, architecture: str = "bert"
) -> Path:
    """A sentence-transformers folder of a BERT (or, with `architecture="mpnet"`, an MPNet) a
    few numbers wide (randomly initialised, the packaged model's tokenizer): the real
    architecture and files, trained in milliseconds."""
    import torch
    from safetensors.torch import save_file

    from formula_assets.semantics.bert import BertEncoder

    target.mkdir(parents=True)
    config = {
        "hidden_size": width,
        "num_attention_heads": 2,
        "intermediate_size": 2 * width,
        "num_hidden_layers": layers,
        "max_position_embeddings": 64,
        "vocab_size": 30522,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "model_type": architecture,
        "pad_token_id": 0,
    }
    (target / "config.json").write_text(json.dumps(config), "utf-8")
    (target / "sentence_bert_config.json").write_text('{"max_seq_length": 32}', "utf-8")
    shutil.copy(packaged_default_path() / "tokenizer.json", target / "tokenizer.json")
    torch.manual_seed(seed)
    state = {k: v.contiguous() for k, v in BertEncoder(config).state_dict().items()}
    save_file(state, str(target / "model.safetensors"))
    return target


def tiny_sentence_model(target: Path, seed: int = 0, architecture: str = "bert") -> Path:
    """`tiny_bert` as a sentence-transformers folder (modules.json: the BERT or MPNet, mean
    pooling; the packaged model's tokenizer files): what a hub repository of a sentence model
    holds, a few megabytes, loaded in a second.
    Its vectors are not unit length (no Normalize module)."""
    tiny_bert(target, seed=seed, architecture=architecture)
    for name in ("tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(packaged_default_path() / name, target / name)
    kinds = {"": "Transformer", "1_Pooling": "Pooling"}
    modules = [
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (path, kind) in enumerate(kinds.items())
    ]
    (target / "modules.json").write_text(json.dumps(modules), "utf-8")
    width = json.loads((target / "config.json").read_text("utf-8"))["hidden_size"]
    (target / "1_Pooling").mkdir()
    pooling = {"word_embedding_dimension": width, "pooling_mode_mean_tokens": True}
    (target / "1_Pooling" / "config.json").write_text(json.dumps(pooling), "utf-8")
    return target
