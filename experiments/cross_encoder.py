"""What a cross-encoder re-ranker would cost here: seconds per query–candidate pair, measured,
and a build's cost projected from the lake's split sizes.

A cross-encoder reads each (annotation texts, linearised OPT) pair through the whole
transformer together, so every pair is a forward pass (and, in training, a backward one);
the bi-encoders encode each text once. The benchmark times all-MiniLM-L6-v2 with a one-logit
head (the packaged folder, `transformers`, offline) on random real pairs of the data lake
(`make run` first), padded per batch as training and scoring would pad them, then multiplies:
an epoch of one fold trains each training formula in both directions against itself and
`--negatives` hard negatives (a listwise loss); scoring re-ranks the ensemble's `--top`
candidates of every validation (early stopping), selection (the mixing weight) and test
query, both directions. Nothing is trained to convergence: this measures cost, not quality.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import numpy as np

from benchmarks.common import print_table, write_result
from benchmarks.training import lake_models
from formula_assets.core.protocol import FOLDS


def _pairs(
    rng: np.random.Generator, semantic: list[str], syntactic: list[str], n: int
) -> tuple[list[str], list[str]]:
    return (
        [semantic[i] for i in rng.choice(len(semantic), n)],
        [syntactic[j] for j in rng.choice(len(syntactic), n)],
    )


def per_pair_seconds(
    semantic: list[str], syntactic: list[str], max_length: int, batches: int
) -> dict[str, float]:
    """Median seconds per pair of a training step (batches of 32) and of scoring (64)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from formula_assets.semantics.packaged import packaged_minilm

    folder = packaged_minilm()
    if folder is None:
        raise SystemExit("the packaged all-MiniLM-L6-v2 is not installed")
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1)
    rng = np.random.default_rng(0)

    def encoded(size: int):
        first, second = _pairs(rng, semantic, syntactic, size)
        return tokenizer(
            first,
            second,
            truncation="longest_first",
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )

    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-5)
    model.train()
    train = []
    for _ in range(batches + 1):  # the first is a warm-up
        batch = encoded(32)
        started = time.perf_counter()
        loss = model(**batch).logits.square().mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        train.append((time.perf_counter() - started) / 32)
    model.eval()
    score = []
    with torch.no_grad():
        for _ in range(batches + 1):
            batch = encoded(64)
            started = time.perf_counter()
            model(**batch)
            score.append((time.perf_counter() - started) / 64)
    return {"train": float(np.median(train[1:])), "score": float(np.median(score[1:]))}


def split_sizes() -> dict[str, float]:
    """Formulae per split, the mean over the lake's folds (the fine-tuned encoder's models)."""
    counts: Counter[str] = Counter()
    for model in lake_models(["sbert_finetuned_cl"]).values():
        if model.embeddings is None:
            raise SystemExit("the lake's models store no embeddings: rebuild with `make run`")
        counts.update(model.embeddings.column("split").to_pylist())
    return {split: n / len(FOLDS) for split, n in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--negatives", type=int, default=7)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from upath import UPath

    from formula_assets.core import lake
    from formula_assets.core.settings import Settings
    from formula_assets.semantics.texts import annotation_text

    torch.set_num_threads(args.threads)
    root = UPath(Settings.from_environment().data_lake)
    try:
        texts = lake.read_parquet(root / "concept_annotations.parquet", ["texts"])
        graphs = lake.read_parquet(root / "opt_graphs.parquet", ["linearised_opt"])
        sizes = split_sizes()
    except FileNotFoundError as exc:  # a lake without the tables or models it reads
        raise SystemExit(f"experiments.cross_encoder: {exc}; run `make run` on that lake") from None
    semantic = [annotation_text(t) for t in texts.column("texts").to_pylist()]
    syntactic = graphs.column("linearised_opt").to_pylist()

    seconds = per_pair_seconds(semantic, syntactic, args.max_length, args.batches)
    train_pairs = sizes.get("train", 0) * 2 * (1 + args.negatives) * args.epochs
    # validation re-ranked after each epoch (early stopping), selection and test once
    ranked = (
        sizes.get("validation", 0) * args.epochs + sizes.get("selection", 0) + sizes.get("test", 0)
    )
    score_pairs = ranked * 2 * args.top
    fold_s = train_pairs * seconds["train"] + score_pairs * seconds["score"]
    result = {
        "args": vars(args),
        "per_pair_ms": {k: round(v * 1000, 1) for k, v in seconds.items()},
        "split_sizes": sizes,
        "fold_minutes": {
            "train": round(train_pairs * seconds["train"] / 60, 1),
            "score": round(score_pairs * seconds["score"] / 60, 1),
        },
        "build_minutes": round(fold_s * len(FOLDS) / 60, 1),
    }
    print_table(
        f"cross-encoder cost, max_length {args.max_length}, {args.threads} threads",
        ["train ms/pair", "score ms/pair", "train min/fold", "score min/fold", "build min"],
        [
            [
                result["per_pair_ms"]["train"],
                result["per_pair_ms"]["score"],
                result["fold_minutes"]["train"],
                result["fold_minutes"]["score"],
                result["build_minutes"],
            ]
        ],
    )
    write_result("cross_encoder", result)


if __name__ == "__main__":
    main()
