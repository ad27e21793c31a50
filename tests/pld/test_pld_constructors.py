"""The PLD constructors against exact profiles in 50-digit arithmetic (issue 40, items 3 and 7).

Every check: the bracket (lower, upper) of `delta_bracket` contains the exact δ(ε) of the pair
(the larger of the two neighbour directions), and the upper bound is within a stated relative
tolerance of it. Exact references are sums over the pmfs (mpmath, 50 digits) or closed forms;
planted twins (a pair rounded the wrong way, one direction only) must be caught by the same
checks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import mpmath as mp
import pytest

from expost.errors import InvalidParameter
from expost.pld import PrivacyLossDistribution
from expost.testing.pld_reference import (
    Mp,
    gaussian_delta,
    laplace_delta,
    ratio,
    subsampled_gaussian_delta,
)

PLD = PrivacyLossDistribution
EPS = (0.0, 0.1, 0.5, 1.0, 2.0, 4.0)


def _hockey(p: Sequence[Mp], q: Sequence[Mp], eps: float) -> Mp:
    """Σ_x (P(x) − e^ε Q(x))_+ in 50 digits."""
    g = mp.exp(mp.mpf(eps))
    return mp.fsum(max(mp.mpf(0), a - g * b) for a, b in zip(p, q, strict=True))


def _pair_delta(p: Sequence[Mp], q: Sequence[Mp], eps: float, k: int = 1) -> Mp:
    """The exact δ(ε) of k rounds of (P, Q), the larger of the two directions."""
    pk, qk = list(p), list(q)
    for _ in range(k - 1):
        pk = [a * b for a, b in itertools.product(pk, p)]
        qk = [a * b for a, b in itertools.product(qk, q)]
    return max(_hockey(pk, qk, eps), _hockey(qk, pk, eps))


def _contains(
    pld: PLD, exact: Callable[[float], Mp], rel: float, eps: Sequence[float] = EPS
) -> None:
    for e in eps:
        lo, hi = pld.delta_bracket(e)
        x = exact(e)
        assert lo <= x <= hi, (e, lo, float(x), hi)
        assert hi <= x * (1 + rel) + 1e-12, (e, float(x), hi)


def _mp(values: Sequence[float]) -> list[Mp]:
    with mp.workdps(50):
        total = mp.fsum(mp.mpf(v) for v in values)
        return [mp.mpf(v) / total for v in values]


@pytest.fixture(autouse=True)
def _digits() -> object:
    with mp.workdps(50):
        yield


def test_from_pmfs_k_rounds_both_directions() -> None:
    p, q = [0.5, 0.3, 0.2, 0.0], [0.2, 0.3, 0.4, 0.1]  # an outcome of each infinite loss
    pld = PLD.from_pmfs(p, q)
    assert not pld.symmetric
    pm, qm = _mp(p), _mp(q)
    _contains(pld, lambda e: _pair_delta(pm, qm, e), 1e-3)
    _contains(pld.self_compose(3), lambda e: _pair_delta(pm, qm, e, 3), 1e-3)


def test_from_pmfs_mappings_and_subsampling() -> None:
    p, q = {"a": 0.6, "b": 0.4}, {"b": 0.7, "c": 0.3}
    pld = PLD.from_pmfs(p, q, sampling_prob=0.25)
    pm, qm = _mp([0.6, 0.4, 0.0]), _mp([0.0, 0.7, 0.3])
    mix = [mp.mpf("0.75") * b + mp.mpf("0.25") * a for a, b in zip(pm, qm, strict=True)]
    _contains(pld, lambda e: _pair_delta(mix, qm, e), 1e-3)
    assert pld.delta_bracket(0.3) == PLD.from_pmfs(p, q).poisson_sampled(0.25).delta_bracket(0.3)


def test_from_pmfs_twin_rounded_the_wrong_way_is_caught() -> None:
    """A pair whose loss favours Q (p and q swapped in the remove direction only) is not a
    bracket of the true pair: the containment check must fail somewhere."""
    p, q = [0.7, 0.2, 0.1], [0.1, 0.3, 0.6]
    wrong = PLD.from_pmfs([0.6, 0.3, 0.1], q)  # P mass moved to a lower loss
    pm, qm = _mp(p), _mp(q)
    with pytest.raises(AssertionError):
        _contains(wrong, lambda e: _pair_delta(pm, qm, e), 1e-3)


@pytest.mark.parametrize(
    ("p", "q", "name"),
    [
        ([0.5, float("nan"), 0.5], [0.3, 0.3, 0.4], "p[1]"),
        ([0.5, 0.5], [1.2, -0.2], "q[1]"),
        ([0.5, 0.6], [0.5, 0.5], "sum(p)"),
        ([0.5, 0.5], [0.5, 0.5, 0.0], "q"),
        ([[0.5, 0.5]], [[0.5, 0.5]], "p"),
    ],
)
def test_from_pmfs_refuses_bad_pmfs_naming_them(p: object, q: object, name: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        PLD.from_pmfs(p, q)
    assert info.value.name == name


def _discrete_gaussian_pmfs(sigma: float, d: int) -> tuple[list[Mp], list[Mp]]:
    s2 = 2 * mp.mpf(sigma) ** 2
    xs = range(-int(60 * sigma) - 2, int(60 * sigma) + d + 3)
    z = mp.fsum(
        mp.exp(-(mp.mpf(x) ** 2) / s2) for x in range(-int(80 * sigma) - 5, int(80 * sigma) + 6)
    )
    return [mp.exp(-((x - d) ** 2) / s2) / z for x in xs], [mp.exp(-(x**2) / s2) / z for x in xs]


@pytest.mark.parametrize(("sigma", "d"), [(0.8, 1), (3.0, 2), (0.3, 1)])
def test_discrete_gaussian_against_exact_sums(sigma: float, d: int) -> None:
    pm, qm = _discrete_gaussian_pmfs(sigma, d)
    pld = PLD.discrete_gaussian(sigma, d)
    assert pld.symmetric
    _contains(pld, lambda e: _pair_delta(pm, qm, e), 1e-3)
    _contains(pld.self_compose(2), lambda e: _two_rounds(pm, qm, e), 1e-3, (0.5, 2.0))


def _two_rounds(pm: list[Mp], qm: list[Mp], eps: float) -> Mp:
    """Two rounds of a pair with a loss linear in the outcome: sum over pairs (small supports)."""
    big = [(a, b) for a, b in zip(pm, qm, strict=True) if a > mp.mpf(10) ** -40]
    p2 = [a1 * a2 for (a1, _), (a2, _) in itertools.product(big, big)]
    q2 = [b1 * b2 for (_, b1), (_, b2) in itertools.product(big, big)]
    return max(_hockey(p2, q2, eps), _hockey(q2, p2, eps))


def test_discrete_gaussian_twin_sensitivity_too_small_is_caught() -> None:
    pm, qm = _discrete_gaussian_pmfs(1.0, 2)
    with pytest.raises(AssertionError):
        _contains(PLD.discrete_gaussian(1.0, 1), lambda e: _pair_delta(pm, qm, e), 1e-3)


@pytest.mark.parametrize(("scale", "d"), [(1.0, 1), (2.5, 3), (0.05, 2)])
def test_discrete_laplace_against_exact_sums(scale: float, d: int) -> None:
    t = mp.mpf(scale)
    xs = range(-int(80 * scale) - 3, int(80 * scale) + d + 4)
    z = mp.fsum(
        mp.exp(-abs(mp.mpf(x)) / t) for x in range(-int(200 * scale) - 5, int(200 * scale) + 6)
    )
    pm = [mp.exp(-abs(mp.mpf(x - d)) / t) / z for x in xs]
    qm = [mp.exp(-abs(mp.mpf(x)) / t) / z for x in xs]
    _contains(PLD.discrete_laplace(scale, d), lambda e: _pair_delta(pm, qm, e), 1e-3)


def test_eps_delta_pair_closed_form_and_rr() -> None:
    eps0, d0 = 1.0, 1e-3
    exact = lambda e: (
        d0 + (1 - d0) * max(mp.mpf(0), (mp.exp(eps0) - mp.exp(e)) / (1 + mp.exp(eps0)))
    )
    _contains(PLD.from_eps_delta(eps0, d0), exact, 1e-4, (0.0, 0.3, 0.9, 1.0, 2.0))
    assert PLD.pure_dp(0.7).delta_bracket(0.2) == PLD.from_eps_delta(0.7, 0.0).delta_bracket(0.2)


def test_sampled_without_replacement_is_the_amplified_pair() -> None:
    pld = PLD.sampled_without_replacement(1.0, 1e-6, 10, 100)
    eps1 = math.log1p(0.1 * math.expm1(1.0))
    exact = lambda e: (
        mp.mpf("1e-7")
        + (1 - mp.mpf("1e-7")) * max(mp.mpf(0), (mp.exp(eps1) - mp.exp(e)) / (1 + mp.exp(eps1)))
    )
    _contains(pld, exact, 1e-4, (0.0, 0.05, 0.1))
    with pytest.raises(InvalidParameter):
        PLD.sampled_without_replacement(1.0, 1e-6, 101, 100)


def _bounded_range_delta(eps0: float, e: float) -> Mp:
    if e >= eps0:
        return mp.mpf(0)
    return (1 - mp.exp((mp.mpf(e) - eps0) / 2)) ** 2 / (1 - mp.exp(-mp.mpf(eps0)))


def _two_point_delta(eps0: float, t: float | Mp, e: float) -> Mp:
    """δ of the two-point ε0-bounded-range pair with losses −t·ε0 and (1 − t)·ε0 (Dong, Durfee &
    Rogers 2020)."""
    a, b = -mp.mpf(t) * eps0, (1 - mp.mpf(t)) * eps0
    p = (mp.exp(-a) - 1) / (mp.exp(-a) - mp.exp(-b))  # P-mass at b: E_P[e^{-L}] = 1
    return p * max(mp.mpf(0), 1 - mp.exp(mp.mpf(e) - b)) + (1 - p) * max(
        mp.mpf(0), 1 - mp.exp(mp.mpf(e) - a)
    )


@pytest.mark.parametrize("eps0", [0.5, 2.0])
def test_bounded_range_is_the_supremum_of_the_two_point_pairs(eps0: float) -> None:
    pld = PLD.bounded_range(eps0)
    _contains(pld, lambda e: _bounded_range_delta(eps0, e), 1e-4, (0.0, 0.1, 0.3, 0.49))
    for t, e in itertools.product((0.05, 0.3, 0.5, 0.8), (0.0, 0.1, 0.4)):
        assert _two_point_delta(eps0, t, e) <= _bounded_range_delta(eps0, e) + mp.mpf(10) ** -45
    # the bound is attained at t = (1 − e/ε0)/2 (not a loose envelope)
    e = 0.1
    attained = _two_point_delta(eps0, (1 - mp.mpf(e) / eps0) / 2, e)
    assert abs(attained - _bounded_range_delta(eps0, e)) < mp.mpf(10) ** -40
    # twin: randomised response at ε0/2 (the t = 1/2 pair) is *not* an upper bound for every
    # ε0-BR mechanism: the t = 0.1 pair exceeds it above ε0/2
    assert PLD.pure_dp(eps0 / 2).delta(0.6 * eps0) < float(_two_point_delta(eps0, 0.1, 0.6 * eps0))


def test_vector_laplace_splits_have_the_scalar_profile() -> None:
    """Lap(a)⊗Lap(b) (the ℓ1 sensitivity split over two coordinates) never above Lap(a + b)."""
    whole = PLD.vector_laplace(1.0, 1.0)
    for f in (0.5, 0.2):
        split = PLD.laplace(1.0 / f).compose(PLD.laplace(1.0 / (1 - f)))
        for e in (0.0, 0.2, 0.6, 0.9):
            assert split.delta_bracket(e)[0] <= whole.delta_bracket(e)[1]
    _contains(whole, lambda e: laplace_delta(ratio(1.0, 1.0), e), 1e-4, (0.0, 0.5))


def test_from_noise_gaussian_law_matches_the_gaussian_pair() -> None:
    from scipy.stats import norm

    pld = PLD.from_noise(norm.logpdf, lambda x: float(norm.sf(x)), 1.0, scale=1.0)
    _contains(pld, lambda e: gaussian_delta(ratio(1.0, 1.0), e), 1e-4, (0.0, 0.5, 2.0))
    with pytest.raises(InvalidParameter):
        PLD.from_noise(norm.logpdf, lambda x: 1.0, 1.0)  # a tail bound that never falls
    sampled = PLD.from_noise(norm.logpdf, lambda x: float(norm.sf(x)), 1.0, 0.1)
    exact = lambda e: max(
        subsampled_gaussian_delta(ratio(1.0, 1.0), 0.1, e, d) for d in ("remove", "add")
    )
    _contains(sampled, exact, 1e-4, (0.0, 0.2, 1.0))
    assert not sampled.symmetric


def test_gaussian_compositions_are_one_gaussian_pair() -> None:
    """k unsampled Gaussian rounds are the Gaussian pair μ√k (exact): built directly."""
    direct = PLD.gaussian(2.0).self_compose(9)
    _contains(direct, lambda e: gaussian_delta(ratio(3.0, 2.0), e), 1e-4, (0.5, 2.0))
    pair = PLD.gaussian(2.0).compose(PLD.gaussian(1.0))
    mu = mp.sqrt(mp.mpf("1.25"))
    _contains(pair, lambda e: gaussian_delta(mu, e), 1e-4, (0.5, 2.0))


def test_poisson_sampled_refused_for_a_composition() -> None:
    with pytest.raises(InvalidParameter):
        PLD.laplace(1.0).compose(PLD.laplace(2.0)).poisson_sampled(0.5)


def test_laplace_huge_eps0_is_safe_not_half() -> None:
    """ε0 = 1/b >= 745: the exact δ(ε) is 1 − e^{(ε−ε0)/2} ≈ 1 (issue 40: 0.5 was reported);
    between 1/720 and 1/745 no 'infinite masses'; subsampled, no OverflowError."""
    for b in (1 / 700, 1 / 730, 1 / 745, 1 / 800, 1e-5, 1e-300):
        pld = PLD.laplace(b)
        assert pld.delta(1.0) >= 1.0 - 1e-12
        assert pld.self_compose(10).delta(1.0) >= 1.0 - 1e-12
        sampled = PLD.laplace(b, sampling_prob=0.1)
        assert 0.1 <= sampled.delta(1.0) <= 0.1 + 1e-6
    # losses above LOSS_CAP = 64 are at +∞: eps(δ) is then inf (an upper bound), never wrong
    assert PLD.laplace(1 / 730).eps(1e-6) == math.inf
