"""The DP-SGD reproduction's figure: median ε (IQR bars) per method, one panel per data set."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from expost.apps.erm.figures import pyplot
from expost.apps.learning.methods import METHODS

__all__ = ["plot_summary"]

_COLOURS = {
    "accuracy-first": "tab:blue",
    "fixed": "tab:grey",
    "doubling": "tab:orange",
    "oracle": "tab:green",
}


def plot_summary(summary: Sequence[dict[str, Any]], path: Path) -> None:
    """Bars of the median ε at δ = 1e-5 with IQR whiskers, grouped by target, labelled with
    the share of runs that met the target on the test rows."""
    plt = pyplot()
    datasets = sorted({row["dataset"] for row in summary})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 4.2), squeeze=False)
    width = 0.8 / len(METHODS)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        rows = [row for row in summary if row["dataset"] == dataset]
        targets = sorted({row["target"] for row in rows})
        for k, method in enumerate(METHODS):
            cells = {row["target"]: row for row in rows if row["method"] == method}
            x = np.arange(len(targets)) + (k - (len(METHODS) - 1) / 2) * width
            med = np.array([cells[t]["eps"]["median"] for t in targets])
            low = med - np.array([cells[t]["eps"]["q25"] for t in targets])
            high = np.array([cells[t]["eps"]["q75"] for t in targets]) - med
            ax.bar(x, med, width, yerr=[low, high], color=_COLOURS[method], label=method, capsize=2)
            for xi, t, m in zip(x, targets, med, strict=True):
                ax.annotate(
                    f"{cells[t]['met_share']:.0%}",
                    (xi, m),
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
        ax.set_xticks(np.arange(len(targets)), [f"{t:g}" for t in targets])
        ax.set_xlabel("target test accuracy")
        ax.set_ylabel("ε spent at δ = 1e-5 (median, IQR)")
        ax.set_title(dataset)
        ax.legend(fontsize=7)
    fig.suptitle(
        "DP-SGD: privacy spent to reach a target (labels: share meeting it on test)", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
