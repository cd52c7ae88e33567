"""Formula items from a Wikidata JSON entity dump, streamed so memory stays flat in dump size.

Layout: `.json`, `.json.gz` or `.json.bz2`, one entity per line, either wrapped in a JSON array
(first line `[`, entities with a trailing comma except the last, last line `]`, as Wikidata
publishes it) or bare (one entity per line, no brackets).

Reading plan. A full dump holds ~100M entities, so neither the file nor its entities are ever
held: pass 1 keeps the formula items (claims `P2534`) and the set of concept QIDs they need,
and records the English label/description of a needed entity when it meets one (the needed set
grows as formula items turn up). Concepts met *before* they became needed are still missing at
the end of pass 1; only then does a second pass run, looking for just those QIDs, and it stops
as soon as all are found. Which concepts merely precede their formula and which are absent from
the dump cannot be told apart without remembering every id seen, which would grow with the
dump, so pass 2 runs whenever something is missing and absent concepts get a note.

Most lines are never JSON-parsed: a line is parsed only if it contains `"P2534"`, if its id
(read by a regex at the start of the line) is a needed concept not yet found, or if the regex
cannot read its id.

Bad-line policy. A parsed line that is not JSON (or not an entity) is skipped and counted; the
first few are logged with line number and excerpt, and the count is in the summary log line and
in `DumpScan.notes`. Skipping keeps one damaged entity from losing a multi-hour pull, and the
quarantine downstream never sees it. The file is rejected (`DumpError`) when it is not a dump at
all: missing, unsupported extension, not decompressible or decodable (a truncated archive would
silently drop the tail), empty, a first line that is neither `[` nor an entity, or no entity line
anywhere (a file holding only `[` and `]` included). Lines skipped by the quick path are not
validated; a damaged one is only noticed when it matters (it mentions P2534 or is a needed
concept).

Truncation. A dump cut off mid-way (a download or copy that stopped) may still decompress
cleanly, e.g. an uncompressed `.json`, and its last line may be an entity cut in half that the
quick path would pass over. So the end is checked: a dump that opens with `[` must close with
`]`, and the last line of a bare dump must be JSON. A truncated dump is rejected, unless
`accept_partial` is set: then the entities it holds are read and `DumpScan.notes` says it was
partial.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from latex2mathml import converter

from formula_assets.core.settings import ACCEPT_PARTIAL_DUMP_ENV
from formula_assets.core.wikidata import is_qid
from formula_assets.ingest.records import (
    Concept,
    FormulaRecord,
    clean_text,
    utc,
    with_distinct_concepts,
)
from formula_assets.ingest.snapshot import paper_folds

DEFINING_FORMULA = "P2534"
IN_DEFINING_FORMULA = "P7235"
PROGRESS_EVERY = 100_000
ENWIKI_PREFIX = "https://en.wikipedia.org/wiki/"
# Reproduces Wikidata's own enwiki URLs (schema:about), e.g. `De_Morgan%27s_laws`,
# `Cheeger_constant_(graph_theory)`: every enWiki URL of the embedded snapshot round-trips.
_ENWIKI_SAFE = "/:()_,!*-.~"
SUPPORTED_SUFFIXES = (".json", ".json.gz", ".json.bz2")
_QUICK_MARKER = f'"{DEFINING_FORMULA}"'
# The id at the start of a compact dump line: `{"type":"item","id":"Q42",...`; properties put
# their datatype first. Anything else falls back to json.loads.
_LEADING_ID = re.compile(
    r'\{\s*"type"\s*:\s*"[a-z]+"\s*,\s*(?:"datatype"\s*:\s*"[^"]*"\s*,\s*)?'
    r'"id"\s*:\s*"([A-Z][1-9][0-9]*)"'
)
_MAX_LOGGED_BAD_LINES = 5
_EXCERPT = 80

Log = Callable[[str], None]
Json = dict[str, Any]


class DumpError(ValueError):
    """The file cannot be read as a Wikidata JSON dump."""


@dataclass
class DumpScan:
    """What a dump read produced, with the dump-level facts no single record owns."""

    records: list[FormulaRecord]
    lines: int = 0
    entity_lines: int = 0
    parsed_lines: int = 0
    bad_lines: int = 0
    second_pass: bool = False
    truncated: str | None = None  # why the dump is known to be cut off, if it is
    notes: list[str] = field(default_factory=list)


@dataclass
class _Pending:
    """A formula item waiting for its concepts' labels, which may come later in the dump."""

    qid: str
    label: str | None
    description: str | None
    tex: str | None
    mathml: str | None
    enwiki: str | None
    pairs: list[tuple[str, str | None]]  # (concept qid, symbol MathML)
    notes: list[str]
    aliases: list[str] = field(default_factory=list)
    other_formulae: list[str] = field(default_factory=list)  # MathML


@dataclass
class _State:
    formulas: dict[str, _Pending] = field(default_factory=dict)
    needed: set[str] = field(default_factory=set)
    found: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    scan: DumpScan = field(default_factory=lambda: DumpScan(records=[]))


def dump_records(
    path: str | os.PathLike[str],
    log: Log | None = None,
    now: Callable[[], datetime] | None = None,
    *,
    progress_every: int = PROGRESS_EVERY,
    accept_partial: bool = False,
) -> list[FormulaRecord]:
    """One `FormulaRecord` per formula item in the dump, sorted by numeric QID."""
    return scan_dump(
        path, log, now, progress_every=progress_every, accept_partial=accept_partial
    ).records


def scan_dump(
    path: str | os.PathLike[str],
    log: Log | None = None,
    now: Callable[[], datetime] | None = None,
    *,
    progress_every: int = PROGRESS_EVERY,
    accept_partial: bool = False,
) -> DumpScan:
    """`dump_records` plus the line counts and dump-level notes (skipped lines, truncation).

    A truncated dump is a `DumpError` unless `accept_partial`: then a note says what was read.
    """
    if progress_every < 1:
        raise ValueError(f"progress_every must be positive, got {progress_every}")
    dump = _checked_path(path)
    emit: Log = log or (lambda _message: None)
    state = _State()
    _first_pass(dump, state, emit, progress_every, accept_partial)
    missing = state.needed - state.found.keys()
    if missing:
        emit(f"dump pass 2: looking for {len(missing):,} concept(s) not found after pass 1")
        state.scan.second_pass = True
        _second_pass(dump, state, missing, emit, progress_every)
    retrieved_at = utc((now or _utcnow)())
    folds = paper_folds()
    state.scan.records = [
        _record(pending, state.found, folds, retrieved_at)
        for pending in sorted(state.formulas.values(), key=lambda p: int(p.qid[1:]))
    ]
    _summarise(state, emit)
    return state.scan


def tex_to_mathml(tex: str) -> tuple[str | None, str | None]:
    """(MathML, None), or (None, reason): latex2mathml raises many exception types, none escape."""
    try:
        mathml = converter.convert(tex)
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if not isinstance(mathml, str) or not mathml.startswith("<math"):
        return None, "latex2mathml returned no <math> element"
    return mathml, None


def enwiki_url(title: str) -> str:
    """The English Wikipedia URL of a sitelink title, encoded as Wikidata encodes it."""
    return ENWIKI_PREFIX + quote(title.strip().replace(" ", "_"), safe=_ENWIKI_SAFE)


# --- reading ---------------------------------------------------------------------------------


def _checked_path(path: str | os.PathLike[str]) -> Path:
    dump = Path(path)
    if not dump.name.lower().endswith(SUPPORTED_SUFFIXES):
        raise DumpError(
            f"{dump}: unsupported dump file; expected one of {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if not dump.is_file():
        raise DumpError(f"{dump}: no such dump file")
    return dump


def _open_text(path: Path) -> TextIO:
    name = path.name.lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    if name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, payload without whitespace and trailing comma); read errors are fatal."""
    number = 0
    try:
        with _open_text(path) as fh:
            for number, line in enumerate(fh, 1):
                text = line.strip()
                if text.endswith(","):
                    text = text[:-1].rstrip()
                yield number, text
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DumpError(f"{path}: unreadable after line {number:,}: {exc}") from exc


def _excerpt(text: str) -> str:
    return repr(text[:_EXCERPT] + ("…" if len(text) > _EXCERPT else ""))


def _parse(text: str) -> tuple[Json | None, str | None]:
    """(entity, None) or (None, why the line is not an entity)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        return None, "JSON but not an entity (no id)"
    return value, None


def _first_pass(path: Path, state: _State, emit: Log, every: int, accept_partial: bool) -> None:
    scan = state.scan
    content_seen = False
    opening = closing = ""  # the first and the last line with content
    closing_number = 0
    for number, text in _lines(path):
        scan.lines = number
        content_seen = _first_pass_line(path, number, text, state, emit, content_seen)
        if text:
            opening = opening or text
            closing, closing_number = text, number
        if number % every == 0:
            emit(
                f"dump pass 1: {number:,} lines read, {len(state.formulas):,} formula items, "
                f"{len(state.found.keys() & state.needed):,}/{len(state.needed):,} concepts found"
            )
    if not content_seen:
        raise DumpError(f"{path}: empty file, not a Wikidata dump")
    scan.truncated = _truncation(opening, closing, closing_number)
    if scan.truncated and not accept_partial:
        raise DumpError(
            f"{path}: truncated dump: {scan.truncated}. The file is incomplete (a download or "
            "copy that stopped?); fetch it again, or set accept_partial_dump on the wikidata "
            f"resource ({ACCEPT_PARTIAL_DUMP_ENV}=true) to read the entities it holds"
        )
    if scan.entity_lines == 0:
        bad = f", {scan.bad_lines:,} malformed line(s)" if scan.bad_lines else ""
        raise DumpError(f"{path}: no entity line{bad}; not a Wikidata dump")


def _truncation(opening: str, closing: str, number: int) -> str | None:
    """Why a dump whose first and last lines with content are these is cut off, if it is."""
    if opening == "[" and closing != "]":
        ending = "" if _parse(closing)[0] is not None else ", inside an entity"
        return f"it opens with '[' but ends at line {number:,}{ending}, without the closing ']'"
    if opening != "[" and closing != "]" and _parse(closing)[0] is None:
        return f"its last line ({number:,}) is not a complete entity: {_excerpt(closing)}"
    return None


def _first_pass_line(
    path: Path, number: int, text: str, state: _State, emit: Log, content_seen: bool
) -> bool:
    """Handle one line; returns whether dump content has been seen (a bad first line is fatal)."""
    if not text or text in ("[", "]"):
        return content_seen or bool(text)
    scan = state.scan
    quick = _LEADING_ID.match(text)
    qid = quick.group(1) if quick else None
    if (
        qid is not None
        and _QUICK_MARKER not in text
        and (qid not in state.needed or qid in state.found)
    ):
        scan.entity_lines += 1
        return True
    scan.parsed_lines += 1
    entity, problem = _parse(text)
    if entity is None:
        if not content_seen:
            raise DumpError(
                f"{path}: line {number:,} is neither '[' nor a Wikidata entity "
                f"({problem}): {_excerpt(text)}"
            )
        _bad_line(scan, number, text, problem or "", emit)
        return True
    scan.entity_lines += 1
    _take(entity, state)
    return True


def _bad_line(scan: DumpScan, number: int, text: str, problem: str, emit: Log) -> None:
    scan.bad_lines += 1
    if scan.bad_lines <= _MAX_LOGGED_BAD_LINES:
        emit(f"dump line {number:,} skipped: {problem}: {_excerpt(text)}")


def _take(entity: Json, state: _State) -> None:
    """Keep a formula item, and the English texts of any entity a formula item may need."""
    qid = entity["id"]
    if not is_qid(qid):
        return
    if _formula_statements(entity):
        if qid not in state.formulas:
            pending = _pending(entity)
            state.formulas[qid] = pending
            state.needed.update(q for q, _ in pending.pairs)
        # A formula item may be another item's concept, met here before that item needs it.
        state.found[qid] = _english(entity)
    elif qid in state.needed:
        state.found[qid] = _english(entity)


def _second_pass(path: Path, state: _State, missing: set[str], emit: Log, every: int) -> None:
    """Find the concepts met before they were needed; stop once every one is found."""
    for number, text in _lines(path):
        if number % every == 0:
            emit(f"dump pass 2: {number:,} lines read, {len(missing):,} concept(s) still missing")
        if not text or text in ("[", "]"):
            continue
        quick = _LEADING_ID.match(text)
        if quick and quick.group(1) not in missing:
            continue
        entity, _ = _parse(text)  # bad lines were counted in pass 1
        if entity is None or entity["id"] not in missing:
            continue
        state.found[entity["id"]] = _english(entity)
        missing.discard(entity["id"])
        if not missing:
            return


def _summarise(state: _State, emit: Log) -> None:
    scan = state.scan
    if scan.truncated:
        scan.notes.append(
            f"partial dump accepted: {scan.truncated}; formula items past the cut are missing"
        )
    if scan.bad_lines:
        scan.notes.append(f"{scan.bad_lines:,} malformed dump line(s) skipped")
    absent = state.needed - state.found.keys()
    if absent:
        scan.notes.append(f"{len(absent):,} concept(s) not in the dump")
    emit(
        f"dump read: {scan.lines:,} lines, {scan.entity_lines:,} entities "
        f"({scan.parsed_lines:,} parsed), {len(scan.records):,} formula items, "
        f"{len(state.needed):,} concepts"
        + (", second pass" if scan.second_pass else "")
        + "".join(f"; {note}" for note in scan.notes)
    )


# --- entities --------------------------------------------------------------------------------


def _mapping(value: object) -> Mapping[str, Any]:
    """Dumps write an empty map as `[]`; treat anything but a dict as empty."""
    return value if isinstance(value, dict) else {}


def _english_aliases(entity: Json) -> list[str]:
    """The entity's English aliases (`aliases.en`: a list of {language, value}), sorted."""
    listed = _mapping(entity.get("aliases")).get("en")
    values = [clean_text(_mapping(a).get("value")) for a in listed or () if isinstance(a, dict)]
    return sorted({v for v in values if v})


def _english(entity: Json) -> tuple[str | None, str | None]:
    label = _mapping(_mapping(entity.get("labels")).get("en")).get("value")
    description = _mapping(_mapping(entity.get("descriptions")).get("en")).get("value")
    return clean_text(label), clean_text(description)


def _statements(entity: Json, prop: str) -> list[Json]:
    value = _mapping(entity.get("claims")).get(prop)
    return [s for s in value if isinstance(s, dict)] if isinstance(value, list) else []


def _best_rank(statements: list[Json]) -> list[Json]:
    """Preferred statements if any, else normal ones, as `wdt:` does; deprecated never."""
    live = [s for s in statements if s.get("rank") != "deprecated"]
    return [s for s in live if s.get("rank") == "preferred"] or live


def _formula_statements(entity: Json) -> list[Json]:
    return _best_rank(_statements(entity, DEFINING_FORMULA))


def _snak_kind(snak: object) -> str:
    """`value`, or the wording for a snak that carries none, or for what it lacks."""
    if not isinstance(snak, dict):
        return "missing"
    kind = snak.get("snaktype")
    if kind is None:
        return "untyped"
    return {"somevalue": "unknown-value", "novalue": "no-value"}.get(str(kind), str(kind))


def _skipped(kind: str, what: str, whose: str = "") -> str:
    """The note for a snak without a value: the kind it has (`unknown-value defining formula
    skipped`), or what the statement lacks (`… without a mainsnak`, `… without a snaktype`)."""
    if kind == "missing":
        return f"{what} statement{whose} without a mainsnak skipped"
    if kind == "untyped":
        return f"{what} statement{whose} whose mainsnak has no snaktype skipped"
    return f"{kind} {what}{whose} skipped"


def _snak_value(snak: object) -> object:
    return _mapping(_mapping(snak).get("datavalue")).get("value")


def _item_id(value: object) -> str | None:
    """The QID of a `wikibase-entityid` value (older dumps give only `numeric-id`)."""
    value = _mapping(value)
    qid = value.get("id")
    if qid is None and value.get("entity-type") == "item" and value.get("numeric-id") is not None:
        qid = f"Q{value['numeric-id']}"
    return qid if isinstance(qid, str) and is_qid(qid) else None


def _pending(entity: Json) -> _Pending:
    notes: list[str] = []
    texts = _formula_texts(_formula_statements(entity), notes)
    tex = texts[0] if texts else None
    mathml = None
    if tex is not None:
        mathml, reason = tex_to_mathml(tex)
        if reason:
            notes.append(f"defining formula TeX not converted to MathML ({reason})")
    label, description = _english(entity)
    title = _mapping(_mapping(entity.get("sitelinks")).get("enwiki")).get("title")
    pairs = _concept_pairs(entity, notes)
    return _Pending(
        qid=entity["id"],
        label=label,
        description=description,
        tex=tex,
        mathml=mathml,
        enwiki=enwiki_url(title) if clean_text(title) else None,
        pairs=pairs,
        notes=notes,
        aliases=_english_aliases(entity),
        other_formulae=_other_formulae(texts[1:], mathml, notes),
    )


def _formula_texts(statements: list[Json], notes: list[str]) -> list[str]:
    """The distinct TeX values of the best-rank defining formulae, in statement order."""
    values: list[str] = []
    for statement in statements:
        snak = statement.get("mainsnak")
        value = _snak_value(snak)
        if _snak_kind(snak) != "value":
            notes.append(_skipped(_snak_kind(snak), "defining formula"))
        elif isinstance(value, str):
            values.append(value)
        else:
            notes.append("defining formula statement without a TeX string value skipped")
    if not values:
        notes.append("no defining formula value")
    distinct = list(dict.fromkeys(values))
    if len(distinct) > 1:
        notes.append(
            f"{len(distinct)} distinct defining formulas of the best rank; the first in mathml, "
            "the others in other_formulae"
        )
    return distinct


def _other_formulae(texts: list[str], mathml: str | None, notes: list[str]) -> list[str]:
    """The MathML of the further defining formulae, each once and none repeating `mathml`;
    one that does not convert is left out with a note, as a column of MathML cannot hold it."""
    converted: dict[str, None] = {}
    for tex in texts:
        other, reason = tex_to_mathml(tex)
        if other is None:
            notes.append(f"defining formula {tex!r} not converted to MathML ({reason})")
        elif other != mathml:
            converted[other] = None
    return list(converted)


def _concept_pairs(entity: Json, notes: list[str]) -> list[tuple[str, str | None]]:
    """(concept QID, symbol MathML) for every symbol qualifier of every live statement."""
    pairs: list[tuple[str, str | None]] = []
    for prop in _mapping(entity.get("claims")):
        if prop == DEFINING_FORMULA:
            continue
        for statement in _statements(entity, prop):
            symbols = _mapping(statement.get("qualifiers")).get(IN_DEFINING_FORMULA)
            if statement.get("rank") == "deprecated" or not isinstance(symbols, list):
                continue
            qid = _statement_concept(prop, statement.get("mainsnak"), notes)
            if qid is not None:
                pairs.extend((qid, symbol) for symbol in _symbols(qid, symbols, notes))
    return pairs


def _statement_concept(prop: str, snak: object, notes: list[str]) -> str | None:
    kind = _snak_kind(snak)
    if kind in ("missing", "untyped"):
        notes.append(_skipped(kind, f"{prop}", " with a symbol"))
        return None
    if kind != "value":
        notes.append(f"{prop} statement with an {kind} concept skipped")
        return None
    qid = _item_id(_snak_value(snak))
    if qid is None:
        notes.append(f"{prop} statement with a symbol but no item value skipped")
    return qid


def _symbols(qid: str, snaks: list[object], notes: list[str]) -> list[str | None]:
    symbols: list[str | None] = []
    for snak in snaks:
        kind = _snak_kind(snak)
        tex = _snak_value(snak)
        if kind == "missing":
            notes.append(f"symbol of {qid} that is not a snak skipped")
            continue
        if kind == "untyped":
            notes.append(f"symbol of {qid} without a snaktype skipped")
            continue
        if kind != "value" or not isinstance(tex, str):
            notes.append(f"{kind if kind != 'value' else 'non-text'} symbol of {qid} skipped")
            continue
        mathml, reason = tex_to_mathml(tex)
        if reason:
            notes.append(f"symbol {tex!r} of {qid} not converted to MathML ({reason})")
        symbols.append(mathml)
    return symbols


# --- records ---------------------------------------------------------------------------------


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _record(
    pending: _Pending,
    found: Mapping[str, tuple[str | None, str | None]],
    folds: Mapping[str, int],
    retrieved_at: datetime,
) -> FormulaRecord:
    notes = list(pending.notes)
    concepts: list[Concept] = []
    for qid, symbol in pending.pairs:
        label, description = found.get(qid, (None, None))
        if qid not in found:
            notes.append(f"concept {qid} not in the dump: no label or description")
        concepts.append(Concept(qid, label, description, symbol))
    record = FormulaRecord(
        qid=pending.qid,
        label=pending.label,
        description=pending.description,
        aliases=pending.aliases,
        mathml=pending.mathml,
        other_formulae=pending.other_formulae,
        concepts=sorted(
            concepts,
            key=lambda c: (int(c.qid[1:]), c.symbol_mathml is None, c.symbol_mathml or ""),
        ),
        source="dump",
        tex=pending.tex,
        enwiki=pending.enwiki,
        paper_fold=folds.get(pending.qid),
        retrieved_at=retrieved_at,
        notes=list(dict.fromkeys(notes)),
    )
    return with_distinct_concepts(record)
