"""Audit: the counting grid that accuracy-first DP-SGD reports, at its own data-dependent stop.

``dp-sgd/accuracy-first/grid``: the learner's loop (`expost.audit.dp_sgd.dp_sgd_run`: its
trainer on Poisson batches, Brownian checks, check budget and stopping rule, unchanged) on the
tiny logistic regression of `expost.audit.dp_sgd`, with the exact privacy loss L of the
transcript (steps revealing the other sampled rows, a post-processing-dominating view; a check's
loss that of its last iterate). The report is ε_K = `CheckedGrid.reported(τ, S)` of the
library's `checked_grid` for that schedule, check budgets (0.8, 3.2) and δ = 0.05. The claim of
docs/apps/dp-sgd.md ("Why the report is valid") is, for every event S of the transcript,
P_x(S) <= E_x'[e^(ε_K)·1_S] + δ; its supremum over S is E_x[(1 − e^(ε_K − L))_+], so the claim
is E[X] <= δ for X = (1 − e^(ε_K − L))_+ (EValueClaim(δ)). Twin: the grid that forgets the
checks (steps' PLD only, the same split of δ), refuted.
"""

from __future__ import annotations

from functools import lru_cache, partial

import numpy as np
import numpy.typing as npt

from expost.apps.learning.accounting import CheckedGrid, checked_grid, counting_grid
from expost.audit.claims import EValueClaim
from expost.audit.core import Audit, Twin
from expost.audit.paper.dp_sgd import CHECK_BUDGET, SCHEDULE, dp_sgd_run
from expost.audit.registry import PAPER, register

__all__ = ["BUDGETS", "DELTA", "dp_sgd_grid_samples", "reported_grid"]

FloatArray = npt.NDArray[np.float64]

DELTA = 0.05
"""The audited δ: large enough for a sampled hockey-stick divergence to have power."""
BUDGETS = (0.8, CHECK_BUDGET)
"""The grid's check budgets S_m (the learner's budget is the last)."""


@lru_cache(maxsize=1)
def reported_grid() -> CheckedGrid:
    """The library's grid for the audited schedule."""
    return checked_grid(SCHEDULE, BUDGETS, DELTA)


@lru_cache(maxsize=1)
def _forgetful() -> tuple[float, ...]:
    """The planted bug: ε of the steps alone at the same per-filter δ."""
    each = reported_grid().delta_each
    return counting_grid(SCHEDULE, each * len(SCHEDULE)).eps


def dp_sgd_grid_samples(forget_checks: bool, n: int, rng: np.random.Generator) -> FloatArray:
    """n runs of (1 − e^(ε_K − L))_+ of the learner's own loop (module docstring)."""
    grid = reported_grid()
    out = np.empty(n)
    for i in range(n):
        loss, done, spent = dp_sgd_run(rng)
        eps = _forgetful()[done - 1] if forget_checks else grid.reported(done, spent)
        out[i] = max(0.0, -np.expm1(eps - loss))
    return out


@register(PAPER)
def dp_sgd_grid_audit(suite: str) -> Audit:
    """The reported grid holds at the learner's stop (5,000 runs)."""
    del suite
    name = "dp-sgd/accuracy-first/grid"
    return Audit(
        name=name,
        source="docs/apps/dp-sgd.md (grid of counting filters with Brownian checks); THEORY §12, §13",
        statement=(
            "accuracy-first DP-SGD's own loop (4 units of 3 steps, q = 0.5, σ = 2, Brownian "
            f"checks on a budget of {CHECK_BUDGET}): sup_S P_x(S) − E_x'[e^ε_K 1_S] = "
            f"E[(1 − e^(ε_K − L))_+] <= δ = {DELTA}"
        ),
        claim=EValueClaim(DELTA),
        simulate=partial(dp_sgd_grid_samples, False),
        n=5_000,
        twin=Twin(
            f"{name}/checks-forgotten", EValueClaim(DELTA), partial(dp_sgd_grid_samples, True)
        ),
        chunk_size=5_000,
    )
