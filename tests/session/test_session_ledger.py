"""`PrivateSession`: privacy of the data, the shared ledger (real processes, SIGKILL), a
statistical check of the guarantee and the ledger format (split from tests/session/test_session.py).

Multi-process tests run tests/session_worker.py as real subprocesses on real ledger files.
"""

from __future__ import annotations

import math
import pickle
import signal
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost import (
    ApproxDP,
    BrownianCost,
    BudgetExceeded,
    ConcurrentFilter,
    EpsilonGrid,
    ExPostFilter,
    InvalidParameter,
    LedgerMismatch,
    OpenEpsilonGrid,
    PrivateSession,
    Released,
    TimeGrid,
    UnifiedFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.filters._exact import rho_of_eps
from expost.ledger.records import describe as _describe
from expost.session import SessionFilter
from expost.stopping import AtIndex, RelativeError
from tests import stats
from tests.safe_side import exact_sum, rounded_up
from tests.session_helpers import WORKER, _left, _rho, _session, _spent
from tests.session_worker import HANG_GRID
from tests.workers import Workers

# ----------------------------------------------------------------------------- privacy


PRIVATE = 1234.5678901234567


def _packed(value: float) -> list[bytes]:
    return [struct.pack("<d", value), struct.pack(">d", value)]


def test_results_and_session_hold_no_private_value() -> None:
    s = _session(ZCDPFilter(5.0), seed=9)
    released = [
        s.gaussian(PRIVATE, 1.0, 0.1),
        s.laplace([PRIVATE, 1.0], 1.0, 0.5),
        s.exponential_mechanism([PRIVATE, 2.0, 3.0], 0.5, True),
        s.brownian(PRIVATE, 1.0, OpenEpsilonGrid.linear_in_eps2(1e-3, 20), RelativeError(0.01)),
        s.brownian(np.array([PRIVATE, -PRIVATE]), 1.0, TimeGrid([9.0, 4.0]), AtIndex(1)),
    ]
    assert len(s.history) == len(released)
    unpicklable = ("_rng", "_lock", "_running")  # the rng, a lock, a thread-local flag
    state = {k: v for k, v in vars(s).items() if k not in unpicklable}
    blob = pickle.dumps((state, s.history, released))
    for needle in _packed(PRIVATE) + _packed(-PRIVATE):
        assert needle not in blob
    assert repr(PRIVATE) not in repr(state)
    planted = pickle.dumps((state, s.history, [PRIVATE]))  # the scan finds a stored value
    assert any(needle in planted for needle in _packed(PRIVATE))


def test_ledger_file_holds_no_private_value(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    s = _session(ZCDPFilter(5.0), ledger=path)
    s.gaussian(PRIVATE, 1.0, 0.1)
    s.brownian(PRIVATE, 1.0, TimeGrid([9.0, 4.0]), AtIndex(0))
    s.close()
    data = path.read_bytes()
    for needle in [*_packed(PRIVATE), repr(PRIVATE).encode(), b"1234.56"]:
        assert needle not in data


def test_stopping_rules_see_only_released_views() -> None:
    views: list[Released] = []
    snapshots: list[np.ndarray[Any, np.dtype[np.float64]]] = []

    def rule(released: Released) -> bool:
        views.append(released)
        snapshots.append(released.values.copy())
        with pytest.raises(ep.NotAStoppingTime):
            getattr(released, "value")  # noqa: B009 -- asking for the private value
        with pytest.raises(AttributeError):
            released.count = 0  # type: ignore[misc]
        return released.count == 3

    s = _session(UnifiedFilter(1.0))
    run = s.brownian(PRIVATE, 1.0, TimeGrid([100.0, 50.0, 25.0, 10.0]), stop=rule)
    assert all(type(v) is Released for v in views)
    assert len(views) == 3
    for k, snap in enumerate(snapshots, 1):
        np.testing.assert_array_equal(snap, run.released[:k])
        assert not np.any(snap == PRIVATE)


# ----------------------------------------------------------------------------- the ledger


def test_reopening_the_ledger_resumes_the_spend(ledger_target: str) -> None:
    path = ledger_target
    f = UnifiedFilter.from_dp(5.0, 1e-6)
    with_ledger = _session(f, ledger=path)
    with_ledger.gaussian(0.0, 1.0, 0.1)
    with_ledger.brownian(0.0, 1.0, TimeGrid([30.0, 10.0]), stop=AtIndex(0))
    with_ledger.close()
    again = _session(f, seed=1, ledger=path)
    assert again.spent == with_ledger.spent == pytest.approx(0.1 + 1 / 60, rel=1e-15)
    assert again.filter == with_ledger.filter
    assert again.history == ()
    again.laplace(0.0, 1.0, 0.5)
    again.close()
    third = _session(f, ledger=path)
    assert third.spent == pytest.approx(0.1 + 1 / 60 + 0.125, rel=1e-15)
    assert _left(third) == pytest.approx(f.rho - _spent(third), rel=1e-12)
    third.close()


@pytest.mark.parametrize(
    "other",
    [
        UnifiedFilter.from_dp(5.0, 1e-6, conversion="cks"),
        UnifiedFilter.from_dp(5.0, 1e-5),
        ZCDPFilter(ep.rho_for_dp(5.0, 1e-6)),
        UnifiedFilter(ep.rho_for_dp(5.0, 1e-6)),
    ],
)
def test_a_different_filter_for_the_same_ledger_is_refused(
    tmp_path: Path, other: SessionFilter
) -> None:
    path = tmp_path / "budget.sqlite"
    first = _session(UnifiedFilter.from_dp(5.0, 1e-6), ledger=path)
    first.gaussian(0.0, 1.0, 0.1)
    first.close()
    data = path.read_bytes()
    with pytest.raises(LedgerMismatch):
        _session(other, ledger=path)
    assert path.read_bytes() == data


def test_refresh_without_a_ledger_changes_nothing() -> None:
    s = _session(ZCDPFilter(1.0))
    s.gaussian(0.0, 1.0, 0.5)
    before = s.filter
    s.refresh()
    assert s.filter is before


def test_a_filter_with_rounds_cannot_start_a_ledger(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameter, match="no recorded rounds"):
        _session(ZCDPFilter(1.0).spend(ZCDPCost(0.1)), ledger=tmp_path / "l")
    assert not (tmp_path / "l").exists()


def test_two_sessions_in_one_process_share_a_ledger(ledger_target: str) -> None:
    path = ledger_target
    a, b = _session(ZCDPFilter(1.0), ledger=path), _session(ZCDPFilter(1.0), seed=1, ledger=path)
    a.gaussian(0.0, 1.0, 0.5)
    b.gaussian(0.0, 1.0, 0.25)
    with pytest.raises(BudgetExceeded) as info:
        a.gaussian(0.0, 1.0, 0.5)
    assert (info.value.spent, info.value.remaining) == (0.75, 0.25)  # read under the lock
    assert a.spent == 0.5
    assert len(a.history) == 1
    a.refresh()  # now including b's round
    assert (a.spent, a.remaining) == (0.75, 0.25)
    a.gaussian(0.0, 1.0, 0.25)
    assert a.spent == 1.0
    assert [r.index for r in a.history] == [0, 1]
    a.close()
    b.close()


@pytest.fixture
def workers() -> Iterator[Workers]:
    pool = Workers(WORKER)
    yield pool
    pool.stop()


def _ledger_rounds(path: Path | str, rho: float) -> dict[int, dict[str, Any]]:
    """Round → {"reserve": cost, "settle": cost} as committed in the session ledger."""
    s = _session(ZCDPFilter(rho), ledger=path)
    assert s._ledger is not None
    rounds: dict[int, dict[str, Any]] = {}
    for entry in s._ledger.entries():
        rounds.setdefault(int(entry.record["round"]), {})[entry.kind] = entry.record["cost"]
    s.close()
    return rounds


def test_processes_sharing_a_ledger_cannot_jointly_overspend(
    ledger_target: str, workers: Workers
) -> None:
    budget, cost = 1.3, 0.125
    path = ledger_target
    _session(ZCDPFilter(budget), ledger=path).close()  # both workers open an existing file
    procs = workers.released(*[("loop", path, budget, cost)] * 2)
    admitted = 0
    for proc in procs:
        while workers.line(proc) != "done":
            admitted += 1
        assert proc.wait() == 0
    rounds = _ledger_rounds(path, budget)
    assert admitted == len(rounds) == math.floor(budget / cost) == 10
    assert all(r["settle"]["rho"] == cost for r in rounds.values())
    resumed = _session(ZCDPFilter(budget), ledger=path)
    assert resumed.spent == 10 * cost <= budget
    assert not resumed.filter.admits(ZCDPCost(cost))
    resumed.close()


def test_sigkill_loses_no_admitted_round(ledger_target: str, workers: Workers) -> None:
    path = ledger_target
    proc = workers.start("loop", path, 1000.0, 1.0)
    assert workers.line(proc) == "ready"
    workers.send(proc)
    printed = [int(workers.line(proc)) for _ in range(4)]
    proc.send_signal(signal.SIGKILL)
    rest, _ = workers.finish(proc)
    assert proc.returncode == -signal.SIGKILL
    printed += [int(line) for line in rest.splitlines(keepends=True) if line.endswith("\n")]
    assert printed == list(range(len(printed)))
    rounds = _ledger_rounds(path, 1000.0)
    assert all(k in rounds and "settle" in rounds[k] for k in printed)
    assert len(rounds) - len(printed) in (0, 1)
    resumed = _session(ZCDPFilter(1000.0), ledger=path)
    assert _spent(resumed) >= math.fsum(1.0 for _ in printed)
    assert resumed.spent == float(len(rounds))  # an unsettled reservation is charged in full
    resumed.close()


def test_reservation_without_settlement_stays_charged(ledger_target: str, workers: Workers) -> None:
    path = ledger_target
    proc = workers.start("hang", path, 1.0)
    assert workers.line(proc) == "stopping"
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    rounds = _ledger_rounds(path, 1.0)
    assert list(rounds) == [0]
    assert set(rounds[0]) == {"reserve"}
    resumed = _session(ZCDPFilter(1.0), ledger=path)
    request = BrownianCost(HANG_GRID.smallest, 1.0)
    assert resumed.spent == resumed.filter.price(request)[0] == 0.125
    resumed.gaussian(0.0, 1.0, 0.875)
    with pytest.raises(BudgetExceeded):
        resumed.gaussian(0.0, 1.0, 1e-9)
    resumed.close()


# ----------------------------------------------------------------------------- statistical check

FX, DISTANCE = 2.0, 1.0
AUDIT_EPS, AUDIT_DELTA, AUDIT_N = 1.0, 0.1, 1500
CLOSED = EpsilonGrid.linear_in_eps2(1e-3, 0.04, 8)
OPEN = OpenEpsilonGrid.linear_in_eps2(1e-3, 8)
RULE = RelativeError(0.3)


def _interaction(rng: np.random.Generator) -> tuple[float, PrivateSession]:
    """One full adaptive session; its exact privacy loss at f(x) = FX, f(x') = FX + DISTANCE.

    A release y with Gaussian noise of variance σ² (a BM stopped at t: σ² = t, APC Thm 3)
    has loss (|y − f(x')|² − |y − f(x)|²)/(2σ²).
    """
    s = PrivateSession(UnifiedFilter.from_dp(AUDIT_EPS, AUDIT_DELTA), rng)
    loss, last = 0.0, FX
    while True:
        try:
            if last > FX:
                y, var = float(s.gaussian(FX, DISTANCE, 0.01)), DISTANCE**2 / 0.02
            else:
                run = s.brownian(FX, DISTANCE, CLOSED, stop=RULE)
                y, var = float(run.value[0]), run.time
        except BudgetExceeded:
            try:
                run = s.brownian(FX, DISTANCE, OPEN, stop=RULE)
                y, var = float(run.value[0]), run.time
            except BudgetExceeded:
                return loss, s
        loss += ((y - FX - DISTANCE) ** 2 - (y - FX) ** 2) / (2.0 * var)
        last = y


def test_total_loss_exceeds_the_guarantee_with_probability_at_most_delta() -> None:
    rng = np.random.default_rng(20240611)
    losses, rounds = np.empty(AUDIT_N), np.empty(AUDIT_N)
    for i in range(AUDIT_N):
        losses[i], s = _interaction(rng)
        rounds[i] = len(s.history)
        assert _left(s) < 5e-4  # the analyst spent (nearly) everything
    claim = s.guarantee()
    assert isinstance(claim, ApproxDP)
    assert claim.delta == pytest.approx(AUDIT_DELTA)
    assert rounds.mean() > 3.0
    assert len({r.mechanism for r in s.history}) <= 2
    hits = int(np.sum(losses > claim.eps))
    assert stats.rate_is_at_most(hits, AUDIT_N, claim.delta)
    # planted twin: the claimed eps rho + sqrt(rho·log(1/delta))/2 is refuted
    rho = _rho(s)
    twin_eps = rho + math.sqrt(rho * math.log(1.0 / AUDIT_DELTA)) / 2.0
    twin_hits = int(np.sum(losses > twin_eps))
    assert not stats.rate_is_at_most(twin_hits, AUDIT_N, claim.delta)


def test_ledger_config_is_the_filter_configuration_only() -> None:
    # The ledger file format: type and parameters, never the history (or files made by an
    # earlier version would no longer open).

    unified = UnifiedFilter.from_dp(10.0, 1e-6)
    assert _describe(unified.spend(ZCDPCost(0.1))) == {
        "type": "UnifiedFilter",
        "rho": unified.rho,
        "delta": 0.0,
        "delta_second": 1e-6,
        "conversion": "bun-steinke",
    }
    concurrent = ConcurrentFilter(ZCDPFilter(1.0), ExPostFilter(1.0, 0.01), 1e-6)
    assert _describe(concurrent) == {
        "type": "ConcurrentFilter",
        "zcdp": {"type": "ZCDPFilter", "rho": 1.0, "delta": 0.0},
        "ex_post": {"type": "ExPostFilter", "eps": 1.0, "delta": 0.01},
        "delta_second": 1e-6,
    }


# ----------------------------------------------------------------------------- ledger format


def test_ledger_records_are_the_rounds_own_costs(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    f = UnifiedFilter.from_dp(10.0, 1e-6)
    s = _session(f, ledger=path)
    s.exponential_mechanism([0.0, 1.0], 0.1, True)
    s.laplace(0.0, 1.0, 0.2)
    run = s.brownian(0.0, 1.0, TimeGrid([400.0, 100.0]), stop=AtIndex(0))
    spent = s.spent
    s.close()
    ledger = ep.Ledger.open(
        path, {"format": "expost-session/4", "filter": _describe(f)}, create=True
    )
    settled = [dict(e.record["cost"]) for e in ledger.entries() if e.kind == "settle"]
    ledger.close()
    assert settled == [
        {"type": "BoundedRangeCost", "eps": 0.1},
        {"type": "LaplaceCost", "eps": 0.2, "delta": 0.0},
        {"type": "BrownianCost", "time": run.time, "sensitivity": 1.0, "bound": None, "delta": 0.0},
    ]
    resumed = _session(f, ledger=path)
    assert resumed.spent == spent
    resumed.close()


def _old_ledger(path: Path, f: SessionFilter, costs: list[dict[str, Any]]) -> None:
    """A ledger as expost-session/1 wrote it: each round reserved and settled at ``costs``."""
    ledger = ep.Ledger.open(
        path, {"format": "expost-session/1", "filter": _describe(f)}, create=True
    )
    for k, cost in enumerate(costs):
        record: dict[str, Any] = {"round": k, "mechanism": "m", "cost": cost}

        def decide(_entries: object, r: dict[str, Any] = record) -> dict[str, Any]:
            return r

        for kind in ("reserve", "settle"):
            ledger.append(kind, decide)
    ledger.close()


def test_an_expost_session_1_ledger_still_opens_and_prices_as_before(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    f = ZCDPFilter(1.0, 1e-3)
    old = [
        {"type": "ZCDPCost", "rho": rho_of_eps(0.1) / 4.0, "delta": 0.0},  # an EM round in /1
        {"type": "BrownianCost", "time": 50.0, "sensitivity": 2.0},
        {"type": "ZCDPCost", "rho": 0.25, "delta": 1e-4},
    ]
    _old_ledger(path, f, old)
    s = _session(f, ledger=path)
    assert rounded_up(_spent(s), exact_sum([rho_of_eps(0.1) / 4.0, 0.04, 0.25]))
    assert isinstance(s.filter, ZCDPFilter)
    assert s.filter.realised == (
        ZCDPCost(rho_of_eps(0.1) / 4.0),
        BrownianCost(50.0, 2.0),
        ZCDPCost(0.25, 1e-4),
    )
    s.exponential_mechanism([0.0, 1.0], 0.1, True)  # a new round in the old file
    assert rounded_up(_spent(s), exact_sum([rho_of_eps(0.1) / 2.0, 0.04, 0.25]))
    s.close()
    again = _session(f, ledger=path)
    assert rounded_up(_spent(again), exact_sum([rho_of_eps(0.1) / 2.0, 0.04, 0.25]))
    again.close()
    with pytest.raises(LedgerMismatch):  # an old file for another filter is still refused
        _session(ZCDPFilter(2.0, 1e-3), ledger=path)


def test_an_unknown_ledger_format_or_cost_is_a_clear_ledger_error(tmp_path: Path) -> None:
    f = ZCDPFilter(1.0)
    future = tmp_path / "v9.sqlite"
    ep.Ledger.open(
        future, {"format": "expost-session/9", "filter": _describe(f)}, create=True
    ).close()
    with pytest.raises(LedgerMismatch) as info:
        _session(f, ledger=future)
    assert "expost-session/9" in str(info.value)
    assert "expost-session/4" in str(info.value)
    cases = [
        ({"type": "GaussianDPCost", "mu": 0.1}, "unknown cost record"),
        ({"type": "ZCDPCost", "mu": 0.1}, "bad cost record"),
        (
            {"type": "ZCDPCost", "delta": 0.0},
            "bad cost record",
        ),  # no rho (a -1 is refused at write)
    ]
    for i, (bad, match) in enumerate(cases):
        odd = tmp_path / f"odd-{i}.sqlite"
        _old_ledger(odd, f, [bad])
        session = _session(f, ledger=odd)  # opens (issue 41: no ledger is jammed), read-only
        assert session.read_only
        with pytest.raises(ep.LedgerError, match=match):
            session.gaussian(0.0, 1.0, 0.01)
