"""`PrivateSession.poisson_batch` and the skip sampler (`expost.mechanisms.poisson_sample`).

Exact checks in rationals (the keep probability T/2⁵³ <= q; the coins' enclosures contain the
exact probabilities; the coins' product measure is the geometric gap law) and statistical
checks with fixed seeds: a count of kept rows is within z = 4.9 standard deviations of n·p
(two-sided false-alarm level about 1e-6 per check), and the planted twin (a sampler at 1.25·q)
is rejected by the same check.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from expost import (
    BudgetExceeded,
    InvalidParameter,
    NotCopyable,
    PLDFilter,
    PrivateSession,
    ZCDPFilter,
)
from expost.filters import SubsampledGaussianCost
from expost.ledger import open_ledger, stored_config
from expost.mechanisms.poisson_sample import (
    SCALE,
    coin_enclosure,
    poisson_indices,
    skip_digits,
)
from expost.mechanisms.subsampled import SubsampledGaussianMechanism

Z = 4.9  # two-sided normal quantile at about 1e-6


def threshold(q: float) -> int:
    return SubsampledGaussianMechanism(1.0, 1.0, q).threshold


@pytest.mark.parametrize("q", [0.3, 0.01, 1e-3, 0.1 + 1e-12, 2.0**-40])
def test_the_keep_probability_is_at_most_q_exactly(q: float) -> None:
    t = threshold(q)
    assert Fraction(t, SCALE) <= Fraction(q)
    assert Fraction(t + 1, SCALE) > Fraction(q)  # and the largest such 53-bit rate


@pytest.mark.parametrize("q", [0.5, 0.3, 0.07])
def test_the_coins_are_the_geometric_gap_exactly(q: float) -> None:
    """(1 − o)·Π_j P(digit j of g) = s^g·p for every g < 2^m, o = s^(2^m): in rationals."""
    t = threshold(q)
    p = Fraction(t, SCALE)
    s = 1 - p
    m = skip_digits(t)
    exact = [s ** (2**m)] + [s ** (2**j) / (1 + s ** (2**j)) for j in range(m)]
    for coin, value in enumerate(exact):
        lo, hi = coin_enclosure(t, coin)
        assert lo <= value <= hi
        assert hi - lo < Fraction(1, 2**100)
    for g in range(2**m):
        law = 1 - exact[0]
        for j in range(m):
            law *= exact[j + 1] if (g >> j) & 1 else 1 - exact[j + 1]
        assert law == s**g * p


def _z(kept: int, n: int, p: float) -> float:
    return (kept - n * p) / math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize(("q", "prec"), [(0.01, 128), (0.3, 128), (0.9, 128), (0.3, 6), (0.01, 4)])
def test_rows_are_kept_at_rate_p(q: float, prec: int) -> None:
    """prec 4 and 6: coarse first enclosures, so the exact refinement decides many coins."""
    t, n, rng = threshold(q), 200_000, np.random.default_rng(42)
    kept = poisson_indices(n, t, rng, prec=prec)
    assert np.all(np.diff(kept) > 0)
    assert kept[0] >= 0
    assert kept[-1] < n
    assert abs(_z(kept.size, n, t / SCALE)) < Z
    # independence: the kept rows in two halves, and neighbours both kept, at p²
    both = np.intersect1d(kept, kept + 1).size
    assert abs(_z(both, n - 1, (t / SCALE) ** 2)) < Z


def test_a_sampler_at_a_wrong_rate_is_rejected() -> None:  # planted twin
    t, n, rng = threshold(0.01), 200_000, np.random.default_rng(42)
    kept = poisson_indices(n, int(t * 1.25), rng)
    assert abs(_z(kept.size, n, t / SCALE)) >= Z


def test_every_position_is_reached() -> None:
    """Rows near the end are kept at the same rate as rows near the start (no drift)."""
    t, n, rng = threshold(0.05), 2_000, np.random.default_rng(3)
    counts = np.zeros(n)
    for _ in range(300):
        counts[poisson_indices(n, t, rng)] += 1
    p, trials = t / SCALE, 300
    for block in (counts[:500], counts[-500:]):
        assert abs(_z(int(block.sum()), 500 * trials, p)) < Z


def test_the_work_is_in_the_kept_rows_not_in_n() -> None:
    """n = 2**50 rows at q = 2**-40 (about 1,024 kept): a sampler that touched every row
    would never finish; the count is within Z standard deviations of n·p."""
    t, n = threshold(2.0**-40), 2**50
    kept = poisson_indices(n, t, np.random.default_rng(8))
    assert abs(_z(kept.size, n, t / SCALE)) < Z
    assert kept[-1] < n


def test_edge_rates() -> None:
    rng = np.random.default_rng(0)
    assert poisson_indices(10, SCALE, rng).tolist() == list(range(10))
    assert poisson_indices(10, 0, rng).size == 0


# ----------------------------------------------------------------------------- the session


def session(filter: Any = None, **kw: Any) -> PrivateSession:
    f = PLDFilter(2.0, 1e-5) if filter is None else filter
    return PrivateSession(f, np.random.default_rng(1), **kw)


def test_a_batch_is_charged_when_drawn_and_releases_once() -> None:
    s = session()
    batch = s.poisson_batch(10_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
    assert s.filter.rounds == 1
    assert s.history == ()
    k = batch.indices.size
    out = batch.release(np.zeros((k, 3)))
    assert out.shape == (3,)
    assert len(s.history) == 1
    assert s.history[0].realised == SubsampledGaussianCost.from_sigma(1.0, 0.01)
    with pytest.raises(InvalidParameter, match="releases once"):
        batch.release(np.zeros((k, 3)))
    assert s.filter.rounds == 1


def test_wrong_rows_are_refused_and_nothing_further_is_spent() -> None:
    s = session()
    batch = s.poisson_batch(10_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
    k = batch.indices.size
    bad = [np.zeros((k + 1, 3)), np.zeros((k, 0)), np.zeros((k, 3), dtype=bool)]
    nan = np.zeros((k, 3))
    nan[0, 0] = np.nan
    for rows in [*bad, nan, np.zeros((k, 2, 2))]:
        with pytest.raises(InvalidParameter, match="nothing further was spent") as err:
            batch.release(rows)
        assert str(k) not in str(err.value).replace("2**1000", "")  # the count stays private
        assert s.filter.rounds == 1
        assert not batch.released
    with pytest.raises(InvalidParameter, match="rows of one length"):
        batch.release([[1.0], [2.0, 3.0]] * k)  # ragged
    batch.release(np.zeros((k, 3)))  # the right rows still release it
    assert batch.released


def test_the_indices_never_reach_repr_history_or_ledger(tmp_path: Any) -> None:
    ledger = tmp_path / "l.sqlite"
    s = session(ledger=ledger, create=True)
    batch = s.poisson_batch(1_000, sampling_prob=0.5, sigma=4.0, sensitivity=1.0)
    marker = batch.indices[:3].tolist()
    out = batch.release(np.ones((batch.indices.size, 2)))
    s.close()
    with open_ledger(str(ledger), stored_config(str(ledger))) as raw:
        records = repr([e.record for e in raw.entries()])
    text = repr(batch) + repr(s.history) + records
    assert str(marker)[1:-1] not in text
    assert "indices" not in text
    assert str(batch.indices.size) not in repr(batch)
    assert np.all(np.isfinite(out))
    again = PrivateSession(PLDFilter(2.0, 1e-5), np.random.default_rng(2), ledger=ledger)
    assert again.filter.rounds == 1  # the step replays from the ledger


def test_a_batch_cannot_be_copied_or_pickled() -> None:
    """A copy could release the step twice for one charge."""
    import copy
    import pickle

    batch = session().poisson_batch(1_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
    for clone in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(NotCopyable):
            clone(batch)


def test_a_forked_child_cannot_release_its_parents_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    batch = session().poisson_batch(1_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
    pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: pid + 1)  # as in a forked child
    with pytest.raises(NotCopyable):
        batch.release(np.zeros((batch.indices.size, 1)))
    assert not batch.released


def test_an_unreleased_batch_stays_charged() -> None:
    s = session()
    s.poisson_batch(1_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
    assert s.spent == 1.0
    assert s.filter.rounds == 1


def test_the_release_clips_sums_and_adds_noise_of_sigma_c() -> None:
    """Rows of norm 10 clipped to C = 2: the sum is 2·k·e_1 plus N(0, (σC)²); over 200 steps
    the mean residual is within Z standard errors of 0 and its variance within a chi-square
    band (planted twin: residuals of an unclipped sum are far off)."""
    s = PrivateSession(ZCDPFilter(1e4), np.random.default_rng(5))
    residuals, unclipped = [], []
    for _ in range(200):
        b = s.poisson_batch(100, sampling_prob=0.05, sigma=0.5, sensitivity=2.0)
        k = b.indices.size
        rows = np.zeros((k, 2))
        rows[:, 0] = 10.0
        out = b.release(rows)
        residuals.append(out - np.array([2.0 * k, 0.0]))
        unclipped.append(out - np.array([10.0 * k, 0.0]))
    r = np.array(residuals) / 1.0  # σ·C = 1
    assert abs(r.mean()) < Z / math.sqrt(r.size)
    assert abs(r.var() - 1.0) < Z * math.sqrt(2.0 / r.size)
    assert abs(np.array(unclipped).mean()) > Z / math.sqrt(r.size)  # planted twin


def test_bad_parameters_are_refused_before_anything_is_spent() -> None:
    s = session()
    for kw in (
        {"n": 0},
        {"n": 2**54},
        {"n": 1.5},
        {"n": True},
        {"n": "100"},
        {"n": 10**8, "sampling_prob": 0.5},
        {"sampling_prob": 0.0},
        {"sampling_prob": 1.0 + 2**-52},
        {"sampling_prob": float("nan")},
        {"sigma": -1.0},
        {"sigma": float("inf")},
        {"sensitivity": 0.0},
        {"sensitivity": "1"},
    ):
        args: dict[str, Any] = {"n": 100, "sampling_prob": 0.1, "sigma": 1.0, "sensitivity": 1.0}
        args.update(kw)
        with pytest.raises(InvalidParameter, match="nothing was spent"):
            s.poisson_batch(**args)
    assert s.filter.rounds == 0


def test_a_batch_past_the_budget_is_refused() -> None:
    s = PrivateSession(PLDFilter(1.0, 1e-5), np.random.default_rng(0))
    budget = int(PLDFilter(1.0, 1e-5, SubsampledGaussianCost.from_sigma(4.0, 0.5)).budget)
    for _ in range(budget):
        s.poisson_batch(100, sampling_prob=0.5, sigma=4.0, sensitivity=1.0)
    with pytest.raises(BudgetExceeded):
        s.poisson_batch(100, sampling_prob=0.5, sigma=4.0, sensitivity=1.0)
    assert s.filter.rounds == budget > 0


def test_a_stopping_rule_cannot_draw_a_batch() -> None:
    """As for every round: a round started by a running round's stopping rule is refused."""
    from expost import TimeGrid

    s = session(filter=ZCDPFilter(10.0))
    refusals: list[str] = []

    def rule(*_: object) -> bool:
        try:
            s.poisson_batch(100, sampling_prob=0.1, sigma=1.0, sensitivity=1.0)
        except InvalidParameter as err:
            refusals.append(str(err))
        return True

    s.brownian(0.0, 1.0, TimeGrid((2.0, 1.0)), stop=rule)
    assert refusals
    assert "running in this thread" in refusals[0]
    assert "nothing was spent" in refusals[0]
    assert s.filter.rounds == 1  # the Brownian round only


def test_secure_mode_refuses_batches() -> None:
    s = PrivateSession(PLDFilter(2.0, 1e-5), exact=True)
    with pytest.raises(InvalidParameter, match="nothing was spent"):
        s.poisson_batch(100, sampling_prob=0.1, sigma=1.0, sensitivity=1.0)
