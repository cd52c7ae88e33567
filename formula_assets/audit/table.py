"""The `annotation_audit` table: one row per formula item, the editors' queue order, and what
editors read of it (its findings in words, tab-separated rows) and the checks' rules."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from formula_assets.audit.concepts import (
    ConceptSuggester,
    Suggestion,
    TextVectors,
    suspicion,
    unannotated_symbols,
    vocabulary,
)
from formula_assets.audit.leads import Lead, LeadFinder, priority
from formula_assets.audit.scores import ensemble_pair_scorers, pair_scores
from formula_assets.core.checks import Outcome
from formula_assets.core.threads import one_thread
from formula_assets.methods import registry
from formula_assets.methods.base import LoadedModel
from formula_assets.search.layout import HELD_OUT, serving_vectors

if TYPE_CHECKING:
    from formula_assets.training.artifacts import TrainedModel

WIKIDATA = "https://www.wikidata.org/wiki/"
TOP_ITEMS = 25  # the asset metadata's table
WORST_FIT = 0.5  # a concept this far down the formula's vocabulary is named in the finding

SUGGESTION = pa.struct(
    [
        ("qid", pa.string()),
        ("label", pa.string()),
        ("score", pa.float64()),  # closeness to the item's annotation
        ("symbol", pa.string()),  # the unannotated identifier it may stand for
    ]
)
FIT = pa.struct(
    [
        ("qid", pa.string()),
        ("label", pa.string()),
        ("percentile", pa.float64()),  # among the vocabulary for this formula: 0 best, 1 worst
    ]
)
LEAD = pa.struct(
    [
        ("kind", pa.string()),  # audit.leads.KINDS
        ("text", pa.string()),  # what to do, in one line
        ("score", pa.float64()),
        ("symbol", pa.string()),
        ("concept", pa.string()),  # the annotated concept in question
        ("suggestion", pa.string()),  # the concept the evidence suggests
        ("suggestion_label", pa.string()),
        ("items", pa.list_(pa.string())),  # the items whose annotations are the evidence
        ("quickstatements", pa.string()),  # the addition an editor may confirm
    ]
)
AUDIT_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("label", pa.string()),
        ("url", pa.string()),
        ("priority", pa.float64()),  # the strongest lead's score; 0: no lead
        ("kind", pa.string()),  # the strongest lead's kind
        ("leads", pa.list_(LEAD)),  # strongest first
        ("fold", pa.int8()),
        ("scored", pa.bool_()),
        ("remark", pa.string()),  # why an item is not scored, or what it lacks (no concepts)
        ("num_concepts", pa.int32()),
        ("pool", pa.int32()),  # the candidates: every item of its fold
        ("rank_formula_to_annotation", pa.int32()),
        ("rank_annotation_to_formula", pa.int32()),
        ("margin_formula_to_annotation", pa.float64()),
        ("margin_annotation_to_formula", pa.float64()),
        ("suspicion", pa.float64()),  # ½ (mean + worst) concept percentile; null: no concepts
        ("concept_fit", pa.list_(FIT)),  # the item's concepts, worst fitting first
        ("preferred_annotations", pa.list_(pa.string())),  # items whose annotation fits better
        ("preferred_formulae", pa.list_(pa.string())),  # items whose formula fits better
        ("missing_concepts", pa.list_(SUGGESTION)),
        ("unannotated_symbols", pa.list_(pa.string())),
        ("finding", pa.string()),
    ]
)
RANKS = ("rank_formula_to_annotation", "rank_annotation_to_formula")


def build_audit(
    formulae: Sequence[Mapping[str, Any]],
    index: pa.Table,
    folds: Mapping[str, int],
    models: Mapping[tuple[int, str], LoadedModel],
    texts: TextVectors,
    aggregation: str,
    finder: LeadFinder | None = None,
) -> pa.Table:
    """The audit of every item of `formulae` (`wikidata_formulae` rows): scored by its fold's
    models (`folds`: `cv_folds`), or a row saying why it is not, with the leads `finder`
    reads in its annotation; items with leads first, strongest first, then by suspicion.
    Scored on one thread: its margins are stored floats (`core.threads`)."""
    concepts = vocabulary(formulae)
    by_qid = {row["qid"]: row for row in formulae}
    scored: dict[str, dict[str, Any]] = {}
    fold_problem: dict[int, str] = {}
    indexed_folds = set(index.column("fold").to_pylist()) if index.num_rows else set()
    with one_thread():
        for fold in sorted(set(folds.values())):
            if fold not in indexed_folds:
                fold_problem[fold] = f"fold {fold} has no models in the search index"
                continue
            try:
                scored.update(
                    _audit_fold(fold, index, by_qid, models, concepts, texts, aggregation)
                )
            except (KeyError, ValueError) as exc:
                fold_problem[fold] = f"fold {fold} could not be scored: {exc}"
    labels = {q: r.get("label") for q, r in by_qid.items()}
    out = []
    for qid, row in by_qid.items():
        entry = scored.get(qid)
        fold = folds.get(qid)
        if entry is None:
            if fold is None:
                reason = "in no cross-validation fold (no OPT graph or no annotation text)"
            elif fold in fold_problem:
                reason = fold_problem[fold]
            else:
                reason = f"not held out in the search index of its fold {fold}"
            entry = {"scored": False, "remark": reason}
        out.append(_row(qid, row, fold, entry, labels, _leads_of(finder, qid, entry)))
    out.sort(key=order)
    return pa.Table.from_pylist(out, schema=AUDIT_SCHEMA)


def _audit_fold(
    fold: int,
    index: pa.Table,
    by_qid: Mapping[str, Mapping[str, Any]],
    models: Mapping[tuple[int, str], LoadedModel],
    concepts: Mapping,
    texts: TextVectors,
    aggregation: str,
) -> dict[str, dict[str, Any]]:
    vectors = serving_vectors(index, fold)
    fold_models: dict[str, LoadedModel | None] = {}
    for name in vectors.weights:
        if registry.get(name).trained:
            if (fold, name) not in models:
                raise ValueError(f"no {name} model")
            fold_models[name] = models[(fold, name)]
        else:
            fold_models[name] = None
    rows = np.flatnonzero(np.asarray(vectors.splits) == HELD_OUT)
    rows = np.array([r for r in rows if vectors.qids[r] in by_qid], dtype=np.int64)
    if not len(rows):
        return {}
    scores = pair_scores(*ensemble_pair_scorers(vectors), rows)
    suggester = ConceptSuggester(vectors, fold_models, concepts, texts, aggregation)
    qids = vectors.qids
    items = [by_qid[qids[r]] for r in rows]
    suggestions = suggester.suggest([int(r) for r in rows], items)
    fits = suggester.concept_fit([int(r) for r in rows], items)
    out = {}
    for i, r in enumerate(rows):
        item = items[i]
        labels = {c.get("qid"): c.get("label") for c in item.get("concepts") or []}
        out[qids[r]] = {
            "scored": True,
            "remark": None if item.get("concepts") else "no concepts annotated",
            "pool": len(qids),
            RANKS[0]: int(scores.forward_rank[i]),
            RANKS[1]: int(scores.backward_rank[i]),
            "margin_formula_to_annotation": float(scores.forward_margin[i]),
            "margin_annotation_to_formula": float(scores.backward_margin[i]),
            "suspicion": suspicion(fits[i]),
            "concept_fit": [
                {"qid": q, "label": labels.get(q), "percentile": p}
                for q, p in sorted(fits[i].items(), key=lambda kv: -kv[1])
            ],
            "preferred_annotations": [qids[j] for j in scores.preferred_annotations[i]],
            "preferred_formulae": [qids[j] for j in scores.preferred_formulae[i]],
            "missing_concepts": suggestions[i],
        }
    return out


def order(row: Mapping[str, Any]) -> tuple:
    """The editors' queue: the strongest lead first, then the items the held-out models
    doubt most, then the rest."""
    return (-row["priority"], row["suspicion"] is None, -(row["suspicion"] or 0.0), row["qid"])


def _leads_of(finder: LeadFinder | None, qid: str, entry: Mapping[str, Any]) -> list[Lead]:
    """The item's leads, its concepts' percentiles under the held-out models as the doubt."""
    at = finder.catalogue.row(qid) if finder is not None else None
    if finder is None or at is None:
        return []
    doubt = {f["qid"]: f["percentile"] for f in entry.get("concept_fit") or []}
    return finder.leads(at, doubt)


def _row(
    qid: str,
    item: Mapping[str, Any],
    fold: int | None,
    entry: Mapping[str, Any],
    labels: Mapping[str, str | None],
    leads: Sequence[Lead] = (),
) -> dict[str, Any]:
    suggestions: list[Suggestion] = entry.get("missing_concepts") or []
    row = {
        **dict.fromkeys(AUDIT_SCHEMA.names),
        **entry,
        "qid": qid,
        "label": item.get("label"),
        "url": WIKIDATA + qid,
        "priority": priority(leads),
        "kind": leads[0].kind if leads else None,
        "leads": [{**lead.__dict__, "items": list(lead.items)} for lead in leads],
        "fold": fold,
        "num_concepts": len(item.get("concepts") or []),
        "unannotated_symbols": unannotated_symbols(item),
        "missing_concepts": [
            {"qid": s.qid, "label": s.label, "score": s.score, "symbol": s.symbol}
            for s in suggestions
        ],
    }
    row["finding"] = finding(row, labels)
    return row


def _named(qid: str, labels: Mapping[str, str | None]) -> str:
    return f"{labels.get(qid) or '(no label)'} ({qid})"


SHOWN_LEADS = 2  # the leads a finding spells out; the rest are counted


def finding(row: Mapping[str, Any], labels: Mapping[str, str | None]) -> str:
    """What to do, in words, for an editor: the strongest leads, else what the held-out
    models doubt."""
    leads = row.get("leads") or []
    if leads:
        text = "; ".join(lead["text"] for lead in leads[:SHOWN_LEADS])
        more = len(leads) - SHOWN_LEADS
        return text + (f" (and {more} more lead{'s' if more > 1 else ''})" if more > 0 else "")
    if not row["scored"]:
        return f"not audited: {row['remark']}"
    parts = []
    if row["num_concepts"] == 0:
        parts.append("no concepts annotated")
    worst = [f for f in row.get("concept_fit") or [] if f["percentile"] >= WORST_FIT]
    if worst:
        named = ", ".join(
            f"{f['label'] or f['qid']} ({f['qid']}, {f['percentile']:.0%})" for f in worst[:3]
        )
        parts.append(f"concepts its formula relates to less than most of the vocabulary: {named}")
    if row["margin_formula_to_annotation"] > 0 and row[RANKS[0]] > 10:
        parts.append(
            f"its formula fits the annotation of {_named(row['preferred_annotations'][0], labels)}"
            f" better (own annotation ranks {row[RANKS[0]]})"
        )
    lacking = suggested(row, 3)
    if lacking:
        parts.append(f"may lack: {lacking}")
    return "; ".join(parts) or "looks consistent"


def suggested(row: Mapping[str, Any], top: int) -> str:
    """The first concepts the item may lack, with the symbol where one is named."""
    out = []
    for s in (row["missing_concepts"] or [])[:top]:
        name = f"{s['label'] or s['qid']} ({s['qid']})"
        out.append(f"{name} for {s['symbol']}" if s["symbol"] else name)
    return ", ".join(out)


def top_rows(audit: pa.Table, top: int) -> list[dict[str, Any]]:
    """The first `top` rows of the queue with something to show (a lead or a suspicion; the
    table is stored in queue order)."""
    rows = (r for r in audit.to_pylist() if r.get("leads") or r["suspicion"] is not None)
    return [r for _, r in zip(range(top), rows, strict=False)]


def review_queue(audit: pa.Table) -> list[dict[str, Any]]:
    """The editors' review queue: one finding per lead, in queue order, then one for each
    item only the held-out models doubt (a table written before leads: one per scored row)."""
    out = []
    for r in audit.to_pylist():
        item = {"qid": r["qid"], "label": r.get("label"), "suspicion": r.get("suspicion")}
        leads = r.get("leads") or []
        for lead in leads:
            out.append(
                {
                    **item,
                    "kind": lead["kind"],
                    "finding": lead["text"],
                    "score": lead["score"],
                    "symbol": lead["symbol"],
                    "concept": lead["concept"],
                    "suggestion": lead["suggestion"],
                    "evidence": lead["items"] or [],
                    "quickstatements": [lead["quickstatements"]] if lead["quickstatements"] else [],
                }
            )
        if not leads and r.get("scored") and r.get("suspicion") is not None:
            out.append(
                {
                    **item,
                    "kind": None,
                    "finding": r.get("finding"),
                    "score": None,
                    "symbol": None,
                    "concept": None,
                    "suggestion": None,
                    "evidence": r.get("preferred_annotations") or [],
                    "quickstatements": [],
                }
            )
    return out


TSV_COLUMNS = (
    "item", "label", "url", "kind", "what to do", "suggested concept", "QuickStatements",
    "score", "suspicion", "rank formula→annotation", "rank annotation→formula",
)  # fmt: skip


def tsv_rows(audit: pa.Table, top: int) -> list[list[str]]:
    """The editors' list: one line per lead of the first `top` items of the queue (one line
    for an item only the models doubt). QuickStatements in its one-line form: `|` between
    fields, `||` between commands."""
    return [[_cell(c) for c in line] for r in top_rows(audit, top) for line in _tsv_lines(r)]


def _cell(text: str) -> str:
    """A TSV cell: no tab or line break inside."""
    return " ".join(text.split("\t")).replace("\r", " ").replace("\n", " ")


def _number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _tsv_lines(r: Mapping[str, Any]) -> list[list[str]]:
    item = [r["qid"], r["label"] or "", r["url"]]
    model = [_number(r["suspicion"], 4), str(r[RANKS[0]] or ""), str(r[RANKS[1]] or "")]
    leads = r.get("leads") or []
    if not leads:
        return [[*item, "", r["finding"], suggested(r, 5), "", "", *model]]
    return [
        [
            *item,
            lead["kind"],
            lead["text"],
            f"{lead['suggestion_label'] or ''} ({lead['suggestion']})"
            if lead["suggestion"]
            else "",
            (lead["quickstatements"] or "").replace("\t", "|"),
            f"{lead['score']:.3f}",
            *model,
        ]
        for lead in leads
    ]


# -- checks -------------------------------------------------------------------------------


def one_row_per_item(audit: pa.Table, qids: Sequence[str]) -> Outcome:
    """Every formula item has exactly one row, and nothing else has one."""
    rows = audit.column("qid").to_pylist()
    duplicated = sorted(q for q, n in Counter(rows).items() if n > 1)
    missing = sorted(set(qids) - set(rows))
    extra = sorted(set(rows) - set(qids))
    problems = [
        f"{name}: {', '.join(found[:5])}"
        for name, found in (("duplicated", duplicated), ("missing", missing), ("extra", extra))
        if found
    ]
    return Outcome(
        not problems,
        f"one row per item ({len(rows)})" if not problems else "; ".join(problems),
        {"rows": len(rows), "scored": sum(audit.column("scored").to_pylist())},
    )


def ranks_in_range(audit: pa.Table) -> Outcome:
    """Every scored row's ranks lie in 1 … pool and its suspicion in 0 … 1 (none
    without concepts); an unscored row says why."""
    problems = []
    for r in audit.to_pylist():
        if not r["scored"]:
            if not r["remark"]:
                problems.append(f"{r['qid']}: not scored, no reason")
            continue
        for column in RANKS:
            if r[column] is None or not 1 <= r[column] <= (r["pool"] or 0):
                problems.append(f"{r['qid']}: {column} {r[column]} of {r['pool']}")
        value = r["suspicion"]
        fine = value is None if not r["concept_fit"] else value is not None and 0 <= value <= 1
        if not fine:
            problems.append(f"{r['qid']}: suspicion {r['suspicion']} for {r['num_concepts']}")
    return Outcome(
        not problems,
        "ranks within the candidate pool, suspicion within 0 … 1"
        if not problems
        else f"{len(problems)} problem(s): {problems[0]}",
        {"problems": problems[:20]},
    )


def loaded_models(trained: Sequence[TrainedModel]) -> dict[tuple[int, str], LoadedModel]:
    """(fold, method) → each trained model (`fold_models`' values) loaded by its method, as
    the search loads one from the model store (`TrainedMethod.loaded`)."""
    return {(m.fold, m.method): registry.trained_method(m.method).loaded(m) for m in trained}
