"""The row shape of `wikidata_formulae`, shared by every source."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pyarrow as pa

from formula_assets.core.wikidata import is_qid

_SURROGATE = re.compile("[\ud800-\udfff]")
_ENTITY_URI = re.compile(r"^https?://www\.wikidata\.org/entity/(Q[1-9][0-9]{0,11})$")


def qid_from_uri(value: str) -> str:
    """`http://www.wikidata.org/entity/Q42` or `Q42` → `Q42`; anything else is a ValueError."""
    value = value.strip()
    if is_qid(value):
        return value
    match = _ENTITY_URI.match(value)
    if not match:
        raise ValueError(f"not a Wikidata item: {value[:80]!r}")
    return match.group(1)


def clean_text(value: object) -> str | None:
    """A source's text field: stripped, None when absent, blank or not text at all."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def utc(moment: datetime) -> datetime:
    """A clock reading in UTC; a naive one is refused, since its zone is anyone's guess."""
    if moment.tzinfo is None:
        raise ValueError("now() must return a timezone-aware datetime")
    return moment.astimezone(UTC)


@dataclass(frozen=True)
class Concept:
    """One statement linking a formula item to a concept, with the symbol it has in the formula."""

    qid: str
    label: str | None = None
    description: str | None = None
    symbol_mathml: str | None = None


@dataclass
class FormulaRecord:
    qid: str
    label: str | None
    description: str | None
    mathml: str | None
    concepts: list[Concept] = field(default_factory=list)
    source: str = "snapshot"
    tex: str | None = None
    enwiki: str | None = None
    paper_fold: int | None = None
    retrieved_at: datetime | None = None
    # Concept descriptions that belong to this item but cannot be attributed to one concept.
    unassigned_descriptions: list[str] = field(default_factory=list)
    # Data-quality remarks made while building the row (alignment gaps, repairs).
    notes: list[str] = field(default_factory=list)
    # Other English names of the item (Wikidata's aliases, skos:altLabel), sorted.
    aliases: list[str] = field(default_factory=list)
    # The MathML of the item's further distinct defining formulae; `mathml` is the first.
    other_formulae: list[str] = field(default_factory=list)
    # Concept entries dropped as exact repeats of (qid, symbol) by `with_distinct_concepts`.
    repeated_concepts: int = 0


CONCEPT_TYPE = pa.struct(
    [
        ("qid", pa.string()),
        ("label", pa.string()),
        ("description", pa.string()),
        ("symbol_mathml", pa.string()),
    ]
)

FORMULA_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("label", pa.string()),
        ("description", pa.string()),
        ("aliases", pa.list_(pa.string())),
        ("mathml", pa.string()),
        ("tex", pa.string()),
        ("other_formulae", pa.list_(pa.string())),
        ("concepts", pa.list_(CONCEPT_TYPE)),
        ("repeated_concepts", pa.int32()),
        ("unassigned_descriptions", pa.list_(pa.string())),
        ("enwiki", pa.string()),
        ("paper_fold", pa.int8()),
        ("source", pa.string()),
        ("retrieved_at", pa.timestamp("us", tz="UTC")),
        ("notes", pa.list_(pa.string())),
    ]
)

# Columns that describe a pull rather than Wikidata's content; the data version ignores them.
VOLATILE_COLUMNS = ("retrieved_at",)


def with_distinct_concepts(record: FormulaRecord) -> FormulaRecord:
    """The record with each (concept qid, symbol) once, the first kept, and the dropped repeats
    counted in `repeated_concepts`.

    A source may state a concept again per defining formula (the snapshot) or per statement;
    kept, it would count twice downstream. A concept without a known symbol is kept every time:
    the symbols it stands for may differ. Every reader calls this, so every source agrees.
    """
    seen: set[tuple[str, str]] = set()
    kept: list[Concept] = []
    for concept in record.concepts:
        if concept.symbol_mathml is not None:
            key = (concept.qid, concept.symbol_mathml)
            if key in seen:
                continue
            seen.add(key)
        kept.append(concept)
    dropped = len(record.concepts) - len(kept)
    return replace(record, concepts=kept, repeated_concepts=record.repeated_concepts + dropped)


def valid_text(value: str | None) -> str | None:
    """Text Parquet can store: lone surrogates (undecodable input) become U+FFFD."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", value)
    return value


def records_to_table(records: Iterable[FormulaRecord]) -> pa.Table:
    """Rows sorted by numeric QID, so the same content always gives the same table."""
    rows = sorted(records, key=lambda r: int(r.qid[1:]))
    columns: dict[str, list] = {name: [] for name in FORMULA_SCHEMA.names}
    t = valid_text
    for r in rows:
        columns["qid"].append(r.qid)
        columns["label"].append(t(r.label))
        columns["description"].append(t(r.description))
        columns["aliases"].append([t(a) for a in r.aliases])
        columns["mathml"].append(t(r.mathml))
        columns["tex"].append(t(r.tex))
        columns["other_formulae"].append([t(f) for f in r.other_formulae])
        columns["concepts"].append(
            [
                {
                    "qid": c.qid,
                    "label": t(c.label),
                    "description": t(c.description),
                    "symbol_mathml": t(c.symbol_mathml),
                }
                for c in r.concepts
            ]
        )
        columns["repeated_concepts"].append(r.repeated_concepts)
        columns["unassigned_descriptions"].append([t(d) for d in r.unassigned_descriptions])
        columns["enwiki"].append(r.enwiki)
        columns["paper_fold"].append(r.paper_fold)
        columns["source"].append(r.source)
        columns["retrieved_at"].append(r.retrieved_at)
        columns["notes"].append(list(r.notes))
    return pa.Table.from_pydict(columns, schema=FORMULA_SCHEMA)
