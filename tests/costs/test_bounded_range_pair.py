"""The exponential mechanism priced at the bounded-range pair (issue 40 item 3).

`BoundedRangeCost(eps).pair()` is the worst eps-bounded-range pair: its loss L has density
e^{(l−eps)/2}/(2(1 − e^{−eps})) on (−eps, eps) under P, the same law in both directions
(docs/theory/12-privacy-loss-distributions.md). References computed here, not by the library:

- domination: every eps-bounded-range mechanism's pair is a post-processing of a two-point pair
  with losses −t·eps and (1 − t)·eps (Durfee & Rogers 2019; Dong, Durfee & Rogers 2020), whose
  profile is p_t·(1 − e^{x − (1−t)eps})_+ in closed form; randomised response at eps/2 is one;
- counts: the sum S of k losses has density κ^k·e^{s/2}·IH_k(u), u = (s + k·eps)/(2·eps), IH_k
  the Irwin–Hall density and κ = eps/(2 sinh(eps/2)) (the product density depends on the sum
  only), so δ_k(x) = κ^k ∫_{s>x} (e^{s/2} − e^x e^{−s/2}) IH_k(u) du in 40-digit mpmath.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from expost.costs.pairs import ClosedPair
from expost.exact.bits import GeneratorBits
from expost.filters import BoundedRangeCost, DPCost, PLDFilter
from expost.session import PrivateSession

GRID = 1e-3


def two_point_delta(eps: float, t: float, x: float) -> float:
    """The profile at x >= 0 of the two-point pair with losses −t·eps, (1 − t)·eps (40 digits)."""
    with mp.workdps(40):
        e, tt = mp.mpf(eps), mp.mpf(t)
        a, b = (1 - tt) * e, -tt * e
        if not 0 < t < 1:  # one point at loss 0 (E_P[e^{−L}] = 1): P = Q
            return 0.0
        p = (1 - mp.exp(-b)) / (mp.exp(-a) - mp.exp(-b))  # E_P[e^{−L}] = 1
        return float(p * max(mp.mpf(0), 1 - mp.exp(mp.mpf(x) - a)))


def composed_delta(eps: float, k: int, x: float) -> float:
    """δ_k(x) of k rounds of the bounded-range pair (module docstring), 40 digits."""
    with mp.workdps(40):
        e, xx = mp.mpf(eps), mp.mpf(x)
        kappa = e / (2 * mp.sinh(e / 2))
        u_x = (xx + k * e) / (2 * e)
        total = mp.mpf(0)
        for c, weight in ((e, mp.exp(-k * e / 2)), (-e, mp.exp(xx) * mp.exp(k * e / 2))):
            sign = 1 if c > 0 else -1
            part = mp.mpf(0)  # ∫_{u_x}^{k} e^{c·u} IH_k(u) du, IH_k by its truncated powers
            for j in range(k + 1):
                lo = max(u_x - j, mp.mpf(0))
                if lo >= k - j:
                    continue
                piece = mp.quad(lambda s, c=c: s ** (k - 1) * mp.exp(c * s), [lo, k - j])
                part += (-1) ** j * mp.binomial(k, j) * mp.exp(c * j) * piece
            total += sign * weight * part / mp.factorial(k - 1)
        return float(kappa**k * total)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_the_pair_dominates_every_two_point_bounded_range_pair_in_both_directions(
    eps: float,
) -> None:
    pld = BoundedRangeCost(eps).pair().pld(GRID)
    xs = np.linspace(0.0, eps, 41)
    for t in np.linspace(0.0, 1.0, 21):
        for x in xs:
            want = two_point_delta(eps, float(t), float(x))
            assert pld.remove.delta(float(x)) >= want
            assert pld.add.delta(float(x)) >= want
    # randomised response at eps/2 is eps-bounded range (t = 1/2): it touches the profile at 0
    assert pld.delta(0.0) == pytest.approx(math.tanh(eps / 4), rel=1e-3)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_a_pair_for_half_the_range_is_caught_unsafe(eps: float) -> None:
    """The planted twin: the bounded-range pair at eps/2 does not dominate randomised response
    at eps/2, an eps-bounded-range mechanism — the same exact check fails it."""
    planted = ClosedPair("bounded_range", eps / 2).pld(GRID)
    assert planted.delta(0.0) < two_point_delta(eps, 0.5, 0.0)


@pytest.mark.parametrize(("eps", "target", "delta"), [(0.2, 2.0, 1e-5), (0.5, 2.0, 1e-2)])
def test_the_count_is_the_exact_count_and_above_randomised_responses(
    eps: float, target: float, delta: float
) -> None:
    count = int(PLDFilter(target, delta, BoundedRangeCost(eps)).budget)
    assert composed_delta(eps, count, target) <= delta  # never above the exact count
    assert composed_delta(eps, count + 1, target) > delta  # and not below it
    assert count >= 2 * PLDFilter(target, delta, DPCost(eps)).budget  # the bounded-range gain


def test_the_reference_is_the_closed_form_at_one_round() -> None:
    """The reference's own check: at k = 1 it is (1 − e^{(x−eps)/2})²/(1 − e^{−eps})."""
    for eps, x in ((0.2, 0.05), (1.0, 0.3), (3.0, 0.0)):
        closed = (1 - math.exp((x - eps) / 2)) ** 2 / (1 - math.exp(-eps))
        assert composed_delta(eps, 1, x) == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("secure", [False, True])
def test_a_session_runs_exactly_the_count_of_exponential_mechanism_rounds(secure: bool) -> None:
    budget = PLDFilter(2.0, 1e-5)
    if secure:
        s = PrivateSession(budget, bits=GeneratorBits(np.random.default_rng(1)))
    else:
        s = PrivateSession(budget, np.random.default_rng(1))
    scores = [3, 1, 2]
    rounds = 0
    while s.filter.remaining != 0.0:  # a PLDFilter: rounds
        s.exponential_mechanism(scores, eps=0.2, monotone=True)
        rounds += 1
    assert rounds == PLDFilter(2.0, 1e-5, BoundedRangeCost(0.2)).budget
    assert {type(r.request) for r in s.history} == {BoundedRangeCost}
