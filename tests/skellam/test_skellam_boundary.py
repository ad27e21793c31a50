"""SkellamPrivacyBoundary (THEORY §10): exact values, safe side, crossing rate, planted twins."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy import stats as sps

from expost import SkellamPrivacyBoundary
from expost.errors import InvalidParameter
from expost.processes import sample_skellam_grid
from tests.stats import clopper_pearson_lower, rate_is_at_most


def _exact_psi(b: SkellamPrivacyBoundary, t: float) -> float:
    """ψ from its definition with 40-digit mpmath Bessel functions (independent of the code)."""
    mp.mp.dps = 40
    x = mp.mpf(2 * b.rate * t)

    def p(z: int) -> mp.mpf:
        return mp.besseli(abs(z), x) * mp.exp(-x)

    w = b.weights()
    z = -1
    while mp.fsum(mp.mpf(float(wj)) * p(z + j + 1) for j, wj in enumerate(w)) / p(z) < 1 / mp.mpf(
        b.delta
    ):
        z -= 1
    # z is the largest z with M(z) >= 1/delta (M is non-increasing in z)
    return max(float(mp.log(p(z + 1)) - mp.log(p(z + 1 - d))) for d in range(1, b.sensitivity + 1))


@pytest.mark.parametrize(
    ("boundary", "t"),
    [
        (SkellamPrivacyBoundary(6.0, 1e-3), 3.0),
        (SkellamPrivacyBoundary(6.0, 1e-3, sensitivity=3, rate=2.0), 5.0),
        (SkellamPrivacyBoundary(4.0, 1e-6, mixing="single"), 0.7),
        (SkellamPrivacyBoundary(10.0, 1e-9), 40.0),
    ],
)
def test_psi_is_exact_and_never_below(boundary: SkellamPrivacyBoundary, t: float) -> None:
    exact = _exact_psi(boundary, t)
    got = boundary(t)
    assert got >= exact
    assert got - exact <= 1e-8 * (1.0 + exact)  # the stated margins are of order 1e-10


def test_psi_deep_tail_is_finite_and_vectorised() -> None:
    b = SkellamPrivacyBoundary(20.0, 1e-6)
    times = np.array([1e5, 0.01, 100.0, 1e5])
    psi = b.boundary(times)
    assert psi.shape == (4,)
    assert np.all(np.isfinite(psi))
    assert psi[0] == psi[3]
    assert psi[0] == b(1e5)


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="mixing"):
        SkellamPrivacyBoundary(3.0, 0.1, mixing="cauchy")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="delta"):
        SkellamPrivacyBoundary(3.0, 1.0)
    with pytest.raises(InvalidParameter, match="rate"):
        SkellamPrivacyBoundary(3.0, 0.1)(2e6)


def test_tuned_boundary_meets_its_level() -> None:
    b = SkellamPrivacyBoundary.tuned_for(1.0, 1e-6)
    t = b.time_for(1.0)
    assert b(t) <= 1.0
    assert b(t * 0.999) > 1.0 or b(t * 0.99) > 1.0  # no much smaller time meets it


def _crossing_rate(psi_boundary: SkellamPrivacyBoundary, rate: float, trials: int) -> int:
    """Paths of the true process (rate ``rate``) whose loss for D = Δ ever exceeds ψ."""
    times = np.geomspace(60.0, 1.0, 12)
    x = sample_skellam_grid(times, trials, 1, np.random.default_rng(2026), rate1=rate, rate2=rate)
    z = x[:, :, 0]
    mean = rate * times[None, :]
    d = psi_boundary.sensitivity
    loss = sps.skellam.logpmf(z, mean, mean) - sps.skellam.logpmf(z - d, mean, mean)
    return int(np.sum(np.any(loss > psi_boundary.boundary(times)[None, :], axis=1)))


DELTA = 0.05
TRIALS = 20_000


@pytest.mark.parametrize("sensitivity", [1, 3])
def test_crossing_rate_is_at_most_delta(sensitivity: int) -> None:
    b = SkellamPrivacyBoundary(6.0, DELTA, sensitivity=sensitivity)
    assert rate_is_at_most(_crossing_rate(b, 1.0, TRIALS), TRIALS, DELTA)


def test_planted_twins_are_refuted() -> None:
    built_for_10_delta = SkellamPrivacyBoundary(6.0, 10 * DELTA)
    hits = _crossing_rate(built_for_10_delta, 1.0, TRIALS)
    assert clopper_pearson_lower(hits, TRIALS) > DELTA
    rate_misstated = SkellamPrivacyBoundary(6.0, DELTA, rate=2.0)
    hits = _crossing_rate(rate_misstated, 1.0, TRIALS)
    assert clopper_pearson_lower(hits, TRIALS) > DELTA


def _plain_time_for(b: SkellamPrivacyBoundary, level: float) -> float:
    """`time_for` as it was before its searches were started from the last z*: the same
    bisection on ψ evaluated by ``b(t)`` (a z* search from 0 each time)."""
    import math

    lo, hi = 1e-3 / b.rate, 1.0 / b.rate
    while b(hi) > level:
        lo, hi = hi, 4.0 * hi
    if b(lo) <= level:
        return lo
    while hi > lo * (1.0 + 1e-7):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if b(mid) <= level else (mid, hi)
    return hi


@pytest.mark.parametrize(
    "boundary",
    [
        SkellamPrivacyBoundary(24.4, 1e-6),
        SkellamPrivacyBoundary(300.0, 1e-12, 100, rate=0.7),
        SkellamPrivacyBoundary(5.0, 1e-3, 3, mixing="single"),
    ],
)
def test_started_searches_give_the_same_times_and_crossing_points(
    boundary: SkellamPrivacyBoundary,
) -> None:
    """`time_for` starts each z* search at the last z* (bounded work: 5x fewer evaluations of
    M in `tuned_for(100, 1e-12, sensitivity=1000)`); M is monotone in z, so the times are
    those of the plain search, bit for bit, and z* does not depend on the start."""
    from expost.skellam.pmf import SkellamLogPmf

    for t in (3.0, 50.0, 5000.0):  # levels the boundary meets between 1e-3 and 1e6
        level = boundary(t / boundary.rate) * 1.01
        assert boundary.time_for(level) == _plain_time_for(boundary, level)
    w = boundary.weights()
    for mean in (0.3, 40.0, 9000.0):
        plain = boundary._z_star(SkellamLogPmf(mean), w)
        for hint in (-1, plain, plain + 1, plain - 37, 3 * plain, -(10**6)):
            assert boundary._z_star(SkellamLogPmf(mean), w, hint) == plain, (mean, hint)
