"""Rounding audit of the registry entries whose exact value is rational or a square root
(issue 28): prices, rho and eps of the exact mechanisms, the zCDP price of a pure-DP round, the
GDP filter's mu² budget, the noise reductions' worst cases and the time grids' prices.

One table: registry name -> an input strategy, the value as the library reports it, the exact
value (a `Fraction`, or an mpmath expression at 50 digits) and the round-to-nearest twin. Each
entry's test is parametrised by the entry (`audits`), so its direction is the registered one;
the twin must be caught.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from expost import (
    AboveThreshold,
    BrownianNoiseReduction,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    LaplaceNoiseReduction,
    PermuteAndFlip,
    TimeGrid,
)
from expost.apps.batch_budget import BatchBudget
from expost.filters import (
    BoundedRangeCost,
    BrownianCost,
    Cost,
    DPCost,
    GaussianDPFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.filters.costs import DiscreteGaussianCost, DiscreteLaplaceCost
from expost.filters.zcdp import zcdp_price
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, EXTREMES, N, audit, audits, log_uniform

Mp = Any
Exact = Fraction | Mp  # a rational, or an mpmath number at 50 digits


def _fractions(rng: np.random.Generator) -> list[Fraction]:
    """N rationals p/q with p, q up to 2⁴⁰ times a power of 2 in [2⁻⁴⁰, 2⁴⁰] (most not floats)."""
    p = rng.integers(1, 2**40, N)
    q = rng.integers(1, 2**40, N)
    k = rng.integers(-40, 41, N)
    return [
        Fraction(int(a), int(b)) * Fraction(2) ** int(e) for a, b, e in zip(p, q, k, strict=True)
    ]


def _floats(rng: np.random.Generator) -> list[float]:
    return [float(x) for x in log_uniform(rng, 1e-3, 1e3, N)]


def _zcdp_exact(c: Cost) -> Fraction:
    """The zCDP price of a round, exactly (APC Thm 5, Lemma 2.1; Cesar–Rogers)."""
    if isinstance(c, BrownianCost):
        return Fraction(c.sensitivity) ** 2 / (2 * Fraction(c.time))
    if isinstance(c, DPCost):
        return Fraction(c.eps) ** 2 / 2
    if isinstance(c, BoundedRangeCost):
        return Fraction(c.eps) ** 2 / 8
    assert isinstance(c, ZCDPCost)
    return Fraction(c.rho)


def _zcdp_twin(c: Cost) -> float:
    """The plain float formula (eps·eps/8 underflows to 0 for a subnormal eps)."""
    if isinstance(c, BrownianCost):
        return c.sensitivity * c.sensitivity / (2.0 * c.time)
    if isinstance(c, DPCost):
        return c.eps * c.eps / 2.0
    if isinstance(c, BoundedRangeCost):
        return c.eps * c.eps / 8.0
    assert isinstance(c, ZCDPCost)
    return c.rho


def _zcdp_costs(rng: np.random.Generator) -> list[Cost]:
    """N drawn rounds of each kind, then each kind at `EXTREMES` (subnormal to the largest,
    Brownian on their grid) whose exact price is a float (beyond it: +inf, tested below)."""
    x, t = _floats(rng), _floats(rng)
    drawn: list[Cost] = [kind(a) for a in x for kind in (DPCost, BoundedRangeCost, ZCDPCost)]
    drawn += [BrownianCost(a, b) for a, b in zip(t, x, strict=True)]
    extreme: list[Cost] = [
        *(BrownianCost(a, b) for a in EXTREMES for b in EXTREMES),
        *(kind(a) for a in EXTREMES for kind in (DPCost, BoundedRangeCost, ZCDPCost)),
    ]
    top = Fraction(sys.float_info.max)
    return drawn + [c for c in extreme if _zcdp_exact(c) <= top]


def _to_mp(x: Exact) -> Mp:
    return mp.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else x


Case = tuple[
    Callable[[np.random.Generator], list[Any]],  # inputs
    Callable[[Any], float],  # reported
    Callable[[Any], Exact],  # exact
    Callable[[Any], float],  # twin: the plain float formula
    int,  # ulps allowed beyond the exact value
]


def _dgm(x: tuple[int, Fraction]) -> GaussianMechanism:
    """The exact (discrete) Gaussian with sensitivity x[0] and σ² = x[1]."""
    return GaussianMechanism.from_sigma2(x[0], x[1], exact=True)


def _dgm_inputs(rng: np.random.Generator) -> list[tuple[int, Fraction]]:
    return list(zip(rng.integers(1, 100, N).tolist(), _fractions(rng), strict=True))


def _sensitivity_scale(rng: np.random.Generator) -> list[tuple[int, float]]:
    """(Δ, σ or scale): integer sensitivities up to 100, scales over 6 decades."""
    return list(zip(rng.integers(1, 101, N).tolist(), _floats(rng), strict=True))


def _em(x: tuple[float | Fraction, bool]) -> ExponentialMechanism:
    """Float noise for a float eps, exact noise (eps kept as a Fraction) for a Fraction."""
    return ExponentialMechanism(x[0], x[1], exact=isinstance(x[0], Fraction))


def _em_inputs(rng: np.random.Generator) -> list[tuple[float | Fraction, bool]]:
    pairs = enumerate(zip(_floats(rng), _fractions(rng), strict=True))
    eps = [f if i % 2 else e for i, (e, f) in pairs]
    return list(zip(eps, (rng.uniform(size=N) < 0.5).tolist(), strict=True))


def _em_range(x: tuple[float | Fraction, bool]) -> Fraction:
    return Fraction(x[0]) * (1 if x[1] else 2)


def _grid(rng: np.random.Generator) -> list[tuple[float, float]]:
    """(t, Δ): times over 24 decades, sensitivities over 6."""
    times = log_uniform(rng, 1e-12, 1e12, N).tolist()
    return list(zip(times, log_uniform(rng, 1e-3, 1e3, N).tolist(), strict=True))


def _spends(rng: np.random.Generator) -> list[list[float]]:
    """N histories of 1 to 6 rhos, each log-uniform in [1e-6, 1e3] (they sum below 10⁴)."""
    sizes = rng.integers(1, 7, N)
    return [log_uniform(rng, 1e-6, 1e3, int(k)).tolist() for k in sizes]


def _batch(spends: list[float]) -> BatchBudget:
    b = BatchBudget.start(ZCDPFilter(1e4), 1)
    for r in spends:
        b = b.spend([r])
    return b


CASES: dict[str, Case] = {
    # exact noise (rho = Δ²/(2σ²) kept exact, reported up); float noise stores the given level
    "GaussianMechanism.cost": (
        _dgm_inputs,
        lambda x: _dgm(x).cost().rho,
        lambda x: Fraction(x[0] ** 2) / (2 * x[1]),
        lambda x: x[0] ** 2 / (2 * float(x[1])),
        1,
    ),
    "GaussianMechanism.guarantee": (
        _dgm_inputs,
        lambda x: _dgm(x).guarantee().rho,
        lambda x: Fraction(x[0] ** 2) / (2 * x[1]),
        lambda x: x[0] ** 2 / (2 * float(x[1])),
        1,
    ),
    "LaplaceMechanism.guarantee": (
        _fractions,
        lambda e: LaplaceMechanism(1, e, exact=True).guarantee().eps,
        lambda e: e,
        float,
        1,
    ),
    "LaplaceMechanism.cost": (
        _fractions,
        lambda e: LaplaceMechanism(1, e, exact=True).cost().eps,
        lambda e: e,
        float,
        1,
    ),
    "AboveThreshold.guarantee": (  # float mode stores eps: the exact mode rounds
        _fractions,
        lambda e: AboveThreshold(e, 0, exact=True).guarantee().eps,
        lambda e: e,
        float,
        1,
    ),
    "AboveThreshold.cost": (
        _fractions,
        lambda e: AboveThreshold(e, 0, exact=True).cost().eps,
        lambda e: e,
        float,
        1,
    ),
    "PermuteAndFlip.guarantee": (
        _fractions,
        lambda e: PermuteAndFlip(e).guarantee().eps,
        lambda e: e,
        float,
        1,
    ),
    "PermuteAndFlip.cost": (
        _fractions,
        lambda e: PermuteAndFlip(e).cost().eps,
        lambda e: e,
        float,
        1,
    ),
    "ExponentialMechanism.guarantee": (
        _em_inputs,
        lambda x: _em(x).guarantee().rho,
        lambda x: Fraction(x[0]) ** 2 / (8 if x[1] else 2),
        lambda x: float(x[0]) ** 2 / (8.0 if x[1] else 2.0),
        1,
    ),
    "ExponentialMechanism.cost": (
        _em_inputs,
        lambda x: _em(x).cost().eps,
        _em_range,
        lambda x: float(_em_range(x)),
        1,
    ),
    "ExponentialMechanism.dp_guarantee": (
        _em_inputs,
        lambda x: _em(x).dp_guarantee().eps,
        _em_range,
        lambda x: float(_em_range(x)),
        1,
    ),
    # the secure-mode costs' levels (issue 40 item 3): rho = Δ²/(2σ²), eps = Δ/scale, rounded up
    "filters.costs.DiscreteGaussianCost.zcdp": (
        _sensitivity_scale,
        lambda x: DiscreteGaussianCost(x[1], x[0]).zcdp()[0],
        lambda x: Fraction(x[0] ** 2) / (2 * Fraction(x[1]) ** 2),
        lambda x: x[0] ** 2 / (2.0 * x[1] ** 2),
        1,
    ),
    "filters.costs.DiscreteLaplaceCost.dp": (
        _sensitivity_scale,
        lambda x: DiscreteLaplaceCost(x[1], x[0]).dp()[0],
        lambda x: Fraction(x[0]) / Fraction(x[1]),
        lambda x: x[0] / x[1],
        1,
    ),
    "filters.zcdp.zcdp_price": (
        _zcdp_costs,
        lambda c: zcdp_price(c)[0],  # type: ignore[index]
        _zcdp_exact,
        _zcdp_twin,
        1,
    ),
    "GaussianDPFilter.budget": (
        _floats,
        lambda m: GaussianDPFilter(m).budget,
        lambda m: Fraction(m) ** 2,
        lambda m: m * m,
        1,
    ),
    "BrownianNoiseReduction.guarantee": (
        _grid,
        lambda x: BrownianNoiseReduction(TimeGrid([2 * x[0], x[0]]), x[1]).guarantee().rho,
        lambda x: Fraction(x[1]) ** 2 / (2 * Fraction(x[0])),
        lambda x: x[1] ** 2 / (2.0 * x[0]),
        1,
    ),
    "LaplaceNoiseReduction.guarantee": (
        _grid,
        lambda x: LaplaceNoiseReduction([2 * x[0], x[0]], x[1]).guarantee().eps,
        lambda x: Fraction(x[1]) / Fraction(x[0]),
        lambda x: x[1] / x[0],
        2,  # the quotient moved up 1 ulp
    ),
    "LaplaceNoiseReduction.cost_at": (
        _grid,
        lambda x: LaplaceNoiseReduction([4 * x[0], 2 * x[0]], x[1]).cost_at(x[0]).bound,
        lambda x: Fraction(x[1]) / Fraction(x[0]),
        lambda x: x[1] / x[0],
        2,  # the quotient moved up 1 ulp
    ),
    "filters.Filter.spent": (
        _spends,
        lambda x: ZCDPFilter(1e9, realised=tuple(ZCDPCost(r) for r in x)).spent,
        lambda x: sum(map(Fraction, x), Fraction(0)),
        math.fsum,  # the exact sum rounded to nearest
        1,
    ),
    "filters.Filter.remaining": (
        _spends,
        lambda x: ZCDPFilter(1e4, realised=tuple(ZCDPCost(r) for r in x)).remaining,
        lambda x: 10_000 - sum(map(Fraction, x), Fraction(0)),
        lambda x: math.fsum([1e4, *(-r for r in x)]),
        1,
    ),
    "apps.batch_budget.BatchBudget.remaining": (
        _spends,
        lambda x: float(_batch(x).remaining()[0]),
        lambda x: 10_000 - sum(map(Fraction, x), Fraction(0)),
        lambda x: math.fsum([1e4, *(-r for r in x)]),
        2**4,  # rho·(1 − 2⁻⁵⁰) less the running error bound: within 2⁻⁴⁹ of the budget
    ),
    "TimeGrid.max_rho_for": (
        _grid,
        lambda x: TimeGrid([2 * x[0], x[0]]).max_rho_for(x[1]),
        lambda x: Fraction(x[1]) ** 2 / (2 * Fraction(x[0])),
        lambda x: x[1] ** 2 / (2.0 * x[0]),
        5,  # two roundings, then 3 ulps up (grids._PRICE_ULPS)
    ),
    "TimeGrid.rho_for": (
        _grid,
        lambda x: float(TimeGrid([x[0]]).rho_for(x[1])[0]),
        lambda x: Fraction(x[1]) ** 2 / (2 * Fraction(x[0])),
        lambda x: x[1] ** 2 / (2.0 * x[0]),
        5,
    ),
    "TimeGrid.eps_for": (
        _grid,
        lambda x: float(TimeGrid([x[0]]).eps_for(x[1])[0]),
        lambda x: mp.mpf(x[1]) / mp.sqrt(mp.mpf(x[0])),
        lambda x: x[1] / math.sqrt(x[0]),
        5,
    ),
}


@audits(*CASES)
def test_exact_values_are_on_the_safe_side(rounded: Rounded) -> None:
    inputs, reported, exact, twin, ulps = CASES[rounded.name]
    xs = inputs(np.random.default_rng(abs(hash(rounded.name)) % 2**32))
    got = [reported(x) for x in xs]
    with mp.workdps(DIGITS):
        want = [_to_mp(exact(x)) for x in xs]
        audit(got, want, rounded.up, ulps=ulps, twin=[twin(x) for x in xs])


@pytest.mark.parametrize("name", ["LaplaceMechanism.guarantee", "GaussianDPFilter.budget"])
def test_exact_rational_answers_are_the_nearest_float_on_the_safe_side(name: str) -> None:
    """Where the answer is one rounding of a rational, it is exactly the adjacent float."""
    inputs, reported, exact, _, _ = CASES[name]
    for x in inputs(np.random.default_rng(7))[:200]:
        q, g = exact(x), Fraction(reported(x))
        if name == "GaussianDPFilter.budget":
            assert g <= q < Fraction(math.nextafter(float(g), math.inf))
        else:
            assert g >= q > Fraction(math.nextafter(float(g), -math.inf))


def test_zcdp_price_overflows_to_inf_and_is_never_zero() -> None:
    """Beyond the floats the only safe price is +inf; a positive price is never 0."""
    for a in EXTREMES:
        for b in EXTREMES:
            c = BrownianCost(a, b)
            price = zcdp_price(c)
            assert price is not None
            if _zcdp_exact(c) > Fraction(sys.float_info.max):
                assert price[0] == math.inf
            assert price[0] > 0.0
        for kind in (DPCost, BoundedRangeCost, ZCDPCost):
            price = zcdp_price(kind(a))
            assert price is not None
            assert price[0] > 0.0
            assert price[0] == math.inf or Fraction(price[0]) >= _zcdp_exact(kind(a))
