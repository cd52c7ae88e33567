"""The SPARQL client against a real local HTTP server: what is retried, how long it waits,
what an error says, and which answers are SPARQL JSON results. Waits go to an injected
`sleep`, so no test sleeps for a back-off."""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from formula_assets.core.settings import USER_AGENT_ENV
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.ingest.sparql import LIST_QUERY
from formula_assets.ingest.sparql_client import Row, SparqlConfig, SparqlError, sparql_client
from formula_assets_tests.support.sparql_server import (
    ENTITY,
    FakeWdqs,
    Reply,
    is_list_query,
    list_rows,
    sparql_result,
    uri,
)

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)  # a Thursday
AGENT = "formula_assets-tests/1.0 (https://example.org; tests@example.org)"
ITEMS = 5  # formula items of the default world


def config(server: FakeWdqs | str, **overrides: Any) -> SparqlConfig:
    endpoint = server if isinstance(server, str) else server.endpoint
    values: dict[str, Any] = {"endpoint": endpoint, "user_agent": AGENT, "timeout_s": 5.0}
    values.update(overrides)
    return SparqlConfig(**values)


def select(cfg: SparqlConfig, sleeps: list[float] | None = None) -> list[Row]:
    """The list query through the client, waits recorded in `sleeps`, the clock at NOW."""
    waits = sleeps if sleeps is not None else []
    with sparql_client(cfg, waits.append, lambda: NOW) as client:
        return client.select(LIST_QUERY, "listing", ["item"])


def error_of(cfg: SparqlConfig, sleeps: list[float] | None = None) -> str:
    with pytest.raises(SparqlError) as raised:
        select(cfg, sleeps)
    return str(raised.value)


# --- configuration ----------------------------------------------------------------------------


def test_the_defaults_are_the_resources_and_waits_are_capped_at_a_minute() -> None:
    """A config built by hand behaves as the Dagster resource's: WDQS's 60 s query limit per
    request, pages of 200, five retries; no wait is longer than a minute."""
    cfg = SparqlConfig("http://127.0.0.1:9/sparql", AGENT)
    fields = WikidataResource.model_fields

    assert (cfg.timeout_s, cfg.page_size, cfg.max_retries) == (
        fields["timeout_s"].default,
        fields["page_size"].default,
        fields["max_retries"].default,
    )
    assert cfg.timeout_s == 60.0 and cfg.max_backoff_s == 60.0


def test_an_hour_of_retry_after_waits_a_minute_by_default(sparql_server: FakeWdqs) -> None:
    sparql_server.fail(429, {"Retry-After": "3600"})
    sleeps: list[float] = []
    cfg = SparqlConfig(sparql_server.endpoint, AGENT)

    assert len(select(cfg, sleeps)) == ITEMS
    assert sleeps == [60.0]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"page_size": 0}, "page_size must be at least 1"),
        ({"max_retries": -1}, "max_retries must not be negative"),
        ({"timeout_s": 0.0}, "timeout_s must be positive"),
    ],
)
def test_impossible_settings_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config("http://127.0.0.1:9/sparql", **overrides)


def test_the_smallest_possible_settings_are_accepted(sparql_server: FakeWdqs) -> None:
    """One item per page, no retry at all (one attempt), a very short timeout."""
    cfg = config(sparql_server, page_size=1, max_retries=0, timeout_s=0.5)
    sparql_server.fail(503)
    sleeps: list[float] = []

    message = error_of(cfg, sleeps)

    assert "failed after 1 attempt(s)" in message and sleeps == []
    assert len(sparql_server.requests) == 1
    assert len(select(cfg)) == ITEMS


# --- failures that are not retried --------------------------------------------------------------


def test_a_redirect_loop_stops_after_five_redirects(sparql_server: FakeWdqs) -> None:
    sparql_server.fail(308, {"Location": sparql_server.endpoint}, times=99)
    sleeps: list[float] = []

    message = error_of(config(sparql_server), sleeps)

    assert message.endswith("(listing) failed: more than 5 redirects")
    assert len(sparql_server.requests) == 1 + 5  # the request and five redirects, once
    assert sleeps == []


@pytest.mark.parametrize("endpoint", ["127.0.0.1/sparql", "ftp://127.0.0.1/sparql"])
def test_a_malformed_endpoint_fails_at_once(endpoint: str) -> None:
    sleeps: list[float] = []

    message = error_of(config(endpoint), sleeps)

    assert f"SPARQL endpoint {endpoint} (listing) failed: invalid request: " in message
    assert sleeps == []


def test_a_300_is_an_http_error_not_an_answer(sparql_server: FakeWdqs) -> None:
    """Only 2xx carries a result; 300 Multiple Choices is not followed by requests either."""
    sparql_server.fail(300, body="pick one", times=99)
    sleeps: list[float] = []

    message = error_of(config(sparql_server), sleeps)

    assert message.endswith("failed: HTTP 300 Multiple Choices; the endpoint said: pick one")
    assert len(sparql_server.requests) == 1 and sleeps == []


def test_a_2xx_other_than_200_is_an_answer(sparql_server: FakeWdqs) -> None:
    body = json.dumps(sparql_result(["item"], list_rows(sparql_server.world))).encode()
    sparql_server.register(is_list_query, Reply(status=203, body=body))

    assert len(select(config(sparql_server))) == ITEMS


def test_a_gzip_answer_is_decompressed(sparql_server: FakeWdqs) -> None:
    """WDQS compresses its answers; the rows are those of the plain answer."""
    body = json.dumps(sparql_result(["item"], list_rows(sparql_server.world))).encode()
    gzipped = Reply(body=gzip.compress(body), headers={"Content-Encoding": "gzip"})
    sparql_server.register(is_list_query, gzipped)

    rows = select(config(sparql_server))

    assert sorted(r["item"].value for r in rows) == sorted(
        ENTITY + q for q in ("Q1000", "Q35875", "Q46276", "Q4721378", "Q98765432")
    )


def test_an_answer_that_cannot_be_decompressed_is_not_retried(sparql_server: FakeWdqs) -> None:
    broken = Reply(body=b"this is not gzip at all", headers={"Content-Encoding": "gzip"})
    sparql_server.register(is_list_query, broken)
    sleeps: list[float] = []

    message = error_of(config(sparql_server), sleeps)

    assert "(listing) failed: cannot decompress the answer: " in message
    assert len(sparql_server.requests) == 1 and sleeps == []


def test_a_403_says_how_to_set_the_user_agent(sparql_server: FakeWdqs) -> None:
    sparql_server.fail(403, body="Forbidden")
    message = error_of(config(sparql_server))

    assert message.endswith(
        "failed: HTTP 403 Forbidden (WDQS refuses clients without a descriptive User-Agent; "
        f"set {USER_AGENT_ENV} to one that includes your contact address); "
        "the endpoint said: Forbidden"
    )
    sparql_server.fail(404)
    assert error_of(config(sparql_server)).endswith("failed: HTTP 404 Not Found")


def test_a_status_without_a_standard_phrase_is_named_by_its_number(
    sparql_server: FakeWdqs,
) -> None:
    sparql_server.fail(599)

    assert error_of(config(sparql_server, max_retries=0)).endswith("last error: HTTP 599")


# --- what an error answer's text becomes in the message -------------------------------------------


def test_an_error_text_is_quoted_up_to_300_characters(sparql_server: FakeWdqs) -> None:
    said = "; the endpoint said: "
    sparql_server.fail(400, body="x" * 300)
    assert error_of(config(sparql_server)).endswith(said + "x" * 300)
    sparql_server.fail(400, body="x" * 301)
    assert error_of(config(sparql_server)).endswith(said + "x" * 300 + "…")
    sparql_server.fail(400, body="  bad \n\n query\t here ")
    assert error_of(config(sparql_server)).endswith(said + "bad query here")


def test_an_endless_error_page_is_read_only_as_far_as_needed(sparql_server: FakeWdqs) -> None:
    """A page that never ends is quoted from its start, at once, not read until the timeout."""
    endless = replace(Reply.error(400, "MalformedQueryException: bad"), endless=True)
    sparql_server.script(lambda _q, _r: endless)
    started = time.monotonic()

    message = error_of(config(sparql_server, timeout_s=3.0))

    assert time.monotonic() - started < 2.0
    quoted = ("MalformedQueryException: bad" + " filler" * 50)[:300] + "…"
    assert message.endswith("failed: HTTP 400 Bad Request; the endpoint said: " + quoted)


def test_an_error_page_arriving_in_pieces_is_quoted_whole(sparql_server: FakeWdqs) -> None:
    """Blank lines first, the reason after a pause: the message still gives the reason."""
    page = "\n" * 200 + "QueryTimeoutException: too slow"
    in_pieces = replace(Reply.error(400, page), stall_s=0.2)
    sparql_server.script(lambda _q, _r: in_pieces)

    message = error_of(config(sparql_server, timeout_s=3.0))

    assert message.endswith("; the endpoint said: QueryTimeoutException: too slow")


# --- failures that are retried --------------------------------------------------------------------


def test_a_stalled_answer_times_out_and_is_retried(sparql_server: FakeWdqs) -> None:
    """Headers and half the body, then silence for longer than the timeout."""
    sparql_server.stall(5.0, when=is_list_query)
    sleeps: list[float] = []

    assert len(select(config(sparql_server, timeout_s=0.3), sleeps)) == ITEMS
    assert sleeps == [1.0] and len(sparql_server.list_requests()) == 2

    sparql_server.stall(5.0, times=2, when=is_list_query)
    message = error_of(config(sparql_server, timeout_s=0.3, max_retries=1))
    assert message.endswith(
        "failed after 2 attempt(s); last error: answer stalled for 0.3 s (timeout)"
    )


def test_a_connection_closed_without_an_answer_is_retried(sparql_server: FakeWdqs) -> None:
    sparql_server.hang_up(when=is_list_query)
    sleeps: list[float] = []

    assert len(select(config(sparql_server), sleeps)) == ITEMS
    assert sleeps == [1.0] and len(sparql_server.list_requests()) == 2

    sparql_server.hang_up(times=2, when=is_list_query)
    message = error_of(config(sparql_server, max_retries=1))
    assert "failed after 2 attempt(s); last error: connection failed: " in message


def _retry_after(value: str, sparql_server: FakeWdqs) -> list[float]:
    sparql_server.fail(503, {"Retry-After": value})
    sleeps: list[float] = []
    assert len(select(config(sparql_server, max_backoff_s=10_000.0), sleeps)) == ITEMS
    return sleeps


def test_retry_after_dates_in_any_zone_count_from_now(sparql_server: FakeWdqs) -> None:
    """NOW + 7 s written in UTC, at +01:00, and with RFC 5322's "-0000" (no zone: UTC)."""
    in_utc = format_datetime(NOW + timedelta(seconds=7), usegmt=True)
    assert _retry_after(in_utc, sparql_server) == [7.0]
    assert _retry_after("Thu, 02 Jan 2025 04:04:12 +0100", sparql_server) == [7.0]
    assert _retry_after("Thu, 02 Jan 2025 03:04:12 -0000", sparql_server) == [7.0]


def test_a_retry_after_date_in_the_past_waits_nothing(sparql_server: FakeWdqs) -> None:
    assert _retry_after("Thu, 02 Jan 2025 03:00:00 GMT", sparql_server) == [0.0]


# --- answers that are not SPARQL JSON results -----------------------------------------------------


def test_a_result_cut_by_the_servers_own_timeout_suggests_smaller_pages(
    sparql_server: FakeWdqs,
) -> None:
    """WDQS streams a result, and when its 60 s run out it appends a Java stack trace."""
    cut = b'{"head":{"vars":["item"]},"results":{"bindings":[{"item":\n'
    trace = b"java.util.concurrent.TimeoutException\n\tat java.util.concurrent.FutureTask.get"
    sparql_server.script(lambda _q, _r: Reply(body=cut + trace))
    assert "(the server timed out mid-result; try a smaller page_size)" in error_of(
        config(sparql_server)
    )

    sparql_server.script(lambda _q, _r: Reply(body=cut))
    message = error_of(config(sparql_server))
    assert "truncated or invalid JSON" in message and "page_size" not in message


@pytest.mark.parametrize(
    "document",
    [
        {"head": {"vars": ["item"]}},
        {"results": {"bindings": []}},
        {"head": {"vars": "item"}, "results": {"bindings": []}},
        {"head": {"vars": ["item"]}, "results": {"bindings": {}}},
        [],
    ],
)
def test_half_a_sparql_result_is_not_one(sparql_server: FakeWdqs, document: Any) -> None:
    sparql_server.register(is_list_query, Reply.json(document))

    assert "did not answer with a SPARQL JSON result" in error_of(config(sparql_server))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("not an object", "sent a malformed row 2: not a JSON object"),
        ({"item": "a bare string"}, r"sent a malformed value for ?item in row 2"),
        ({"item": {"type": "uri"}}, r"sent a malformed value for ?item in row 2"),
        ({"item": {"value": ENTITY + "Q1"}}, r"sent a malformed value for ?item in row 2"),
        ({"other": uri(ENTITY + "Q1")}, r"sent row 2 without a value for ?item"),
    ],
)
def test_a_malformed_row_is_named_by_its_number(
    sparql_server: FakeWdqs, bad: Any, message: str
) -> None:
    document = {
        "head": {"vars": ["item", "other"]},
        "results": {"bindings": [{"item": uri(ENTITY + "Q1")}, bad]},
    }
    sparql_server.register(is_list_query, Reply.json(document))

    assert message in error_of(config(sparql_server))
