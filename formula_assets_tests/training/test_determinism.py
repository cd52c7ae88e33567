"""Deterministic training: what is switched on for CUDA, what is recorded, what is restored.

No GPU is needed: the CUDA branch only sets torch's global switches and watches warnings.
"""

import warnings

import pytest
import torch

from formula_assets.training.determinism import deterministic


def test_the_cpu_is_left_alone_and_deterministic() -> None:
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic("cpu") as outcome:
        assert torch.are_deterministic_algorithms_enabled() == before
    assert outcome.deterministic and outcome.warnings == ()


def test_cuda_switches_deterministic_kernels_on_and_restores_them() -> None:
    before = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark)
    with deterministic("cuda") as outcome:
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert outcome.deterministic
    assert (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark) == before


def test_an_operation_without_a_deterministic_kernel_is_recorded() -> None:
    with pytest.warns(UserWarning, match="unrelated"), deterministic("cuda:0") as outcome:
        warnings.warn(
            "scatter_add_cuda_kernel does not have a deterministic implementation", stacklevel=2
        )
        warnings.warn("unrelated", stacklevel=2)  # passed on, not swallowed
    assert not outcome.deterministic
    assert outcome.warnings == (
        "scatter_add_cuda_kernel does not have a deterministic implementation",
    )
    assert not torch.are_deterministic_algorithms_enabled()
