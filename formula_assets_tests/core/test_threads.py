"""One thread inside the block for BLAS and for torch (OpenMP), the counts before restored after
it."""

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

from formula_assets.core.threads import one_thread


def blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_one_thread_inside_and_the_counts_restored_after() -> None:
    np.ones(2) @ np.ones(2)  # numpy's BLAS loaded
    torch.set_num_threads(2)
    before = blas_threads()
    with one_thread():
        assert blas_threads() == {1}
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    assert blas_threads() == before


def test_the_counts_are_restored_when_the_block_raises() -> None:
    torch.set_num_threads(2)
    with pytest.raises(RuntimeError, match="inside"), one_thread():
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 2


def test_torch_gets_one_thread_where_the_openmp_limit_does_not_reach_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch may carry its own OpenMP library, which threadpoolctl does not always find."""
    import contextlib

    import threadpoolctl

    monkeypatch.setattr(threadpoolctl, "threadpool_limits", lambda limits: contextlib.nullcontext())
    torch.set_num_threads(2)
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
