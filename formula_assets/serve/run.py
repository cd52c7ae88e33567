"""`formula-assets serve`: the service on uvicorn, over the configured data lake.

It binds 127.0.0.1 unless told otherwise. Like Dagster's own web server it has no
authentication: anyone who can reach the port can search and read the audit (nothing can be
written through it), so put it behind an authenticating proxy before exposing it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from upath import UPath

from formula_assets.core.settings import Settings
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
        return Snapshot(version, time.time(), Loaded.load(root, **options))

    return Published(load, lambda: fingerprint(root), poll_s)


POLL_ENV = "FORMULA_ASSETS_SERVE_POLL"  # how the serving command tells its worker processes


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
    poll = float(os.environ.get(POLL_ENV, "2.0"))
    return create_app(published(Settings.from_environment(), poll))


def serve(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, poll_s: float = 2.0, workers: int = 1
) -> None:
    """Serve until interrupted; `workers` processes each hold one loaded version (Python
    answers one request at a time per process: a second one uses the second core)."""
    import uvicorn

    os.environ[POLL_ENV] = str(poll_s)
    uvicorn.run(
        "formula_assets.serve.run:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,
    )
