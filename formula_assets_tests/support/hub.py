"""A small fake Hugging Face hub: a real HTTP server on 127.0.0.1 serving model folders the
way huggingface.co serves repositories, so the real client (huggingface_hub, as
sentence-transformers calls it) downloads from it into a real cache.

It answers what that client asks: `HEAD /` (the project's reachability probe), a model's
info and file tree (`/api/models/<repo>[/revision/<rev>]`, `/api/models/<repo>/tree/<rev>`),
and a file's metadata and bytes (`HEAD`/`GET /<repo>/resolve/<rev>/<path>`, with the commit,
ETag and size headers the client reads). A repository it does not hold, or a file a
repository lacks, is a 404 with the error code the hub sends. Every request is recorded.

`point_client` points huggingface_hub at a server and at a cache folder, as HF_ENDPOINT,
HF_HUB_CACHE and an unset HF_HUB_OFFLINE do when they are set before it is imported.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import pytest

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # every repository's one commit


class FakeHub:
    """Serves `repos` (hub id → model folder) until closed; `requests` lists (method, path)."""

    def __init__(self, repos: Mapping[str, Path]) -> None:
        self.repos = dict(repos)
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                hub._answer(self, body=False)

            def do_GET(self) -> None:
                hub._answer(self, body=True)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeHub:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- answers ----------------------------------------------------------------------------

    def _answer(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        path = urlsplit(handler.path).path
        self.requests.append((handler.command, handler.path))
        parts = [p for p in path.split("/") if p]
        if not parts:
            return self._send(handler, 200, b"", body)
        if parts[0] == "api" and len(parts) >= 4 and parts[1] == "models":
            return self._api(handler, parts[2:], body)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._file(handler, "/".join(parts[:2]), "/".join(parts[4:]), body)
        return self._send(handler, 404, b"", body)

    def _api(self, handler: BaseHTTPRequestHandler, parts: list[str], body: bool) -> None:
        repo = "/".join(parts[:2])
        folder = self.repos.get(repo)
        if folder is None:
            return self._send(handler, 404, b"", body, {"X-Error-Code": "RepoNotFound"})
        if len(parts) > 3 and parts[2] == "tree":
            recursive = "recursive=true" in urlsplit(handler.path).query
            return self._tree(handler, folder, "/".join(parts[4:]), recursive, body)
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        siblings = [{"rfilename": str(f.relative_to(folder))} for f in files]
        info = {"id": repo, "modelId": repo, "sha": COMMIT, "private": False,
                "siblings": siblings}  # fmt: skip
        return self._json(handler, info, body)

    def _tree(
        self, handler: BaseHTTPRequestHandler, folder: Path, under: str, recursive: bool, body: bool
    ) -> None:
        """The entries of one folder of the repository (its root when `under` is empty), and
        of its subfolders when `recursive`."""
        root = folder / under
        if ".." in Path(under).parts or not root.is_dir():
            return self._send(handler, 404, b"", body, {"X-Error-Code": "EntryNotFound"})
        entries = []
        for path in sorted(root.rglob("*") if recursive else root.iterdir()):
            entry = {"path": str(path.relative_to(folder)), "oid": COMMIT}
            if path.is_dir():
                entries.append({"type": "directory", **entry})
            else:
                entries.append({"type": "file", "size": path.stat().st_size, **entry})
        return self._json(handler, entries, body)

    def _file(self, handler: BaseHTTPRequestHandler, repo: str, name: str, body: bool) -> None:
        folder = self.repos.get(repo)
        if folder is None:
            return self._send(handler, 404, b"", body, {"X-Error-Code": "RepoNotFound"})
        path = folder / name
        if ".." in Path(name).parts or not path.is_file():
            return self._send(handler, 404, b"", body, {"X-Error-Code": "EntryNotFound"})
        data = path.read_bytes()
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha256(data).hexdigest()}"'}
        return self._send(handler, 200, data, body, headers)

    def _json(self, handler: BaseHTTPRequestHandler, value: object, body: bool) -> None:
        headers = {"Content-Type": "application/json"}
        return self._send(handler, 200, json.dumps(value).encode(), body, headers)

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        data: bytes,
        body: bool,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if body:
            handler.wfile.write(data)


def point_client(monkeypatch: pytest.MonkeyPatch, endpoint: str, cache: Path) -> None:
    """huggingface_hub downloading from `endpoint` into `cache`, not offline: the values it
    reads from HF_ENDPOINT, HF_HUB_CACHE and HF_HUB_OFFLINE when imported (this process
    imported it long before, with HF_HUB_OFFLINE=1): in its constants, in the client its
    module-level functions share (`resolve_revision`, `model_info`, …), and in the client
    transformers keeps once made (made again, here, against `endpoint`)."""
    from huggingface_hub import constants, hf_api
    from transformers.utils import hub as transformers_hub

    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(hf_api.api, "endpoint", endpoint)
    monkeypatch.setattr(transformers_hub, "_hf_api", None)
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
