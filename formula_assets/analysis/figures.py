"""The figures of Table 1: canonical correlation per component, and cosine against the null."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from formula_assets.core.plots import png, pyplot

# Where `correspondence_metrics` writes its figures, under the data lake root.
FIGURE_DIR = ("figures", "correspondence_metrics")
CCA_FIGURE = "cca_components.png"
COSINE_FIGURE = "cosine_null.png"


def cca_components_figure(curves: Mapping[str, np.ndarray]) -> bytes:
    """Canonical correlation per component, one line per variant (in-sample, held-out, …)."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for label, values in curves.items():
        axes.plot(np.arange(1, len(values) + 1), values, marker=".", label=label)
    axes.set_xlabel("canonical component")
    axes.set_ylabel("correlation")
    axes.set_ylim(min(0.0, *(float(np.min(v)) for v in curves.values() if len(v))) - 0.02, 1.0)
    axes.grid(alpha=0.3)
    axes.legend()
    axes.set_title("CCA: structural vs semantic embeddings")
    return png(figure)


def cosine_null_figure(
    cosines: np.ndarray, null_cosines: np.ndarray, null_means: np.ndarray
) -> bytes:
    """Per-formula cosine of true pairs against shuffled pairs, and the null of the mean."""
    plt = pyplot()
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
    return png(figure)
