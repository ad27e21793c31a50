"""No ledger can be jammed (issue 41 item 2; docs/session.md, "Ledgers over budget").

The issue's examples, first: a process killed mid-round leaves an open σ = 1 reservation on a
SQLite `PLDFilter` ledger, a σ = 3 round is then admitted, drawn and settled — every later open
used to raise; on PostgreSQL, reservations inside the server's 1e-9 slack made every open,
`refresh` and `expost ledger show` raise. Now a settle the replay would refuse is never written
(replay before write), and a ledger holding a round its filter cannot charge (forged, or admitted
by the slack) opens read-only: `read_only`, every release refused with `LedgerError`, `show`
lists the rounds.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli import main
from expost.cli.ledger import show
from expost.filters import Cost, GaussianCost, ZCDPCost
from expost.filters.base import Filter
from expost.ledger import Ledger, init_ledger
from expost.ledger.records import encode


def _session(f: ep.PrivacyFilter, ledger: object) -> ep.PrivateSession:
    return ep.PrivateSession(f, np.random.default_rng(0), ledger=ledger)  # type: ignore[arg-type]


def _realised(s: ep.PrivateSession) -> tuple[Cost, ...]:
    """The session's filter's recorded costs, in reservation order."""
    assert isinstance(s.filter, Filter)
    return s.filter.realised


def _pld(s: ep.PrivateSession) -> ep.PLDFilter:
    assert isinstance(s.filter, ep.PLDFilter)
    return s.filter


def _forge(path: Path, kind: str, record: dict[str, Any]) -> None:
    """Append ``record`` through the library's raw ledger API, as a careless client could."""
    with Ledger.open(path, Ledger.stored_config(path)) as ledger:
        ledger.append(kind, lambda _entries: record)


def _kinds(path: Path) -> list[str]:
    with Ledger.open(path, Ledger.stored_config(path)) as ledger:
        return [e.kind for e in ledger.entries()]


def test_a_killed_round_then_a_cheaper_one_leave_the_pld_ledger_open(tmp_path: Path) -> None:
    """The issue's SQLite example: the σ = 1 reservation of a killed process fixes the mechanism
    (the first reservation does), so the σ = 3 round after it is charged and every open works."""
    path = tmp_path / "pld.sqlite"
    budget = ep.PLDFilter(10.0, 1e-3)
    init_ledger(path, budget)
    child = textwrap.dedent(
        f"""
        import os, signal
        import numpy as np
        import expost as ep
        from expost.filters import GaussianCost
        s = ep.PrivateSession(ep.PLDFilter(10.0, 1e-3), np.random.default_rng(1), ledger={str(path)!r})
        s._reserve("gaussian", GaussianCost(0.5))  # sigma = 1: reserved, then killed mid-round
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", child], check=False, timeout=120)
    assert done.returncode == -9
    assert _kinds(path) == ["reserve"]
    s = _session(budget, path)
    s.gaussian(0.0, 1.0, 1 / 18)  # sigma = 3: admitted, drawn, settled
    s.close()
    for _ in range(2):
        again = _session(budget, path)  # used to raise InvalidParameter, for ever
        assert not again.read_only
        assert again.filter.rounds == 2
        assert again.spent == 2.0
        assert _pld(again).mechanism == GaussianCost(0.5)  # the first reservation's
        again.close()
    assert _kinds(path) == ["reserve", "reserve", "settle"]


def test_a_settle_the_replay_refuses_is_never_written(tmp_path: Path) -> None:
    """Replay before write: a settle the filter does not take where its round stands raises, is
    not written, and the round stays charged at its request, in the session and the ledger."""
    path = tmp_path / "refused.sqlite"
    budget = ep.PLDFilter(10.0, 1e-3)
    init_ledger(path, budget)
    s = _session(budget, path)
    key = s._reserve("doubling", GaussianCost(0.125))
    with pytest.raises(ep.InvalidParameter, match="stays charged at its request"):
        s._settle(key, GaussianCost(0.125), GaussianCost(0.25))  # not dominated: a bug
    assert _kinds(path) == ["reserve"]
    assert _realised(s) == (GaussianCost(0.125),)
    assert not s._unsettled  # dropped, not retried: the reservation stands
    s.close()
    assert _realised(_session(budget, path)) == (GaussianCost(0.125),)


FORGED = [
    ("reserve", {"round": 2, "mechanism": "m", "cost": encode(ZCDPCost(0.9))}, "does not fit"),
    ("reserve", {"round": 2, "mechanism": "m", "cost": {"type": "Nope"}}, "unreadable"),
    ("reserve", {"round": 7, "mechanism": "m", "cost": encode(ZCDPCost(0.1))}, "out of order"),
    ("note", {"round": 2, "cost": encode(ZCDPCost(0.1))}, "out of order"),
    ("reserve", {"round": 2, "mechanism": "m", "cost": "ZCDPCost"}, "unreadable"),
    ("reserve", {"mechanism": "m", "cost": encode(ZCDPCost(0.1))}, "unreadable"),
]


@pytest.mark.parametrize(("kind", "record", "fault"), FORGED)
def test_a_forged_record_opens_read_only_and_show_reports_it(
    tmp_path: Path, kind: str, record: dict[str, Any], fault: str
) -> None:
    path = tmp_path / "forged.sqlite"
    budget = ep.ZCDPFilter(1.0)
    init_ledger(path, budget)
    s = _session(budget, path)
    s.gaussian(0.0, 1.0, 0.5)
    in_flight = s._reserve("gaussian", GaussianCost(0.25))  # a round running meanwhile
    _forge(path, kind, record)
    again = _session(budget, path)  # opens: no exception
    assert again.read_only
    assert again.spent == 0.75
    for release in (
        lambda: again.gaussian(0.0, 1.0, 1e-6),
        lambda: again.laplace(0.0, 1.0, 1e-3),
        lambda: again.exponential_mechanism([1.0, 2.0], 0.01, monotone=True),
    ):
        with pytest.raises(ep.LedgerError, match="read-only") as refusal:
            release()
        assert fault in str(refusal.value)
        assert "nothing was spent" in str(refusal.value)
    with pytest.raises(ep.LedgerError, match="over its budget"):
        again.guarantee()
    again.refresh()  # no exception either
    s._settle(in_flight, GaussianCost(0.25), GaussianCost(0.25))  # a settle is still written
    s.refresh()
    assert s.read_only
    text = show(str(path))
    assert "OVER BUDGET" in text
    assert fault in text
    assert main(["ledger", "show", str(path)]) == 0
    again.close()
    s.close()


def test_a_forged_settle_leaves_its_round_charged_at_its_request(tmp_path: Path) -> None:
    """A settle written outside the session (smaller than its reservation and unfit for the
    counting filter's mechanism) is not taken: the round stays charged at its request, and the
    ledger stays writable (nothing is over budget)."""
    path = tmp_path / "settle.sqlite"
    budget = ep.PLDFilter(10.0, 1e-3)
    init_ledger(path, budget)
    s = _session(budget, path)
    s._reserve("gaussian", GaussianCost(0.125))
    _forge(
        path, "settle", {"round": 0, "cost": {"type": "LaplaceCost", "eps": 5.0}}
    )  # not dominated
    _forge(path, "settle", {"round": 0, "cost": encode(GaussianCost(0.125))})  # a second one
    again = _session(budget, path)
    assert not again.read_only
    assert _realised(again) == (GaussianCost(0.125),)
    assert "charged at its request" in show(str(path))
    again.gaussian(0.0, 1.0, 0.125)
    again.close()
    s.close()
