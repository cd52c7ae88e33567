"""`formula-assets serve`: the service on uvicorn, over the configured data lake.

It binds 127.0.0.1 unless told otherwise. Like Dagster's own web server it has no
authentication: anyone who can reach the port can search and read the audit (nothing can be
written through it), so put it behind an authenticating proxy before exposing it.
"""

from __future__ import annotations

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


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, poll_s: float = 2.0) -> None:
    import torch
    import uvicorn

    from formula_assets.serve.app import create_app

    torch.set_num_threads(1)  # requests run side by side; one thread each keeps them apart
    app = create_app(published(Settings.from_environment(), poll_s))
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
