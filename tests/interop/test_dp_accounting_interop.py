"""dp-accounting's events as costs (`expost.interop.dp_accounting.cost_of`), priced as
dp-accounting prices them: the PLD δ(ε) within 1% of dp-accounting's PLD accountant (its
pessimistic estimate at value_discretization_interval = 1e-4, an upper bound up to its own
discretisation), never below a certified lower bound (the closed form where one exists, else
the optimistic side of `PrivacyLossDistribution.delta_bracket`); the Rényi curve equal to its RDP
accountant's at integer orders (ours rounded up, within 1e-9 relative). Skipped without
dp-accounting (an optional dependency).
"""

from __future__ import annotations

import math
from typing import Any

import mpmath as mp
import pytest

from expost.errors import InvalidParameter
from expost.filters import PLDFilter

dp = pytest.importorskip("dp_accounting")

from expost.interop.dp_accounting import cost_of  # after the skip

GRID = 1e-4


def _theirs(event: Any, eps: float) -> float:
    accountant = dp.pld.PLDAccountant(value_discretization_interval=GRID)
    accountant.compose(event)
    return float(accountant.get_delta(eps))


def _ours(event: Any, eps: float) -> tuple[float, float]:
    """(certified lower, upper) of our δ(ε) for the event's cost."""
    return cost_of(event).pair().pld(GRID).delta_bracket(eps)  # type: ignore[no-any-return]


EVENTS = [
    ("gaussian", lambda: dp.GaussianDpEvent(1.0), (0.5, 1.0, 2.0)),
    (
        "dp-sgd 1000 steps",
        lambda: dp.SelfComposedDpEvent(
            dp.PoissonSampledDpEvent(0.01, dp.GaussianDpEvent(1.0)), 1000
        ),
        (1.0, 2.0),
    ),
    ("laplace x10", lambda: dp.SelfComposedDpEvent(dp.LaplaceDpEvent(2.0), 10), (1.0, 3.0)),
    (
        "gaussian and laplace",
        lambda: dp.ComposedDpEvent([dp.GaussianDpEvent(2.0), dp.LaplaceDpEvent(1.0)]),
        (0.5, 1.5),
    ),
    (
        "sampled laplace x50",
        lambda: dp.SelfComposedDpEvent(dp.PoissonSampledDpEvent(0.1, dp.LaplaceDpEvent(1.0)), 50),
        (0.5, 1.0),
    ),
]


@pytest.mark.parametrize(("name", "make", "epsilons"), EVENTS, ids=[e[0] for e in EVENTS])
def test_pld_delta_as_dp_accounting_prices_it(name: str, make: Any, epsilons: Any) -> None:
    event = make()
    for eps in epsilons:
        theirs = _theirs(event, eps)
        lower, upper = _ours(event, eps)
        assert lower <= upper
        assert abs(upper - theirs) <= 0.01 * theirs + 1e-12, (name, eps, upper, theirs)


def test_randomised_response_as_dp_accountings_pld_prices_it() -> None:
    """k-ary randomised response, 20 rounds, under replace-one neighbours (dp-accounting prices
    it only there), against dp-accounting's PLD of the same pair composed 20 times. (Its
    PLDAccountant, 0.6.0, returns one round's δ for SelfComposedDpEvent(RR, 20): 0.285 at
    ε = 1, where the exact trinomial sum is 0.99445.)"""
    from dp_accounting.pld import privacy_loss_distribution as pl

    event = dp.SelfComposedDpEvent(dp.RandomizedResponseDpEvent(0.5, 4), 20)
    theirs = pl.from_randomized_response(0.5, 4, value_discretization_interval=GRID).self_compose(
        20
    )
    for eps in (1.0, 3.0):
        lower, upper = _ours(event, eps)
        assert lower <= upper
        want = theirs.get_delta_for_epsilon(eps)
        assert abs(upper - want) <= 0.01 * want


def test_a_single_gaussian_is_never_below_its_closed_form() -> None:
    """Balle & Wang 2018 at 50 digits: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), μ = 1/σ."""
    for sigma in (0.5, 1.0, 3.0):
        for eps in (0.0, 0.5, 2.0):
            with mp.workdps(50):
                mu = 1 / mp.mpf(sigma)
                exact = mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)
            lower, upper = _ours(dp.GaussianDpEvent(sigma), eps)
            assert lower <= exact <= upper
            assert upper <= exact * 1.01 + 1e-15


def test_the_renyi_curve_is_the_rdp_accountants() -> None:
    orders = [2.0, 4.0, 8.0, 16.0, 32.0]
    event = dp.SelfComposedDpEvent(dp.PoissonSampledDpEvent(0.01, dp.GaussianDpEvent(1.0)), 1000)
    accountant = dp.rdp.RdpAccountant(orders)
    accountant.compose(event)
    theirs = list(accountant._rdp)  # the accountant's per-order RDP
    ours = [cost_of(event).rdp(a) for a in orders]
    for a, o, t in zip(orders, ours, theirs, strict=True):
        assert abs(o - t) <= 1e-9 * t, a  # theirs in floats, ours rounded up from intervals


def test_a_filter_on_an_event_counts_what_dp_accounting_allows() -> None:
    """PLDFilter fixed on the event's cost: K rounds fit (ε, δ) by dp-accounting too, K + 1
    do not (up to its discretisation)."""
    step = dp.PoissonSampledDpEvent(0.01, dp.GaussianDpEvent(1.0))
    k = int(PLDFilter(2.0, 1e-5, cost_of(step)).budget)
    assert _theirs(dp.SelfComposedDpEvent(step, k), 2.0) <= 1e-5
    assert _theirs(dp.SelfComposedDpEvent(step, math.ceil(k * 1.01)), 2.0) > 1e-5


@pytest.mark.parametrize(
    "event",
    [
        lambda: dp.SampledWithoutReplacementDpEvent(100, 10, dp.GaussianDpEvent(1.0)),
        lambda: dp.NonPrivateDpEvent(),
        lambda: dp.UnsupportedDpEvent(),
        lambda: dp.ZCDpEvent(0.1, 0.01),
        lambda: dp.NoOpDpEvent(),
        lambda: dp.ComposedDpEvent([dp.GaussianDpEvent(1.0), dp.NonPrivateDpEvent()]),
    ],
)
def test_any_other_event_is_refused_naming_it(event: Any) -> None:
    e = event()
    with pytest.raises(InvalidParameter) as info:
        cost_of(e)
    text = str(info.value)
    assert "DpEvent" in text
    assert "supported: GaussianDpEvent" in text
