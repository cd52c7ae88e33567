"""`formula-assets serve`: the service on uvicorn, over the configured data lake.

It binds 127.0.0.1 unless told otherwise. Like Dagster's own web server it has no
authentication: anyone who can reach the port can search and read the audit (nothing can be
written through it), so put it behind an authenticating proxy before exposing it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from upath import UPath

from formula_assets.core.settings import SERVE_POLL_ENV, Settings
from formula_assets.serve.content import Loaded
from formula_assets.serve.published import Published, Snapshot, fingerprint
from formula_assets.syntax.opt import parse_options

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def published(settings: Settings, poll_s: float = 2.0) -> Published:
    """The published tables of the settings' data lake, loaded now and watched."""
    root = UPath(settings.data_lake)
    options: dict[str, Any] = {
        "options": parse_options(settings.styled_letters),
        "model_dir": settings.model_dir,
        "offline": settings.hf_hub_offline,
    }

    def load(version: str) -> Snapshot:
        with one_load_at_a_time(str(root)):
            return Snapshot(version, time.time(), Loaded.load(root, **options))

    return Published(load, lambda: fingerprint(root), poll_s)


@contextmanager
def one_load_at_a_time(root: str) -> Iterator[None]:
    """Held while a worker process loads a version: loading takes several times the memory it
    keeps (over a large lake, gigabytes), so the workers of one lake take turns."""
    name = hashlib.sha256(root.encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"formula-assets-serve-{name}.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def app_from_environment():
    """The application of one worker process: the settings and the watch interval its
    command passed down through the environment."""
    import torch
    from threadpoolctl import threadpool_limits

    from formula_assets.serve.app import create_app

    # requests and worker processes run side by side: one thread each keeps them apart (a
    # BLAS or OpenMP pool of its own per request spins against the other's)
    torch.set_num_threads(1)
    threadpool_limits(1)
    settings = Settings.from_environment()
    return create_app(published(settings, settings.serve_poll))


def serve(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, poll_s: float = 2.0, workers: int = 1
) -> None:
    """Serve until interrupted; `workers` processes each hold one loaded version (Python
    answers one request at a time per process: a second one uses the second core)."""
    import uvicorn

    os.environ[SERVE_POLL_ENV] = str(poll_s)  # what the worker processes read
    uvicorn.run(
        "formula_assets.serve.run:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,
    )
