"""The JSON summary of the ERM reproduction (BNR Sec. 6): per task, method and checker, the
quartiles of the ex-post loss at the stop, how often the target was met, and for the private
validation check its own ex-post zCDP ρ."""

from __future__ import annotations

from typing import Any

import numpy as np

from expost.apps.erm.simulation import (
    ABOVE_THRESHOLD_EPS,
    CHECK_SHARE,
    CHECK_WINDOW,
    CHECKERS,
    DELTA,
    TUNED_EPS,
    Checker,
    MethodResult,
    TaskResult,
)
from expost.apps.erm.tasks import LAMBDA

__all__ = ["summary"]


def _quartiles(res: MethodResult, checker: Checker) -> dict[str, float]:
    values = res.ex_post[checker]
    q25, median, q75 = np.quantile(values, [0.25, 0.5, 0.75])
    return {
        "median": float(median),
        "q25": float(q25),
        "q75": float(q75),
        "mean": float(values.mean()),
        "stopped_fraction": float(res.stopped[checker].mean()),
        "target_met_fraction": float(res.met[checker].mean()),
        "median_loss_at_stop": float(np.median(res.stop_loss[checker])),
        **(
            {"median_check_rho": float(np.median(res.check_rho))} if checker == "validation" else {}
        ),
    }


def summary(results: list[TaskResult], runs: int, seed: int) -> dict[str, Any]:
    """The JSON summary: per task, method and checker, the quartiles of the ex-post loss."""
    tasks: dict[str, Any] = {}
    for r in results:
        tasks[r.task] = {
            "data": r.data,
            "n": r.n,
            "d": r.d,
            "target": r.target,
            "non_private_loss": r.non_private_loss,
            "sensitivities": r.sensitivities,
            "validation_set": r.validation,
            "seconds": r.seconds,
            "levels": r.levels.tolist(),
            "ex_post_loss": {
                m: {c: _quartiles(res, c) for c in CHECKERS} for m, res in r.methods.items()
            },
            "loss_curve": {
                m: {k: v.tolist() for k, v in res.curve.items()} for m, res in r.methods.items()
            },
        }
    return {
        "experiment": "BNR Sec. 6 (accuracy-first private ERM)",
        "runs": runs,
        "seed": seed,
        "lambda": LAMBDA,
        "delta": DELTA,
        "boundary": f"linear, tuned at eps = {TUNED_EPS}",
        "above_threshold_eps": ABOVE_THRESHOLD_EPS,
        "validation_check": (
            f"Brownian, rho_k = {CHECK_SHARE} x BM's rho_k, rule on the last {CHECK_WINDOW} "
            f"increments; eps at delta {DELTA}"
        ),
        "tasks": tasks,
    }
