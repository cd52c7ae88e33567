"""One fold × method: split, build, train with early stopping, encode every formula.

`graph_text_cl` learns from the OPT graphs (vocabulary built from the training split only, so
test-only tokens are unknown, as they would be for new formulae); `sbert_dual_cl` learns
projection heads over frozen sentence vectors of the linearised OPT. Both align with the same
semantic projection head over `semantic_embeddings` and the same loss.
"""

from __future__ import annotations

import dataclasses
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from formula_assets.core.arrow import embedding_matrix, vectors
from formula_assets.core.profiles import MethodSettings, Profile
from formula_assets.core.protocol import TRAINED
from formula_assets.graphs.batch import graph_arrays
from formula_assets.graphs.encoder import to_tensors
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.training.artifacts import TrainedModel, embeddings_table
from formula_assets.training.determinism import deterministic
from formula_assets.training.folds import split_rows
from formula_assets.training.models import DualEncoder, GraphTextModel, RunAverage
from formula_assets.training.trainer import (
    MatrixInputs,
    TrainSettings,
    encode,
    retrieval_quality,
    train,
)

# The training profile (sizes, epochs, seeds) changes every model: it enters the code version.
RESULT_SETTINGS = ("profile",)
# Run r of a model trains with seed `seed + RUN_SEED_STRIDE × r` (run 0: the model's seed).
RUN_SEED_STRIDE = 100_000
Log = Callable[[str], None]


@dataclass
class TokenTexts:
    """The sentence vector of every OPT token's text (a training-free, frozen input)."""

    tokens: list[str]
    vectors: np.ndarray

    @classmethod
    def from_table(cls, table: pa.Table) -> TokenTexts:
        column = table.column("embedding")
        return cls(table.column("token").to_pylist(), vectors(column, column.type.list_size))

    def lookup(self) -> tuple[TokenVocabulary, np.ndarray]:
        """Token → row, and the table (rows 0 and 1, padding and unknown, are zeros)."""
        vocabulary = TokenVocabulary.from_tokens(
            [TokenVocabulary.PAD, TokenVocabulary.UNK, *self.tokens]
        )
        zeros = np.zeros((2, self.vectors.shape[1]), dtype=np.float32)
        return vocabulary, np.vstack([zeros, self.vectors.astype(np.float32)])


@dataclass
class AlignmentData:
    """Row-aligned inputs of every formula that has a graph and both sentence vectors."""

    qids: list[str]
    graphs: pa.Table
    semantic: np.ndarray
    opt_text: np.ndarray
    folds: dict[str, int]
    token_texts: TokenTexts | None = None


def alignment_data(
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
    opt_token_embeddings: pa.Table | None = None,
) -> AlignmentData:
    folds = dict(
        zip(cv_folds.column("qid").to_pylist(), cv_folds.column("fold").to_pylist(), strict=True)
    )
    sem_qids, semantic = embedding_matrix(semantic_embeddings)
    txt_qids, opt_text = embedding_matrix(opt_text_embeddings)
    sem_index = {q: i for i, q in enumerate(sem_qids)}
    txt_index = {q: i for i, q in enumerate(txt_qids)}
    graph_qids = opt_graphs.column("qid").to_pylist()
    keep = [i for i, q in enumerate(graph_qids) if q in sem_index and q in txt_index and q in folds]
    qids = [graph_qids[i] for i in keep]
    return AlignmentData(
        qids=qids,
        graphs=opt_graphs.take(pa.array(keep, pa.int64())),
        semantic=semantic[[sem_index[q] for q in qids]],
        opt_text=opt_text[[txt_index[q] for q in qids]],
        folds={q: folds[q] for q in qids},
        token_texts=None
        if opt_token_embeddings is None
        else TokenTexts.from_table(opt_token_embeddings),
    )


def unseen_tokens(
    graphs: pa.Table, rows: np.ndarray, vocabulary: TokenVocabulary
) -> dict[str, float]:
    """How many of the given rows' tokens the (training) vocabulary does not know."""
    known = set(vocabulary.tokens[2:])
    tokens = [t for r in rows for t in graphs["node_tokens"][int(r)].as_py()]
    unseen = [t for t in tokens if t not in known]
    return {
        "occurrences": len(unseen),
        "distinct": len(set(unseen)),
        "share_of_occurrences": len(unseen) / len(tokens) if tokens else 0.0,
        "formulae_with_any": int(
            sum(any(t not in known for t in graphs["node_tokens"][int(r)].as_py()) for r in rows)
        ),
    }


class GraphInputs:
    """Graph batches for row indices, built from one precomputed set of arrays."""

    def __init__(
        self,
        graphs: pa.Table,
        vocabulary: TokenVocabulary,
        device: str,
        token_texts: TokenTexts | None = None,
        formula_vectors: np.ndarray | None = None,
    ) -> None:
        """`formula_vectors`: row-aligned with `graphs`, the formula context of each."""
        text_vocabulary, self.text_table = (
            token_texts.lookup() if token_texts is not None else (None, None)
        )
        self.arrays = graph_arrays(graphs, vocabulary, text_vocabulary)
        self.formula_vectors = formula_vectors
        self.device = device

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        formula = None if self.formula_vectors is None else self.formula_vectors[rows]
        return to_tensors(self.arrays.select(rows), self.device, self.text_table, formula)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def build_model(config: dict[str, Any]) -> torch.nn.Module:
    """The untrained architecture a config describes (weights come from safetensors): one
    network, or the average of `runs` of them."""
    runs = config["settings"].get("runs", 1)
    if runs == 1:
        return build_run(config)
    return RunAverage([build_run(config) for _ in range(runs)])


def build_run(config: dict[str, Any]) -> torch.nn.Module:
    """One untrained network of the config's method."""
    settings = config["settings"]
    if config["method"] == "graph_text_cl":
        return GraphTextModel(
            len(config["vocabulary"]),
            config["semantic_dim"],
            settings["hidden"],
            settings["out_dim"],
            settings["dropout"],
            layers=settings.get("layers", 2),
            text_dim=config.get("token_text_dim", 0),
            readout=settings.get("readout", "mean"),
            token_dropout=settings.get("token_dropout", 0.0),
            formula_dim=config.get("formula_text_dim", 0),
            head_hidden=settings.get("head_hidden", MethodSettings.head_hidden),
            head_dropout=settings.get("head_dropout", MethodSettings.head_dropout),
            semantic_hidden=settings.get("semantic_hidden"),
            semantic_dropout=settings.get("semantic_dropout"),
        )
    if config["method"] == "sbert_dual_cl":
        return DualEncoder(
            config["structural_dim"],
            config["semantic_dim"],
            settings["hidden"],
            settings["out_dim"],
            settings["dropout"],
        )
    raise ValueError(f"unknown method {config['method']!r}; choose one of {TRAINED}")


def train_fold(
    method: str,
    fold: int,
    data: AlignmentData,
    profile: Profile,
    device: str | None = None,
    log: Log | None = None,
) -> TrainedModel:
    log = log or (lambda _message: None)
    if method not in TRAINED:
        raise ValueError(f"unknown method {method!r}; choose one of {TRAINED}")
    device = device or default_device()
    if profile.torch_threads > 0:
        torch.set_num_threads(profile.torch_threads)
    split, train_rows, validation_rows = split_rows(
        data.qids, data.folds, fold, profile.validation_fraction, profile.selection_fraction
    )
    index = {q: i for i, q in enumerate(data.qids)}
    split_test_rows = np.array([index[q] for q in split.test], dtype=np.int64)
    settings = profile.settings(method)
    seed = profile.seed * 1000 + fold
    torch.manual_seed(seed)
    config: dict[str, Any] = {
        "method": method,
        "fold": fold,
        "profile": profile.name,
        "settings": vars(settings),
        "seed": seed,
        "semantic_dim": int(data.semantic.shape[1]),
        "structural_dim": int(data.opt_text.shape[1]),
        "split_sizes": {
            "train": len(split.train),
            "validation": len(split.validation),
            "selection": len(split.selection),
            "test": len(split.test),
        },
        "validation_fraction": profile.validation_fraction,
        "selection_fraction": profile.selection_fraction,
    }
    semantic = MatrixInputs(torch.from_numpy(data.semantic.copy()).to(device))
    if method == "graph_text_cl":
        vocabulary = TokenVocabulary.build(
            data.graphs.take(pa.array(train_rows)).column("node_tokens").to_pylist()
        )
        config["vocabulary"] = list(vocabulary.tokens)
        config["unseen_test_tokens"] = unseen_tokens(data.graphs, split_test_rows, vocabulary)
        token_texts = None
        if settings.token_text:
            if data.token_texts is None:
                raise ValueError("the profile uses token texts: pass opt_token_embeddings")
            token_texts = data.token_texts
            config["token_text_dim"] = int(token_texts.vectors.shape[1])
        formula_vectors = None
        if settings.formula_text:
            formula_vectors = data.opt_text
            config["formula_text_dim"] = int(data.opt_text.shape[1])
        structural = GraphInputs(data.graphs, vocabulary, device, token_texts, formula_vectors)
    else:
        structural = MatrixInputs(torch.from_numpy(data.opt_text.copy()).to(device))
    log(
        f"{method} fold {fold}: {len(train_rows)} train, {len(validation_rows)} validation, "
        f"{len(split.test)} test formulae; {profile.name} profile on {device}"
        + (f", {settings.runs} runs" if settings.runs > 1 else "")
    )
    started = time.perf_counter()
    trained: list[torch.nn.Module] = []
    runs: list[dict[str, Any]] = []
    history: list[dict[str, float]] = []
    run_settings = TrainSettings(
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        weight_decay=settings.weight_decay,
        intra_weight=settings.intra_weight,
        patience=settings.patience,
        seed=seed,
    )
    with deterministic(device) as determinism:
        for run in range(settings.runs):
            run_seed = seed + RUN_SEED_STRIDE * run
            torch.manual_seed(run_seed)
            module = build_run(config).to(device)
            run_started = time.perf_counter()
            result = train(
                module,
                structural,
                semantic,
                train_rows,
                validation_rows,
                dataclasses.replace(run_settings, seed=run_seed),
                log,
            )
            trained.append(module)
            history += [{"run": run, **entry} for entry in result.history]
            runs.append(
                {
                    "seed": run_seed,
                    "best_epoch": result.best_epoch,
                    "best_validation_mrr": result.best_validation_mrr,
                    "epochs_run": len(result.history),
                    "stopped_early": result.stopped_early,
                    "train_seconds": round(time.perf_counter() - run_started, 2),
                }
            )
    if not determinism.deterministic:
        log(f"not deterministic on {device}: {'; '.join(determinism.warnings)[:500]}")
    model = trained[0] if len(trained) == 1 else RunAverage(trained)
    validation = retrieval_quality(*encode(model, structural, semantic, validation_rows))
    roles = split.roles()
    all_rows = np.arange(len(data.qids))
    z_struct, z_sem = encode(model, structural, semantic, all_rows)
    config |= {
        "runs": runs,
        # the model as a whole: its validation MRR, the latest best epoch of any run, every
        # epoch trained
        "best_epoch": max(r["best_epoch"] for r in runs),
        "best_validation_mrr": validation["mrr"],
        "validation": validation,
        "epochs_run": sum(r["epochs_run"] for r in runs),
        "stopped_early": all(r["stopped_early"] for r in runs),
        "train_seconds": round(time.perf_counter() - started, 2),
        "device": device,
        "deterministic": determinism.deterministic,
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    return TrainedModel(
        method=method,
        fold=fold,
        config=config,
        state={k: v.detach().cpu() for k, v in model.state_dict().items()},
        history=history,
        embeddings=embeddings_table(data.qids, [roles[q] for q in data.qids], z_struct, z_sem),
    )
