"""One loaded version of the published tables, and the answers made from it.

`Loaded` holds the searcher (names, structure and meaning indexes, the models) and the audit
table of one version; it is built once per published version (`serve.published`) and read by
any number of requests at once: what it caches (formulae made safe to show, query vectors) is
keyed by content, so two requests that race fill it with the same value.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pyarrow as pa
from upath import UPath

from formula_assets.audit.table import review_queue
from formula_assets.core import lake
from formula_assets.search.catalogue import WIKIDATA
from formula_assets.search.meaning import SearchError, latex_to_mathml
from formula_assets.search.searcher import MATHML, TEXT, Searcher
from formula_assets.search.structure import query_keys
from formula_assets.syntax.canonical import TooDeep
from formula_assets.syntax.display import display_mathml
from formula_assets.syntax.mathml import MathMLError, ParseOptions

SIMILAR = 6  # formulae nearest an item's by structure, on its page
SHOWN_CACHE = 20_000  # formulae kept made safe to show


class _Shown:
    """Formulae made safe to show, by their MathML (a bounded cache: least recent go)."""

    def __init__(self, options: ParseOptions, size: int = SHOWN_CACHE) -> None:
        self.options = options
        self.size = size
        self._cache: OrderedDict[str, str | None] = OrderedDict()

    def __call__(self, mathml: str | None) -> str | None:
        if not mathml:
            return None
        if mathml in self._cache:
            self._cache.move_to_end(mathml)
            return self._cache[mathml]
        try:
            shown: str | None = display_mathml(mathml, self.options)
        except MathMLError:
            shown = None  # a formula the parser refuses is not shown
        self._cache[mathml] = shown
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return shown


class Loaded:
    """The searcher and the audit of one published version."""

    def __init__(self, root: UPath, searcher: Searcher, audit: pa.Table | None) -> None:
        self.root = root
        self.searcher = searcher
        self.audit_table = audit
        self._queue: list[dict[str, Any]] | None = None
        self.shown = _Shown(searcher.options)

    @classmethod
    def load(cls, root: UPath, **searcher_options: Any) -> Loaded:
        searcher = Searcher(root, compact=True, **searcher_options)
        path = root / "annotation_audit.parquet"
        audit = lake.read_parquet(path) if path.exists() else None
        loaded = cls(root, searcher, audit)
        loaded.warm()
        if audit is not None:
            loaded.queue()
        return loaded

    def warm(self) -> None:
        """A text and a formula query: the models and the sentence encoder load now, not in
        the first user's request."""
        self.searcher.search("energy", TEXT, top=1)
        self.searcher.search("<math><mi>E</mi><mo>=</mo><mi>m</mi></math>", MATHML, top=1)

    # -- answers ---------------------------------------------------------------------------

    def search(self, query: str, kind: str, top: int) -> dict[str, Any]:
        result = self.searcher.search(query, kind, top).as_json()
        for hit in result["hits"]:
            hit["display_mathml"] = self.shown(hit["mathml"])
        if result.get("mathml"):
            result["display_mathml"] = self.shown(result["mathml"])
        return result

    def item(self, qid: str) -> dict[str, Any] | None:
        catalogue = self.searcher.catalogue
        row = catalogue.row(qid)
        if row is None:
            return None
        mathml = catalogue.mathml[row]
        # a concept may be annotated with several symbols (the legs a and b of a right
        # triangle are both "cathetus"): each annotation takes its concept's next symbol
        symbols: dict[str, list[str | None]] = {}
        descriptions: dict[str, str | None] = {}
        for c in catalogue.concepts[row]:
            symbols.setdefault(c.get("qid"), []).append(c.get("symbol_mathml"))
            descriptions[c.get("qid")] = c.get("description")
        concepts = [
            {
                "qid": a.concept,
                "label": a.label,
                "description": descriptions.get(a.concept),
                "url": WIKIDATA + a.concept,
                "symbol": a.identifier,
                "symbol_display_mathml": self.shown(
                    symbols[a.concept].pop(0) if symbols.get(a.concept) else None
                ),
            }
            for a in catalogue.annotations[row]
        ]
        return {
            "qid": qid,
            "url": WIKIDATA + qid,
            "label": catalogue.labels[row],
            "description": catalogue.descriptions[row],
            "aliases": catalogue.aliases[row],
            "mathml": mathml,
            "display_mathml": self.shown(mathml),
            # an item may state several defining formulae: the first is `mathml`
            "other_formulae": [
                {"mathml": other, "display_mathml": self.shown(other)}
                for other in catalogue.other_formulae[row]
            ],
            "concepts": concepts,
            "trained_on": _trained_on(self.searcher.meaning.split_of(qid)),
            "similar": self._similar(qid, mathml),
        }

    def _similar(self, qid: str, mathml: str | None) -> list[dict[str, Any]]:
        """The formulae nearest this one by structure (not itself)."""
        if not mathml:
            return []
        try:
            keys = query_keys(mathml, self.searcher.options)
        except (MathMLError, TooDeep):
            return []
        structure = self.searcher.structure
        scores = structure.score(keys).scores
        catalogue = self.searcher.catalogue
        out = []
        for at in np.argsort(-scores, kind="stable")[: SIMILAR + 1]:
            other = structure.qids[at]
            row = catalogue.row(other)
            if other == qid or row is None:
                continue
            out.append(
                {
                    "qid": other,
                    "label": catalogue.labels[row],
                    "score": round(float(scores[at]), 4),
                    "display_mathml": self.shown(catalogue.mathml[row]),
                }
            )
        return out[:SIMILAR]

    def audit(self, kind: str | None, q: str | None, limit: int, offset: int) -> dict[str, Any]:
        """A page of the review queue, of one kind and for items whose label or QID matches
        `q` where asked."""
        queue = self.queue()
        findings = queue
        if kind:
            findings = [f for f in findings if f["kind"] == kind]
        if q:
            needle = q.strip().lower()
            findings = [
                f for f in findings if needle in (f["label"] or "").lower() or f["qid"] == q.strip()
            ]
        catalogue = self.searcher.catalogue
        page = []
        for finding in findings[offset : offset + limit]:
            at = catalogue.row(finding["qid"])
            page.append(
                {
                    **finding,
                    "url": WIKIDATA + finding["qid"],
                    "symbols": [finding["symbol"]] if finding["symbol"] else [],
                    "display_mathml": self.shown(catalogue.mathml[at] if at is not None else None),
                }
            )
        kinds = list(dict.fromkeys(f["kind"] for f in queue if f["kind"]))
        return {"total": len(findings), "offset": offset, "kinds": kinds, "findings": page}

    def queue(self) -> list[dict[str, Any]]:
        """The audit's review queue, made once per loaded version."""
        if self._queue is None:
            if self.audit_table is None:
                raise SearchError("annotation_audit is not materialized; run `make run` first")
            self._queue = review_queue(self.audit_table)
        return self._queue

    def preview(self, latex: str) -> dict[str, Any]:
        """The LaTeX as MathML the page can show, or where it is wrong."""
        try:
            mathml = latex_to_mathml(latex)
            shown = display_mathml(mathml, self.searcher.options)
        except SearchError as exc:
            return {"error": str(exc), "position": exc.position}
        except MathMLError as exc:
            return {"error": f"the formula does not parse: {exc.reason}", "position": None}
        return {"mathml": mathml, "display_mathml": shown}

    def disagreement(self) -> str | None:
        return self.searcher.disagreement()

    def summary(self) -> dict[str, Any]:
        meaning = self.searcher.meaning
        return {
            "items": len(self.searcher.catalogue),
            "meaning": {"method": meaning.method, "fold": meaning.fold},
            "audit_rows": None if self.audit_table is None else self.audit_table.num_rows,
        }


def _trained_on(split: str | None) -> bool | None:
    return None if split is None else split != "test"
