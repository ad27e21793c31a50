"""Guarantees and conversions (THEORY §1): values, closed forms, properties, bad input."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import expost as ep

RHO_STAR = 1.3530146901688735  # APC Sec. 7: (eps, delta'') = (10, 1e-6)

rhos = st.floats(1e-4, 50.0)
epss = st.floats(1e-3, 50.0)
small_deltas = st.floats(1e-12, 0.2)
bad_positive = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -1.0, -1e-300])
bad_delta = st.sampled_from([math.nan, math.inf, -math.inf, -0.1, 1.0, 1.5])


def test_apc_section_7_budget() -> None:
    assert ep.rho_for_dp(10.0, 1e-6) == pytest.approx(RHO_STAR, rel=1e-14)
    dp = ep.zcdp_to_dp(ep.ZCDP(RHO_STAR), 1e-6)
    assert dp.eps == pytest.approx(10.0, rel=1e-13)
    assert dp.delta == 1e-6
    assert abs(2 * RHO_STAR - 2.706) < 1e-3


def test_lemma_2_1_value_by_hand() -> None:
    rho, d2 = 0.5, 1e-5
    expected = rho + 2 * math.sqrt(rho * math.log(1 / d2))
    assert ep.zcdp_to_dp(ep.ZCDP(rho), d2).eps == pytest.approx(expected, rel=1e-15)


def test_delta_forms() -> None:
    g = ep.ZCDP(1.0, delta=0.01)
    assert ep.zcdp_to_dp(g, 0.1).delta == pytest.approx(0.01 + 0.99 * 0.1)
    assert ep.zcdp_to_dp(g, 0.1, form="apc").delta == pytest.approx(0.11)
    with pytest.raises(ep.InvalidParameter, match="form"):
        ep.zcdp_to_dp(g, 0.1, form="other")  # type: ignore[arg-type]


def test_dp_to_zcdp() -> None:
    assert ep.dp_to_zcdp(ep.ApproxDP(2.0, 1e-5)) == ep.ZCDP(2.0, 1e-5)
    assert ep.dp_to_zcdp(ep.PureDP(0.5)) == ep.ZCDP(0.125)


def test_pdp_conversions() -> None:
    assert ep.pdp_to_dp(ep.ProbabilisticDP(1.0, 1e-6)) == ep.ApproxDP(1.0, 1e-6)
    got = ep.dp_to_pdp(ep.ApproxDP(1.0, 1e-6))
    assert got.eps == 2.0
    assert got.delta == pytest.approx(2e-6 / math.e)
    assert ep.dp_to_pdp(ep.PureDP(0.3)) == ep.ProbabilisticDP(0.3, 0.0)
    with pytest.raises(ep.InvalidParameter, match="vacuous"):
        ep.dp_to_pdp(ep.ApproxDP(1e-3, 0.5))


def test_composition() -> None:
    total = ep.compose_zcdp(ep.ZCDP(0.5), ep.ZCDP(0.25, delta=1e-9))
    assert total == ep.ZCDP(0.75, 1e-9)
    assert ep.compose_ex_post(ep.ExPost(1.0, 0.01), ep.ExPost(0.5)) == ep.ExPost(1.5, 0.01)
    with pytest.raises(ep.InvalidParameter, match="guarantees"):
        ep.compose_zcdp()
    with pytest.raises(ep.InvalidParameter, match="guarantees"):
        ep.compose_zcdp(ep.ZCDP(1.0, 0.6), ep.ZCDP(1.0, 0.6))
    with pytest.raises(ep.InvalidParameter, match="guarantees"):
        ep.compose_ex_post(ep.ZCDP(1.0))  # type: ignore[arg-type]


def test_cks_known_value() -> None:
    # Independent evaluation of the CKS infimum by a dense grid over a.
    rho, eps = 1.0, 5.0
    grid = [1.0 + k * 1e-4 for k in range(1, 200_000)]
    direct = min(math.exp((a - 1) * (a * rho - eps)) / a * (1 - 1 / a) ** (a - 1) for a in grid)
    assert ep.cks_delta(rho, eps) == pytest.approx(direct, rel=1e-6)
    # Bun–Steinke's exp(−(eps − rho)²/(4 rho)) is looser.
    assert ep.cks_delta(rho, eps) < math.exp(-((eps - rho) ** 2) / (4 * rho))


@given(rhos, small_deltas)
def test_cks_never_looser_than_bun_steinke(rho: float, d2: float) -> None:
    bs = ep.zcdp_to_dp(ep.ZCDP(rho), d2)
    cks = ep.cks_zcdp_to_dp(ep.ZCDP(rho), d2)
    assert cks.eps <= bs.eps * (1 + 1e-12)
    assert cks.delta == bs.delta
    if cks.eps > 0.0:
        assert ep.cks_delta(rho, cks.eps) == pytest.approx(d2, rel=1e-9)
    else:
        assert ep.cks_delta(rho, 0.0) <= d2


@given(epss, small_deltas)
@example(0.001, 1.6877929777518914e-05)  # rho ~ 1.4e-7: brentq's absolute xtol was too coarse
def test_inverses_round_trip(eps: float, d2: float) -> None:
    rho = ep.rho_for_dp(eps, d2)
    assert ep.zcdp_to_dp(ep.ZCDP(rho), d2).eps == pytest.approx(eps, rel=1e-12)
    rho_cks = ep.cks_rho_for_dp(eps, d2)
    assert rho_cks >= rho * (1 - 1e-12)
    assert ep.cks_zcdp_to_dp(ep.ZCDP(rho_cks), d2).eps == pytest.approx(eps, rel=1e-10)


@given(epss, small_deltas)
@example(10.0, 1e-6)  # the old brentq result converted to eps·(1 + 8e-15)
@settings(deadline=None)  # the first call imports scipy
def test_cks_rho_for_dp_never_overshoots(eps: float, d2: float) -> None:
    """The rho it returns converts back to at most eps (brentq may end on either side: it did
    in 1,852 of 3,000 random pairs, by up to 2.5e-9 relative)."""
    assert ep.cks_zcdp_to_dp(ep.ZCDP(ep.cks_rho_for_dp(eps, d2)), d2).eps <= eps


@given(rhos, small_deltas)
@example(0.5, 1e-9)  # the old brentq eps had delta·(1 + 8.8e-13)
@settings(deadline=None)  # the first call imports scipy
def test_cks_eps_never_undershoots(rho: float, d2: float) -> None:
    """The eps it reports has CKS delta at most delta'' (checked in log space; ``cks_delta``'s
    exp adds a relative rounding of about (|log delta''| + 2) ulps)."""
    eps = ep.cks_zcdp_to_dp(ep.ZCDP(rho), d2).eps
    rounding = (abs(math.log(d2)) + 2.0) * sys.float_info.epsilon
    assert ep.cks_delta(rho, eps) <= d2 * (1.0 + rounding)


@given(rhos, rhos, small_deltas, small_deltas)
def test_zcdp_to_dp_monotone(r1: float, r2: float, d1: float, d2: float) -> None:
    lo, hi = sorted((r1, r2))
    dlo, dhi = sorted((d1, d2))
    assert ep.zcdp_to_dp(ep.ZCDP(lo), dhi).eps <= ep.zcdp_to_dp(ep.ZCDP(hi), dhi).eps
    # a larger delta'' buys a smaller eps
    assert ep.zcdp_to_dp(ep.ZCDP(hi), dhi).eps <= ep.zcdp_to_dp(ep.ZCDP(hi), dlo).eps
    assert ep.cks_zcdp_to_dp(ep.ZCDP(lo), dhi).eps <= ep.cks_zcdp_to_dp(ep.ZCDP(hi), dhi).eps
    assert ep.cks_zcdp_to_dp(ep.ZCDP(hi), dhi).eps <= ep.cks_zcdp_to_dp(ep.ZCDP(hi), dlo).eps


@given(epss, epss, small_deltas)
def test_rho_for_dp_monotone(e1: float, e2: float, d2: float) -> None:
    lo, hi = sorted((e1, e2))
    assert ep.rho_for_dp(lo, d2) <= ep.rho_for_dp(hi, d2)


@settings(max_examples=50)
@given(epss, st.floats(0.0, 0.1), small_deltas)
def test_dp_to_zcdp_to_dp_never_improves(eps: float, delta: float, d2: float) -> None:
    back = ep.zcdp_to_dp(ep.dp_to_zcdp(ep.ApproxDP(eps, delta)), d2)
    assert back.eps >= eps
    assert back.delta >= delta


@settings(max_examples=50)
@given(epss, small_deltas)
def test_cks_round_trip_is_sound_for_randomized_response(eps: float, d2: float) -> None:
    # CKS may return eps' < eps at a larger delta, but never a pair that an eps-DP mechanism
    # violates: randomized response at eps has delta(eps') = (e^eps − e^eps')/(1 + e^eps).
    back = ep.cks_zcdp_to_dp(ep.dp_to_zcdp(ep.PureDP(eps)), d2)
    rr_delta = (math.exp(eps) - math.exp(min(back.eps, eps))) / (1 + math.exp(eps))
    assert rr_delta <= d2 * (1 + 1e-9)


CONSTRUCTORS: list[tuple[str, Callable[[float], object]]] = [
    ("eps", lambda v: ep.PureDP(v)),
    ("rho", lambda v: ep.ZCDP(v)),
    ("eps", lambda v: ep.ProbabilisticDP(v, 1e-6)),
    ("eps", lambda v: ep.rho_for_dp(v, 1e-6)),
    ("eps", lambda v: ep.cks_rho_for_dp(v, 1e-6)),
    ("rho", lambda v: ep.cks_delta(v, 1.0)),
]
DELTA_TAKERS: list[tuple[str, Callable[[float], object]]] = [
    ("delta", lambda d: ep.ApproxDP(1.0, d)),
    ("delta", lambda d: ep.ZCDP(1.0, d)),
    ("delta", lambda d: ep.ProbabilisticDP(1.0, d)),
    ("delta", lambda d: ep.ExPost(1.0, d)),
    ("delta_second", lambda d: ep.zcdp_to_dp(ep.ZCDP(1.0), d)),
    ("delta_second", lambda d: ep.cks_zcdp_to_dp(ep.ZCDP(1.0), d)),
    ("delta_second", lambda d: ep.rho_for_dp(1.0, d)),
    ("delta_second", lambda d: ep.cks_rho_for_dp(1.0, d)),
]


@pytest.mark.parametrize(("name", "make"), CONSTRUCTORS)
@given(bad=bad_positive)
def test_positive_parameters_reject_bad_values(
    name: str, make: Callable[[float], object], bad: float
) -> None:
    with pytest.raises(ep.InvalidParameter, match=name):
        make(bad)


@pytest.mark.parametrize(("name", "make"), DELTA_TAKERS)
@given(bad=bad_delta)
def test_delta_parameters_reject_bad_values(
    name: str, make: Callable[[float], object], bad: float
) -> None:
    with pytest.raises(ep.InvalidParameter, match=name):
        make(bad)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ep.zcdp_to_dp(ep.ZCDP(1.0), 0.0),
        lambda: ep.ExPost(-1.0),
        lambda: ep.ExPost(math.nan),
        lambda: ep.ZCDP("1.0"),  # type: ignore[arg-type]
        lambda: ep.ApproxDP(True, 0.0),
        lambda: ep.dp_to_zcdp(ep.ZCDP(1.0)),  # type: ignore[arg-type]
        lambda: ep.zcdp_to_dp(ep.ApproxDP(1.0), 1e-6),  # type: ignore[arg-type]
        lambda: ep.pdp_to_dp(ep.ApproxDP(1.0)),  # type: ignore[arg-type]
        lambda: ep.dp_to_pdp(ep.ZCDP(1.0)),  # type: ignore[arg-type]
        lambda: ep.cks_delta(1.0, -1.0),
        lambda: ep.ApproxDP(-1.0, 0.0),
        lambda: ep.ApproxDP(math.inf, 0.0),
        lambda: ep.ApproxDP(math.nan, 0.0),
    ],
)
def test_other_bad_input(make: Callable[[], object]) -> None:
    with pytest.raises(ep.InvalidParameter):
        make()


def test_errors_messages() -> None:
    err = ep.InvalidParameter("delta", 1.5, "must lie in [0, 1)")
    assert isinstance(err, ValueError)
    assert "delta=1.5" in str(err)
    assert "[0, 1)" in str(err)
    exc = ep.BudgetExceeded(spent=1.0, requested=0.5, remaining=0.25)
    text = str(exc)
    assert "1.0" in text
    assert "0.5" in text
    assert "0.25" in text
    assert (exc.spent, exc.requested, exc.remaining) == (1.0, 0.5, 0.25)


def test_cks_can_give_eps_zero() -> None:
    # rho = 1/64 is (0, 0.07)-DP: TV(N(0,1), N(0.177,1)) ≈ 0.07 < 0.125.
    assert ep.cks_zcdp_to_dp(ep.ZCDP(1 / 64), 0.125).eps == 0.0
    assert ep.ApproxDP(0.0, 0.1).eps == 0.0


def test_values_are_frozen() -> None:
    import attrs

    g = ep.ZCDP(1)
    assert isinstance(g.rho, float)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        g.rho = 2.0  # type: ignore[misc]
