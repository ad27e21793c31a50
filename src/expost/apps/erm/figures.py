"""BNR Figures 2 and 3 from the simulation's results (matplotlib, imported when drawing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from expost.apps.erm.simulation import (
    ABOVE_THRESHOLD_EPS,
    CHECKERS,
    TUNED_EPS,
    TaskResult,
)

__all__ = ["plot_figure2", "plot_figure3", "pyplot"]


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend; ImportError naming the extra if it is missing."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("the figures need matplotlib: pip install 'expost[plot]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_COLOURS = {"BM": "tab:blue", "LNR": "tab:orange"}
_TITLES = {"logistic": "regularised logistic loss", "ridge": "ridge loss"}
_CHECKER_TITLES = {
    "public": "training data as public",
    "above_threshold": f"AboveThreshold (eps = {ABOVE_THRESHOLD_EPS})",
    "reduced_above_threshold": "ReducedAboveThreshold",
    "validation": "private validation check (ex-post RDP)",
}


def plot_figure2(results: list[TaskResult], path: Path) -> None:
    """BNR Figure 2: average loss against the (guaranteed / high-probability) privacy loss."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.2), squeeze=False)
    for ax, r in zip(axes[0], results, strict=True):
        for m, res in r.methods.items():
            c = res.curve
            ax.plot(r.levels, c["mean"], color=_COLOURS[m], label=m)
            ax.fill_between(r.levels, c["low"], c["high"], color=_COLOURS[m], alpha=0.3)
        ax.axhline(r.target, color="grey", ls="--", lw=1, label=f"target {r.target:g}")
        ax.axvline(TUNED_EPS, color="grey", ls=":", lw=1, label=f"BM tuned at {TUNED_EPS}")
        ax.set_xscale("log")
        if r.methods["BM"].curve["mean"].max() > 10.0 * r.target:
            ax.set_yscale("log")
        ax.set_xlabel("privacy loss (LNR: guaranteed; BM: with probability 1 − 1e-6)")
        ax.set_ylabel(f"average {_TITLES.get(r.task, r.task)}")
        ax.set_title(f"{r.task} ({r.data}, n = {r.n}, d = {r.d})")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_figure3(results: list[TaskResult], path: Path) -> None:
    """BNR Figure 3: ex-post privacy loss at the stop, per checker, BM vs LNR."""
    plt = pyplot()
    fig, axes = plt.subplots(
        len(results), len(CHECKERS), figsize=(5 * len(CHECKERS), 3.6 * len(results)), squeeze=False
    )
    for row, r in zip(axes, results, strict=True):
        everything = np.concatenate(
            [res.ex_post[c] for res in r.methods.values() for c in CHECKERS]
        )
        bins = np.geomspace(everything.min() * 0.95, everything.max() * 1.05, 40)
        for ax, c in zip(row, CHECKERS, strict=True):
            for m, res in r.methods.items():
                values = res.ex_post[c]
                median = float(np.median(values))
                ax.hist(
                    values,
                    bins=bins,
                    color=_COLOURS[m],
                    alpha=0.55,
                    label=f"{m}: median {median:.3g}",
                )
                ax.axvline(median, color=_COLOURS[m], lw=1.5)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(plt.NullFormatter())  # minor labels overlap
            ax.set_xlabel("ex-post privacy loss at the stop")
            ax.set_ylabel("runs")
            ax.set_title(f"{r.task}: {_CHECKER_TITLES[c]}", fontsize=10)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
