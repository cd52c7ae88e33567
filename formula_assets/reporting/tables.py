"""Tables 1 and 2 as rows of text, for the report and the asset pages alike."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from formula_assets.analysis.correspondence import PAPER_TABLE_1
from formula_assets.evaluation.retrieval import table_2
from formula_assets.evaluation.significance import Comparison

TABLE_1_COLUMNS = ["metric", "ours", "paper", "note"]
TABLE_2_COLUMNS = ["direction", "method", "R@1", "R@5", "R@10", "MRR", "paper R@1/5/10/MRR"]
SIGNIFICANCE_COLUMNS = [
    "method",
    "compared with",
    "direction",
    "Δ mean RR",
    "Wilcoxon p (queries)",
    "Holm-adjusted p",
    "paired t p (folds)",
]


def _paper_cell(name: str) -> str:
    value = PAPER_TABLE_1.get(name)
    if value is None:
        return "—"
    return value if isinstance(value, str) else f"{value:.4f}"


def _count(value: Any) -> str:
    return f"{int(value):,}"


def detail_note(metric: str, detail: dict[str, Any]) -> str:
    """The few numbers of a metric's detail that a reader needs, rounded, in words."""
    notes: list[str] = []
    if "chance" in detail:
        notes.append(f"chance {detail['chance']:.4f}")
    if "semantic_to_structural" in detail:
        notes.append(f"reverse {detail['semantic_to_structural']:.4f}")
    if "standard_error" in detail and detail.get("queries"):
        notes.append(f"SE {detail['standard_error']:.4f} over {_count(detail['queries'])} queries")
    if "null_mean" in detail:
        notes.append(f"null {detail['null_mean']:.4f} ± {detail['null_std']:.4f}")
    if "permutations" in detail:
        notes.append(f"{_count(detail['permutations'])} permutations")
    if "mantel_permutations" in detail:
        notes.append(f"Mantel test, {_count(detail['mantel_permutations'])} permutations")
    if "parametric_p_value" in detail:
        notes.append(f"parametric p {detail['parametric_p_value']:.1e}")
    if "minimum" in detail:
        notes.append(f"range {detail['minimum']:.2f}–{detail['maximum']:.2f}")
    if "fit_fraction" in detail:
        notes.append(f"fit on {detail['fit_fraction']:.0%}, correlated on the rest")
    if "meaning" in detail:
        notes.append(str(detail["meaning"]))
    if "pca_dimensions" in detail:
        notes.append(f"PCA to {detail['pca_dimensions']} dimensions")
    if "components" in detail and "minimum" not in detail:
        notes.append(f"{detail['components']} components")
    if "formulae" in detail:
        pairs = f" ({_count(detail['pairs'])} pairs)" if "pairs" in detail else ""
        notes.append(f"{_count(detail['formulae'])} formulae{pairs}")
    return "; ".join(notes)


def table_1_rows(metrics: pa.Table) -> list[list[str]]:
    rows = []
    for name, value, detail in zip(
        metrics["metric"].to_pylist(),
        metrics["value"].to_pylist(),
        metrics["detail"].to_pylist(),
        strict=True,
    ):
        note = detail_note(name, json.loads(detail)) if detail else ""
        rows.append([name, f"{value:.4f}", _paper_cell(name), note])
    return rows


def _cell(mean: float, std: float) -> str:
    return f"{mean:.3f} ± {std:.3f}"


def table_2_rows(scores: pa.Table) -> list[list[str]]:
    rows = []
    for row in table_2(scores):
        paper = row["paper"]
        rows.append(
            [
                str(row["direction"]).replace("_", " "),
                str(row["method"]),
                *(_cell(row[f"recall_at_{k}"], row[f"recall_at_{k}_std"]) for k in (1, 5, 10)),
                _cell(row["mrr"], row["mrr_std"]),
                " / ".join(f"{v:.3f}" for v in paper) if paper else "—",
            ]
        )
    return rows


def significance_rows(comparisons: Sequence[Comparison]) -> list[list[str]]:
    return [
        [
            c.method,
            c.baseline,
            c.direction.replace("_", " "),
            f"{c.mean_rr_difference:+.3f}",
            f"{c.wilcoxon_p:.1e}",
            f"{c.holm_p:.1e}",
            f"{c.fold_t_p:.1e}",
        ]
        for c in comparisons
    ]


AUDIT_COLUMNS = ["#", "item", "label", "kind", "what to do", "suspicion"]


def audit_summary(audit: pa.Table) -> str:
    """How many items the annotation audit scored and how many have a lead for editors."""
    rows = audit.to_pylist()
    scored = sum(1 for r in rows if r["scored"])
    leads = sum(1 for r in rows if r.get("leads"))
    return (
        f"{leads:,} of {audit.num_rows:,} formula items have a lead for editors (a quantity "
        "without a concept, exchanged or doubted symbols, a symbol the formula does not "
        f"write); {scored:,} are scored by the fold models that never trained on them. The "
        "head of the queue (all: `formula-assets audit`; what each kind means: docs/audit.md):"
    )


def audit_rows(audit: pa.Table, top: int = 10) -> list[list[str]]:
    """The first `top` items of the editors' queue with a lead or a suspicion (the
    `annotation_audit` table is stored in queue order)."""
    shown = [r for r in audit.to_pylist() if r.get("leads") or r["suspicion"] is not None]
    return [
        [
            str(n),
            r["url"],
            r["label"] or "",
            r.get("kind") or "",
            r["finding"],
            "" if r["suspicion"] is None else f"{r['suspicion']:.3f}",
        ]
        for n, r in enumerate(shown[:top], 1)
    ]
