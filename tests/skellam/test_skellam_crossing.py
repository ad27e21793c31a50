"""The exact Skellam crossing probability (THEORY §10) against independent computations.

Checks: the reverse-time recursion of THEORY §10 written out with dense sums and mpmath pmfs
(an independent code path: other pmfs, other order, no FFT); plain Monte Carlo with a
two-sided Clopper–Pearson interval at false-alarm level 1e-6 (`tests/stats.py`); the pieces of
the error bound (Chernoff tail, scipy's ive, FFT round-off). Planted twins: the crossed mass not
removed (the union bound Σ_n P(ℓ_n > ψ_n)) and a kernel with the wrong thinning probability
(each increment's rate doubled); both must be rejected.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import numpy as np
import numpy.typing as npt
import pytest

import expost.skellam.crossing as sc
from expost.errors import InvalidParameter
from expost.processes.skellam import sample_skellam_grid
from expost.skellam.pmf import SkellamLogPmf, log_pmf, tail_bound
from tests.stats import ALPHA, clopper_pearson_lower, clopper_pearson_upper

FloatArray = npt.NDArray[np.float64]

PROTOTYPE = np.geomspace(400.0, 3.0, 8)  # THEORY §10: λ = 1, eight times from 400 to 3, ψ = 1
SCENARIOS = [  # (rate, times, D, ψ): small supports for the dense recursion
    (0.7, [6.0, 4.0, 2.5, 1.0, 0.3], 1, [0.9, 0.8, 1.0, 1.5, 2.5]),
    (1.3, [5.0, 3.0, 2.0, 1.5], -2, [1.2, 1.4, 1.7, 2.2]),
    (0.4, [9.0, 7.5, 3.0], 3, [1.0, 1.1, 2.0]),
]


def _log_pmf(mean: float) -> Callable[[int], float]:
    """log of the Skellam(mean, mean) pmf, e^(−2μ)·I_|k|(2μ), from mpmath at 30 digits."""
    cache: dict[int, float] = {}

    def log_p(k: int) -> float:
        if k not in cache:
            with mpmath.workdps(30):
                cache[k] = float(
                    -2 * mpmath.mpf(mean) + mpmath.log(mpmath.besseli(abs(k), 2 * mean))
                )
        return cache[k]

    return log_p


def _reverse_time(rate: float, times: list[float], d: int, psi: list[float], half: int) -> float:
    """THEORY §10 verbatim: m_{n+1}(k) = p_{T_{n+1}}(k)·Σ_j [m_n(j)/p_{T_n}(j)]·p_{gap}(j − k)."""
    states = range(-half, half + 1)

    def pmf(mean: float) -> FloatArray:
        log_p = _log_pmf(mean)
        return np.exp([log_p(k) for k in states])

    def crossed(mean: float, bound: float) -> npt.NDArray[np.bool_]:
        log_p = _log_pmf(mean)
        return np.array([log_p(k) - log_p(k - d) > bound for k in states])

    p = pmf(rate * times[0])
    m = np.where(crossed(rate * times[0], psi[0]), 0.0, p)
    total = float(p.sum() - m.sum())
    for n in range(1, len(times)):
        gap_log = _log_pmf(rate * (times[n - 1] - times[n]))
        kernel = np.exp([[gap_log(j - k) for k in states] for j in states])  # p_gap(j − k)
        p_next = pmf(rate * times[n])
        m_next = p_next * ((m / p) @ kernel)
        hit = crossed(rate * times[n], psi[n])
        total += float(m_next[hit].sum())
        m, p = np.where(hit, 0.0, m_next), p_next
    return total


def _union(
    rate: float, times: list[float] | FloatArray, d: int, psi: list[float] | FloatArray
) -> float:
    """Twin: the crossed mass never removed, i.e. Σ_n P(ℓ_{T_n} > ψ_n)."""
    return sum(
        sc.skellam_crossing_probability(rate, [t], d, [b]).probability
        for t, b in zip(times, psi, strict=True)
    )


@pytest.fixture
def wrong_thinning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Twin: every increment drawn with twice its rate (thinning probability s/t misstated)."""
    honest = sc._transition
    monkeypatch.setattr(
        sc, "_transition", lambda mass, mean, method: honest(mass, 2.0 * mean, method)
    )


@pytest.mark.parametrize(("rate", "times", "d", "psi"), SCENARIOS)
def test_matches_reverse_time_recursion(
    rate: float, times: list[float], d: int, psi: list[float]
) -> None:
    exact = sc.skellam_crossing_probability(rate, times, d, psi)
    brute = _reverse_time(rate, times, d, psi, half=60)  # Chernoff tail at ±60 below 1e-40 here
    assert exact.lower - 1e-13 <= brute <= exact.upper + 1e-13
    assert exact.upper - exact.lower < 1e-10
    assert abs(_union(rate, times, d, psi) - brute) > 1e-3


@pytest.mark.parametrize(("rate", "times", "d", "psi"), SCENARIOS)
def test_wrong_thinning_twin_is_rejected_by_the_recursion(
    rate: float, times: list[float], d: int, psi: list[float], wrong_thinning: None
) -> None:
    twin = sc.skellam_crossing_probability(rate, times, d, psi)
    assert abs(twin.probability - _reverse_time(rate, times, d, psi, half=60)) > 1e-3


def _monte_carlo(
    rate: float, times: FloatArray, d: int, psi: FloatArray, n: int, seed: int
) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval (level 1 − ALPHA) for the crossing probability, losses from mpmath."""
    paths = sample_skellam_grid(times, n, 1, np.random.default_rng(seed), rate1=rate, rate2=rate)[
        :, :, 0
    ]
    crossed = np.zeros(n, dtype=bool)
    for i, t in enumerate(times):
        values, inverse = np.unique(paths[:, i], return_inverse=True)
        log_p = _log_pmf(rate * float(t))
        loss = np.array([log_p(int(z)) - log_p(int(z) - d) for z in values])
        crossed |= loss[inverse] > psi[i]
    hits = int(crossed.sum())
    return clopper_pearson_lower(hits, n, ALPHA / 2), clopper_pearson_upper(hits, n, ALPHA / 2)


def test_theory_prototype_against_monte_carlo(monkeypatch: pytest.MonkeyPatch) -> None:
    psi = np.ones(PROTOTYPE.size)
    exact = sc.skellam_crossing_probability(1.0, PROTOTYPE, 1, psi)
    assert abs(exact.probability - 0.004632) < 5e-6  # THEORY's prototype, printed to 4 digits
    low, high = _monte_carlo(1.0, PROTOTYPE, 1, psi, 1_000_000, seed=23)
    assert low <= exact.lower
    assert exact.upper <= high
    honest = sc._transition
    monkeypatch.setattr(
        sc, "_transition", lambda mass, mean, method: honest(mass, 2.0 * mean, method)
    )
    twin = sc.skellam_crossing_probability(1.0, PROTOTYPE, 1, psi).probability
    assert not low <= twin <= high


def test_many_crossings_against_monte_carlo() -> None:
    times, psi = np.array([40.0, 28, 20, 14, 10, 7, 5]), np.full(7, 0.8)
    exact = sc.skellam_crossing_probability(0.5, times, 2, psi)
    low, high = _monte_carlo(0.5, times, 2, psi, 200_000, seed=7)
    assert low <= exact.lower
    assert exact.upper <= high
    assert not low <= _union(0.5, times, 2, psi) <= high


@pytest.mark.parametrize(
    ("mean", "k"), [(0.05, 3), (1.0, 8), (30.0, 40), (400.0, 120), (5000.0, 600)]
)
def test_chernoff_tail_bounds_the_exact_tail(mean: float, k: int) -> None:
    with mpmath.workdps(30):
        tail = 2 * mpmath.nsum(
            lambda j: mpmath.exp(-2 * mpmath.mpf(mean)) * mpmath.besseli(j, 2 * mean),
            [k + 1, mpmath.inf],
        )
    bound = tail_bound(mean, k)
    assert float(tail) <= bound
    assert bound < 50 * float(tail) or bound == 1.0  # tight enough to be worth having


@pytest.mark.parametrize("mean", [0.01, 0.7, 25.0, 3000.0, 10_000.0])
def test_pmf_within_the_stated_relative_error(mean: float) -> None:
    """scipy's ive against mpmath from the mode out to where the pmf nears underflow."""
    edge = 1
    while sc._pmf(mean, np.array([edge]))[0] > 1e-280:
        edge = 2 * edge
    ks = np.unique(np.linspace(0, edge, 16).astype(np.int64))
    ours = sc._pmf(mean, ks)
    with mpmath.workdps(30):
        exact = [
            mpmath.exp(-2 * mpmath.mpf(mean)) * mpmath.besseli(int(k), 2 * mean, maxterms=10**6)
            for k in ks
        ]
    checked = 0
    for value, target in zip(ours, exact, strict=True):
        if target > mpmath.mpf("1e-290"):
            assert abs(mpmath.mpf(float(value)) - target) <= sc._PMF_RTOL * target
            checked += 1
    assert checked >= 8


def test_fft_error_bound_holds_against_direct_sums() -> None:
    mass = sc._pmf(3000.0, np.arange(-700, 701, dtype=np.int64))
    fft, error, _ = sc._transition(mass, 500.0, "fft")
    direct, _, relative = sc._transition(mass, 500.0, "direct")
    assert float(np.abs(fft - direct).sum()) <= error - relative * float(direct.sum())
    assert error < 1e-11


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_methods_agree_within_their_bounds(method: sc.Method) -> None:
    grid, psi = np.geomspace(2000.0, 5.0, 40), np.full(40, 0.3)
    other: sc.Method = "fft" if method == "direct" else "direct"
    a = sc.skellam_crossing_probability(1.0, grid, 1, psi, method=method)
    b = sc.skellam_crossing_probability(1.0, grid, 1, psi, method=other)
    assert a.lower <= b.upper
    assert b.lower <= a.upper


def test_direct_method_keeps_tiny_probabilities_accurate() -> None:
    """At a crossing probability near 2e-9 the direct sums' enclosure is within 1e-8 of P
    relative, and contains the FFT result; the FFT's own (absolute) enclosure is far wider."""
    grid, psi = np.geomspace(300.0, 3.0, 60), np.full(60, 1.8)
    direct = sc.skellam_crossing_probability(1.0, grid, 1, psi, tolerance=1e-20)
    fft = sc.skellam_crossing_probability(1.0, grid, 1, psi, tolerance=1e-20, method="fft")
    assert 1e-10 < direct.probability < 1e-8
    assert direct.upper - direct.lower < 1e-8 * direct.probability
    assert fft.lower <= direct.probability <= fft.upper
    assert fft.upper - fft.lower > 1e3 * (direct.upper - direct.lower)


def test_window_cut_meets_the_tolerance() -> None:
    result = sc.skellam_crossing_probability(2.0, [50.0, 10.0], 1, [0.5, 0.5], tolerance=1e-12)
    assert result.truncation <= 1e-12
    assert tail_bound(100.0, result.support - 1) + tail_bound(20.0, result.support - 1) > 1e-12


def test_loss_far_in_the_tail_is_the_librarys_one_pmf() -> None:
    """Regression (issue 28): the crossing's own pmf table gave nan at mean 5, z = 400 (ive
    underflows there); its loss now comes from the library's one log pmf, finite and within
    1e-12 of log(I_400(10)/I_399(10)) ≈ −4.38 from mpmath at 40 digits."""
    with mpmath.workdps(40):
        reference = float(mpmath.log(mpmath.besseli(400, 10) / mpmath.besseli(399, 10)))
    ours = float(sc.skellam_loss(5.0, [400], 1)[0])
    library = float(log_pmf(400.0, 5.0, 5.0) - log_pmf(399.0, 5.0, 5.0))
    cached = SkellamLogPmf(5.0).at(np.array([400, 399]))
    assert math.isfinite(ours)
    assert ours == library == float(cached[0] - cached[1])
    assert -4.39 < ours < -4.38
    assert abs(ours - reference) <= 1e-12 * abs(reference)


def test_symmetric_in_the_sign_of_the_difference() -> None:
    a = sc.skellam_crossing_probability(1.0, PROTOTYPE, 2, np.full(8, 0.7))
    b = sc.skellam_crossing_probability(1.0, PROTOTYPE, -2, np.full(8, 0.7))
    assert abs(a.probability - b.probability) <= a.roundoff + b.roundoff


@pytest.mark.parametrize(
    ("rate", "times", "d", "psi", "name"),
    [
        (0.0, [2.0, 1.0], 1, [1.0, 1.0], "rate"),
        (1.0, [1.0, 2.0], 1, [1.0, 1.0], "times"),
        (1.0, [2.0, 0.0], 1, [1.0, 1.0], "times"),
        (1.0, [2.0, 1.0], 0, [1.0, 1.0], "difference"),
        (1.0, [2.0, 1.0], 1.5, [1.0, 1.0], "difference"),
        (1.0, [2.0, 1.0], 1, [1.0], "psi"),
        (1.0, [2e5, 1.0], 1, [1.0, 1.0], "times"),
    ],
)
def test_bad_input_is_refused(
    rate: float, times: list[float], d: int, psi: list[float], name: str
) -> None:
    with pytest.raises(InvalidParameter, match=name):
        sc.skellam_crossing_probability(rate, times, d, psi)


def test_boundary_crossing_takes_the_largest_shift_for_a_nonnegative_psi(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """For ψ >= 0 the crossing probability grows with the shift D (docstring proof), so
    `skellam_boundary_crossing` computes D = Δ alone: checked against every D at Δ = 4, and
    Δ = 400 answers within the bounded-work contract, counted in float pmf entries (about
    20,000; the old loop over every D evaluated about 6.4 million; not timed: a timed assert
    fails on a loaded machine, issue 41). Twin: with a negative ψ the probabilities are not
    monotone in D, and every D is computed."""
    import expost.skellam.pmf
    from expost.skellam.boundary import SkellamPrivacyBoundary
    from expost.skellam.crossing import skellam_boundary_crossing, skellam_crossing_probability

    b = SkellamPrivacyBoundary(6.0, 1e-4, 4)
    grid = np.geomspace(60.0, 6.0, 12)
    psi = b.boundary(grid)
    each = [skellam_crossing_probability(1.0, grid, d, psi) for d in range(1, 5)]
    growing = [x.probability for x in each]
    assert growing == sorted(growing)
    assert each[-2].upper < each[-1].lower  # and strictly, where it is not 0
    assert skellam_boundary_crossing(1.0, grid, psi, 4) == each[-1]
    one, negative = np.array([10.0]), np.array([-1.0])  # ψ < 0: D = 1 crosses on z > 0 too
    dips = [skellam_crossing_probability(1.0, one, d, negative).upper for d in range(1, 5)]
    assert dips[0] > dips[-1] + 0.01  # not monotone: the shortcut would be wrong here
    assert skellam_boundary_crossing(1.0, one, negative, 4).upper == max(dips)
    wide = SkellamPrivacyBoundary(30.0, 1e-6, 400)
    times = np.geomspace(300.0, 30.0, 20)
    psi_wide, entries = wide.boundary(times), [0]
    log_ive = expost.skellam.pmf.log_ive

    def counting(n: npt.ArrayLike, x: float) -> npt.NDArray[np.float64]:
        entries[0] += int(np.size(n))
        return log_ive(n, x)

    monkeypatch.setattr(expost.skellam.pmf, "log_ive", counting)
    skellam_boundary_crossing(1.0, times, psi_wide, 400)
    assert 0 < entries[0] <= 100_000, entries
