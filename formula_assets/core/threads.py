"""One thread for the computations whose floats are stored and hashed into a data version.

Sums split over several threads round differently in the last bits, so the same inputs would
get another data version in a process with another thread count: a Celery worker or a
refresh worker (one thread each) against the refresh's own process (every core).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS (through threadpoolctl) and, once imported, torch on one thread for the block;
    the counts before are restored after it. (torch keeps its own count: threadpoolctl's
    OpenMP limit does not always reach it.)"""
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")  # not imported: none of it runs in the block
    before = torch.get_num_threads() if torch is not None else 0
    with threadpool_limits(limits=1):
        if torch is not None:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(before)
