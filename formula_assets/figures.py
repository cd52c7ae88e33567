"""PNG figures for asset metadata and the report (matplotlib, no display needed)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(figure)
    return buffer.getvalue()


def cca_components_figure(curves: Mapping[str, np.ndarray]) -> bytes:
    """Canonical correlation per component, one line per variant (in-sample, held-out, …)."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for label, values in curves.items():
        axes.plot(np.arange(1, len(values) + 1), values, marker=".", label=label)
    axes.set_xlabel("canonical component")
    axes.set_ylabel("correlation")
    axes.set_ylim(min(0.0, *(float(np.min(v)) for v in curves.values() if len(v))) - 0.02, 1.0)
    axes.grid(alpha=0.3)
    axes.legend()
    axes.set_title("CCA: structural vs semantic embeddings")
    return _png(figure)


def cosine_null_figure(
    cosines: np.ndarray, null_cosines: np.ndarray, null_means: np.ndarray
) -> bytes:
    """Per-formula cosine of true pairs against shuffled pairs, and the null of the mean."""
    plt = _pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.6))
    bins = np.linspace(-1, 1, 61)
    left.hist(null_cosines, bins=bins, alpha=0.6, label="shuffled pairs", density=True)
    left.hist(cosines, bins=bins, alpha=0.6, label="true pairs", density=True)
    left.set_xlabel("cosine (PCA spaces)")
    left.set_ylabel("density")
    left.legend()
    left.set_title("per-formula cosine")
    right.hist(null_means, bins=40, alpha=0.7, label="permutation null")
    right.axvline(float(np.mean(cosines)), color="C1", label="observed mean")
    right.set_xlabel("mean cosine")
    right.legend()
    right.set_title("permutation test")
    return _png(figure)


def line_figure(
    series: Mapping[str, Sequence[float]], xlabel: str, ylabel: str, title: str
) -> bytes:
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for label, values in series.items():
        axes.plot(np.arange(1, len(values) + 1), values, label=label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    if len(series) > 1:
        axes.legend(fontsize="small")
    return _png(figure)


def recall_bars_figure(rows: Sequence[Mapping[str, object]], directions: Sequence[str]) -> bytes:
    """Mean R@1/5/10 per method, one panel per retrieval direction."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(directions), figsize=(5.2 * len(directions), 3.8))
    axes = np.atleast_1d(axes)
    for ax, direction in zip(axes, directions, strict=True):
        chosen = [r for r in rows if r["direction"] == direction]
        methods = [str(r["method"]) for r in chosen]
        x = np.arange(len(methods))
        for offset, k in zip((-0.25, 0.0, 0.25), (1, 5, 10), strict=True):
            ax.bar(x + offset, [float(r[f"recall_at_{k}"]) for r in chosen], 0.25, label=f"R@{k}")
        ax.set_xticks(x, methods, rotation=30, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(direction.replace("_", " "))
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("recall (mean over folds)")
    axes[-1].legend()
    return _png(figure)
