"""The audit of the grid accuracy-first DP-SGD reports (Brownian checks), and its planted twin."""

from __future__ import annotations

import numpy as np

from expost.apps.learning.accounting import checked_grid
from expost.audit.claims import EValueClaim
from expost.audit.core import ALPHA_AUDIT
from expost.audit.paper.dp_sgd import CHECK_BUDGET, SCHEDULE
from expost.audit.paper.dp_sgd_grid import BUDGETS, DELTA, dp_sgd_grid_samples, reported_grid

N = 3_000  # X in [0, 1]; the twin's mean is about 2δ, the claim's far below δ


def test_the_reported_grid_holds_at_the_learners_stop() -> None:
    samples = dp_sgd_grid_samples(False, N, np.random.default_rng(21))
    assert np.all((samples >= 0.0) & (samples <= 1.0))
    verdict = EValueClaim(DELTA).verdict(samples, ALPHA_AUDIT)
    assert not verdict.refuted, verdict


def test_a_grid_that_forgets_the_checks_is_refuted() -> None:
    samples = dp_sgd_grid_samples(True, N, np.random.default_rng(22))
    verdict = EValueClaim(DELTA).verdict(samples, ALPHA_AUDIT)
    assert verdict.refuted, verdict


def test_the_audited_grid_is_the_librarys() -> None:
    grid = reported_grid()
    assert grid == checked_grid(SCHEDULE, BUDGETS, DELTA)
    assert grid.budgets[-1] == CHECK_BUDGET
