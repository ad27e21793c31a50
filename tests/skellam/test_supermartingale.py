"""Ex-post RDP of Skellam noise reduction by THEORY §11's supermartingale condition
(expost.skellam.supermartingale; issue 29, item 6).

- The bridge kernel the checker sums over is the law of binomial thinning given the released
  difference (Monte Carlo by rejection, alpha = 1e-6); a kernel with the times swapped is rejected.
- The certified bound passes the step check and the worst stopping rule (Snell envelope) stays
  at or below 1; the same bound with one increment cut by 1% fails the step check.
- The Gaussian-shaped candidate α·Δ²/(2·2λt) and the fixed-time Rényi divergence are refuted on
  the grid (8, 4, 2, 1), λ = 1: an adversarial stopping rule pushes E[exp((α−1)(L − ε))] above 1.
- A window too small for the peak is refused.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from expost import SkellamLoss
from expost.errors import InvalidParameter
from expost.skellam.supermartingale import (
    _bridge_mean,
    _g,
    _pmf,
    certify_skellam_rdp,
    check_skellam_rdp,
    gaussian_shaped,
    worst_stopping_mean,
)
from tests import stats as st

GRID = (8.0, 4.0, 2.0, 1.0)


def _thinned_g(t: float, s: float, z: int, n: int, seed: int) -> np.ndarray:
    """g_s(X_s) for X_s drawn by binomial thinning of (P1(t), P2(t)) given P1 − P2 = z."""
    rng = np.random.default_rng(seed)
    p1, p2 = rng.poisson(t, 4 * n), rng.poisson(t, 4 * n)
    keep = p1 - p2 == z
    k = rng.binomial(p1[keep], s / t) - rng.binomial(p2[keep], s / t)
    return np.array([float(_g(s, int(v), 1, 2.0)) for v in k[:n]])


@pytest.mark.parametrize("z", [1, 3])
def test_the_bridge_kernel_is_binomial_thinning(z: int) -> None:
    t, s = 4.0, 1.5
    samples = _thinned_g(t, s, z, 20_000, 1 + z)
    exact = float(_bridge_mean(t, s, 1.0, z, lambda k: _g(s, k, 1, 2.0), 12.0))
    second = float(_bridge_mean(t, s, 1.0, z, lambda k: _g(s, k, 1, 2.0) ** 2, 12.0))
    sd = math.sqrt(second - exact**2)
    assert st.mean_is_consistent(samples, exact, sd)

    def swapped(k: int) -> float:  # twin: p_(t−s)(k)·p_s(z − k), the times exchanged
        return float(_pmf(t - s, k) * _pmf(s, z - k) / (_pmf(s, k) * _pmf(t - s, z - k)))

    wrong = float(_bridge_mean(t, s, 1.0, z, lambda k: _g(s, k, 1, 2.0) * swapped(k), 12.0))
    assert not st.mean_is_consistent(samples, wrong, sd)


@pytest.mark.parametrize("alpha", [1.5, 4.0])
def test_the_certified_bound_holds_and_a_smaller_one_fails(alpha: float) -> None:
    eps = certify_skellam_rdp(GRID, 1.0, 1, alpha)
    assert all(b > a for a, b in itertools.pairwise(eps))
    report = check_skellam_rdp(GRID, 1.0, 1, alpha, eps)
    assert report.holds
    assert report.worst_ratio > 1.0 - 1e-9  # tight: the increments are the smallest allowed
    worst, _ = worst_stopping_mean(GRID, 1.0, 1, alpha, eps)
    assert worst <= 1.0
    cut = list(eps)
    cut[-1] = cut[-2] + 0.99 * (eps[-1] - eps[-2])
    assert not check_skellam_rdp(GRID, 1.0, 1, alpha, cut).holds


def test_the_gaussian_shaped_bound_is_refuted_by_a_stopping_rule() -> None:
    gaussian = gaussian_shaped(GRID, 1.0, 1, 2.0)
    assert gaussian == [2.0 / (4.0 * t) for t in GRID]
    report = check_skellam_rdp(GRID, 1.0, 1, 2.0, gaussian)
    assert report.steps[0].worst_ratio <= 1.0  # at λt = 8 the first release is within it
    assert not report.holds
    worst, shift = worst_stopping_mean(GRID, 1.0, 1, 2.0, gaussian)
    assert worst > 1.01
    assert shift == 1
    fixed_time = [SkellamLoss(t, 1).renyi(2.0) for t in GRID]  # D_α at each time: refuted too
    assert worst_stopping_mean(GRID, 1.0, 1, 2.0, fixed_time)[0] > 1.02
    stretched = [1.25 * e for e in gaussian]  # a larger factor passes on this grid
    assert worst_stopping_mean(GRID, 1.0, 1, 2.0, stretched)[0] <= 1.0


def test_sensitivity_two_checks_both_shifts() -> None:
    eps = certify_skellam_rdp((4.0, 2.0), 1.0, 2, 2.0)
    one = certify_skellam_rdp((4.0, 2.0), 1.0, 1, 2.0)
    assert all(a > b for a, b in zip(eps, one, strict=True))
    assert check_skellam_rdp((4.0, 2.0), 1.0, 2, 2.0, eps).holds


def test_bad_windows_and_arguments_are_refused() -> None:
    with pytest.raises(InvalidParameter, match="edge"):
        certify_skellam_rdp(GRID, 1.0, 1, 4.0, sds=0.3)
    with pytest.raises(InvalidParameter):
        check_skellam_rdp(GRID, 1.0, 1, 2.0, [0.1, 0.2])
    with pytest.raises(InvalidParameter):
        certify_skellam_rdp((1.0, 2.0), 1.0, 1, 2.0)
    with pytest.raises(InvalidParameter):
        certify_skellam_rdp(GRID, 1.0, 1, 1.0)
