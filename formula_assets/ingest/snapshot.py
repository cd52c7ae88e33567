"""The embedded Wikidata snapshot: 1,758 formula items with the paper's published folds.

Its `conceptDescriptions` list is not aligned with `concepts`: a concept without an English
description is simply absent from it. `align_descriptions` recovers the alignment from what
the whole snapshot says about each concept, and never guesses: a description that fits more
than one concept stays in `unassigned_descriptions`.

It holds one defining formula per item (`other_formulae` is empty) but the concept statements
of all of an item's formulae: 109 items list a concept once per formula, and the reader keeps
one of each (`with_distinct_concepts`, counted in `repeated_concepts`).
"""

from __future__ import annotations

import gzip
import itertools
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from formula_assets.core.wikidata import is_qid
from formula_assets.ingest.records import (
    Concept,
    FormulaRecord,
    clean_text,
    qid_from_uri,
    with_distinct_concepts,
)

SNAPSHOT_RESOURCE = "wikidata_formulae_snapshot.jsonl.gz"
# Rows whose unknown concepts admit more hypotheses than this stay unaligned.
MAX_HYPOTHESES = 1 << 16
_MISSING = object()


def snapshot_path() -> Path:
    return Path(str(resources.files("formula_assets.ingest") / "data" / SNAPSHOT_RESOURCE))


def read_snapshot_items(path: Path | None = None) -> list[dict]:
    with gzip.open(path or snapshot_path(), "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@cache
def paper_folds() -> dict[str, int]:
    """QID → published fold, so the paper's split survives a switch to a live source."""
    return {
        qid_from_uri(item["item"]): int(item["paper_fold"])
        for item in read_snapshot_items()
        if item.get("paper_fold") is not None
    }


@dataclass
class _Row:
    concepts: list[str]
    descriptions: list[str]


class _Ambiguous:
    """Marker for a concept whose description the data does not determine."""


AMBIGUOUS = _Ambiguous()


def _hypotheses(row: _Row, known: dict[str, str | None]) -> list[dict[str, str | None]] | None:
    """Every assignment concept → description consistent with the row and with `known`.

    None when there are too many to enumerate.
    """
    unique = list(dict.fromkeys(row.concepts))
    unknown = [q for q in unique if q not in known]
    if 2 ** len(unknown) > MAX_HYPOTHESES:
        return None
    occurrences = Counter(row.concepts)
    fixed_count = sum(occurrences[q] for q in unique if q in known and known[q] is not None)
    needed = len(row.descriptions) - fixed_count
    solutions: list[dict[str, str | None]] = []
    for mask in itertools.product((False, True), repeat=len(unknown)):
        if sum(occurrences[q] for q, m in zip(unknown, mask, strict=True) if m) != needed:
            continue
        has = {q: known[q] is not None for q in unique if q in known}
        has.update(zip(unknown, mask, strict=True))
        assignment: dict[str, str | None] = {}
        ok = True
        it = iter(row.descriptions)
        for q in row.concepts:
            if not has[q]:
                continue
            d = next(it)
            if (q in known and known[q] != d) or assignment.get(q, d) != d:
                ok = False
                break
            assignment[q] = d
        if ok:
            solutions.append({q: assignment.get(q) for q in unique})
    return solutions


def align_descriptions(
    rows: Sequence[tuple[str, str | None, list[str], list[str]]],
) -> list[tuple[dict[str, object], list[str]]]:
    """Attribute each row's concept descriptions to its concepts.

    `rows` holds (item qid, item description, concept qids, concept descriptions). Returns per
    row a map concept qid → description (None: has none, AMBIGUOUS: not determined) and the
    descriptions left unattributed.
    """
    parsed = [_Row(list(c), list(d)) for _, _, c, d in rows]
    known: dict[str, str | None] = {}
    conflicted: set[str] = set()

    def learn(qid: str, value: str | None) -> bool:
        if qid in conflicted:
            return False
        current = known.get(qid, _MISSING)
        if current is _MISSING:
            known[qid] = value
            return True
        if current != value:  # the snapshot disagrees with itself: trust neither value
            conflicted.add(qid)
            del known[qid]
            return True
        return False

    # Certain facts: an item's own description, fully populated rows, rows with none at all;
    # an unknown-value statement (blank node) never has a description.
    for (qid, description, _, _), row in zip(rows, parsed, strict=True):
        learn(qid, description)
        for q in row.concepts:
            if not is_qid(q):
                learn(q, None)
        if len(row.descriptions) == len(row.concepts):
            for q, d in zip(row.concepts, row.descriptions, strict=True):
                learn(q, d)
        elif not row.descriptions:
            for q in row.concepts:
                learn(q, None)

    # Propagate: a concept fixed in every consistent hypothesis of a row is known everywhere.
    changed = True
    while changed:
        changed = False
        for row in parsed:
            solutions = _hypotheses(row, known)
            if not solutions:
                continue
            for q in dict.fromkeys(row.concepts):
                if q in known or q in conflicted:
                    continue
                values = {s[q] for s in solutions}
                if len(values) == 1:
                    changed |= learn(q, values.pop())

    results: list[tuple[dict[str, object], list[str]]] = []
    for row in parsed:
        solutions = _hypotheses(row, known) or []
        mapping: dict[str, object] = {}
        for q in dict.fromkeys(row.concepts):
            if q in known:
                mapping[q] = known[q]
            else:
                values = {s[q] for s in solutions}
                mapping[q] = values.pop() if len(values) == 1 else AMBIGUOUS
        remaining = Counter(row.descriptions)
        for q in row.concepts:
            value = mapping[q]
            if isinstance(value, str) and remaining[value] > 0:
                remaining[value] -= 1
        unassigned = [d for d in dict.fromkeys(row.descriptions) if remaining[d] > 0]
        results.append((mapping, unassigned))
    return results


def _concept_key(uri: str) -> str:
    """A concept's QID, or the blank-node URI of an "unknown value" statement."""
    return uri if "/.well-known/genid/" in uri else qid_from_uri(uri)


def snapshot_records(path: Path | None = None) -> Iterator[FormulaRecord]:
    items = read_snapshot_items(path)
    keyed = []
    for item in items:
        qid = qid_from_uri(item["item"])
        concepts = [_concept_key(c) for c in item.get("concepts") or []]
        keyed.append(
            (
                qid,
                clean_text(item.get("itemDescription")),
                concepts,
                item.get("conceptDescriptions") or [],
            )
        )
    alignments = align_descriptions(keyed)
    for item, (qid, description, concepts, _), (mapping, unassigned) in zip(
        items, keyed, alignments, strict=True
    ):
        labels = item.get("conceptLabels") or []
        symbols = item.get("symbols") or []
        notes: list[str] = []
        if len(labels) != len(concepts):
            notes.append(
                f"{len(labels)} concept labels for {len(concepts)} concepts: not attributed"
            )
            labels = [None] * len(concepts)
        if len(symbols) != len(concepts):
            notes.append(f"{len(symbols)} symbols for {len(concepts)} concepts: not attributed")
            symbols = [None] * len(concepts)
        ambiguous = sorted(
            (q for q, v in mapping.items() if v is AMBIGUOUS and is_qid(q)),
            key=lambda q: int(q[1:]),
        )
        if ambiguous:
            notes.append(
                "descriptions of " + ", ".join(ambiguous) + " not determined by the snapshot; "
                "their candidates are in unassigned_descriptions"
            )
        unknown_values = sum(1 for q in concepts if not is_qid(q))
        if unknown_values:
            notes.append(f"{unknown_values} statement(s) with an unknown-value concept skipped")
        record = FormulaRecord(
            qid=qid,
            label=clean_text(item.get("itemLabel")),
            description=description,
            mathml=clean_text(item.get("formula")),
            concepts=[
                Concept(
                    qid=q,
                    label=clean_text(label),
                    description=v if isinstance((v := mapping[q]), str) else None,
                    symbol_mathml=clean_text(symbol),
                )
                for q, label, symbol in zip(concepts, labels, symbols, strict=True)
                if is_qid(q)
            ],
            unassigned_descriptions=unassigned,
            enwiki=clean_text(item.get("enWiki")),
            paper_fold=int(item["paper_fold"]) if item.get("paper_fold") is not None else None,
            source="snapshot",
            notes=notes,
        )
        yield with_distinct_concepts(record)
