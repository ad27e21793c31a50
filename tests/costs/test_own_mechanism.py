"""A mechanism defined outside the library, by its pmfs, and its Poisson subsample: priced by
`PLDFilter` within 1% of the exact count and never above it, in both neighbour directions,
through `PrivateSession.release` with a SQLite ledger that replays (issue 40, "Done when").

The exact counts come from an independent enumeration of the k-fold product of a three-outcome
pair (multinomial sums in log space, float64: relative error about 1e-13, far inside the
margins asserted at the boundary), not from the library.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from scipy.special import gammaln

import expost as ep
from expost.costs import Composed, PairCost, PoissonSampled
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters import (
    GaussianCost,
    LaplaceCost,
    PLDFilter,
    SubsampledGaussianCost,
    ZCDPFilter,
)
from expost.ledger.records import decode, encode

P = np.array([0.35, 0.34, 0.31])  # the output's law on neighbours with the record
Q = np.array([0.33, 0.34, 0.33])  # without it
EPS, DELTA = 2.0, 1e-5


def _hockey(p: npt.NDArray[np.float64], q: npt.NDArray[np.float64], k: int) -> float:
    """H_{e^EPS}(p^⊗k ‖ q^⊗k), three outcomes: Σ over counts (a, b, c) of the multinomial
    weight times (p^count − e^EPS q^count)_+."""
    a = np.arange(k + 1)[:, None]
    b = np.arange(k + 1)[None, :]
    c = k - a - b
    ok = c >= 0
    c = np.where(ok, c, 0)
    lm = gammaln(k + 1) - gammaln(a + 1) - gammaln(b + 1) - gammaln(c + 1)
    lp = a * math.log(p[0]) + b * math.log(p[1]) + c * math.log(p[2])
    lq = a * math.log(q[0]) + b * math.log(q[1]) + c * math.log(q[2])
    t = np.exp(lm + lp) - np.exp(EPS + lm + lq)
    return float(np.sum(np.where(ok & (t > 0), t, 0.0)))


def _exact_count(rate: float, directions: tuple[str, ...] = ("remove", "add")) -> int:
    """The largest k with δ_k(EPS) <= DELTA in each of ``directions`` (remove: (M, Q), add:
    (Q, M), M = (1 − r)Q + rP), asserted clear of the boundary by far more than the error."""
    m = (1 - rate) * Q + rate * P

    def delta(k: int) -> float:
        pairs = {"remove": (m, Q), "add": (Q, m)}
        return max(_hockey(*pairs[d], k) for d in directions)

    hi = 1
    while delta(hi) <= DELTA:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if delta(mid) <= DELTA else (lo, mid)
    assert delta(lo) <= DELTA * (1 - 1e-9)
    assert delta(lo + 1) > DELTA * (1 + 1e-9)
    return lo


def _mechanism(rate: float) -> Any:
    cost = PairCost.from_pmfs(P, Q)
    return cost if rate == 1.0 else PoissonSampled(cost, rate)


@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_the_count_is_within_one_percent_of_the_exact_count_and_never_above(rate: float) -> None:
    exact = _exact_count(rate)
    counted = int(PLDFilter(EPS, DELTA, _mechanism(rate)).budget)
    assert 0.99 * exact <= counted <= exact


def test_both_directions_count_planted_twin_one_direction() -> None:
    """The add direction (Q, M) binds here: counting the remove direction alone would admit
    more rounds than are (EPS, DELTA)-DP — the filter must not."""
    both = _exact_count(0.5)
    remove_only = _exact_count(0.5, ("remove",))
    assert remove_only > both  # the twin: one direction overcounts
    assert PLDFilter(EPS, DELTA, _mechanism(0.5)).budget <= both


def _session(f: PLDFilter, path: Path) -> ep.PrivateSession:
    return ep.PrivateSession(f, np.random.default_rng(7), ledger=path, create=True)


def _draw(rng: np.random.Generator) -> int:
    return int(rng.choice(3, p=P))


@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_release_with_a_sqlite_ledger_that_replays(tmp_path: Path, rate: float) -> None:
    mechanism = _mechanism(rate)
    f = PLDFilter(EPS, DELTA, mechanism)
    k = int(f.budget)
    path = tmp_path / "own.sqlite"
    s = _session(f, path)
    outputs = [s.release(mechanism, _draw) for _ in range(k // 2)]
    assert set(outputs) <= {0, 1, 2}
    s.close()
    again = _session(f, path)  # replays the ledger: the rounds are charged
    assert again.spent == k // 2
    assert again.remaining == k - k // 2
    for _ in range(k - k // 2):
        again.release(mechanism, _draw)
    with pytest.raises(BudgetExceeded):
        again.release(mechanism, _draw)
    assert again.spent == k
    again.close()


def test_a_draw_that_raises_leaves_the_round_charged(tmp_path: Path) -> None:
    f = PLDFilter(EPS, DELTA, _mechanism(1.0))
    s = _session(f, tmp_path / "raise.sqlite")

    def broken(_rng: np.random.Generator) -> int:
        raise RuntimeError("the caller's mechanism failed")

    with pytest.raises(RuntimeError):
        s.release(_mechanism(1.0), broken)
    assert s.spent == 1.0
    s.close()


def test_a_cost_the_filter_cannot_price_is_refused_before_anything_is_spent() -> None:
    s = ep.PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    disjoint = PairCost.from_pmfs([0.5, 0.5, 0.0], [0.5, 0.0, 0.5])  # loss ±∞: no zCDP
    with pytest.raises(InvalidParameter, match="PLDFilter") as info:
        s.release(disjoint, _draw)
    assert "nothing was spent" in str(info.value)
    assert s.spent == 0.0
    assert s.filter.rounds == 0
    with pytest.raises(InvalidParameter, match="callable"):
        s.release(GaussianCost(0.1), 3)  # type: ignore[arg-type]  # a bad draw


def test_threads_share_a_session_and_every_release_is_charged() -> None:
    f = PLDFilter(EPS, DELTA, _mechanism(0.5))
    s = ep.PrivateSession(f, np.random.default_rng(1))
    done: list[int] = []

    def work() -> None:
        for _ in range(20):
            done.append(s.release(_mechanism(0.5), lambda rng: 1))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 80
    assert s.spent == 80.0


def test_records_of_the_new_kinds_decode_to_the_same_cost() -> None:
    for cost in (
        PoissonSampled(PairCost.from_pmfs(P, Q), 0.5),
        Composed((GaussianCost.from_sigma(2.0), LaplaceCost(0.1))),
        SubsampledGaussianCost.from_sigma(1.0, 0.01),
    ):
        assert decode(encode(cost), "test") == cost
    old = {"type": "SubsampledGaussianCost", "rho": 0.5, "delta": 0.0, "sampling_prob": 0.01}
    assert decode(old, "test") == PoissonSampled(GaussianCost(0.5), 0.01)  # a /3 record


def test_every_backend_takes_the_new_kinds_it_prices_and_refuses_the_others(
    ledger_target: str,
) -> None:
    """A DP-SGD step (PoissonSampled of a GaussianCost carrying σ) and a subsampled Laplace round
    go through the server's record check (SQL derived from the table of kinds); a kind the
    server does not price (PairCost) is refused there before anything is charged; SQLite takes
    every kind."""
    f = ZCDPFilter(1.0)
    s = ep.PrivateSession(f, np.random.default_rng(0), ledger=ledger_target, create=True)
    s.subsampled_gaussian([[1.0], [2.0]], 1.0, 4.0, 0.5)
    s.release(PoissonSampled(LaplaceCost(0.1), 0.5), lambda rng: 0)
    spent = s.spent
    pair = PairCost.from_pmfs([0.5, 0.5], [0.4, 0.6])
    if ledger_target.startswith("postgresql"):
        with pytest.raises(ep.ExpostError):
            s.release(pair, lambda rng: 0)
        s.refresh()
        assert s.spent == spent
    else:
        s.release(pair, lambda rng: 0)
    s.close()
    again = ep.PrivateSession(f, np.random.default_rng(1), ledger=ledger_target)
    assert again.filter.rounds == (2 if ledger_target.startswith("postgresql") else 3)
    again.close()


def test_a_format_3_ledger_of_a_dp_sgd_counting_filter_still_opens(tmp_path: Path) -> None:
    """Its configuration names the step as ``SubsampledGaussianCost`` (rho, sampling_prob) and
    has no ``tau``: read through today's codec it is the same filter, and its rounds replay."""
    path = tmp_path / "v3.sqlite"
    old_step = {"type": "SubsampledGaussianCost", "rho": 0.5, "delta": 0.0, "sampling_prob": 0.01}
    config = {
        "format": "expost-session/3",
        "filter": {
            "type": "PLDFilter",
            "eps": 2.0,
            "delta": 1e-5,
            "mechanism": old_step,
            "grid": 5e-4,
        },
    }
    ledger = ep.Ledger.open(path, config, create=True)
    record: dict[str, Any] = {"round": 0, "mechanism": "subsampled_gaussian", "cost": old_step}

    def decide(_entries: object) -> dict[str, Any]:
        return record

    for kind in ("reserve", "settle"):
        ledger.append(kind, decide)
    ledger.close()
    f = PLDFilter(2.0, 1e-5, SubsampledGaussianCost(0.5, sampling_prob=0.01))
    s = ep.PrivateSession(f, np.random.default_rng(0), ledger=path)
    assert s.spent == 1.0
    s.release(SubsampledGaussianCost.from_sigma(1.0, 0.01), lambda rng: 0)  # the same step
    assert s.spent == 2.0
    s.close()
    with pytest.raises(ep.LedgerMismatch):
        ep.PrivateSession(PLDFilter(2.0, 1e-4, f.mechanism), np.random.default_rng(0), ledger=path)
