"""The bounded searches for the nearest float on the safe side (issue 28, "bounded work").

`rounding.largest_where` / `smallest_where` (and `nudge_up` / `nudge_down`, and the filters'
`max_bm_eps` / `min_bm_time` built on them) gallop then bisect on the floats' bit patterns, so
they take at most about 130 checks however far the start is. The old float-stepping loop of
`filters/base._extreme` is kept here, as the reference only: on the filters' own prices the new
search must give exactly its answers.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pytest
from attrs import frozen

from expost.apps.batch_budget import _BM_BUMP, BatchBudget
from expost.filters import GaussianDPFilter, UnifiedFilter, ZCDPFilter
from expost.filters.base import BrownianPricedFilter
from expost.filters.costs import BrownianCost, Cost, ZCDPCost
from expost.rounding import (
    largest_where,
    largest_where_array,
    last_integer,
    nudge_down,
    nudge_up,
    smallest_where,
)
from expost.rounding_registry import Rounded
from tests.rounding_audit import audits

FloatArray = npt.NDArray[np.float64]


def old_extreme(
    start: float,
    cost: Callable[[float], BrownianCost],
    admits: Callable[[Cost], bool],
    *,
    upward: bool,
) -> float:
    """The loop `filters/base._extreme` used to be: one float at a time (reference only)."""
    towards, away = (math.inf, 0.0) if upward else (0.0, math.inf)
    x = start
    while x > 0.0 and not admits(cost(x)):
        x = math.nextafter(x, away)
    while True:
        nxt = math.nextafter(x, towards)
        if not (0.0 < nxt < math.inf) or not admits(cost(nxt)):
            return x
        x = nxt


def _old_pair(f: BrownianPricedFilter, d: float) -> tuple[float, float]:
    """(min_bm_time, max_bm_eps) by the old loop, from the starts the filter uses."""
    left, div = f.remaining, f._BM_DIVISOR
    if left <= 0.0:
        return math.inf, 0.0
    t = old_extreme(d * d / (div * left), lambda x: BrownianCost(x, d), f.admits, upward=False)
    eps = math.sqrt(div * left)
    e = old_extreme(eps, lambda x: BrownianCost.from_eps(x, d), f.admits, upward=True)
    return t, e


def _filters(rng: np.random.Generator) -> list[BrownianPricedFilter]:
    out: list[BrownianPricedFilter] = []
    for _ in range(100):
        budget = float(np.exp(rng.uniform(math.log(1e-4), math.log(1e3))))
        used = [float(x) for x in rng.uniform(0.0, budget / 4.0, int(rng.integers(0, 4)))]
        zc = [ZCDPCost(u) for u in used if u > 0.0]
        out.append(ZCDPFilter(budget, realised=tuple(zc)))
        out.append(UnifiedFilter(budget, 1e-6, 1e-7, realised=tuple(zc)))
        out.append(GaussianDPFilter(math.sqrt(budget)))
    return out


def test_filter_extremes_equal_the_old_loop() -> None:
    """300 filters (three kinds, random budgets and spends) × 3 sensitivities: min_bm_time and
    max_bm_eps exactly as the one-float-at-a-time loop found them."""
    rng = np.random.default_rng(2811)
    compared = 0
    for f in _filters(rng):
        for d in (1.0, float(rng.uniform(0.01, 100.0)), float(np.exp(rng.uniform(-20, 20)))):
            assert (f.min_bm_time(d), f.max_bm_eps(d)) == _old_pair(f, d)
            compared += 1
    assert compared == 900


CHECKS: list[Cost] = []  # the costs _Disagreeing was asked to admit


@frozen
class _Disagreeing(ZCDPFilter):
    """A filter whose divisor disagrees with its price by a factor 10⁶: the search starts about
    20·2⁵² floats from the answer (the old loop needed about 10¹⁷ steps). Counts its checks."""

    _BM_DIVISOR: ClassVar[float] = 2e-6

    def admits(self, request: Cost) -> bool:
        CHECKS.append(request)
        return ZCDPFilter.admits(self, request)


def test_a_price_that_disagrees_with_the_divisor_answers_after_bounded_work() -> None:
    """At most about 130 checks a search (`bm_extreme`), counted (not timed: a timed assert
    fails on a loaded machine, issue 41)."""
    f = _Disagreeing(1.5)
    CHECKS.clear()
    t, eps = f.min_bm_time(2.0), f.max_bm_eps(2.0)
    assert len(CHECKS) <= 2 * 130, f"{len(CHECKS)} checks"
    assert f.admits(BrownianCost(t, 2.0))
    assert not f.admits(BrownianCost(math.nextafter(t, 0), 2.0))
    up = math.nextafter(eps, math.inf)
    assert f.admits(BrownianCost.from_eps(eps, 2.0))
    assert not f.admits(BrownianCost.from_eps(up, 2.0))
    assert t == pytest.approx(4.0 / 3.0)
    assert eps == pytest.approx(math.sqrt(3.0))


def test_searches_find_the_edge_in_few_checks_from_anywhere() -> None:
    """The nearest float on each side of 1/10 from starts up to the whole float range away;
    never more than 140 checks. Twin: a check that is never true gives None (not a loop)."""
    target = Fraction(1, 10)
    for start in (0.1, 0.3, 1e-300, 5e-324, 1e300, -1e300, 0.0, -0.0, math.inf, -math.inf):
        calls = [0]

        def at_most(y: float, calls: list[int] = calls) -> bool:
            calls[0] += 1
            return Fraction(y) <= target if math.isfinite(y) else y < 0

        found = largest_where(at_most, start)
        assert found is not None
        assert Fraction(found) <= target < Fraction(math.nextafter(found, 1.0))
        assert nudge_down(start, at_most) == found
        low = smallest_where(lambda y: not at_most(y), start)
        assert low == math.nextafter(found, 1.0) == nudge_up(start, lambda y: not at_most(y))
        assert calls[0] <= 4 * 140  # four searches
    assert largest_where(lambda y: False, 1.0) is None
    assert smallest_where(lambda y: False, 1.0, 0.5, 2.0) is None
    assert largest_where(lambda y: True, 1.0, 0.5, 2.0) == 2.0
    assert smallest_where(lambda y: True, 1.0, 0.5, 2.0) == 0.5
    with pytest.raises(ValueError, match="holds at no float"):
        nudge_up(1.0, lambda y: False)


def old_batch_max_bm_eps(b: BatchBudget) -> FloatArray:
    """The nextafter loops `BatchBudget.max_bm_eps` used to run (reference only)."""
    x = np.sqrt(np.maximum(0.0, 2.0 * b.remaining() / _BM_BUMP))
    for _ in range(64):
        bad = (x > 0.0) & ~b.admits(b.bm_cost(x * x))
        if not bad.any():
            break
        x = np.where(bad, np.nextafter(x, 0.0), x)
    for _ in range(64):
        up = np.nextafter(x, np.inf)
        more = (x > 0.0) & b.admits(b.bm_cost(up * up))
        if not more.any():
            break
        x = np.where(more, up, x)
    return x


def test_batch_max_bm_eps_equals_the_old_loops() -> None:
    rng = np.random.default_rng(2812)
    for _ in range(20):
        f = ZCDPFilter(float(np.exp(rng.uniform(math.log(1e-4), math.log(1e3)))))
        b = BatchBudget.start(f, 200)
        b = b.spend(rng.uniform(0.0, f.rho / 2.0, 200))
        assert b.max_bm_eps().tolist() == old_batch_max_bm_eps(b).tolist()


def test_the_vectorised_search_is_the_scalar_one() -> None:
    """Elementwise edges x <= c for random c over 600 decades, from starts anywhere."""
    rng = np.random.default_rng(2813)
    c = np.exp(rng.uniform(-690, 690, 500))
    start = np.exp(rng.uniform(-700, 700, 500))
    got = largest_where_array(lambda x: x <= c, start)
    want = [
        largest_where(partial(operator.ge, float(ci)), float(s), 5e-324, 1.7976931348623157e308)
        for ci, s in zip(c, start, strict=True)
    ]
    assert got.tolist() == want == c.tolist()
    assert largest_where_array(lambda x: x < 0.0, [1.0, 2.0], none=-1.0).tolist() == [-1.0, -1.0]


def test_last_integer_is_a_bounded_search_on_any_range() -> None:
    """The largest k <= c on [−2⁴⁰, 2⁴⁰] from random starts, within 2·41 + 2 checks."""
    rng = np.random.default_rng(2814)
    for c, start in rng.integers(-(2**40), 2**40, (200, 2)).tolist():
        calls = [0]

        def at_most(k: int, c: int = c, calls: list[int] = calls) -> bool:
            calls[0] += 1
            return k <= c

        assert last_integer(at_most, start, -(2**40), 2**40) == c
        assert calls[0] <= 2 * 41 + 2
    assert last_integer(lambda k: k < -10, 0, -5, 5) is None


def _edge_filters(rng: np.random.Generator) -> list[BrownianPricedFilter]:
    return _filters(rng)[:150]


@audits(
    "filters.base.BrownianPricedFilter.max_bm_eps",
    "filters.base.BrownianPricedFilter.min_bm_time",
    "apps.batch_budget.BatchBudget.max_bm_eps",
)
def test_bm_extremes_are_the_exact_edge_of_admission(rounded: Rounded) -> None:
    """The reference is the filter's own exact admission: the answer is admitted and the next
    float towards the unsafe side is not (max_bm_eps down: the largest admitted eps; min_bm_time
    up: the smallest admitted time). Twin: the closed-form start sqrt(divisor·remaining) (or
    Δ²/(divisor·remaining)) rounded to nearest, which is sometimes not admitted."""
    rng = np.random.default_rng(2815)
    towards = math.inf if not rounded.up else 0.0  # the unsafe side
    twin_refused = 0
    for f in _edge_filters(rng):
        d = float(np.exp(rng.uniform(-5, 5)))
        div, left = f._BM_DIVISOR, f.remaining
        if rounded.name == "apps.batch_budget.BatchBudget.max_bm_eps":
            if not isinstance(f, ZCDPFilter):
                continue
            b = BatchBudget.start(f, 1)
            x = float(b.max_bm_eps()[0])
            ok = bool(b.admits(b.bm_cost(x * x))[0])
            beyond = math.nextafter(x, towards)
            assert ok
            assert not b.admits(b.bm_cost(beyond * beyond))[0]
            start = math.sqrt(2.0 * b.remaining()[0])
            twin_refused += not b.admits(b.bm_cost(start * start))[0]
            continue

        def admitted(x: float, d: float = d, f: BrownianPricedFilter = f) -> bool:
            if rounded.name.endswith("max_bm_eps"):
                return f.admits(BrownianCost.from_eps(x, d))
            return f.admits(BrownianCost(x, d))

        if rounded.name.endswith("max_bm_eps"):
            x, start = f.max_bm_eps(d), math.sqrt(div * left)
        else:
            x, start = f.min_bm_time(d), d * d / (div * left)
        assert admitted(x)
        assert not admitted(math.nextafter(x, towards))
        twin_refused += not admitted(start)
    assert twin_refused > 0, "the closed form was never refused: the check has no power"
