"""Live Wikidata formulae from a SPARQL endpoint (the Wikidata Query Service by default).

Two phases keep every request far below WDQS's 60 s query limit: one cheap query lists the
items that have a defining formula (P2534), then pages of `page_size` items fetch their
details through `VALUES`. Only QIDs validated by `is_qid` ever go into a query, written as
`wd:Q123`; no other text from a response is pasted into one.

Every failure surfaces as a `SparqlError` that names the endpoint and what went wrong, so an
operator reading a failed run needs no knowledge of requests or urllib3.
"""

from __future__ import annotations

import email.utils
import http
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import requests
import urllib3.exceptions

from formula_assets.core import settings
from formula_assets.core.hashing import bytes_hash
from formula_assets.ingest.records import (
    Concept,
    FormulaRecord,
    clean_text,
    is_qid,
    qid_from_uri,
    utc,
)
from formula_assets.ingest.snapshot import paper_folds

ENTITY_PREFIX = "http://www.wikidata.org/entity/"
MATHML_DATATYPE = "http://www.w3.org/1998/Math/MathML"
SPARQL_JSON = "application/sparql-results+json"
_CHUNK = 64 * 1024
_ERROR_BODY_LIMIT = 64 * 1024  # enough for the snippet an error message quotes
_MAX_REDIRECTS = 5  # a moved endpoint takes one or two; more is a loop

# Declared explicitly so the queries also run on Wikidata mirrors without WDQS's built-ins.
PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX wdt: <http://www.wikidata.org/prop/direct/>
PREFIX pq: <http://www.wikidata.org/prop/qualifier/>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX schema: <http://schema.org/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""

# Items only: properties and lexemes can carry statements too, but they are not formula items.
LIST_QUERY = (
    PREFIXES
    + """SELECT DISTINCT ?item WHERE {
  ?item wdt:P2534 ?formula .
  FILTER(STRSTARTS(STR(?item), "http://www.wikidata.org/entity/Q"))
}"""
)
LIST_VARIABLES = ("item",)

# The change probe: every entity the pull reads, with its modification time. Wikidata sets an
# entity's `schema:dateModified` on any edit of it, so the formula items' times cover their
# labels, descriptions, formulae, symbols (P7235 qualifiers) and sitelinks, and the concepts'
# times cover the concepts' labels and descriptions, which live on the concepts' own items.
# One query, one row per entity: a few thousand formula items and their concepts, the same
# joins as the list and detail queries, far below WDQS's 60 s limit. The client hashes the
# sorted rows, so an added, removed or relinked entity changes the fingerprint too, whatever
# the times say.
PROBE_QUERY = (
    PREFIXES
    + """SELECT DISTINCT ?entity ?modified ?role WHERE {
  {
    ?entity wdt:P2534 ?formula .
    BIND("formula" AS ?role)
  } UNION {
    ?item wdt:P2534 ?formula ; ?p ?statement .
    FILTER(STRSTARTS(STR(?item), "http://www.wikidata.org/entity/Q"))
    ?statement pq:P7235 ?symbol .
    ?claim wikibase:claim ?p ; wikibase:statementProperty ?ps .
    ?statement ?ps ?entity .
    BIND("concept" AS ?role)
  }
  FILTER(STRSTARTS(STR(?entity), "http://www.wikidata.org/entity/Q"))
  ?entity schema:dateModified ?modified .
}"""
)
PROBE_VARIABLES = ("entity", "modified", "role")
PROBE_ROLES = ("formula", "concept")

_DETAIL_TEMPLATE = (
    PREFIXES
    + """SELECT ?item ?itemLabel ?itemDescription ?formula ?enwiki
       ?statement ?concept ?conceptLabel ?conceptDescription ?symbol WHERE {
  VALUES ?item { %s }
  ?item wdt:P2534 ?formula .
  OPTIONAL { ?item rdfs:label ?itemLabel . FILTER(LANG(?itemLabel) = "en") }
  OPTIONAL { ?item schema:description ?itemDescription . FILTER(LANG(?itemDescription) = "en") }
  OPTIONAL { ?enwiki schema:about ?item ; schema:isPartOf <https://en.wikipedia.org/> . }
  OPTIONAL {
    ?item ?p ?statement .
    ?statement pq:P7235 ?symbol .
    ?claim wikibase:claim ?p ; wikibase:statementProperty ?ps .
    ?statement ?ps ?concept .
    OPTIONAL { ?concept rdfs:label ?conceptLabel . FILTER(LANG(?conceptLabel) = "en") }
    OPTIONAL {
      ?concept schema:description ?conceptDescription .
      FILTER(LANG(?conceptDescription) = "en")
    }
  }
}"""
)
DETAIL_VARIABLES = ("item", "formula")


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

    @classmethod
    def from_env(cls, **overrides: Any) -> SparqlConfig:
        """Endpoint and User-Agent from the environment (see `settings`), the rest as given."""
        values: dict[str, Any] = {
            "endpoint": settings.sparql_endpoint(),
            "user_agent": settings.user_agent(),
        }
        values.update(overrides)
        return cls(**values)


def detail_query(qids: Sequence[str]) -> str:
    """The detail query for one page; refuses anything but plain QIDs, so nothing is injected."""
    bad = [q for q in qids if not is_qid(q)]
    if bad:
        raise ValueError(f"not a QID, refusing to put it in a query: {bad[0][:80]!r}")
    if not qids:
        raise ValueError("a detail query needs at least one QID")
    return _DETAIL_TEMPLATE % " ".join(f"wd:{q}" for q in qids)


class _Term(NamedTuple):
    """One bound value of a SPARQL JSON result: its RDF term type and lexical value."""

    kind: str  # "uri", "literal", "bnode" (or "typed-literal" from old SPARQL 1.0 servers)
    value: str


_Row = dict[str, _Term]


@dataclass(frozen=True)
class _Failure:
    """What one attempt ran into, and whether another attempt may help."""

    reason: str
    retriable: bool
    retry_after: float | None = None


class _Overdue(Exception):
    """The answer was still arriving when the request's time was up."""


@dataclass
class _Client:
    """One HTTP session per pull; retries live here so waits use the injected clock and sleep.

    urllib3's `Retry` is not used: it sleeps with `time.sleep`, dates Retry-After by
    `time.time`, waits nothing before the first retry, and never sees a connection that drops
    after the headers, mid-answer; the transport itself never retries (requests' default).
    """

    config: SparqlConfig
    session: requests.Session
    sleep: Callable[[float], None]
    now: Callable[[], datetime]

    def select(self, query: str, what: str, required: Sequence[str]) -> list[_Row]:
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
            reason += f"{settings.USER_AGENT_ENV} to one that includes your contact address)"
        if body:
            reason += f"; the endpoint said: {body}"
        retry_after = _retry_after(headers, self.now()) if retriable else None
        return _Failure(reason, retriable, retry_after)


@contextmanager
def _client(
    config: SparqlConfig, sleep: Callable[[float], None], now: Callable[[], datetime]
) -> Iterator[_Client]:
    """A client whose session (and its pooled connections) is closed when the pull ends."""
    with requests.Session() as session:
        session.headers["User-Agent"] = config.user_agent
        session.max_redirects = _MAX_REDIRECTS
        yield _Client(config, session, sleep, now)


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


def _parse_result(body: bytes, required: Sequence[str], where: str) -> list[_Row]:
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


def _parse_binding(binding: object, number: int, required: Sequence[str], where: str) -> _Row:
    if not isinstance(binding, dict):
        raise SparqlError(f"{where} sent a malformed row {number}: not a JSON object")
    row: _Row = {}
    for name, term in binding.items():
        if not (
            isinstance(term, dict)
            and isinstance(term.get("type"), str)
            and isinstance(term.get("value"), str)
        ):
            raise SparqlError(f"{where} sent a malformed value for ?{name} in row {number}")
        row[name] = _Term(term["type"], term["value"])
    absent = [name for name in required if name not in row]
    if absent:
        raise SparqlError(f"{where} sent row {number} without a value for ?{absent[0]}")
    return row


def _item_qid(term: _Term, where: str) -> str:
    """The QID of an item IRI from a response; anything else is refused, never queried."""
    try:
        if term.kind != "uri":
            raise ValueError(f"a {term.kind}, not an IRI")
        return qid_from_uri(term.value)
    except ValueError as exc:
        raise SparqlError(f"{where} returned an item that is not a Wikidata QID: {exc}") from None


def _text(row: _Row, name: str) -> str | None:
    term = row.get(name)
    return None if term is None else clean_text(term.value)


def _first(values: set[str]) -> str | None:
    return min(values) if values else None


@dataclass
class _ConceptRows:
    labels: set[str] = field(default_factory=set)
    descriptions: set[str] = field(default_factory=set)


@dataclass
class _ItemRows:
    """Everything the rows of one item say, gathered before a record is built."""

    labels: set[str] = field(default_factory=set)
    descriptions: set[str] = field(default_factory=set)
    formulae: set[str] = field(default_factory=set)
    enwikis: set[str] = field(default_factory=set)
    # (statement, concept QID, symbol): one concept per statement and symbol.
    concepts: dict[tuple[str, str, str | None], _ConceptRows] = field(default_factory=dict)
    skipped_statements: set[str] = field(default_factory=set)

    def add(self, row: _Row) -> None:
        for target, name in (
            (self.labels, "itemLabel"),
            (self.descriptions, "itemDescription"),
            (self.formulae, "formula"),
            (self.enwikis, "enwiki"),
        ):
            if (value := _text(row, name)) is not None:
                target.add(value)
        concept = row.get("concept")
        if concept is None:
            return
        statement = _text(row, "statement") or ""
        try:
            if concept.kind != "uri":
                raise ValueError(concept.kind)
            qid = qid_from_uri(concept.value)
        except ValueError:  # unknown value (blank node), a property, a lexeme, a literal
            self.skipped_statements.add(statement or concept.value)
            return
        gathered = self.concepts.setdefault((statement, qid, _text(row, "symbol")), _ConceptRows())
        if (label := _text(row, "conceptLabel")) is not None:
            gathered.labels.add(label)
        if (description := _text(row, "conceptDescription")) is not None:
            gathered.descriptions.add(description)

    def record(self, qid: str, retrieved_at: datetime, folds: Mapping[str, int]) -> FormulaRecord:
        notes: list[str] = []
        formulae = sorted(self.formulae)
        if len(formulae) > 1:
            notes.append(
                f"{len(formulae)} distinct defining formulae (P2534); "
                "kept the first in sorted order"
            )
        if self.skipped_statements:
            notes.append(
                f"{len(self.skipped_statements)} statement(s) whose concept is not a Wikidata "
                "item (unknown value or another entity type) skipped"
            )
        concepts = [
            Concept(cqid, _first(c.labels), _first(c.descriptions), symbol)
            for (_, cqid, symbol), c in self.concepts.items()
        ]
        concepts.sort(key=lambda c: (int(c.qid[1:]), c.symbol_mathml or ""))
        return FormulaRecord(
            qid=qid,
            label=_first(self.labels),
            description=_first(self.descriptions),
            mathml=formulae[0] if formulae else None,
            concepts=concepts,
            source="sparql",
            enwiki=_first(self.enwikis),
            paper_fold=folds.get(qid),
            retrieved_at=retrieved_at,
            notes=notes,
        )


def _group(rows: Sequence[_Row], asked: set[str], where: str) -> dict[str, _ItemRows]:
    """Gather a page's rows per item; SPARQL multiplies rows, the sets collapse them again."""
    items: dict[str, _ItemRows] = {}
    for row in rows:
        qid = _item_qid(row["item"], where)
        if qid not in asked:
            raise SparqlError(f"{where} answered about {qid}, which the query did not ask for")
        items.setdefault(qid, _ItemRows()).add(row)
    return items


def _list_items(client: _Client) -> list[str]:
    what = "listing items with a defining formula (P2534)"
    rows = client.select(LIST_QUERY, what, LIST_VARIABLES)
    where = client.where(what)
    qids = {_item_qid(row["item"], where) for row in rows}
    return sorted(qids, key=lambda q: int(q[1:]))


def sparql_records(
    config: SparqlConfig,
    log: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] | None = None,
) -> list[FormulaRecord]:
    """Every Wikidata item with a defining formula, one record per item, sorted by QID.

    An empty list is a valid answer here; whether it is plausible is the caller's decision.
    """
    clock = now or (lambda: datetime.now(UTC))
    with _client(config, sleep, clock) as client:
        return _pull(client, config, utc(clock()), log)


def _pull(
    client: _Client, config: SparqlConfig, retrieved_at: datetime, log: Callable[[str], None] | None
) -> list[FormulaRecord]:
    """List, then fetch details page by page, so no single query nears WDQS's 60 s limit."""
    qids = _list_items(client)
    if log is not None:
        log(f"SPARQL: {len(qids):,} items have a defining formula (P2534)")
    pages = [qids[i : i + config.page_size] for i in range(0, len(qids), config.page_size)]
    folds = paper_folds()
    records: list[FormulaRecord] = []
    for number, page in enumerate(pages, start=1):
        what = f"detail page {number}/{len(pages)}"
        rows = client.select(detail_query(page), what, DETAIL_VARIABLES)
        items = _group(rows, set(page), client.where(what))
        records.extend(items[q].record(q, retrieved_at, folds) for q in page if q in items)
        if log is not None:
            gone = len(page) - len(items)
            lost = f" ({gone:,} lost their formula since listing)" if gone else ""
            log(f"SPARQL page {number}/{len(pages)}: {len(page):,} items, {len(rows):,} rows{lost}")
    return records


@dataclass(frozen=True)
class ProbeResult:
    """What the probe saw: counts, the latest modification, and a digest of every
    (role, entity, modification time) row, sorted, which changes whenever the pull's input does."""

    items: int  # formula items
    concepts: int  # distinct items linked as concepts
    latest_modified: str | None
    digest: str


def sparql_probe(
    config: SparqlConfig,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] | None = None,
) -> ProbeResult:
    """The formula items and the concepts they link, each with its last modification time."""
    what = "probing for changes"
    with _client(config, sleep, now or (lambda: datetime.now(UTC))) as client:
        rows = client.select(PROBE_QUERY, what, PROBE_VARIABLES)
    where = client.where(what)
    seen: set[tuple[str, str, str]] = set()
    for number, row in enumerate(rows, start=1):
        role = row["role"].value
        if role not in PROBE_ROLES:
            raise SparqlError(f"{where} sent row {number} with an unknown ?role {role[:40]!r}")
        modified = row["modified"].value.strip()
        if not modified:
            raise SparqlError(f"{where} sent row {number} with an empty ?modified")
        seen.add((role, _item_qid(row["entity"], where), modified))
    lines = sorted(f"{role} {qid} {modified}" for role, qid, modified in seen)
    return ProbeResult(
        items=len({qid for role, qid, _ in seen if role == "formula"}),
        concepts=len({qid for role, qid, _ in seen if role == "concept"}),
        latest_modified=max((modified for *_, modified in seen), default=None),
        digest=bytes_hash("sparql-probe/1", *lines),
    )
