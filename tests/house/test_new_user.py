"""What a new user, reading only the docs, tripped on (issue 37, item 4), each fixed here.

- Skellam under the usual ``UnifiedFilter.from_dp`` budget was refused with "only delta=0.0
  remains" (a filter that has no delta budget at all): now an `InvalidParameter` that names the
  filters that can charge the round, and those filters admit it.
- The secure mode demanded an ``rng`` it never uses.
- A scalar secure release was ``np.int64`` or a 0-d array depending on its size.
- `RDPFilter` refusals quoted ε_α at some order, not the ``spent``/``remaining`` a session reports.
"""

from __future__ import annotations

import numpy as np
import pytest

import expost as ep
from expost.errors import BudgetExceeded, InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.filters.rdp import RDPFilter

TIMES = [400.0, 100.0, 25.0]

# ----------------------------------------------------------------------------- a filter mismatch


def _boundary() -> ep.SkellamPrivacyBoundary:
    return ep.SkellamPrivacyBoundary.tuned_for(1.0, 1e-7)


@pytest.mark.parametrize("how", ["boundary", "fixed_delta"])
def test_skellam_under_from_dp_names_the_filters_that_can_charge_it(how: str) -> None:
    session = ep.PrivateSession(ep.UnifiedFilter.from_dp(10.0, 1e-6), np.random.default_rng(0))
    kw = {"boundary": _boundary()} if how == "boundary" else {"fixed_delta": 1e-7}
    with pytest.raises(InvalidParameter) as refusal:
        session.skellam(5, 1, TIMES, **kw)
    message = str(refusal.value)
    assert not isinstance(refusal.value, BudgetExceeded)
    assert "remains" not in message  # no budget ran out: the filter cannot take the round
    for name in ("ExPostFilter(eps, delta)", "ConcurrentFilter", "fixed_delta", "from_dp"):
        assert name in message
    assert message.endswith("nothing was spent")
    assert session.spent == 0.0
    assert session.history == ()


@pytest.mark.parametrize(
    ("budget", "how"),
    [
        (ep.ExPostFilter(5.0, 1e-6), "boundary"),
        (ep.ExPostFilter(5.0, 1e-6), "fixed_delta"),
        (ep.ConcurrentFilter(ep.UnifiedFilter(1.0), ep.ExPostFilter(5.0, 1e-6), 1e-6), "boundary"),
        (ep.ZCDPFilter(1.0, 1e-6), "fixed_delta"),
        (ep.UnifiedFilter(1.0, 1e-6, 1e-6), "fixed_delta"),
    ],
)
def test_the_filters_the_refusal_names_admit_the_round(budget: ep.PrivacyFilter, how: str) -> None:
    session = ep.PrivateSession(budget, np.random.default_rng(0))
    kw = {"boundary": _boundary()} if how == "boundary" else {"fixed_delta": 1e-7}
    run = session.skellam(5, 1, TIMES, **kw)
    assert len(session.history) == 1
    assert run.released.shape == (len(TIMES), 1)


def test_a_delta_round_without_a_delta_budget_is_a_mismatch_not_an_overspend() -> None:
    f = ep.UnifiedFilter.from_dp(10.0, 1e-6)  # delta budget 0: delta is kept for the conversion
    cost = ep.DPCost(0.1, 1e-9)
    for call in (f.check, f.admits, f.spend):
        with pytest.raises(InvalidParameter, match="has none") as refusal:
            call(cost)
        assert "ZCDPFilter(rho, delta)" in str(refusal.value)
    assert f.price(cost)[1] == 1e-9  # price stays a conversion: what the round would cost
    # twin: with a delta budget, too large a delta is an ordinary refusal naming what remains
    with pytest.raises(BudgetExceeded, match="delta=1e-10 remains"):
        ep.ZCDPFilter(1.0, 1e-10).check(cost)


# ----------------------------------------------------------------------------- the secure mode


def test_the_secure_mode_needs_no_rng() -> None:
    for session in (
        ep.PrivateSession(ep.ZCDPFilter(1.0), exact=True),
        ep.PrivateSession(ep.ZCDPFilter(1.0), None, exact=True),
        ep.PrivateSession(ep.ZCDPFilter(1.0), bits=GeneratorBits(np.random.default_rng(1))),
    ):
        assert session.gaussian(7, sensitivity=1, rho=0.25).dtype == np.int64
        with pytest.raises(InvalidParameter, match="SkellamNoiseReduction"):
            session.brownian(0.0, 1.0, ep.TimeGrid([4.0, 1.0]))  # float-only: refused as before
        assert session.spent == 0.25


def test_an_rng_given_to_a_secure_session_changes_nothing() -> None:
    def releases(rng: np.random.Generator | None) -> list[int]:
        bits = GeneratorBits(np.random.default_rng(5))
        session = ep.PrivateSession(ep.ZCDPFilter(10.0), rng, bits=bits)
        return [int(session.laplace(0, 1, 1.0)) for _ in range(20)]

    assert releases(None) == releases(np.random.default_rng(123))


def test_the_float_mode_still_needs_an_rng() -> None:
    with pytest.raises(InvalidParameter, match=r"rng=None .*exact=True") as refusal:
        ep.PrivateSession(ep.ZCDPFilter(1.0))
    assert "default_rng" in str(refusal.value)
    with pytest.raises(InvalidParameter, match=r"numpy\.random\.Generator"):
        ep.PrivateSession(ep.ZCDPFilter(1.0), "seed", exact=True)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- release types


@pytest.mark.parametrize("method", ["gaussian", "laplace"])
@pytest.mark.parametrize(
    ("value", "dtype"),
    # int64 where value + noise fits (2**62 is added in Python ints, then fits), else objects
    [(5, np.int64), (np.int64(-3), np.int64), (2**62, np.int64), (2**70, object)],
)
def test_a_scalar_secure_release_is_always_a_0d_array(method: str, value: int, dtype: type) -> None:
    session = ep.PrivateSession(ep.ZCDPFilter(10.0), bits=GeneratorBits(np.random.default_rng(2)))
    release = getattr(session, method)(value, 1, 0.5)
    assert type(release) is np.ndarray  # never a numpy scalar
    assert release.shape == ()
    assert release.dtype == dtype
    assert abs(int(release[()]) - int(value)) < 1000  # exactly value + a small noise
    vector = getattr(session, method)([value, value], 1, 0.5)
    assert type(vector) is np.ndarray
    assert vector.shape == (2,)


@pytest.mark.parametrize("method", ["gaussian", "laplace"])
def test_a_scalar_float_release_is_a_0d_array(method: str) -> None:
    session = ep.PrivateSession(ep.ZCDPFilter(10.0), np.random.default_rng(0))
    release = getattr(session, method)(5, 1, 0.5)
    assert type(release) is np.ndarray
    assert release.shape == ()
    assert release.dtype == np.float64


# ----------------------------------------------------------------------------- RDP refusals


def test_an_rdp_refusal_quotes_one_quantity_at_the_best_order() -> None:
    session = ep.PrivateSession(RDPFilter.from_dp(1.0, 1e-6), np.random.default_rng(0))
    session.gaussian(0.0, 1.0, 0.01)
    request = ep.GaussianCost(0.5)
    with pytest.raises(BudgetExceeded) as refusal:
        session.gaussian(0.0, 1.0, 0.5)
    err = refusal.value
    f = session.filter
    assert isinstance(f, RDPFilter)
    i = f.orders.index(f.best_order)
    assert (err.spent, err.unit) == (f.spent_by_order[i], "eps_alpha")
    assert err.remaining <= f.remaining_by_order[i] == session.remaining
    assert err.requested == f.price(request)[0] > err.remaining
    assert f"only eps_alpha={err.remaining!r} remains" in str(err)
    assert f"α={f.best_order:g}" in str(err)
    assert f"{session.spent!r}" in str(err)  # the session's one number, named in the detail
    assert len(session.history) == 1  # nothing was spent


def test_an_rdp_refusal_at_the_filter_matches_its_spend() -> None:
    f = RDPFilter.from_dp(2.0, 1e-6).spend(ep.ZCDPCost(0.05))
    request = ep.ZCDPCost(1.0)
    i = f.orders.index(f.best_order)
    for call in (f.check, f.spend):
        with pytest.raises(BudgetExceeded) as refusal:
            call(request)
        assert refusal.value.spent == f.spent_by_order[i]
        assert refusal.value.remaining <= f.remaining_by_order[i]
    assert f.spent + f.remaining <= 2.0 + 1e-15  # one number each: eps spent, eps left
