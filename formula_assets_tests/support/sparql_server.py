"""A small fake Wikidata Query Service: a real HTTP server speaking W3C SPARQL 1.1 JSON results.

Tests exercise the real HTTP client (a requests session) against it, so timeouts,
status codes, headers and broken bodies behave as they do on the wire.

It holds a tiny in-memory Wikidata and answers the three queries of
`formula_assets.ingest.sparql` by recognising them: the detail query by its `VALUES` block
(whose `wd:Q…` tokens it reads), the change probe by `schema:dateModified`, the list query by
`wdt:P2534` without either. `edit` and `remove` change that Wikidata between requests as real
edits do (an edit moves the entity's `schema:dateModified` on). Other queries
get canned replies registered with `register(predicate, answer)`. Faults are scripted per
request (`fail`, `hang`, `stall`, `hang_up`, `truncate`, `drop_connection`,
`without_variables`, `empty`, or any `script(fault)`) and consumed by the next matching
requests. Every request is recorded.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from formula_assets.ingest.records import FormulaRecord

ENTITY = "http://www.wikidata.org/entity/"
GENID = "http://www.wikidata.org/.well-known/genid/"
MATHML = "http://www.w3.org/1998/Math/MathML"
SPARQL_JSON = "application/sparql-results+json; charset=utf-8"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"

Predicate = Callable[[str], bool]


def math(inner: str) -> str:
    """A MathML literal as WDQS returns P2534 and P7235 values."""
    return f'<math xmlns="http://www.w3.org/1998/Math/MathML">{inner}</math>'


# ---------------------------------------------------------------- the in-memory Wikidata


@dataclass(frozen=True)
class Statement:
    """A statement qualified by its symbols (P7235); `value=None` is an unknown value."""

    pid: str
    value: str | None
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entity:
    qid: str
    label: str | None = None
    description: str | None = None
    formulae: tuple[str, ...] = ()
    enwiki: str | None = None
    statements: tuple[Statement, ...] = ()
    modified: str = "2026-01-01T00:00:00Z"  # schema:dateModified
    aliases: tuple[str, ...] = ()  # English skos:altLabel


def _concepts() -> list[Entity]:
    return [
        Entity("Q11379", "energy", "quantitative property of a physical system"),
        Entity("Q11423", "mass", "property of matter"),
        Entity("Q2111", "speed of light", "speed at which massless particles travel"),
        Entity("Q11465", "velocity", "rate of change of position"),
        Entity("Q82029", "Henstock–Kurzweil integral", "generalization of the Riemann integral"),
        Entity("Q215071", "supremum", "least upper bound"),
        Entity("Q123456789", "test constant", None),  # a concept without a description
    ]


def _formula_items() -> list[Entity]:
    e, m, c, v = (math(f"<mi>{s}</mi>") for s in "Emcv")
    return [
        Entity(
            "Q35875",
            "mass–energy equivalence",
            "relation between mass and energy",
            (math("<mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup>"),),
            "https://en.wikipedia.org/wiki/Mass%E2%80%93energy_equivalence",
            (
                Statement("P4934", "Q11379", (e,)),
                Statement("P4934", "Q11423", (m,)),
                Statement("P4934", "Q2111", (c,)),
            ),
            aliases=("E=mc²", "mass-energy relation"),
        ),
        Entity(
            "Q46276",
            "kinetic energy",
            "energy of a moving physical body",
            (
                math(
                    "<msub><mi>E</mi><mi>k</mi></msub><mo>=</mo><mfrac><mn>1</mn><mn>2</mn></mfrac>"
                ),
            ),
            "https://en.wikipedia.org/wiki/Kinetic_energy",
            (
                Statement("P4934", "Q11423", (m,)),
                # The same concept in two statements, with different symbols.
                Statement("P4934", "Q11465", (v,)),
                Statement("P527", "Q11465", (math("<mo>|</mo><mi>v</mi><mo>|</mo>"),)),
                Statement("P4934", None, (math("<mi>k</mi>"),)),  # unknown value: skipped
                Statement("P31", "Q11379"),  # no symbol: not part of the formula
            ),
        ),
        Entity(
            "Q4721378",  # in the paper snapshot, so it has a published fold
            "Alexiewicz norm",
            "incomplete seminorm on the space of Henstock–Kurzweil integrable functions",
            (math("<mo>‖</mo><mi>f</mi><mo>‖</mo>"),),
            "https://en.wikipedia.org/wiki/Alexiewicz_norm",
            (
                Statement("P4934", "Q82029", (math("<mo>∫</mo>"),)),
                Statement("P4934", "Q215071", (math("<mi>sup</mi>"),)),
            ),
        ),
        Entity(
            "Q98765432",  # no enwiki, two formulae, a concept without description
            "test law",
            None,
            (math("<mi>τ</mi><mo>=</mo><mn>1</mn>"), math("<mn>1</mn><mo>=</mo><mi>τ</mi>")),
            None,
            (Statement("P4934", "Q123456789", (math("<mi>τ</mi>"), math("<mi>t</mi>"))),),
        ),
        Entity("Q1000", "bare formula", "a formula without qualified statements", (math("x"),)),
    ]


def default_world() -> dict[str, Entity]:
    return {e.qid: e for e in [*_concepts(), *_formula_items()]}


def snapshot_world(
    records: Iterable[FormulaRecord],
    modified: str = "2026-01-01T00:00:00Z",
    into: Mapping[str, Entity] | None = None,
) -> dict[str, Entity]:
    """Snapshot items as the endpoint would hold them: each formula item with its concepts
    (P4934, qualified by their symbols) and every concept as an entity of its own; a
    realistic world of any size for pipelines run against the endpoint. With `into`, a copy
    of that world with the items added (a formula item is never replaced by the bare concept
    another item links to)."""
    world: dict[str, Entity] = dict(into or {})
    for record in records:
        statements = tuple(
            Statement("P4934", c.qid, (c.symbol_mathml,) if c.symbol_mathml else ())
            for c in record.concepts
        )
        for concept in record.concepts:
            world.setdefault(concept.qid, Entity(concept.qid, concept.label, concept.description))
        formulae = (record.mathml,) if record.mathml else ()
        world[record.qid] = Entity(
            record.qid, record.label, record.description, formulae, record.enwiki, statements,
            modified,
        )  # fmt: skip
    return world


# ---------------------------------------------------------------- SPARQL JSON


def uri(value: str) -> dict[str, str]:
    return {"type": "uri", "value": value}


def literal(value: str, lang: str | None = None, datatype: str | None = None) -> dict[str, str]:
    term = {"type": "literal", "value": value}
    if lang:
        term["xml:lang"] = lang
    if datatype:
        term["datatype"] = datatype
    return term


def sparql_result(variables: Iterable[str], rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A W3C SPARQL 1.1 JSON result; rows keep only the projected variables."""
    names = list(variables)
    bindings = [{k: v for k, v in row.items() if k in names} for row in rows]
    return {"head": {"vars": names}, "results": {"bindings": bindings}}


def selected_variables(query: str) -> list[str]:
    match = re.search(r"SELECT\s+(?:DISTINCT\s+)?(.*?)\s*WHERE", query, re.S | re.I)
    return re.findall(r"\?(\w+)", match.group(1)) if match else []


def is_detail_query(query: str) -> bool:
    return re.search(r"\bVALUES\s+\?item\b", query) is not None


def is_probe_query(query: str) -> bool:
    """The change probe: every formula item and linked concept with its modification time."""
    return "schema:dateModified" in query and not is_detail_query(query)


def is_list_query(query: str) -> bool:
    return "wdt:P2534" in query and not is_detail_query(query) and not is_probe_query(query)


def probe_rows(world: Mapping[str, Entity]) -> list[dict[str, Any]]:
    """One row per (entity, role) as WDQS answers the probe: the formula items, and every
    entity a formula item's symbol-qualified statement links that exists (has a date)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}

    def add(entity: Entity, role: str) -> None:
        rows[(entity.qid, role)] = {
            "entity": uri(ENTITY + entity.qid),
            "modified": literal(entity.modified, datatype=XSD_DATETIME),
            "role": literal(role),
        }

    for item in world.values():
        if not item.formulae:
            continue
        add(item, "formula")
        for statement in item.statements:
            concept = world.get(statement.value) if statement.value else None
            if statement.symbols and concept is not None:
                add(concept, "concept")
    return list(rows.values())


def values_qids(query: str) -> list[str]:
    match = re.search(r"VALUES\s+\?item\s*\{([^}]*)\}", query)
    return re.findall(r"\bwd:(Q[0-9]+)\b", match.group(1)) if match else []


def list_rows(world: Mapping[str, Entity]) -> list[dict[str, Any]]:
    # Newest first, as an unordered endpoint might: the client must not rely on order.
    items = [e for e in world.values() if e.formulae]
    return [{"item": uri(ENTITY + e.qid)} for e in reversed(items)]


def _en(value: str | None) -> dict[str, str] | None:
    return literal(value, lang="en") if value else None


def detail_rows(world: Mapping[str, Entity], qids: Iterable[str]) -> list[dict[str, Any]]:
    """Rows as WDQS multiplies them: formula × alias × enwiki × (statement, symbol)."""
    rows: list[dict[str, Any]] = []
    for qid in qids:
        item = world.get(qid)
        if item is None:
            continue
        for formula in item.formulae:
            for alias in item.aliases or (None,):
                base = {
                    "item": uri(ENTITY + qid),
                    "itemLabel": _en(item.label),
                    "itemDescription": _en(item.description),
                    "alias": _en(alias),
                    "formula": literal(formula, datatype=MATHML),
                    "enwiki": uri(item.enwiki) if item.enwiki else None,
                }
                qualified = [
                    (n, st, sym) for n, st in enumerate(item.statements) for sym in st.symbols
                ]
                if not qualified:
                    rows.append(base)
                for n, statement, symbol in qualified:
                    rows.append({**base, **_statement_terms(world, qid, n, statement, symbol)})
    return [{k: v for k, v in row.items() if v is not None} for row in rows]


def _statement_terms(
    world: Mapping[str, Entity], qid: str, n: int, statement: Statement, symbol: str
) -> dict[str, Any]:
    concept = world.get(statement.value) if statement.value else None
    return {
        "statement": uri(f"{ENTITY}statement/{qid}-{statement.pid}-{n}"),
        "concept": uri(ENTITY + statement.value) if statement.value else uri(f"{GENID}{qid}{n}"),
        "conceptLabel": _en(concept.label) if concept else None,
        "conceptDescription": _en(concept.description) if concept else None,
        "symbol": literal(symbol, datatype=MATHML),
    }


# ---------------------------------------------------------------- replies and faults


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = SPARQL_JSON
    delay_s: float = 0.0  # hang this long before answering
    content_length: int | None = None  # None: the body's; larger: the connection drops early
    stall_s: float = 0.0  # after half the body, send nothing for this long, then the rest
    endless: bool = False  # after the body, keep sending filler until the client hangs up
    hang_up: bool = False  # close the connection without any answer

    @classmethod
    def json(cls, document: Any, status: int = 200) -> Reply:
        return cls(status=status, body=json.dumps(document).encode("utf-8"))

    @classmethod
    def result(cls, variables: Iterable[str], rows: Iterable[Mapping[str, Any]]) -> Reply:
        return cls.json(sparql_result(variables, rows))

    @classmethod
    def error(cls, status: int, text: str = "", headers: Mapping[str, str] | None = None) -> Reply:
        return cls(status, text.encode("utf-8"), dict(headers or {}), "text/plain; charset=utf-8")


# A fault turns the reply the server would have sent (for this query) into another one.
Fault = Callable[[str, Reply], Reply]


def _always(_: str) -> bool:
    return True


@dataclass
class _Scripted:
    fault: Fault
    when: Predicate
    times: int


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]  # lower-cased names
    query: str
    content_type: str | None

    @property
    def user_agent(self) -> str | None:
        return self.headers.get("user-agent")


# ---------------------------------------------------------------- the server


class FakeWdqs:
    """Start with `with FakeWdqs() as server:`; point a client at `server.endpoint`."""

    def __init__(self, world: Mapping[str, Entity] | None = None) -> None:
        self.world: dict[str, Entity] = dict(world if world is not None else default_world())
        self.requests: list[RecordedRequest] = []
        self._faults: list[_Scripted] = []
        self._canned: list[tuple[Predicate, Callable[[str], Reply]]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> FakeWdqs:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeWdqs:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        assert self._httpd is not None, "the fake WDQS is not running"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/sparql"

    # -- scripting

    def register(self, when: Predicate, answer: Callable[[str], Reply] | Reply) -> None:
        """Answer queries matching `when` (checked before the built-in queries), for good."""
        respond = answer if callable(answer) else (lambda _q, _r=answer: _r)
        with self._lock:
            self._canned.append((when, respond))

    def script(self, fault: Fault, *, times: int = 1, when: Predicate | None = None) -> None:
        """Apply `fault` to the next `times` requests whose query matches `when`."""
        with self._lock:
            self._faults.append(_Scripted(fault, when or _always, times))

    def fail(
        self,
        status: int,
        headers: Mapping[str, str] | None = None,
        body: str = "",
        *,
        times: int = 1,
        when: Predicate | None = None,
    ) -> None:
        self.script(lambda _q, _r: Reply.error(status, body, headers), times=times, when=when)

    def hang(self, seconds: float, *, times: int = 1, when: Predicate | None = None) -> None:
        self.script(lambda _q, r: replace(r, delay_s=seconds), times=times, when=when)

    def truncate(self, *, times: int = 1, when: Predicate | None = None) -> None:
        """Cut the JSON in half but send a consistent Content-Length: a complete, broken body."""
        self.script(
            lambda _q, r: replace(r, body=r.body[: len(r.body) // 2]), times=times, when=when
        )

    def drop_connection(self, *, times: int = 1, when: Predicate | None = None) -> None:
        """Promise more bytes than are sent, then close: the client sees a dropped connection."""
        self.script(
            lambda _q, r: replace(r, body=r.body[: len(r.body) // 2], content_length=len(r.body)),
            times=times,
            when=when,
        )

    def without_variables(self, *names: str, times: int = 1, when: Predicate | None = None) -> None:
        """Valid JSON whose head and rows lack `names`, as a different query would give."""

        def drop(_q: str, reply: Reply) -> Reply:
            document = json.loads(reply.body)
            variables = [v for v in document["head"]["vars"] if v not in names]
            return Reply.result(variables, document["results"]["bindings"])

        self.script(drop, times=times, when=when)

    def stall(self, seconds: float, *, times: int = 1, when: Predicate | None = None) -> None:
        """Send the headers and half the body, then nothing for `seconds`: a stalled answer."""
        self.script(lambda _q, r: replace(r, stall_s=seconds), times=times, when=when)

    def hang_up(self, *, times: int = 1, when: Predicate | None = None) -> None:
        """Read the request, then close the connection without a status line."""
        self.script(lambda _q, r: replace(r, hang_up=True), times=times, when=when)

    def empty(self, *, times: int = 1, when: Predicate | None = None) -> None:
        def nothing(q: str, _r: Reply) -> Reply:
            return Reply.result(selected_variables(q), [])

        self.script(nothing, times=times, when=when)

    # -- editing the in-memory Wikidata between requests

    def edit(self, qid: str, *, modified: str | None = None, **changes: Any) -> Entity:
        """Change an entity as a Wikidata edit does: the fields given (`label`,
        `description`, `formulae`, `enwiki`, `statements`…) and `schema:dateModified`, one
        second after the newest date in the world unless `modified` is given."""
        with self._lock:
            entity = replace(self.world[qid], **changes, modified=modified or self._later())
            self.world[qid] = entity
            return entity

    def remove(self, qid: str) -> None:
        """Delete an entity: it no longer answers any query."""
        with self._lock:
            del self.world[qid]

    def _later(self) -> str:
        newest = max((e.modified for e in self.world.values()), default="2026-01-01T00:00:00Z")
        moment = datetime.fromisoformat(newest.replace("Z", "+00:00")) + timedelta(seconds=1)
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # -- inspection

    def queries(self, when: Predicate | None = None) -> list[str]:
        with self._lock:
            return [r.query for r in self.requests if (when or _always)(r.query)]

    def list_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if is_list_query(r.query)]

    def detail_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if is_detail_query(r.query)]

    def probe_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if is_probe_query(r.query)]

    # -- answering

    def _answer(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            canned = next((answer for when, answer in self._canned if when(request.query)), None)
            fault = self._take_fault(request.query)
        reply = canned(request.query) if canned else self._builtin(request.query)
        return fault(request.query, reply) if fault else reply

    def _take_fault(self, query: str) -> Fault | None:
        for scripted in self._faults:
            if scripted.when(query):
                scripted.times -= 1
                if scripted.times <= 0:
                    self._faults.remove(scripted)
                return scripted.fault
        return None

    def _builtin(self, query: str) -> Reply:
        variables = selected_variables(query)
        if is_detail_query(query):
            return Reply.result(variables, detail_rows(self.world, values_qids(query)))
        if is_probe_query(query):
            return Reply.result(variables, probe_rows(self.world))
        if is_list_query(query):
            return Reply.result(variables, list_rows(self.world))
        return Reply.error(400, "MalformedQueryException: the fake WDQS does not know this query")

    def wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _handler_for(server: FakeWdqs) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            params = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            self._serve(params.get("query", [""])[0])

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8")
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if content_type == "application/sparql-query":
                self._serve(body)
            else:
                self._serve(urllib.parse.parse_qs(body).get("query", [""])[0])

        def _serve(self, query: str) -> None:
            request = RecordedRequest(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                query=query,
                content_type=self.headers.get("Content-Type"),
            )
            reply = server._answer(request) if query else Reply.error(400, "no query given")
            if reply.delay_s:
                server.wait(reply.delay_s)
            if reply.hang_up:
                self.close_connection = True
                return
            # A client that gave up (a timeout test) needs no answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(reply)

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            length = reply.content_length if reply.content_length is not None else len(reply.body)
            if not reply.endless:  # an endless body is delimited by closing the connection
                self.send_header("Content-Length", str(length))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if reply.stall_s:
                half = len(reply.body) // 2
                self.wfile.write(reply.body[:half])
                self.wfile.flush()
                server.wait(reply.stall_s)
                self.wfile.write(reply.body[half:])
            else:
                self.wfile.write(reply.body)
            self.wfile.flush()
            while reply.endless and not server._stopping.is_set():
                self.wfile.write(b" filler" * 1024)
                self.wfile.flush()
            if reply.endless:
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests assert on `server.requests`, not on stderr."""

    return Handler
