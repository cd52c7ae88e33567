"""Training that gives the same weights every time, where the hardware allows it.

On the CPU the models' operations are deterministic: with fixed seeds and one torch thread
per process, a rebuild reproduces every weight bit for bit (the tests check it), so a model's
data version is a hash of its weights. On CUDA, scatter-based message passing and some cuBLAS
paths may sum in a varying order; training there runs with
`torch.use_deterministic_algorithms(True)` (cuDNN deterministic, no autotuning, a fixed cuBLAS
workspace). Where torch has no deterministic kernel for an operation it warns instead of
failing; such a run is recorded as not deterministic, and its data version then names its
recipe (code version, inputs, settings) instead of its bits, so an identical rebuild still
stops the cascade.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import torch

# cuBLAS reads this when it initialises: set before any CUDA work of the process.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

_MARKER = "deterministic"


@dataclass
class Determinism:
    deterministic: bool = True
    warnings: tuple[str, ...] = ()


@contextlib.contextmanager
def deterministic(device: str) -> Iterator[Determinism]:
    """Run the block with deterministic kernels on CUDA; report whether it stayed so."""
    outcome = Determinism()
    if not str(device).startswith("cuda"):
        yield outcome
        return
    previous = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield outcome
        found = [str(w.message) for w in caught if _MARKER in str(w.message)]
        for other in caught:
            if _MARKER not in str(other.message):
                warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
        outcome.deterministic = not found
        outcome.warnings = tuple(dict.fromkeys(found))
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = previous[2:]
