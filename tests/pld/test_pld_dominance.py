"""The dominance orders `PLDFilter` admits by (THEORY §12; `expost.filters.pld`), checked as
hockey-stick divergences H_γ(P‖Q) = ∫ (p − γq)_+ for γ = e^ε over ε in [−4, 4] (γ < 1 too:
composition needs every γ >= 0), in both neighbour directions where the pair is not symmetric.

Each order is computed independently of the library: Gaussian pairs by the closed form in
50-digit mpmath, subsampled mixtures and Laplace pairs by quadrature on a fine grid (error
below the 1e-7 tolerance), randomised response exactly. Each check has a planted twin — the
reverse order — that the same check must reject, and `dominates` must agree with the proven
orders (and refuse what is not proven: randomised response under a Laplace pair).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from expost.costs.pairs import ClosedPair as Pair
from expost.filters.pld import dominates

EPS = np.linspace(-4.0, 4.0, 33)
TOL = 1e-7  # the trapezoid rule at the kink of (p − γq)_+: error O(h²)
X = np.linspace(-40.0, 40.0, 400_001)  # spacing 2e-4: the laws' kinks on the grid
DX = X[1] - X[0]


def _hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """∫ (p − e^eps·q)_+ by the trapezoid rule on `X`."""
    f = np.maximum(p - math.exp(eps) * q, 0.0)
    return float(DX * (f.sum() - 0.5 * (f[0] + f[-1])))


def _normal(mean: float, sigma: float) -> np.ndarray:
    return np.exp(-0.5 * ((X - mean) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def _laplace(mean: float) -> np.ndarray:
    return 0.5 * np.exp(-np.abs(X - mean))


def _profile(pair: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return np.array([_hockey(pair[0], pair[1], float(e)) for e in EPS])


def _below(low: np.ndarray, high: np.ndarray) -> bool:
    return bool(np.all(low <= high + TOL))


def _gaussian_profile(mu: float) -> list[mp.mpf]:
    """H_γ(N(mu, 1)‖N(0, 1)) = Φ(−ε/mu + mu/2) − e^ε·Φ(−ε/mu − mu/2), every real ε (Balle–Wang)."""
    with mp.workdps(50):
        m = mp.mpf(mu)
        return [
            mp.ncdf(-mp.mpf(e) / m + m / 2) - mp.exp(mp.mpf(e)) * mp.ncdf(-mp.mpf(e) / m - m / 2)
            for e in EPS
        ]


@pytest.mark.parametrize(("sigma0", "sigma"), [(1.0, 1.3), (0.5, 3.0), (2.0, 2.0001)])
def test_a_larger_sigma_is_dominated(sigma0: float, sigma: float) -> None:
    """Larger σ: a post-processing (independent noise added); the twin (smaller σ) is not."""
    fixed, other = _gaussian_profile(1 / sigma0), _gaussian_profile(1 / sigma)
    assert all(o <= f for o, f in zip(other, fixed, strict=True))
    assert not all(f <= o for o, f in zip(other, fixed, strict=True))  # planted twin
    assert dominates(Pair("gaussian", sigma0), Pair("gaussian", sigma))
    assert not dominates(Pair("gaussian", sigma), Pair("gaussian", sigma0))


def _subsampled(sigma: float, q: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Remove: ((1−q)Q + qP, Q); add: (Q, (1−q)Q + qP), P = N(1, σ²), Q = N(0, σ²)."""
    p, q0 = _normal(1.0, sigma), _normal(0.0, sigma)
    mix = (1 - q) * q0 + q * p
    return {"remove": (mix, q0), "add": (q0, mix)}


@pytest.mark.parametrize(("sigma", "q0", "q"), [(1.0, 0.5, 0.2), (0.6, 0.1, 0.05), (1.5, 1.0, 0.3)])
def test_a_smaller_sampling_rate_is_dominated_in_both_directions(
    sigma: float, q0: float, q: float
) -> None:
    """Smaller q: keep the output with probability q/q0, else redraw from Q — the same kernel
    maps both directions' pairs (joint convexity); the twin (larger q) is not dominated."""
    fixed, other = _subsampled(sigma, q0), _subsampled(sigma, q)
    for direction in ("remove", "add"):
        f, o = _profile(fixed[direction]), _profile(other[direction])
        assert _below(o, f), direction
        assert not _below(f, o), direction  # planted twin: the reverse order
    assert dominates(Pair("gaussian", 1.0, q0), Pair("gaussian", 1.0, q))
    assert not dominates(Pair("gaussian", 1.0, q), Pair("gaussian", 1.0, q0))
    assert not dominates(Pair("gaussian", 1.0, q0), Pair("gaussian", 0.9, q))  # σ smaller


def test_the_subsampled_profile_matches_the_gaussian_closed_form_at_q_one() -> None:
    """The quadrature itself, against the 50-digit closed form (q = 1 is the Gaussian pair)."""
    got = _profile(_subsampled(0.8, 1.0)["remove"])
    want = [float(v) for v in _gaussian_profile(1 / 0.8)]
    np.testing.assert_allclose(got, want, atol=TOL)


@pytest.mark.parametrize(("eps0", "eps"), [(1.0, 0.5), (0.1, 0.05), (2.0, 1.999)])
def test_a_smaller_laplace_eps_is_dominated(eps0: float, eps: float) -> None:
    """Laplace (Lap(eps, 1), Lap(0, 1)): δ is nondecreasing in eps for every ε' (closed form
    (1 − e^{(ε'−eps)/2})_+ for ε' >= 0, checked here by quadrature); the twin is not."""
    fixed = _profile((_laplace(eps0), _laplace(0.0)))
    other = _profile((_laplace(eps), _laplace(0.0)))
    assert _below(other, fixed)
    assert not _below(fixed, other)
    closed = np.where(EPS >= 0, np.maximum(0.0, 1 - np.exp((EPS - eps0) / 2)), np.nan)
    np.testing.assert_allclose(fixed[EPS >= 0], closed[EPS >= 0], atol=1e-8)
    assert dominates(Pair("laplace", eps0), Pair("laplace", eps))
    assert not dominates(Pair("laplace", eps), Pair("laplace", eps0))


def _rr(eps: float) -> tuple[np.ndarray, np.ndarray]:
    p = math.exp(eps) / (1 + math.exp(eps))
    return np.array([p, 1 - p]), np.array([1 - p, p])


def _rr_profile(eps: float) -> np.ndarray:
    a, b = _rr(eps)
    return np.array([float(np.maximum(a - math.exp(e) * b, 0.0).sum()) for e in EPS])


@pytest.mark.parametrize(("eps0", "eps"), [(1.0, 0.4), (0.1, 0.09), (3.0, 0.5)])
def test_randomised_response_at_a_smaller_eps_is_a_garbling(eps0: float, eps: float) -> None:
    """Flipping RR(eps0)'s answer with probability r = (p0 − p)/(2p0 − 1) gives RR(eps)
    exactly (50 digits), so its profile is below; the twin (larger eps) is not."""
    with mp.workdps(50):
        p0 = mp.exp(eps0) / (1 + mp.exp(eps0))
        p = mp.exp(eps) / (1 + mp.exp(eps))
        r = (p0 - p) / (2 * p0 - 1)
        assert 0 <= r <= mp.mpf(1) / 2
        assert abs(p0 * (1 - r) + (1 - p0) * r - p) < mp.mpf(10) ** -45
    assert _below(_rr_profile(eps), _rr_profile(eps0))
    assert not _below(_rr_profile(eps0), _rr_profile(eps))
    assert dominates(Pair("rr", eps0), Pair("rr", eps))
    assert dominates(Pair("rr", eps0), Pair("laplace", eps))  # an eps-DP round


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.5])
def test_rr_dominates_the_laplace_pair_but_not_the_reverse(eps: float) -> None:
    """Every eps-DP pair is below RR(eps) (Kairouz–Oh–Viswanath); the Laplace pair is strictly
    below at ε' = 0, so a filter fixed on Laplace must refuse a general eps-DP round."""
    lap = _profile((_laplace(eps), _laplace(0.0)))
    rr = _rr_profile(eps)
    assert _below(lap, rr)
    assert not _below(rr, lap)  # planted twin: RR is not dominated by the Laplace pair
    assert not dominates(Pair("laplace", eps), Pair("rr", eps))
    assert not dominates(Pair("laplace", eps), Pair("gaussian", math.sqrt(50.0)))  # unbounded loss
    # shown by computation (expost.costs.domination): μ = 4.5 dominates Laplace at 1e-3
    assert dominates(Pair("gaussian", 1 / math.sqrt(20.0)), Pair("laplace", 1e-3))
    assert not dominates(Pair("laplace", 1e-3), Pair("gaussian", 1 / math.sqrt(20.0)))
