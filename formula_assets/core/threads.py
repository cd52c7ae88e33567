"""One thread for the computations whose floats are stored and hashed into a data version.

Sums split over several threads round differently in the last bits, so the same inputs would
get another data version in a process with another thread count: a Celery worker or a
refresh worker (one thread each) against the refresh's own process (every core).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS (through threadpoolctl) and torch on one thread for the block; the counts before
    are restored after it. (torch keeps its own count: threadpoolctl's OpenMP limit does not
    always reach it.)"""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    with threadpool_limits(limits=1):
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)
