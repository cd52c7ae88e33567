"""A SPARQL 1.1 client over HTTP: one POST per query, retries, deadlines, plain-word errors.

Every failure surfaces as a `SparqlError` that names the endpoint and what went wrong, so an
operator reading a failed run needs no knowledge of requests or urllib3. What the rows mean is
the caller's business (`ingest.sparql` maps them to Wikidata records).
"""

from __future__ import annotations

import email.utils
import http
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

import requests
import urllib3.exceptions

from formula_assets.core.settings import USER_AGENT_ENV
from formula_assets.ingest.records import utc

SPARQL_JSON = "application/sparql-results+json"
_CHUNK = 64 * 1024
_ERROR_BODY_LIMIT = 64 * 1024  # enough for the snippet an error message quotes
_MAX_REDIRECTS = 5  # a moved endpoint takes one or two; more is a loop


class SparqlError(RuntimeError):
    """A SPARQL pull failed; the message says which endpoint and why, in plain words."""


@dataclass(frozen=True)
class SparqlConfig:
    endpoint: str
    user_agent: str
    timeout_s: float = 60.0  # per HTTP request
    page_size: int = 200  # items per detail query
    max_retries: int = 5
    backoff_s: float = 1.0  # base of the exponential backoff
    max_backoff_s: float = 60.0

    def __post_init__(self) -> None:
        if self.page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {self.page_size}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must not be negative, got {self.max_retries}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")


class Term(NamedTuple):
    """One bound value of a SPARQL JSON result: its RDF term type and lexical value."""

    kind: str  # "uri", "literal", "bnode" (or "typed-literal" from old SPARQL 1.0 servers)
    value: str


Row = dict[str, Term]


@dataclass(frozen=True)
class _Failure:
    """What one attempt ran into, and whether another attempt may help."""

    reason: str
    retriable: bool
    retry_after: float | None = None


class _Overdue(Exception):
    """The answer was still arriving when the request's time was up."""


@dataclass
class SparqlClient:
    """One HTTP session per pull; retries live here so waits use the injected clock and sleep.

    urllib3's `Retry` is not used: it sleeps with `time.sleep`, dates Retry-After by
    `time.time`, waits nothing before the first retry, and never sees a connection that drops
    after the headers, mid-answer; the transport itself never retries (requests' default).
    """

    config: SparqlConfig
    session: requests.Session
    sleep: Callable[[float], None]
    now: Callable[[], datetime]

    def select(self, query: str, what: str, required: Sequence[str]) -> list[Row]:
        """Run one SELECT with retries and return its rows, checked against `required`."""
        body = self._fetch(query, what)
        return _parse_result(body, required, self.where(what))

    def where(self, what: str) -> str:
        return f"SPARQL endpoint {self.config.endpoint} ({what})"

    def _fetch(self, query: str, what: str) -> bytes:
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            outcome = self._attempt(query)
            if not isinstance(outcome, _Failure):
                return outcome
            if not outcome.retriable:
                raise SparqlError(f"{self.where(what)} failed: {outcome.reason}")
            if attempt + 1 == attempts:
                raise SparqlError(
                    f"{self.where(what)} failed after {attempts} attempt(s); "
                    f"last error: {outcome.reason}"
                )
            self.sleep(self._delay(attempt, outcome))
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, failure: _Failure) -> float:
        """The server's Retry-After when it sent one, else exponential backoff; both capped."""
        if failure.retry_after is not None:
            return min(failure.retry_after, self.config.max_backoff_s)
        return min(self.config.backoff_s * 2**attempt, self.config.max_backoff_s)

    def _attempt(self, query: str) -> bytes | _Failure:
        """One POST of the query; the body on a 2xx, else what went wrong, judged by type only."""
        timeout = self.config.timeout_s
        deadline = time.monotonic() + timeout
        try:
            response = self.session.post(
                self.config.endpoint,
                data={"query": query},  # form-encoded: long VALUES lists fit, unlike in a URL
                headers={"Accept": SPARQL_JSON},
                timeout=timeout,
                stream=True,  # read by `_read`, which enforces the deadline
            )
        except requests.Timeout:  # before ConnectionError: ConnectTimeout is both
            return _Failure(f"no response within {timeout:g} s (timeout)", True)
        except requests.ConnectionError as exc:
            return _connection_failure(exc)
        except requests.TooManyRedirects:
            return _Failure(f"more than {_MAX_REDIRECTS} redirects", False)
        except requests.RequestException as exc:  # a malformed or non-HTTP URL
            return _Failure(f"invalid request: {exc}", False)
        with response:
            status = response.status_code
            if not 200 <= status < 300:
                body = _read_quietly(response, deadline)
                return self._http_failure(status, response.headers, body)
            try:
                return _read(response, deadline)
            except _Overdue:
                return _Failure(f"answer not complete within {timeout:g} s (timeout)", True)
            except urllib3.exceptions.ReadTimeoutError:
                return _Failure(f"answer stalled for {timeout:g} s (timeout)", True)
            except urllib3.exceptions.ProtocolError as exc:
                return _Failure(f"connection dropped mid-answer: {exc}", True)
            except urllib3.exceptions.DecodeError as exc:
                return _Failure(f"cannot decompress the answer: {exc}", False)

    def _http_failure(self, status: int, headers: Mapping[str, str], body: str) -> _Failure:
        retriable = status == 429 or status >= 500
        reason = f"HTTP {status} {_phrase(status)}".rstrip()
        if status == 403:
            reason += " (WDQS refuses clients without a descriptive User-Agent; set "
            reason += f"{USER_AGENT_ENV} to one that includes your contact address)"
        if body:
            reason += f"; the endpoint said: {body}"
        retry_after = _retry_after(headers, self.now()) if retriable else None
        return _Failure(reason, retriable, retry_after)


@contextmanager
def sparql_client(
    config: SparqlConfig, sleep: Callable[[float], None], now: Callable[[], datetime]
) -> Iterator[SparqlClient]:
    """A client whose session (and its pooled connections) is closed when the pull ends."""
    with requests.Session() as session:
        session.headers["User-Agent"] = config.user_agent
        session.max_redirects = _MAX_REDIRECTS
        yield SparqlClient(config, session, sleep, now)


def _read(response: requests.Response, deadline: float, limit: int | None = None) -> bytes:
    """The (decompressed) body, or `_Overdue` once `deadline` passes.

    A socket timeout alone restarts with every packet, so a trickling answer could hold a run
    for ever; `read1` returns what each packet brings, letting the deadline be checked.
    """
    raw = response.raw
    chunks: list[bytes] = []
    size = 0
    while chunk := raw.read1(_CHUNK, decode_content=True):
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size >= limit:
            break
        if time.monotonic() > deadline:
            raise _Overdue
    return b"".join(chunks)


def _read_quietly(response: requests.Response, deadline: float) -> str:
    """The start of an error answer, for the message; the status matters more than the text."""
    try:
        body = _read(response, deadline, limit=_ERROR_BODY_LIMIT)
    except (_Overdue, urllib3.exceptions.HTTPError):
        return ""
    return _snippet(body.decode("utf-8", "replace"))


def _connection_failure(exc: requests.ConnectionError) -> _Failure:
    """requests wraps urllib3's error; its `reason` (e.g. refused) says it without the pool."""
    cause = exc.args[0] if exc.args else exc
    if isinstance(cause, urllib3.exceptions.MaxRetryError) and cause.reason is not None:
        return _Failure(f"cannot connect: {cause.reason}", True)
    return _Failure(f"connection failed: {cause}", True)


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds to wait per a Retry-After header: delay-seconds or an HTTP date (RFC 9110)."""
    value = (headers.get("Retry-After") or "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - utc(now)).total_seconds())


def _parse_result(body: bytes, required: Sequence[str], where: str) -> list[Row]:
    """Rows of a W3C SPARQL 1.1 JSON result; anything else is a SparqlError."""
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        hint = ""
        if b"TimeoutException" in body:
            hint = " (the server timed out mid-result; try a smaller page_size)"
        raise SparqlError(
            f"{where} sent a truncated or invalid JSON answer ({len(body):,} bytes, {exc}){hint}: "
            f"{_snippet(body[-200:].decode('utf-8', 'replace'), 200)}"
        ) from None
    head = document.get("head") if isinstance(document, dict) else None
    results = document.get("results") if isinstance(document, dict) else None
    variables = head.get("vars") if isinstance(head, dict) else None
    bindings = results.get("bindings") if isinstance(results, dict) else None
    if not isinstance(variables, list) or not isinstance(bindings, list):
        raise SparqlError(
            f"{where} did not answer with a SPARQL JSON result (head.vars and results.bindings)"
        )
    missing = [name for name in required if name not in variables]
    if missing:
        raise SparqlError(
            f"{where} answered without the required variable(s) "
            + ", ".join(f"?{name}" for name in missing)
            + f" (it sent {', '.join(f'?{v}' for v in variables) or 'none'})"
        )
    return [_parse_binding(b, i, required, where) for i, b in enumerate(bindings, start=1)]


def _parse_binding(binding: object, number: int, required: Sequence[str], where: str) -> Row:
    if not isinstance(binding, dict):
        raise SparqlError(f"{where} sent a malformed row {number}: not a JSON object")
    row: Row = {}
    for name, term in binding.items():
        if not (
            isinstance(term, dict)
            and isinstance(term.get("type"), str)
            and isinstance(term.get("value"), str)
        ):
            raise SparqlError(f"{where} sent a malformed value for ?{name} in row {number}")
        row[name] = Term(term["type"], term["value"])
    absent = [name for name in required if name not in row]
    if absent:
        raise SparqlError(f"{where} sent row {number} without a value for ?{absent[0]}")
    return row
