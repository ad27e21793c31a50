"""Exact crossing probability of a Skellam noise reduction on a fixed grid (THEORY §10, last item).

X_t = P1(t) − P2(t) for independent Poisson processes of rate λ, so X_t ~ Skellam(λt, λt) with
independent increments. With the noise z = Y − f(x) at time t and a neighbour difference D, the
run's loss is ℓ_t(z) = log p_t(z) − log p_t(z − D) (THEORY §10, sufficiency), and a boundary ψ
on the grid T_1 > … > T_N is crossed with probability P(∃n: ℓ_{T_n}(X_{T_n}) > ψ_n).

THEORY §10 computes it with the reverse-time kernel q(k | j) = p_s(k)·p_{t−s}(j − k)/p_t(j).
On a fixed grid the event does not depend on the order in which the states are visited, so this
module walks the same chain from the smallest time upward, where the transition is a plain
convolution with the increment's pmf p_{T_n − T_{n+1}} (no division by p_t, which underflows in
the tails): m_N = p_{T_N}·1[no crossing], m_n = (m_{n+1} ∗ p_{T_n − T_{n+1}})·1[no crossing],
each convolution by direct sums of nonnegative terms (relative rounding error: tiny probabilities
stay accurate) or by FFT (O(K log K), absolute rounding error). `tests/skellam/test_skellam_crossing.py`
checks it against the reverse-time recursion of THEORY §10 written out with dense sums.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import finite_array, open_probability, positive
from expost.errors import InvalidParameter
from expost.skellam.pmf import log_pmf, pmf, tail_bound

__all__ = [
    "SkellamCrossing",
    "skellam_boundary_crossing",
    "skellam_crossing_probability",
    "skellam_loss",
]

FloatArray = npt.NDArray[np.float64]
Method = Literal["direct", "fft"]
IntArray = npt.NDArray[np.int64]

_U = 2.0**-53  # unit round-off of a double
_PMF_RTOL = 1e-11  # relative error allowed for scipy's ive: measured <= 6e-13 against mpmath
_MAX_MEAN = 1e5  # the range of λt over which that was measured
_FFT_CONSTANT = 12.0  # err_∞ <= (12·log2 L + 8)·u·‖a‖₁·‖b‖₂ for an FFT convolution of length L


def _window(means: FloatArray, tolerance: float) -> int:
    """The smallest K (doubling, then bisection) with Σ_n P(|X_{T_n}| > K) <= tolerance."""

    def excess(k: int) -> float:
        return sum(tail_bound(float(m), k) for m in means)

    hi = max(1, math.ceil(2.0 * math.sqrt(float(means.max()))))
    while excess(hi) > tolerance:
        hi *= 2
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if excess(mid) <= tolerance else (mid, hi)
    return hi


def _pmf(mean: float, states: IntArray) -> FloatArray:
    """The Skellam(mean, mean) pmf at ``states`` (`expost.skellam.pmf.pmf`; p(−k) = p(k): one
    Bessel evaluation per distinct |k|)."""
    magnitude = np.abs(states)
    table = pmf(np.arange(int(magnitude.max(initial=0)) + 1), mean, mean)
    return table[magnitude]


def _transition(
    mass: FloatArray, increment_mean: float, method: Method
) -> tuple[FloatArray, float, float]:
    """m ∗ p_increment on the same support [−K, K], with bounds on its rounding error.

    The increment's pmf on [−2K, 2K] gives every entry of the window exactly ('valid' mode).
    Returns (result, absolute ℓ1 error, relative error per entry). ``"direct"``: each entry is
    a sum of 2K + 1 nonnegative products, so its relative error is at most γ_(2K+2) =
    (2K + 2)u/(1 − (2K + 2)u) whatever the summation order. ``"fft"``: per entry at most
    (12·log2 L + 8)·u·‖m‖₁·‖p‖₂ (Cooley–Tukey analysis, Brisebarre et al., ACM TOMS 2020, with a
    conservative constant), an absolute error.
    """
    from scipy.signal import fftconvolve  # lazy: keeps `import expost` fast

    k = mass.size // 2
    step = _pmf(increment_mean, np.arange(-2 * k, 2 * k + 1, dtype=np.int64))
    if method == "direct":
        terms = (mass.size + 1) * _U
        return np.convolve(step, mass, mode="valid"), 0.0, terms / (1.0 - terms)
    length = step.size + mass.size - 1
    per_entry = (_FFT_CONSTANT * math.log2(length) + 8.0) * _U * float(np.linalg.norm(step))
    error = mass.size * per_entry * float(mass.sum())
    return np.maximum(fftconvolve(step, mass, mode="valid"), 0.0), error, 0.0


def _decide(
    mean: float, states: IntArray, difference: int, psi: float
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """States counted as crossed (loss > ψ − slack, or nan) and those within the slack of ψ.

    The slack covers the log pmfs' error (1e-11 each, and Debye's 2e-16·|log p| where ive
    underflows) and the rounding of the two logs, their difference and ψ.
    """
    log_p, here, there = _log_pmfs(mean, states, difference)
    loss = log_p[here] - log_p[there]
    with np.errstate(invalid="ignore"):
        size = np.abs(log_p[here]) + np.abs(log_p[there]) + abs(psi)
        slack = 4.0 * _PMF_RTOL + 8.0 * _U * size
        over = ~(loss <= psi - slack)
        near = over & ~(loss > psi + slack)
    return over, near


def _log_pmfs(
    mean: float, z: npt.ArrayLike, difference: int
) -> tuple[FloatArray, IntArray, IntArray]:
    """log p at 0..max |z|, |z − D| (`expost.skellam.pmf.log_pmf`), and the indices |z|, |z − D|."""
    states = np.asarray(z, dtype=np.int64)
    here, there = np.abs(states), np.abs(states - difference)
    top = int(max(here.max(initial=0), there.max(initial=0)))
    return log_pmf(np.arange(top + 1), mean, mean), here, there


def skellam_loss(mean: float, z: npt.ArrayLike, difference: int) -> FloatArray:
    """ℓ(z) = log p(z) − log p(z − D) for p the Skellam(mean, mean) pmf (THEORY §10), from the
    library's one log pmf: finite in the tails too (Debye's expansion where ive underflows)."""
    log_p, here, there = _log_pmfs(mean, z, difference)
    return np.asarray(log_p[here] - log_p[there], dtype=np.float64)


@frozen
class SkellamCrossing:
    """P(∃n: ℓ_{T_n}(X_{T_n}) > ψ_n) on a fixed grid, enclosed: lower <= P <= upper.

    ``probability``: the mass removed as crossed on the support [−support, support] (states whose
    loss is within rounding of ψ counted as crossed); ``upper = probability + truncation +
    roundoff`` and ``lower = probability − ambiguous − roundoff`` (at least 0), where
    ``truncation`` bounds the mass that leaves the support (Chernoff), ``roundoff`` the FFT and pmf
    rounding, ``ambiguous`` the mass removed at states whose loss was within rounding of ψ.
    """

    probability: float
    lower: float
    upper: float
    truncation: float
    roundoff: float
    ambiguous: float
    support: int


def _arguments(
    rate: float, times: npt.ArrayLike, difference: int, psi: npt.ArrayLike
) -> tuple[float, FloatArray, int, FloatArray]:
    lam = positive("rate", rate)
    grid = finite_array("times", times)
    if grid.ndim != 1 or grid.size == 0 or np.any(grid <= 0.0) or np.any(np.diff(grid) >= 0.0):
        raise InvalidParameter(
            "times", times, "must be a non-empty, strictly decreasing 1-d array > 0"
        )
    if lam * float(grid[0]) > _MAX_MEAN:
        raise InvalidParameter("times", times, f"must have rate·times[0] <= {_MAX_MEAN:g}")
    bound = finite_array("psi", psi)
    if bound.shape != grid.shape:
        raise InvalidParameter("psi", psi, f"must have the shape of times, {grid.shape}")
    if (
        isinstance(difference, bool)
        or not isinstance(difference, int | np.integer)
        or difference == 0
    ):
        raise InvalidParameter("difference", difference, "must be a nonzero integer")
    return lam, grid, int(difference), bound


def skellam_crossing_probability(
    rate: float,
    times: npt.ArrayLike,
    difference: int,
    psi: npt.ArrayLike,
    *,
    tolerance: float = 1e-15,
    method: Method = "direct",
) -> SkellamCrossing:
    """P(∃n: ℓ_{T_n}(X_{T_n}) > ψ_n) for X_t ~ Skellam(λt, λt), exactly up to stated errors.

    ``times`` strictly decreasing (T_1 > … > T_N), ``psi`` the boundary at those times,
    ``difference`` = D = f(x') − f(x) (nonzero integer). The support is cut at ±K, the smallest
    K whose Chernoff tail bounds sum to at most ``tolerance`` over the grid (`truncation`).
    Round-off (`_transition`): ``method="direct"`` sums nonnegative products, so every entry is
    within a relative γ_(2K+2) ≈ 2K·u per step and the result within a relative N·γ of exact, which
    keeps tiny probabilities (1e-9, 1e-12) accurate; ``method="fft"`` is O(K log K) per step with an
    absolute error (about 2e-9 over 100 steps at K ≈ 1000, too coarse for tiny deltas); both
    bounds are in ``roundoff``, with the pmfs' relative error (1e-11 allowed for scipy's ive,
    <= 6e-13 measured against mpmath for λt <= 1e5; N + 1 factors along a path). Measured, the
    two methods take about the same time up to λt = 1e5: the Bessel evaluations dominate.
    """
    lam, grid, d, bound = _arguments(rate, times, difference, psi)
    tol = open_probability("tolerance", tolerance)
    if method not in ("direct", "fft"):
        raise InvalidParameter("method", method, "must be 'direct' or 'fft'")
    means = lam * grid
    k = _window(means, tol)
    states = np.arange(-k, k + 1, dtype=np.int64)
    crossed = ambiguous = absolute = 0.0
    growth = 1.0 + _PMF_RTOL  # relative error factor: the pmf at T_N
    mass = _pmf(float(means[-1]), states)
    for n in range(grid.size - 1, -1, -1):
        if n < grid.size - 1:
            mass, error, relative = _transition(mass, lam * float(grid[n] - grid[n + 1]), method)
            absolute += error
            growth *= (1.0 + relative) * (1.0 + _PMF_RTOL)
        over, near = _decide(float(means[n]), states, d, float(bound[n]))
        crossed += float(mass[over].sum())
        ambiguous += float(mass[near].sum())
        mass[over] = 0.0
    growth *= 1.0 + (states.size + grid.size) * _U  # the sums of the removed mass
    roundoff = absolute * growth + crossed * 2.0 * (growth - 1.0)
    truncation = sum(tail_bound(float(m), k) for m in means)
    return SkellamCrossing(
        probability=crossed,
        lower=max(crossed - ambiguous - roundoff, 0.0),
        upper=crossed + truncation + roundoff,
        truncation=truncation,
        roundoff=roundoff,
        ambiguous=ambiguous,
        support=k,
    )


def skellam_boundary_crossing(
    rate: float,
    times: npt.ArrayLike,
    psi: npt.ArrayLike,
    sensitivity: int = 1,
    *,
    tolerance: float = 1e-15,
    method: Method = "direct",
) -> SkellamCrossing:
    """The worst `skellam_crossing_probability` over the neighbours' differences 1 <= |D| <= Δ.

    D and −D give the same probability (p_t is symmetric: ℓ for −D at z is ℓ for D at −z). For
    ψ >= 0 the worst is D = Δ, computed alone: p_t is symmetric and strictly decreasing in |z|,
    so ℓ^D(z) > ψ >= 0 means |z| < |z − D|, i.e. z < D/2, hence z − D <= −1 and
    ℓ^(D+1)(z) − ℓ^D(z) = log p(z − D) − log p(z − D − 1) > 0: every path that crosses for D
    crosses for D + 1, so the crossing probabilities grow with D and Δ's enclosure encloses
    their maximum (bounded work: one computation, not Δ). A ψ with a negative entry (never a
    privacy boundary: there P(ℓ^D >= 0) = P(X <= D/2) >= 1/2) has every D computed and the
    result with the largest ``upper`` returned. A δ-privacy boundary (BNR Def. 3.5) on this grid
    must have ``lower <= delta`` for every D, so ``upper <= delta`` confirms it and
    ``lower > delta`` refutes it.
    """
    if (
        isinstance(sensitivity, bool)
        or not isinstance(sensitivity, int | np.integer)
        or sensitivity < 1
    ):
        raise InvalidParameter("sensitivity", sensitivity, "must be an integer >= 1")
    monotone = bool(np.all(finite_array("psi", psi) >= 0.0))
    shifts = [int(sensitivity)] if monotone else range(1, int(sensitivity) + 1)
    results = [
        skellam_crossing_probability(rate, times, d, psi, tolerance=tolerance, method=method)
        for d in shifts
    ]
    return max(results, key=lambda r: r.upper)
