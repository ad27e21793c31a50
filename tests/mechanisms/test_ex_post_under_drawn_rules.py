"""BNR Thm 3.6 / Cor 3.7 under Hypothesis-drawn stopping rules, sensitivities and dimensions.

The audit suite checks the BM ex-post guarantee against fixed adversarial rules; here
Hypothesis draws the rule (`expost.testing.strategies.stopping_rules`), the boundary, the
sensitivity and the dimension, and `expost.testing.assert_ex_post` tests P(L > ψ(T)) <= delta
at its false-alarm level (1e-6). The planted twin claims the loss is at most its mean
Δ²/(2T) (the decomposition without its martingale term), which fails about half the time.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expost.boundaries import LinearPrivacyBoundary, MixturePrivacyBoundary
from expost.grids import TimeGrid
from expost.mechanisms import BrownianNoiseReduction
from expost.stopping import RelativeError, StoppingRule
from expost.testing import assert_ex_post
from expost.testing.strategies import stopping_rules

DELTA = 0.05
RUNS = 4_000
LEVELS = np.geomspace(0.6, 5.0, 40)  # above the tuned linear boundary's asymptote (≈ 0.46)


def _losses(
    y: npt.NDArray[np.float64], t: npt.NDArray[np.float64], shift: float
) -> npt.NDArray[np.float64]:
    """Exact loss of the released y at time t for f(x) = 0, f(x') = shift·e1 (APC Thm 3)."""
    far = y.copy()
    far[:, 0] -= shift
    result: npt.NDArray[np.float64] = (np.sum(far**2, axis=1) - np.sum(y**2, axis=1)) / (2.0 * t)
    return result


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rule=stopping_rules(max_index=39),
    kind=st.sampled_from(["mixture", "linear"]),
    sensitivity=st.sampled_from([0.5, 1.0, 3.0]),
    d=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**32 - 1),
)
def test_brownian_ex_post_bound_holds_and_its_twin_is_refuted(
    rule: StoppingRule, kind: str, sensitivity: float, d: int, seed: int
) -> None:
    if isinstance(rule, RelativeError):
        d = 1  # it needs scalar iterates
    family = MixturePrivacyBoundary if kind == "mixture" else LinearPrivacyBoundary
    boundary = family.tuned_for(1.0, DELTA, sensitivity)
    grid = TimeGrid.from_boundary(boundary, LEVELS)
    mechanism = BrownianNoiseReduction(grid, sensitivity, rule, boundary)
    runs = mechanism.run_batch(np.zeros(d), RUNS, np.random.default_rng(seed))
    losses = _losses(np.asarray(runs.value), np.asarray(runs.times), sensitivity)
    assert runs.ex_post_bound is not None
    assert_ex_post((losses, runs.ex_post_bound), DELTA, n=RUNS, name=f"BM {kind} ex-post")
    mean_only = sensitivity**2 / (2.0 * np.asarray(runs.times))
    with pytest.raises(AssertionError):
        assert_ex_post((losses, mean_only), DELTA, n=RUNS, name="planted: loss <= its mean")
