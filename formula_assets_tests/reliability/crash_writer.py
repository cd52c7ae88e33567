"""A child process for crash tests: writes data-lake files in a loop until it is killed."""

import sys

import numpy as np
import pyarrow as pa
import torch
from upath import UPath

from formula_assets.core import lake
from formula_assets.training.artifacts import TrainedModel, save_model


def table(value: float, rows: int) -> pa.Table:
    return pa.table({"value": np.full(rows, value)})


def model(value: float, size: int) -> TrainedModel:
    return TrainedModel("sbert_dual_cl", 1, {"value": value}, {"w": torch.full((size,), value)})


def main(kind: str, target: str, value: float, rows: int, times: int) -> None:
    path = UPath(target)
    for _ in range(times):
        if kind == "parquet":
            lake.write_parquet_atomic(table(value, rows), path)
        else:
            save_model(model(value, rows), path)
        print("wrote", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
