"""The SPARQL client's HTTP layer: waiting stays bounded, and redirects keep the query."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from formula_assets.ingest.sparql import SparqlConfig, SparqlError, sparql_records
from formula_assets_tests.support.sparql_server import FakeWdqs, is_list_query, sparql_result

AGENT = "formula_assets-tests/1.0 (https://example.org; tests@example.org)"


@pytest.fixture
def trickling_endpoint() -> Iterator[str]:
    """An endpoint that answers at once but sends a valid, empty result one byte per 50 ms.

    Each byte arrives well within any socket timeout, so only a limit on the whole request
    stops a client from waiting the full ~3 s (or, for a larger answer, indefinitely).
    """
    body = json.dumps(sparql_result(["item"], [])).encode()
    stop = threading.Event()

    class Trickle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client hung up: stop sending
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    if stop.wait(0.05):
                        return

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host}:{port}/sparql"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_trickling_answer_is_abandoned_at_the_timeout(trickling_endpoint: str) -> None:
    config = SparqlConfig(trickling_endpoint, AGENT, timeout_s=0.3, max_retries=1)
    sleeps: list[float] = []
    started = time.monotonic()

    with pytest.raises(SparqlError) as error:
        sparql_records(config, sleep=sleeps.append)

    elapsed = time.monotonic() - started
    message = str(error.value)
    assert trickling_endpoint in message
    assert "after 2 attempt(s)" in message
    assert "within 0.3 s (timeout)" in message
    assert sleeps == [1.0]
    # Two attempts, each cut off at its deadline (plus at most one 50 ms byte), not ~3 s each.
    assert elapsed < 1.5


def test_moved_endpoint_is_followed_with_the_same_post(sparql_server: FakeWdqs) -> None:
    moved = sparql_server.endpoint + "?moved"
    sparql_server.fail(308, {"Location": moved}, when=is_list_query)
    config = SparqlConfig(sparql_server.endpoint, AGENT, timeout_s=5.0)

    assert len(sparql_records(config, sleep=lambda _s: None)) == 5

    first, second = sparql_server.list_requests()
    assert (first.path, second.path) == ("/sparql", "/sparql?moved")
    assert second.method == "POST" and second.query == first.query
    assert second.user_agent == AGENT
