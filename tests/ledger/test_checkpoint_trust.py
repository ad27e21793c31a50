"""What an open of a SQLite ledger trusts in a checkpoint (issue 41 item 6; docs/session.md,
"Checkpoints: long-lived ledgers").

Anyone who can write the file can plant a checkpoint. An open must never take one whose exact
sums are below what the settle entries it covers charge (summed SQL-side, each distinct cost
priced once by the filter): it replays every entry instead. Planted: a checkpoint of the right
shape and round count whose sums hide rounds — the ledger's only checkpoint, so no earlier one
betrays it — and one whose open round is marked settled at a smaller cost. The planted twin
(the open without that check) takes both forgeries.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.filters import Cost, ExPostCost, GaussianCost, SubsampledGaussianCost
from expost.ledger import Ledger, init_ledger
from expost.ledger import checkpoints as checkpoints_module
from expost.ledger.base import canonical
from expost.ledger.records import encode
from expost.ledger.replay import Replay

STEP = SubsampledGaussianCost.from_sigma(1.0, 0.01)
CASES: list[tuple[ep.PrivacyFilter, list[Cost]]] = [
    (ep.ZCDPFilter(100.0), [STEP, GaussianCost(0.25)]),
    (ep.PLDFilter(10.0, 1e-3), [GaussianCost(2**-7)]),
    (
        ep.ConcurrentFilter(ep.ZCDPFilter(100.0), ep.ExPostFilter(100.0, 0.5), 1e-6),
        [GaussianCost(0.25), ExPostCost(0.5, 1e-4, eps_max=0.5)],
    ),
]


def _open(f: ep.PrivacyFilter, path: Path) -> ep.PrivateSession:
    return ep.PrivateSession(f, np.random.default_rng(0), ledger=path)


def _ledger(f: ep.PrivacyFilter, costs: list[Cost], path: Path) -> dict[str, Any]:
    """Twelve settled rounds and one left open, no checkpoint; the honest state of them all."""
    init_ledger(path, f)
    s = _open(f, path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoints_module, "CHECKPOINT_EVERY", 10**9)
        for i in range(12):
            cost = costs[i % len(costs)]
            s._settle(s._reserve("m", cost), cost, cost)
        s._reserve("m", costs[0])
    state = s._replay.state()
    assert state is not None
    s.close()
    return state


def _plant(path: Path, state: dict[str, Any]) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS checkpoints (entry INTEGER PRIMARY KEY, state TEXT)"
        )
        conn.execute("INSERT INTO checkpoints VALUES (25, ?)", (canonical("s", state),))


def _hidden(state: dict[str, Any]) -> dict[str, Any]:
    """Its sums without half the rounds (every part's amounts halved)."""

    def halve(sums: dict[str, Any]) -> dict[str, Any]:
        if "amounts" not in sums:
            return {k: halve(v) for k, v in sums.items()}
        return {**sums, "amounts": [sum(sums["amounts"]) / 2]}

    return {**state, "sums": halve(state["sums"])}


def _cheap_tail(state: dict[str, Any]) -> dict[str, Any]:
    """Its open round (a Gaussian) marked settled at a tiny Gaussian."""
    request = state["tail"][0][0]
    tiny = encode(GaussianCost(1e-9))
    return {**state, "tail": [[request, tiny]]}


def _full(f: ep.PrivacyFilter, path: Path) -> Any:
    with Ledger.open(path, Ledger.stored_config(path)) as ledger:
        return Replay(f, path).update(ledger.entries()).spent


@pytest.mark.parametrize("twin", [False, True], ids=["open", "twin-without-check"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_an_open_refuses_a_checkpoint_below_its_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: int, twin: bool
) -> None:
    f, costs = CASES[case]
    path = tmp_path / "planted.sqlite"
    honest = _ledger(f, costs, path)
    truth = _full(f, path)
    if twin:
        monkeypatch.setattr(checkpoints_module, "_confirmed", lambda *_args: True)
    _plant(path, _hidden(honest))
    s = _open(f, path)
    assert s._checkpointed == (12 if twin else 0)  # restored from it, or replayed in full
    assert (s.spent != truth) is twin
    s.close()


@pytest.mark.parametrize("twin", [False, True], ids=["open", "twin-without-check"])
def test_an_open_refuses_a_tail_settled_below_its_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, twin: bool
) -> None:
    f = CASES[0][0]
    path = tmp_path / "tail.sqlite"
    honest = _ledger(f, [GaussianCost(0.25)], path)
    truth = _full(f, path)
    if twin:
        monkeypatch.setattr(checkpoints_module, "_confirmed", lambda *_args: True)
    _plant(path, _cheap_tail(honest))
    s = _open(f, path)
    assert (s.spent < truth) is twin
    s.close()


def test_an_honest_checkpoint_is_taken(tmp_path: Path) -> None:
    """The check does not refuse the truth: the honest state, planted, is restored."""
    f, costs = CASES[0]
    path = tmp_path / "honest.sqlite"
    honest = _ledger(f, costs, path)
    _plant(path, honest)
    s = _open(f, path)
    assert s._checkpointed == 12
    assert s.spent == _full(f, path)
    s.close()


def test_the_settles_are_counted_as_the_replay_reads_them(tmp_path: Path) -> None:
    """`_settle_costs` (text match for the known costs, ``json_extract`` for the rest) counts
    each settle at the cost the replay reads from it: canonical records, a record written with
    spaces, a known cost with a key appended after the round, and costs nobody named."""
    f, costs = CASES[0]
    path = tmp_path / "counted.sqlite"
    _ledger(f, costs, path)
    odd = [
        '{"cost": ' + canonical("c", encode(GaussianCost(0.25))) + ', "round": 99}',
        '{"cost":' + canonical("c", encode(GaussianCost(0.25))) + ',"round":98,"note":"x"}',
    ]
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO rounds VALUES (?, 'settle', ?, 0.0)", [(25, odd[0]), (26, odd[1])]
        )
    with Ledger.open(path, Ledger.stored_config(path)) as ledger:
        expected: dict[str, int] = {}
        for e in ledger.entries():
            if e.kind == "settle":
                key = canonical("c", e.record["cost"])
                expected[key] = expected.get(key, 0) + 1
        for known in ([], [canonical("c", encode(GaussianCost(0.25)))], sorted(expected)):
            counted = checkpoints_module._settle_costs(ledger, 27, known)
            assert counted is not None
            got: dict[str, int] = {}
            for text, n in counted:
                key = canonical("c", json.loads(text))
                got[key] = got.get(key, 0) + n
            assert got == expected
