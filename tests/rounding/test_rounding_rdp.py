"""Rounding audit of ex-post RDP and the RDP filter (THEORY §11; issues 21, 28).

Each test is parametrised by the registry entries it checks (`audits`), so the direction is the
registered one: the Markov bound, α·rho, the probabilistic conversion, the filter's prices,
budgets, spends and remainders, and the ex-post zCDP rho of a stopped Brownian run. References
are exact (`Fraction`) or 50-digit mpmath; each round-to-nearest twin must be caught.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np

from expost import ExPostRDP
from expost.apps.erm import ValidationCheck
from expost.ex_post_rdp import DEFAULT_ORDERS, markov_bound
from expost.filters.costs import BoundedRangeCost, BrownianCost, DPCost, ZCDPCost
from expost.filters.rdp import RDPFilter, ex_post_rdp_of, rdp_price
from expost.rounding import down_exact
from expost.rounding_registry import Rounded
from tests.rounding.test_rounding_renyi import ref_pure_dp
from tests.rounding_audit import (
    DIGITS,
    EXTREMES,
    Mp,
    N,
    audit,
    audits,
    log_uniform,
    representable,
)

K = len(DEFAULT_ORDERS)


def _mp(x: Fraction) -> Mp:
    return mp.mpf(x.numerator) / x.denominator


@audits("ex_post_rdp.markov_bound")
def test_markov_bound_rounds_up_against_mpmath(rounded: Rounded) -> None:
    """ε_α + log(1/delta)/(α−1): the log moved up 2 ulps, then exact roundings (<= 8 ulps)."""
    rng = np.random.default_rng(29)
    eps = log_uniform(rng, 1e-3, 1e3, N)
    alpha = 1.0 + log_uniform(rng, 1e-3, 1e3, N)
    delta = log_uniform(rng, 1e-15, 0.5, N)
    got, want, twin = [], [], []
    with mp.workdps(DIGITS):
        for e, a, d in zip(eps, alpha, delta, strict=True):
            got.append(markov_bound(float(e), float(a), float(d)))
            want.append(mp.mpf(e) + mp.log(1 / mp.mpf(d)) / (mp.mpf(a) - 1))
            twin.append(float(e) + math.log(1 / float(d)) / (float(a) - 1))
        audit(got, want, rounded.up, ulps=8, twin=twin)


@audits("ExPostRDP.eps")
def test_alpha_rho_is_the_float_above(rounded: Rounded) -> None:
    """α·rho of an ex-post zCDP value: one rounding of a rational (1 ulp); pure and tabled
    values are returned as stored."""
    rng = np.random.default_rng(30)
    rho = log_uniform(rng, 1e-6, 1e3, N)
    alpha = 1.0 + log_uniform(rng, 1e-3, 1e3, N)
    got = [ExPostRDP.of_rho(float(r)).eps(float(a)) for r, a in zip(rho, alpha, strict=True)]
    with mp.workdps(DIGITS):
        want = [_mp(Fraction(a) * Fraction(r)) for r, a in zip(rho, alpha, strict=True)]
        audit(got, want, rounded.up, ulps=1, twin=[a * r for r, a in zip(rho, alpha, strict=True)])


@audits("ExPostRDP.probabilistic")
def test_probabilistic_bound_rounds_up(rounded: Rounded) -> None:
    """min over the k default orders of α·rho + log(k/delta)/(α−1) (delta/k rounded down,
    then `markov_bound`): never below the exact minimum, within a few ulps of it."""
    rng = np.random.default_rng(31)
    rho = log_uniform(rng, 1e-6, 1e2, N)
    delta = log_uniform(rng, 1e-15, 0.5, N)
    got = [
        ExPostRDP.of_rho(float(r)).probabilistic(float(d)).bound
        for r, d in zip(rho, delta, strict=True)
    ]
    twin = [
        min(a * r + math.log(K / d) / (a - 1) for a in DEFAULT_ORDERS)
        for r, d in zip(rho, delta, strict=True)
    ]
    with mp.workdps(DIGITS):
        want = [
            min(
                _mp(Fraction(a) * Fraction(r)) + mp.log(K / mp.mpf(d)) / (mp.mpf(a) - 1)
                for a in DEFAULT_ORDERS
            )
            for r, d in zip(rho, delta, strict=True)
        ]
        audit(got, want, rounded.up, ulps=8, twin=twin)


_Round = BrownianCost | DPCost | BoundedRangeCost | ZCDPCost


def _rounds(rng: np.random.Generator, n: int) -> list[_Round]:
    """Brownian rounds (t, Δ), zCDP rounds, pure and bounded-range rounds, in turn."""
    t = log_uniform(rng, 1e-3, 1e3, n)
    s = log_uniform(rng, 1e-2, 1e2, n)
    e = log_uniform(rng, 1e-3, 1e1, n)
    kinds = (
        lambda i: BrownianCost(float(t[i]), float(s[i])),
        lambda i: ZCDPCost(float(e[i])),
        lambda i: DPCost(float(e[i])),
        lambda i: BoundedRangeCost(float(e[i])),
    )
    return [kinds[i % len(kinds)](i) for i in range(n)]


def extreme_rounds() -> list[_Round]:
    """Every kind at subnormal to the largest parameters (`EXTREMES`), Brownian on a grid."""
    return [
        *(BrownianCost(t, d) for t in EXTREMES for d in EXTREMES),
        *(ZCDPCost(x) for x in EXTREMES),
        *(DPCost(x) for x in EXTREMES),
        *(BoundedRangeCost(x) for x in EXTREMES),
    ]


def _exact_price(cost: _Round, alpha: float) -> Mp:
    """The price at 50 digits: α·Δ²/(2t), α·rho, randomised response's ε_α (at most
    min(eps, α·eps²/2)), for a bounded-range round at most α·eps²/8 too."""
    a = Fraction(alpha)
    if isinstance(cost, BrownianCost):
        return _mp(a * Fraction(cost.sensitivity) ** 2 / (2 * Fraction(cost.time)))
    if isinstance(cost, ZCDPCost):
        return _mp(a * Fraction(cost.rho))
    pure = ref_pure_dp(cost.eps, alpha)
    return pure if isinstance(cost, DPCost) else min(pure, _mp(a * Fraction(cost.eps) ** 2 / 8))


def _float_price(cost: _Round, alpha: float) -> float:
    if isinstance(cost, BrownianCost):
        d = cost.sensitivity
        return alpha * (d * d) / (2 * cost.time)  # d * d: inf past the floats, not an error
    if isinstance(cost, ZCDPCost):
        return alpha * cost.rho
    divisor = 2 if isinstance(cost, DPCost) else 8
    return min(cost.eps, alpha * (cost.eps * cost.eps) / divisor)


@audits("filters.rdp.rdp_price")
def test_rdp_prices_round_up(rounded: Rounded) -> None:
    """α·Δ²/(2t) (two exact roundings up: < 3 ulps of the exact value), α·rho (one rounding),
    the exact pure-DP curve (an interval enclosure within a few ulps, `expost.rdp_curves`), at
    ordinary and at subnormal-to-largest parameters."""
    rng = np.random.default_rng(32)
    extreme = extreme_rounds()
    costs = _rounds(rng, N) + extreme
    alpha = [*(1.0 + log_uniform(rng, 1e-3, 1e3, N)), *(1.0 + 2.0**-20 for _ in extreme)]
    got = [rdp_price(c, float(a)) for c, a in zip(costs, alpha, strict=True)]
    assert all(g is not None for g in got)
    with mp.workdps(DIGITS):
        want = [_exact_price(c, float(a)) for c, a in zip(costs, alpha, strict=True)]
        finite = representable(want)
        assert all(g == math.inf for g, ok in zip(got, finite, strict=True) if not ok)
        keep = [i for i, ok in enumerate(finite) if ok]
        audit(
            [float(got[i] or 0.0) for i in keep],
            [want[i] for i in keep],
            rounded.up,
            ulps=6,
            twin=[_float_price(costs[i], float(alpha[i])) for i in keep],
        )


@audits("RDPFilter.budgets")
def test_rdp_budgets_round_down(rounded: Rounded) -> None:
    """B_α = eps − log(k/delta)/(α−1) at the default orders: never above the exact value, within
    a few ulps of the log term (the scale where eps and the term nearly cancel)."""
    rng = np.random.default_rng(33)
    n = N // K + 1
    eps = log_uniform(rng, 1e-1, 1e3, n)
    delta = log_uniform(rng, 1e-15, 0.5, n)
    got = [b for e, d in zip(eps, delta, strict=True) for b in RDPFilter(e, d).budgets]
    twin = [
        e - math.log(K / d) / (a - 1)
        for e, d in zip(eps, delta, strict=True)
        for a in DEFAULT_ORDERS
    ]
    with mp.workdps(DIGITS):
        tails = [mp.log(K / mp.mpf(d)) / (mp.mpf(a) - 1) for d in delta for a in DEFAULT_ORDERS]
        want = [mp.mpf(e) - tail for e, tail in zip(np.repeat(eps, K), tails, strict=True)]
        scale = [
            max(1.0, math.ulp(float(t)) / math.ulp(float(w)))
            for t, w in zip(tails, want, strict=True)
        ]
        audit(got, want, rounded.up, ulps=8, twin=twin, scale=scale)


def _filters(rng: np.random.Generator) -> list[RDPFilter]:
    """Filters (eps 1000, delta 1e-6) holding 2 to 6 Brownian rounds each."""
    out = []
    for _ in range(N // K + 1):
        k = int(rng.integers(2, 7))
        t = log_uniform(rng, 1.0, 1e3, k)
        s = log_uniform(rng, 1e-2, 3.0, k)
        rounds = [BrownianCost(float(a), float(b)) for a, b in zip(t, s, strict=True)]
        out.append(RDPFilter(1e3, 1e-6, realised=tuple(rounds)))
    return out


@audits("RDPFilter.spent_by_order", "RDPFilter.remaining_by_order")
def test_rdp_spends_and_remainders_are_exact_sums_rounded(rounded: Rounded) -> None:
    """Σ of the (audited) prices per order rounded up, B_α less it rounded down (0 at least):
    one rounding of an exact sum (1 ulp); twins: `math.fsum`, the nearest float."""
    filters = _filters(np.random.default_rng(34))
    got, want, twin = [], [], []
    for f in filters:
        prices = list(zip(*(f.prices(c) for c in f.realised), strict=True))
        spent = rounded.name.endswith("spent_by_order")
        values = f.spent_by_order if spent else f.remaining_by_order
        for i, ps in enumerate(prices):
            total = sum(map(Fraction, ps), Fraction(0))
            if spent:
                want.append(total)
                twin.append(math.fsum(ps))
            else:
                want.append(max(Fraction(0), Fraction(f.budgets[i]) - total))
                twin.append(max(0.0, math.fsum([f.budgets[i], *(-p for p in ps)])))
            got.append(values[i])
    with mp.workdps(DIGITS):
        audit(got, [_mp(w) for w in want], rounded.up, ulps=1, twin=twin)


@audits("RDPFilter.spent")
def test_rdp_spent_is_the_smallest_exact_bound_rounded_up(rounded: Rounded) -> None:
    """min over α of Σ ε_α + tail_α (tail_α = markov_bound(0, α, delta/k), as in the budgets),
    exact, one rounding up (1 ulp); twin: the nearest float of the float sums."""
    filters = [f for seed in range(K) for f in _filters(np.random.default_rng(360 + seed))]
    got, want, twin = [], [], []
    share = down_exact(Fraction(1e-6) / K)  # the filter's share of delta per order
    for f in filters:
        prices = list(zip(*(f.prices(c) for c in f.realised), strict=True))
        tails = [markov_bound(0.0, a, share) for a in f.orders]
        exact = [sum(map(Fraction, ps), Fraction(t)) for ps, t in zip(prices, tails, strict=True)]
        got.append(f.spent)
        want.append(min(exact))
        twin.append(min(math.fsum([*ps, t]) for ps, t in zip(prices, tails, strict=True)))
    with mp.workdps(DIGITS):
        audit(got, [_mp(w) for w in want], rounded.up, ulps=1, twin=twin)


@audits("apps.erm.ValidationCheck.rho", "filters.rdp.ex_post_rdp_of")
def test_stopped_brownian_rho_rounds_up(rounded: Rounded) -> None:
    """Ex-post zCDP rho = Δ²/(2τ) of a Brownian run stopped at τ: one rounding of a rational
    (the other costs `ex_post_rdp_of` maps are stored as given)."""
    rng = np.random.default_rng(35)
    t = log_uniform(rng, 1e-3, 1e3, N)
    s = log_uniform(rng, 1e-2, 1e2, N)
    if rounded.name == "filters.rdp.ex_post_rdp_of":
        got = [
            (ex_post_rdp_of(BrownianCost(float(a), float(b))) or ExPostRDP.of_pure(0.0)).rho
            for a, b in zip(t, s, strict=True)
        ]
    else:
        got = [ValidationCheck([float(a)], float(b), 0.0).rho(0) for a, b in zip(t, s, strict=True)]
    with mp.workdps(DIGITS):
        audit(
            [float(g or 0.0) for g in got],
            [_mp(Fraction(b) ** 2 / (2 * Fraction(a))) for a, b in zip(t, s, strict=True)],
            rounded.up,
            ulps=1,
            twin=[b * b / (2 * a) for a, b in zip(t, s, strict=True)],
        )
