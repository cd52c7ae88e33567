"""PNG figures of the report and the asset pages: curves and recall bars."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from formula_assets.core.plots import png, pyplot


def line_figure(
    series: Mapping[str, Sequence[float]], xlabel: str, ylabel: str, title: str
) -> bytes:
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for label, values in series.items():
        axes.plot(np.arange(1, len(values) + 1), values, label=label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    if len(series) > 1:
        axes.legend(fontsize="small")
    return png(figure)


def recall_bars_figure(rows: Sequence[Mapping[str, object]], directions: Sequence[str]) -> bytes:
    """Mean R@1/5/10 per method, one panel per retrieval direction."""
    plt = pyplot()
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
    return png(figure)
