"""``expost reproduce erm``: run the tasks, write the summary JSON and both figures."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from expost.apps.data import (
    BUNDLED,
    ERMData,
    load_bundled,
    synthetic_classification,
    synthetic_regression,
    synthetic_with_validation,
)
from expost.apps.erm.figures import plot_figure2, plot_figure3
from expost.apps.erm.report import summary
from expost.apps.erm.simulation import (
    CHECKERS,
    DEFAULT_RUNS,
    TaskResult,
    privacy_levels,
    run_task,
    task_chunks,
)
from expost.apps.erm.tasks import (
    TARGETS,
    make_task,
)
from expost.cli._progress import ProgressLine
from expost.cli._scale import add_execution_arguments, execution_of

__all__ = ["add_parser", "run"]


class _Progress:
    """Blocks of runs done, as a `ProgressLine` on stderr."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.line = ProgressLine()

    def tick(self) -> None:
        self.done += 1
        self.line.show(self.done / self.total, f"{self.done}/{self.total}")

    def close(self) -> None:
        self.line.close()


def _dataset(data: str, task: str, seed: np.random.SeedSequence) -> ERMData:
    classification = task == "logistic"
    if data == "synthetic":
        rng = np.random.default_rng(seed)
        return synthetic_classification(rng) if classification else synthetic_regression(rng)
    if data == "sklearn":
        return load_bundled("breast_cancer" if classification else "diabetes")
    return load_bundled(data)


def _validation(data: str, task: str, seed: np.random.SeedSequence) -> ERMData | None:
    """A held-out validation set for synthetic data (same generator, drawn after the training
    rows, which stay as `_dataset` draws them); None (check on the training data) otherwise."""
    if data != "synthetic":
        return None
    rng = np.random.default_rng(seed)
    if task == "logistic":
        return synthetic_with_validation("classification", rng)[1]
    return synthetic_with_validation("regression", rng)[1]


def _tasks_for(task: str, data: str) -> list[str] | str:
    """The tasks to run, or an error message."""
    if data in BUNDLED:
        own = "logistic" if BUNDLED[data] == "classification" else "ridge"
        if task not in ("both", own):
            return f"data set {data!r} is for the {own} task, not {task!r}"
        return [own]
    return ["logistic", "ridge"] if task == "both" else [task]


def run(args: argparse.Namespace) -> int:
    """``expost reproduce erm``: run the tasks, write the JSON and both figures."""
    names = _tasks_for(args.task, args.data)
    if isinstance(names, str) or args.runs < 2:
        problem = names if isinstance(names, str) else f"--runs must be >= 2, got {args.runs}"
        print(f"expost reproduce erm: {problem}", file=sys.stderr)
        return 2
    # one seed per (data, runs) of each task: a task's results do not depend on the others
    seeds = dict(
        zip(("logistic", "ridge"), np.random.SeedSequence(args.seed).spawn(2), strict=True)
    )
    try:
        tasks = [make_task(_dataset(args.data, name, seeds[name])) for name in names]
    except ImportError as exc:
        print(f"expost reproduce erm: {exc}", file=sys.stderr)
        return 2
    try:
        execution = execution_of(args)
    except ImportError as exc:
        print(f"expost reproduce erm: {exc}", file=sys.stderr)
        return 2
    levels = privacy_levels()
    progress = _Progress(len(tasks) * 2 * task_chunks(args.runs))
    results = []
    for task in tasks:
        target = TARGETS[task.data.name if task.data.name in TARGETS else task.name]
        results.append(
            run_task(
                task,
                levels,
                args.runs,
                seeds[task.name].spawn(1)[0],
                target=target,
                tick=progress.tick,
                execution=execution,
                validation=_validation(args.data, task.name, seeds[task.name]),
            )
        )
    progress.close()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    json_path: Path = args.json if args.json is not None else out / "erm_summary.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(summary(results, args.runs, args.seed), indent=2) + "\n")
    try:
        plot_figure2(results, out / "figure2.png")
        plot_figure3(results, out / "figure3.png")
    except ImportError as exc:
        print(f"expost reproduce erm: wrote {json_path}; {exc}", file=sys.stderr)
        return 1
    print(_table(results))
    print(f"wrote {json_path}, {out / 'figure2.png'}, {out / 'figure3.png'}")
    return 0


def _table(results: list[TaskResult]) -> str:
    lines = [
        "median ex-post privacy loss at the stop (share of runs whose model meets the target)",
        f"{'task':<9}{'method':<7}" + "".join(f"{c[:24]:>26}" for c in CHECKERS),
    ]
    for r in results:
        for m, res in r.methods.items():
            cells = "".join(
                f"{np.median(res.ex_post[c]):>12.3f} ({res.met[c].mean():>6.1%} met)"
                for c in CHECKERS
            )
            lines.append(f"{r.task:<9}{m:<7}{cells}")
        lines.append(
            f"  {r.task} ({r.data}): {r.seconds:.1f} s, non-private loss "
            f"{r.non_private_loss:.4f}, target {r.target:g}; validation check on {r.validation}"
        )
    return "\n".join(lines)


def add_parser(sub: Any) -> None:
    """Register ``expost reproduce erm``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "erm",
        help="BNR Sec. 6: private logistic and ridge regression (Figures 2 and 3)",
        description="Accuracy-first private ERM: BM vs LNR, three ways of checking accuracy.",
    )
    p.add_argument(
        "--task",
        choices=("logistic", "ridge", "both"),
        default="both",
        help="which regression to run (default both)",
    )
    p.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per task (default 1000)")
    p.add_argument(
        "--data",
        choices=("synthetic", "sklearn", *sorted(BUNDLED)),
        default="synthetic",
        help="synthetic (paper sizes) or a data set bundled with scikit-learn",
    )
    p.add_argument(
        "--out", type=Path, default=Path("erm-results"), help="directory for the figures"
    )
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="summary JSON path")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    add_execution_arguments(p)
    p.set_defaults(run=run)
