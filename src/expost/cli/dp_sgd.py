"""``expost reproduce dp-sgd``: accuracy-first DP-SGD against fixed, doubling and oracle budgets."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from expost.apps.learning.accounting import DELTA
from expost.apps.learning.data import DATASETS
from expost.apps.learning.experiment import run_all, summarise
from expost.apps.learning.figures import plot_summary
from expost.apps.learning.methods import Run
from expost.apps.learning.setup import SETUPS
from expost.cli._progress import ProgressLine

__all__ = ["add_parser", "run"]

QUICK_SEEDS = 3
QUICK_DATASET = "breast_cancer"


def _table(summary: list[dict[str, Any]]) -> str:
    lines = [
        (
            f"eps spent at delta = {DELTA:g}: median (IQR), share of runs meeting the target on "
            "held-out test rows"
        ),
        (
            f"{'dataset':<14}{'target':>7}  {'method':<15}{'median eps':>11}{'IQR':>17}"
            f"{'met':>7}{'steps':>8}{'checks':>7}"
        ),
    ]
    for row in summary:
        e = row["eps"]
        lines.append(
            f"{row['dataset']:<14}{row['target']:>7g}  {row['method']:<15}{e['median']:>11.3f}"
            f"{'[' + format(e['q25'], '.3f') + ', ' + format(e['q75'], '.3f') + ']':>17}"
            f"{row['met_share']:>7.0%}{row['median_steps']:>8.0f}{row['median_checks']:>7.0f}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run the reproduction; write ``dp_sgd.json`` and ``dp_sgd.png`` into ``--out``."""
    seeds = args.seeds if args.seeds is not None else (QUICK_SEEDS if args.quick else 50)
    if seeds < 1:
        print(f"expost reproduce dp-sgd: --seeds must be >= 1, got {seeds}", file=sys.stderr)
        return 2
    bad = [t for t in args.target or () if not 0.0 < t < 1.0]
    if bad:
        print(
            f"expost reproduce dp-sgd: --target must lie in (0, 1), got {bad[0]}", file=sys.stderr
        )
        return 2
    if args.jobs < 1:
        print(f"expost reproduce dp-sgd: --jobs must be >= 1, got {args.jobs}", file=sys.stderr)
        return 2
    names = args.dataset or ([QUICK_DATASET] if args.quick else list(DATASETS))
    setups = [SETUPS[n] for n in names]
    targets = None if args.target is None else args.target
    if args.quick and targets is None:
        targets_by: dict[str, tuple[float, ...] | None] = {s.dataset: s.targets[:1] for s in setups}
    else:
        targets_by = {s.dataset: None if targets is None else tuple(targets) for s in setups}
    line = ProgressLine()
    total, done = seeds * len(setups), 0
    runs: list[Run] = []

    def tick() -> None:
        nonlocal done
        done += 1
        line.show(done / total, f"{done}/{total} seeds")

    tasks = [(s.dataset, seed, targets_by[s.dataset]) for s in setups for seed in range(seeds)]
    try:
        runs.extend(run_all(tasks, args.jobs, tick))
    except ImportError as exc:
        print(f"expost reproduce dp-sgd: {exc}", file=sys.stderr)
        return 2
    finally:
        line.close()
    summary = summarise(runs)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "experiment": "accuracy-first DP-SGD (issue 36)",
        "delta": DELTA,
        "seeds": seeds,
        "setups": {s.dataset: s.describe() for s in setups},
        "summary": summary,
        "runs": [r.to_json() for r in runs],
    }
    json_path = out / "dp_sgd.json"
    json_path.write_text(json.dumps(document, indent=1) + "\n")
    print(_table(summary))
    try:
        plot_summary(summary, out / "dp_sgd.png")
    except ImportError as exc:
        print(f"expost reproduce dp-sgd: wrote {json_path}; {exc}", file=sys.stderr)
        return 1
    print(f"wrote {json_path}, {out / 'dp_sgd.png'}")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``expost reproduce dp-sgd``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "dp-sgd",
        help="accuracy-first DP-SGD: train until a private check passes, report what was spent",
        description=(
            "Accuracy-first DP-SGD (logistic/softmax regression) against fixed-budget, doubling "
            "and oracle baselines: median (IQR) eps at delta = 1e-5 and the share of runs "
            "meeting the target accuracy on held-out test rows."
        ),
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_SEEDS} seeds, {QUICK_DATASET} only, its first target (under a minute)",
    )
    p.add_argument(
        "--out", type=Path, default=Path("."), help="directory for dp_sgd.json and dp_sgd.png"
    )
    p.add_argument(
        "--seeds", type=int, default=None, help="number of seeds 0..N-1 (default 50; quick 3)"
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="processes to run the seeds on (results do not depend on it; default 1)",
    )
    p.add_argument(
        "--dataset",
        action="append",
        choices=DATASETS,
        help="a data set to run (repeatable; default all five, quick breast_cancer)",
    )
    p.add_argument(
        "--target",
        action="append",
        type=float,
        help="a target test accuracy in (0, 1) (repeatable; default each data set's own)",
    )
    p.set_defaults(run=run)
