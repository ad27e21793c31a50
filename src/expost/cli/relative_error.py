"""``expost reproduce relative-error``: the table, the figure (APC Figure 2) and the command.

The experiment itself is `expost.apps.relative_error`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from expost.apps.data import load_counts
from expost.apps.relative_error import (
    ALL_METHODS,
    DEFAULT_SIZES,
    DEFAULT_TRIALS,
    EXACT_METHODS,
    METHODS,
    Report,
    Settings,
    reproduce,
)
from expost.cli._progress import ProgressLine
from expost.cli._scale import add_execution_arguments, execution_of
from expost.errors import InvalidParameter

__all__ = ["EXACT_TRIALS", "add_parser", "plot", "run", "table"]

EXACT_TRIALS = 100
"""Default trials per size when exact methods run (one secure session per trial: slower)."""


def _budget(settings: Settings, report: Report) -> str:
    if settings.accounting == "gdp":
        return f"GDP mu²/2 = {report.rho:.5f} (EM at mu(eps_EM/2)²)"
    return f"rho = {report.rho:.5f} ({settings.conversion})"


def table(report: Report, settings: Settings) -> str:
    """The report as a plain-text table."""
    head = (
        f"APC Sec. 7: relative error alpha = {settings.alpha}, eps_EM = {settings.eps_em}, "
        f"(eps, delta'') = ({settings.eps:g}, {settings.delta:g}) -> {_budget(settings, report)}, "
        f"{settings.grid} grid of {settings.grid_size}"
        + ("" if settings.stop_alpha is None else f", rule checked at {settings.stop_alpha:g}")
    )
    if any(r.method == "skellam" for r in report.rows):
        head += (
            f"\nskellam: ExPostFilter({settings.eps:g}, {settings.delta:g}), boundary tuned for "
            f"level {settings.skellam_level:g}, selection by the exact exponential mechanism at "
            f"eps_EM/2 = {settings.eps_em / 2:g} (doubling-exact: at eps_EM)"
        )
    lines = [
        head,
        (
            f"{'n':>8}  {'method':<14} {'trials':>6}  {'results':>15}  {'precision':>15}  "
            f"{'spent':>13}"
        ),
    ]
    for r in report.rows:
        lines.append(
            f"{r.n:>8}  {r.method:<14} {r.trials:>6}  "
            f"{r.results_mean:>7.2f} ± {r.results_sd:<5.2f}  "
            f"{r.precision_mean:>7.4f} ± {r.precision_sd:<5.4f}  {r.spend_mean:>9.4f} {r.unit:<3}"
        )
    lines.append(f"seed {report.seed}, {report.seconds:.2f} s")
    return "\n".join(lines)


def plot(report: Report, path: Path) -> None:
    """APC Figure 2: results and precision against n, both methods, error bars = sd."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    labels = {
        "bm": "Brownian noise reduction",
        "doubling": "doubling (Gaussian)",
        "doubling-exact": "doubling (discrete Gaussian, exact)",
        "skellam": "Skellam noise reduction (exact, ex-post filter)",
    }
    for method, marker in zip(ALL_METHODS, ("o", "s", "^", "D"), strict=True):
        rows = [r for r in report.rows if r.method == method]
        if not rows:
            continue
        n = [r.n for r in rows]
        axes[0].errorbar(
            n, [r.results_mean for r in rows], [r.results_sd for r in rows],
            marker=marker, capsize=3, label=labels[method],
        )  # fmt: skip
        axes[1].errorbar(
            n, [r.precision_mean for r in rows], [r.precision_sd for r in rows],
            marker=marker, capsize=3, label=labels[method],
        )  # fmt: skip
    sizes = sorted({r.n for r in report.rows})
    for ax, title in zip(axes, ("number of results", "precision"), strict=True):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("n (data size)")
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


class _Progress:
    """Chunks (of sizes x trials) done, as a `ProgressLine`."""

    def __init__(self) -> None:
        self.line = ProgressLine()

    def __call__(self, done: int, total: int) -> None:
        self.line.show(done / total, f"{done}/{total} chunks")

    def close(self) -> None:
        self.line.close()


def add_parser(sub: Any) -> None:
    """Register ``expost reproduce relative-error``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "relative-error",
        help="APC Sec. 7: counts released to relative error, BM vs doubling (Figure 2)",
        description="Release as many Zipf counts as possible within relative error alpha "
        "under one (eps, delta) budget: Brownian noise reduction vs the doubling method; "
        "--exact adds the same with exact integer samplers (discrete Gaussian doubling, Skellam).",
    )
    p.add_argument("--trials", type=int, default=None,
                   help=f"trials per size ({DEFAULT_TRIALS}; {EXACT_TRIALS} with exact methods)")  # fmt: skip
    p.add_argument("--sizes", type=int, nargs="+", default=None, metavar="N",
                   help="data sizes (default 8000 16000 32000 64000 128000)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    p.add_argument("--out", type=Path, default=Path("relative-error-results"),
                   help="directory for relative_error.png")  # fmt: skip
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the rows here")
    p.add_argument("--counts", type=Path, default=None, metavar="FILE",
                   help="your histogram (CSV or JSON) instead of Zipf data")  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.1, help="relative error (0.1)")
    p.add_argument("--eps-em", type=float, default=0.1, help="exponential mechanism eps (0.1)")
    p.add_argument("--eps", type=float, default=10.0, help="total eps (10)")
    p.add_argument("--delta", type=float, default=1e-6, help="total delta'' (1e-6)")
    p.add_argument("--start-eps2", type=float, default=1e-4, help="first eps² (1e-4)")
    p.add_argument("--grid-size", type=int, default=1000, help="BM grid points (1000)")
    p.add_argument("--grid", choices=("linear", "geometric"), default="linear",
                   help="BM grid shape in eps² (linear)")  # fmt: skip
    p.add_argument("--conversion", choices=("bun-steinke", "cks"), default="bun-steinke",
                   help="zCDP -> DP conversion that sets the budget (bun-steinke)")  # fmt: skip
    p.add_argument("--filter", choices=("zcdp", "gdp"), default="zcdp", dest="accounting",
                   help="one filter for both methods: zcdp (the paper's) or gdp")  # fmt: skip
    p.add_argument("--stop-alpha", type=float, default=None, metavar="A",
                   help="relative error the stopping rule checks (default --alpha)")  # fmt: skip
    p.add_argument("--exact", action="store_true",
                   help="add the exact-sampler methods (doubling-exact, skellam) beside the float ones")  # fmt: skip
    p.add_argument("--mechanism", choices=EXACT_METHODS, action="append", default=[],
                   help="add one exact-sampler method (repeatable)")  # fmt: skip
    p.add_argument("--skellam-level", type=float, default=1.0,
                   help="ex-post level the Skellam boundary is tuned for (1)")  # fmt: skip
    p.add_argument("--no-plot", action="store_true", help="skip the figure")
    add_execution_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """The command: table on stdout, figure in --out, JSON if asked. 2 on bad input."""
    try:
        settings = Settings(
            args.alpha, args.eps_em, args.eps, args.delta, args.start_eps2, args.grid_size,
            args.grid, args.conversion, args.stop_alpha, args.accounting, args.skellam_level,
        )  # fmt: skip
        exact = EXACT_METHODS if args.exact else tuple(args.mechanism)
        methods = METHODS + tuple(m for m in EXACT_METHODS if m in exact)
        trials = (
            args.trials if args.trials is not None else (EXACT_TRIALS if exact else DEFAULT_TRIALS)
        )
        if args.counts is not None and args.sizes is not None:
            raise InvalidParameter("sizes", args.sizes, "does not apply with --counts")
        counts = None if args.counts is None else load_counts(args.counts)
        sizes = DEFAULT_SIZES if args.sizes is None else tuple(args.sizes)
        progress = _Progress()
        execution = execution_of(args)
        report = reproduce(
            sizes, trials, args.seed, settings, counts, progress, execution, methods=methods
        )
    except (InvalidParameter, ImportError) as exc:
        print(f"expost reproduce relative-error: {exc}", file=sys.stderr)
        return 2
    progress.close()
    print(table(report, settings))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    if not args.no_plot:
        path = args.out / "relative_error.png"
        try:
            plot(report, path)
        except ImportError:
            print("no figure: matplotlib is missing (pip install 'expost[plot]')", file=sys.stderr)
        else:
            print(f"figure: {path}")
    return 0
