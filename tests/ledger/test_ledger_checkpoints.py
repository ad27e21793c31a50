"""Checkpoints of long-lived SQLite ledgers (issue 41 item 6; docs/session.md, "Checkpoints").

A session writes the replay's state every `CHECKPOINT_EVERY` settled rounds (here 8); an open
restores the latest sound checkpoint and reads only the entries after it. It must agree with the
full replay of every entry — spend, what remains, the round count, a round left open across a
checkpoint and settled later, a `PLDFilter`'s mechanism — and a checkpoint that does not fit the
ledger (another round count, sums below an earlier checkpoint's) is not trusted: the open replays
every entry, and ``expost ledger show`` names a checkpoint that does not match its entries.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli.ledger import show
from expost.filters import Cost, DPCost, ExPostCost, GaussianCost, RDPFilter, ZCDPCost
from expost.filters.base import Filter
from expost.ledger import Ledger, init_ledger
from expost.ledger import checkpoints as checkpoints_module
from expost.ledger.base import canonical, record_text
from expost.ledger.records import encode
from expost.ledger.replay import Replay
from tests.session.test_protocol_invariant import OldReplay

EVERY = 8


@pytest.fixture(autouse=True)
def _often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints_module, "CHECKPOINT_EVERY", EVERY)


BUDGETS: list[tuple[ep.PrivacyFilter, list[Cost]]] = [
    (ep.ZCDPFilter(100.0), [GaussianCost(0.25), ZCDPCost(0.125), DPCost(0.5)]),
    (ep.PLDFilter(10.0, 1e-3), [GaussianCost(2**-7), GaussianCost(2**-8)]),
    (
        ep.ConcurrentFilter(ep.ZCDPFilter(100.0), ep.ExPostFilter(100.0, 0.5), 1e-6),
        [GaussianCost(0.25), ExPostCost(0.5, 1e-4, eps_max=0.5)],
    ),
    (RDPFilter(100.0, 1e-6), [GaussianCost(0.25)]),  # no checkpoint: its state is no sum
]


def _open(f: ep.PrivacyFilter, path: Path) -> ep.PrivateSession:
    return ep.PrivateSession(f, np.random.default_rng(0), ledger=path)


def _full(f: ep.PrivacyFilter, path: Path) -> ep.PrivacyFilter:
    """The naive replay of every entry, from the first (no checkpoint)."""
    with Ledger.open(path, Ledger.stored_config(path)) as ledger:
        return Replay(f, path).update(ledger.entries())


def _run(f: ep.PrivacyFilter, costs: list[Cost], path: Path) -> None:
    """Two sessions' rounds, interleaved; one round held open across several checkpoints."""
    init_ledger(path, f)
    a, b = _open(f, path), _open(f, path)
    held = a._reserve("m", costs[0])
    for i in range(5 * EVERY):
        s = (a, b)[i % 2]
        cost = costs[i % len(costs)]
        s._settle(s._reserve("m", cost), cost, cost)
    a._settle(held, costs[0], costs[-1])  # long since settled at its request: returns
    for i in range(EVERY + 3):
        cost = costs[i % len(costs)]
        b._settle(b._reserve("m", cost), cost, cost)
    a.close()
    b.close()


def _checkpoints(path: Path) -> tuple[tuple[int, dict[str, Any]], ...]:
    with Ledger.open(path, Ledger.stored_config(path)) as ledger:
        return ledger.checkpoints()


@pytest.mark.parametrize(("budget", "costs"), BUDGETS, ids=lambda x: type(x).__name__)
def test_an_open_from_a_checkpoint_agrees_with_the_full_replay(
    tmp_path: Path, budget: ep.PrivacyFilter, costs: list[Cost]
) -> None:
    path = tmp_path / "long.sqlite"
    _run(budget, costs, path)
    full = _full(budget, path)
    fast = _open(budget, path)
    assert fast.spent == full.spent
    assert fast.remaining == full.remaining
    assert fast.filter.rounds == full.rounds
    assert fast._replay.rounds == 5 * EVERY + 1 + EVERY + 3
    checkpoints = _checkpoints(path)
    assert fast._ledger is not None
    if isinstance(budget, RDPFilter):
        assert checkpoints == ()
    else:
        assert len(checkpoints) >= 4
        held = Ledger.open(path, Ledger.stored_config(path)).entries()
        adopted = next(e for e in held if e.kind == "settle" and e.record["round"] == 0)
        assert adopted.record["cost"] == encode(
            costs[0]
        )  # the held round: settled at its request when it went stale
        read = len(fast._ledger.entries())
        assert read == 2 * fast._replay.rounds - checkpoints[-1][0]  # only the tail was read
        assert "NOT SOUND" not in show(str(path))
    if isinstance(budget, ep.PLDFilter):
        assert isinstance(fast.filter, ep.PLDFilter)
        assert fast.filter.mechanism == costs[0]
    fast.gaussian(0.0, 1.0, 2**-8)  # and it goes on, as the full replay would
    fast.close()
    assert _open(budget, path).spent == _full(budget, path).spent


def _forge(path: Path, entry: int, state: dict[str, Any]) -> None:
    """A checkpoint written straight into the file (no library path writes one like it)."""
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO checkpoints VALUES (?, ?)", (entry, canonical("s", state)))


def _lowered(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "sums": {**state["sums"], "amounts": [0.0]}}


def test_a_checkpoint_that_does_not_fit_the_ledger_is_not_trusted(tmp_path: Path) -> None:
    budget, costs = BUDGETS[0]
    path = tmp_path / "forged.sqlite"
    _run(budget, costs, path)
    truth = _full(budget, path).spent
    latest = _checkpoints(path)[-1][1]
    total = len(Ledger.open(path, Ledger.stored_config(path)).entries())
    _forge(path, total, {**latest, "rounds": latest["rounds"] + 5})  # another round count
    assert _open(budget, path).spent == truth
    _forge(path, total + 1, _lowered(latest))  # below an earlier checkpoint's sums
    assert _open(budget, path).spent == truth
    assert show(str(path)).count("NOT SOUND") == 2


def test_show_names_a_first_checkpoint_below_its_entries(tmp_path: Path) -> None:
    """A lowered checkpoint that is the ledger's first (a file written outside the library):
    the open's SQL-side check of the settled costs refuses it (tests/ledger/
    test_checkpoint_trust.py), and the full check of ``show`` names it."""
    budget, costs = BUDGETS[0]
    path = tmp_path / "first.sqlite"
    init_ledger(path, budget)
    s = _open(budget, path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoints_module, "CHECKPOINT_EVERY", 10**9)  # none written by the session
        for _ in range(3):
            s._settle(s._reserve("m", costs[0]), costs[0], costs[0])
    assert s._replay is not None
    state = s._replay.state()
    assert state is not None
    s.close()
    Ledger.open(path, Ledger.stored_config(path))._write_checkpoint(lambda _e: _lowered(state))
    assert "NOT SOUND: checkpoint of entry 6" in show(str(path))
    assert _open(budget, path).spent == _full(budget, path).spent


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every `Filter.spend` from now on."""
    calls = [0]
    spend = Filter.spend

    def counted(self: Filter, realised: Cost) -> Filter:
        calls[0] += 1
        return spend(self, realised)

    monkeypatch.setattr(Filter, "spend", counted)
    return calls


FLOOD = 1500


def _flooded(path: Path) -> ep.PrivacyFilter:
    """A ledger of `FLOOD` tiny reservations never settled (bulk, as the session writes them)."""
    budget = ep.ZCDPFilter(1.0)
    init_ledger(path, budget)
    cost = encode(ZCDPCost(1e-6))
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO rounds VALUES (?, 'reserve', ?, 0.0)",
            [(k, record_text({"round": k, "mechanism": "m", "cost": cost})) for k in range(FLOOD)],
        )
    return budget


@pytest.mark.parametrize("twin", [False, True], ids=["replay", "old-replay-twin"])
def test_a_flood_of_open_reservations_costs_one_spend_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, twin: bool
) -> None:
    """The issue's flood (1,246 rows took 4.5 s an open): an open spends each reservation once,
    and a round after it a few spends, whatever the flood; the old replay (the planted twin)
    spent every open reservation again on every update."""
    budget = _flooded(tmp_path / "flood.sqlite")
    check_flood(monkeypatch, lambda: _open(budget, tmp_path / "flood.sqlite"), twin, FLOOD)


def check_flood(
    monkeypatch: pytest.MonkeyPatch,
    open_session: Callable[[], ep.PrivateSession],
    twin: bool,
    flood: int,
) -> None:
    """Open a session on a ledger of ``flood`` open reservations and run one round: the open
    spends each reservation once and the round a few spends; with ``twin``, the old replay,
    which spends every open reservation again on every update (both backends' test)."""
    if twin:
        monkeypatch.setattr(checkpoints_module, "Replay", OldReplay)
        monkeypatch.setattr("expost.session.Replay", OldReplay)
        monkeypatch.setattr("expost.session.checkpoint", lambda _ledger, _replay, done: done)
    calls = _counting(monkeypatch)
    s = open_session()
    opened = calls[0]
    s.gaussian(0.0, 1.0, 1e-3)
    after = calls[0] - opened
    s.close()
    if twin:
        assert after >= flood
    else:
        assert opened == flood
        assert after <= 4
