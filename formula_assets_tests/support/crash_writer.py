"""A child process for crash tests: writes data-lake files in a loop, and can die at a chosen
step of a write.

Steps (`--kill-at K` kills the process with SIGKILL at the K-th, counting from 0): a
temporary file is named, its data is complete but not yet synced, just before and just after
the rename over the final path; for a model save also before each of its files is written and
before old versions are pruned. `--count` prints how many steps one write takes.
"""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any

import numpy as np
import pyarrow as pa
from upath import UPath

from formula_assets.core import lake


def table(value: float, rows: int) -> pa.Table:
    return pa.table({"value": np.full(rows, value)})


def model(value: float, size: int) -> Any:
    import torch

    from formula_assets.training.artifacts import TrainedModel
    from formula_assets_tests.training.descriptions import described

    history = [{"epoch": 1.0, "value": value}]
    embeddings = pa.table({"qid": ["Q1"], "value": [value]})
    return TrainedModel(
        described(value=value), {"w": torch.full((size,), value)}, history, embeddings
    )


class Steps:
    """Counts the steps of a write and kills this process at one of them."""

    def __init__(self, kill_at: int) -> None:
        self.kill_at = kill_at
        self.count = 0

    def step(self, name: str) -> None:
        if self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        self.count += 1

    def around(self, owner: Any, attribute: str, before: str, after: str | None = None) -> None:
        original = getattr(owner, attribute)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.step(before)
            result = original(*args, **kwargs)
            if after:
                self.step(after)
            return result

        setattr(owner, attribute, wrapped)


def install(steps: Steps, kind: str) -> None:
    steps.around(lake, "temporary_sibling", "temporary file named")
    steps.around(lake.os, "fsync", "data written, not synced")
    steps.around(lake.os, "replace", "before the rename", "after the rename")
    if kind == "model":
        from formula_assets.training import artifacts

        steps.around(artifacts.lake, "write_bytes_atomic", "before a model file")
        steps.around(artifacts.lake, "write_parquet_atomic", "before the embeddings")
        steps.around(artifacts, "_prune", "before pruning")


def write(kind: str, target: str, value: float, rows: int, times: int, kill_at: int = -1) -> int:
    """Write `times` times, dying at step `kill_at` if it comes; the steps taken."""
    steps = Steps(kill_at)
    install(steps, kind)
    path = UPath(target)
    for _ in range(times):
        if kind == "parquet":
            lake.write_parquet_atomic(table(value, rows), path)
        else:
            from formula_assets.training.artifacts import save_model

            save_model(model(value, rows), path)
        print("wrote", flush=True)
    return steps.count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["parquet", "model"])
    parser.add_argument("target")
    parser.add_argument("value", type=float)
    parser.add_argument("rows", type=int)
    parser.add_argument("times", type=int)
    parser.add_argument("--kill-at", type=int, default=-1)
    parser.add_argument("--count", action="store_true")
    args = parser.parse_args()
    count = write(args.kind, args.target, args.value, args.rows, args.times, args.kill_at)
    if args.count:
        print(f"steps {count}", flush=True)


if __name__ == "__main__":
    main()
