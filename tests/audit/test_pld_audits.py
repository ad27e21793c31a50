"""The simulators of the PLD and counting-filter audits against exact values (fixed seeds).

Each sample is in [0, 1], so its mean over n runs is within 5/(2·sqrt(n)) of the truth except
with probability below 1e-6 (Hoeffding: 2·exp(−2n·t²) at t = 2.5/sqrt(n) is 7e-6; the
standard deviation is at most 1/2, so a normal 5-sigma band is the same width).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.stats import norm

from expost.audit.deploy.pld_profile import tilted_gaussian_excess
from expost.audit.paper.counting_filter import laplace_stopping, mixed_menu
from expost.audit.paper.pld_profile import gaussian_excess, laplace_excess
from expost.audit.tilting import hockey_stick_bound

N = 200_000
TOL = 2.5 / math.sqrt(N)


def _gaussian_delta(mu: float, eps: float) -> float:
    """Balle & Wang 2018: Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def test_gaussian_rounds_match_the_closed_form() -> None:
    excess = gaussian_excess(1.0, 1.0, 4, "remove", 1.0, N, np.random.default_rng(1))
    assert abs(excess.mean() - _gaussian_delta(2.0, 1.0)) < TOL  # 4 rounds of μ = 1: μ = 2
    assert abs(excess.mean() - _gaussian_delta(math.sqrt(3.0), 1.0)) > 4 * TOL  # 3 rounds: twin


def test_one_laplace_round_matches_the_closed_form() -> None:
    # P = Lap(1, 1), Q = Lap(0, 1), ε = 0.5: L = 2y − 1 on [0, 1], so L > ε iff y > 3/4 and
    # δ = P(Y > 3/4) − e^ε·Q(Y > 3/4) = (1 − e^(−1/4)/2) − e^(1/2)·e^(−3/4)/2 = 1 − e^(−1/4)
    excess = laplace_excess(1.0, 1.0, 1, "remove", 0.5, N, np.random.default_rng(2))
    assert abs(excess.mean() - (1.0 - math.exp(-0.25))) < TOL


def test_subsampling_directions_differ_as_lebeda_et_al_say() -> None:
    rng = np.random.default_rng(3)
    one_add = laplace_excess(1.0, 0.5, 1, "add", 0.25, N, rng).mean()
    one_remove = laplace_excess(1.0, 0.5, 1, "remove", 0.25, N, rng).mean()
    two_add = laplace_excess(1.0, 0.5, 2, "add", 0.25, N, rng).mean()
    two_remove = laplace_excess(1.0, 0.5, 2, "remove", 0.25, N, rng).mean()
    assert one_add + 2 * TOL < one_remove
    assert two_add > two_remove + 2 * TOL


def test_the_mixed_menu_analyst_reaches_the_exact_values() -> None:
    rng = np.random.default_rng(4)
    assert abs(mixed_menu(3, N, rng).mean() - float(Fraction(89, 216))) < TOL
    assert abs(mixed_menu(1, N, rng).mean() - 1 / 6) < TOL  # one RR(2) round at γ = 3/2


def test_stopping_never_helps_the_analyst() -> None:
    """Stopping early is a post-processing: below the full-length profile (Jensen)."""
    rng = np.random.default_rng(5)
    stopped = laplace_stopping(15, N, rng).mean()
    full = laplace_excess(0.2, 1.0, 15, "remove", 1.0, N, rng).mean()
    assert stopped < full + 2 * TOL


def test_tilted_samples_are_unbiased_and_within_their_bound() -> None:
    bound = hockey_stick_bound(1.0, 2.0, 0.5)  # 4 rounds of μ = 1: rho = 4·μ²/2
    samples = tilted_gaussian_excess(1.0, 4, 1.0, 0.5, N, np.random.default_rng(6))
    assert samples.max() <= bound * (1 + 1e-9)
    assert abs(samples.mean() - _gaussian_delta(2.0, 1.0)) < bound * TOL  # in [0, B]: Hoeffding
