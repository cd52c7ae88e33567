"""Live Wikidata formulae from a SPARQL endpoint (the Wikidata Query Service by default).

Two phases keep every request far below WDQS's 60 s query limit: one cheap query lists the
items that have a defining formula (P2534), then pages of `page_size` items fetch their
details through `VALUES`. Only QIDs validated by `is_qid` ever go into a query, written as
`wd:Q123`; no other text from a response is pasted into one.

The HTTP side — retries, deadlines, SPARQL JSON results, `SparqlError` — is
`ingest.sparql_client`; this module holds the queries and turns their rows into records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from formula_assets.core.hashing import bytes_hash
from formula_assets.core.wikidata import is_qid
from formula_assets.ingest.records import (
    Concept,
    FormulaRecord,
    clean_text,
    qid_from_uri,
    utc,
    with_distinct_concepts,
)
from formula_assets.ingest.snapshot import paper_folds
from formula_assets.ingest.sparql_client import (
    Row,
    SparqlClient,
    SparqlConfig,
    SparqlError,
    Term,
    sparql_client,
)

__all__ = [
    "SparqlConfig",
    "SparqlError",
    "detail_query",
    "sparql_probe",
    "sparql_records",
]

ENTITY_PREFIX = "http://www.wikidata.org/entity/"
MATHML_DATATYPE = "http://www.w3.org/1998/Math/MathML"

PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX wdt: <http://www.wikidata.org/prop/direct/>
PREFIX pq: <http://www.wikidata.org/prop/qualifier/>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX schema: <http://schema.org/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
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
    + """SELECT ?item ?itemLabel ?itemDescription ?alias ?formula ?enwiki
       ?statement ?concept ?conceptLabel ?conceptDescription ?symbol WHERE {
  VALUES ?item { %s }
  ?item wdt:P2534 ?formula .
  OPTIONAL { ?item rdfs:label ?itemLabel . FILTER(LANG(?itemLabel) = "en") }
  OPTIONAL { ?item schema:description ?itemDescription . FILTER(LANG(?itemDescription) = "en") }
  OPTIONAL { ?item skos:altLabel ?alias . FILTER(LANG(?alias) = "en") }
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


def detail_query(qids: Sequence[str]) -> str:
    """The detail query for one page; refuses anything but plain QIDs, so nothing is injected."""
    bad = [q for q in qids if not is_qid(q)]
    if bad:
        raise ValueError(f"not a QID, refusing to put it in a query: {bad[0][:80]!r}")
    if not qids:
        raise ValueError("a detail query needs at least one QID")
    return _DETAIL_TEMPLATE % " ".join(f"wd:{q}" for q in qids)


def _item_qid(term: Term, where: str) -> str:
    """The QID of an item IRI from a response; anything else is refused, never queried."""
    try:
        if term.kind != "uri":
            raise ValueError(f"a {term.kind}, not an IRI")
        return qid_from_uri(term.value)
    except ValueError as exc:
        raise SparqlError(f"{where} returned an item that is not a Wikidata QID: {exc}") from None


def _text(row: Row, name: str) -> str | None:
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
    aliases: set[str] = field(default_factory=set)
    formulae: set[str] = field(default_factory=set)
    enwikis: set[str] = field(default_factory=set)
    # (statement, concept QID, symbol): one concept per statement and symbol.
    concepts: dict[tuple[str, str, str | None], _ConceptRows] = field(default_factory=dict)
    skipped_statements: set[str] = field(default_factory=set)

    def add(self, row: Row) -> None:
        for target, name in (
            (self.labels, "itemLabel"),
            (self.descriptions, "itemDescription"),
            (self.aliases, "alias"),
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
                f"{len(formulae)} distinct defining formulae (P2534); the first in sorted order "
                "in mathml, the others in other_formulae"
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
        record = FormulaRecord(
            qid=qid,
            label=_first(self.labels),
            description=_first(self.descriptions),
            aliases=sorted(self.aliases),
            mathml=formulae[0] if formulae else None,
            other_formulae=formulae[1:],
            concepts=concepts,
            source="sparql",
            enwiki=_first(self.enwikis),
            paper_fold=folds.get(qid),
            retrieved_at=retrieved_at,
            notes=notes,
        )
        return with_distinct_concepts(record)


def _group(rows: Sequence[Row], asked: set[str], where: str) -> dict[str, _ItemRows]:
    """Gather a page's rows per item; SPARQL multiplies rows, the sets collapse them again."""
    items: dict[str, _ItemRows] = {}
    for row in rows:
        qid = _item_qid(row["item"], where)
        if qid not in asked:
            raise SparqlError(f"{where} answered about {qid}, which the query did not ask for")
        items.setdefault(qid, _ItemRows()).add(row)
    return items


def _list_items(client: SparqlClient) -> list[str]:
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
    with sparql_client(config, sleep, clock) as client:
        return _pull(client, config, utc(clock()), log)


def _pull(
    client: SparqlClient,
    config: SparqlConfig,
    retrieved_at: datetime,
    log: Callable[[str], None] | None,
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
    with sparql_client(config, sleep, now or (lambda: datetime.now(UTC))) as client:
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
