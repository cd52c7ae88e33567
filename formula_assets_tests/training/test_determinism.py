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


def test_cublas_gets_a_fixed_workspace_before_any_cuda_work() -> None:
    import os

    assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") in (":4096:8", ":16:8")


def test_the_previous_switches_are_restored_exactly() -> None:
    """Whatever was on before (here: deterministic algorithms that fail rather than warn,
    cuDNN deterministic) is what is on after."""
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    try:
        torch.use_deterministic_algorithms(True, warn_only=False)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, True
        with deterministic("cuda"):
            assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()
        assert torch.backends.cudnn.deterministic and torch.backends.cudnn.benchmark
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = saved[2:]


def test_nondeterminism_is_recorded_whatever_the_callers_warning_filters() -> None:
    """torch warns once per call site; a caller that ignores warnings, or a second fold in the
    same process, must still have its nondeterministic kernel recorded."""
    message = "index_add_cuda_ does not have a deterministic implementation"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            with deterministic("cuda") as outcome:
                warnings.warn(message, stacklevel=1)
            assert not outcome.deterministic and outcome.warnings == (message,)
