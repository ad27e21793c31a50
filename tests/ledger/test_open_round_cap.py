"""At most `MAX_OPEN_ROUNDS` rounds are ever open (issue 41 item 6: "a flood of reservations
cannot slow an open"): a reservation of round r is refused while round r − `MAX_OPEN_ROUNDS` is
open — by the PostgreSQL server for any client with the documented grants, and by the library's
own reservation on SQLite — and nothing jams: a session first settles stale rounds at their
requests (the charge they have), then reserves. The planted twin, a session that does not settle
stale rounds first, is refused at the cap.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.errors import LedgerRefused
from expost.filters import ZCDPCost
from expost.ledger import init_ledger
from expost.ledger.base import record_text
from expost.ledger.limits import MAX_OPEN_ROUNDS
from expost.ledger.records import encode
from tests.conftest import pg_ledger_url
from tests.ledger.test_ledger_roles import _psql, _with_ledger, client_role
from tests.ledger.test_pg_checkpoints import _flood

TINY = ZCDPCost(1e-6)


def _no_stale_settles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted twin: the session reserves without settling stale rounds first (the checkpoint
    pass after a round still runs, too late for the reservation at the cap)."""
    monkeypatch.setattr("expost.session.settle_stale", lambda _ledger, _replay: False)


def _open_rounds(entries: list[tuple[str, int]]) -> int:
    reserved = {k for kind, k in entries if kind == "reserve"}
    return len(reserved - {k for kind, k in entries if kind == "settle"})


@pytest.mark.parametrize("twin", [False, True], ids=["settles-stale-first", "twin-does-not"])
def test_sqlite_a_session_at_the_cap_settles_stale_rounds_then_reserves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, twin: bool
) -> None:
    path = tmp_path / "flood.sqlite"
    budget = ep.ZCDPFilter(1.0)
    init_ledger(path, budget)
    with sqlite3.connect(path) as conn:  # MAX_OPEN_ROUNDS rounds reserved, none settled
        conn.executemany(
            "INSERT INTO rounds VALUES (?, 'reserve', ?, 0.0)",
            [
                (k, record_text({"round": k, "mechanism": "m", "cost": encode(TINY)}))
                for k in range(MAX_OPEN_ROUNDS)
            ],
        )
    if twin:
        _no_stale_settles(monkeypatch)
    s = ep.PrivateSession(budget, np.random.default_rng(0), ledger=path)
    spent = s.spent
    if twin:
        with pytest.raises(LedgerRefused, match=f"round 0 is open while {MAX_OPEN_ROUNDS} later"):
            s.gaussian(0.0, 1.0, 1e-3)
        assert s.spent == spent  # refused before its reservation: nothing spent
        s.close()
        return
    s.gaussian(0.0, 1.0, 1e-3)
    s.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT kind, record FROM rounds").fetchall()
    entries = [(kind, json.loads(text)["round"]) for kind, text in rows]
    assert _open_rounds(entries) <= MAX_OPEN_ROUNDS
    settles = [json.loads(t) for kind, t in rows if kind == "settle"]
    stale = [r for r in settles if r["round"] < MAX_OPEN_ROUNDS]
    assert stale  # settled at their requests: the charge did not move
    assert all(r["cost"] == encode(TINY) for r in stale)


@pytest.fixture(scope="module")
def analyst(pg_server: Any, pg_client: str) -> str:
    return client_role(pg_server.get_uri(), "expost_cap_client")


@pytest.mark.parametrize("twin", [False, True], ids=["settles-stale-first", "twin-does-not"])
def test_postgres_the_server_refuses_a_reservation_at_the_cap_and_a_session_goes_on(
    pg_server: Any, analyst: str, monkeypatch: pytest.MonkeyPatch, twin: bool
) -> None:
    import psycopg

    name = f"cap_{uuid.uuid4().hex[:6]}"
    budget = ep.ZCDPFilter(1.0)
    lid = init_ledger(pg_ledger_url(pg_server, name), budget)
    url = _with_ledger(analyst, name)
    _flood(url, name, lid, 0, MAX_OPEN_ROUNDS)  # a client's flood: every round left open
    with pytest.raises(psycopg.Error, match=f"round 0 is open while {MAX_OPEN_ROUNDS} later"):
        _flood(url, name, lid, MAX_OPEN_ROUNDS, 1)  # the server refuses one more, raw
    if twin:
        _no_stale_settles(monkeypatch)
    s = ep.PrivateSession(budget, np.random.default_rng(0), ledger=url)
    if twin:
        with pytest.raises(LedgerRefused, match="is open while"):
            s.gaussian(0.0, 1.0, 1e-3)
        s.close()
        return
    s.gaussian(0.0, 1.0, 1e-3)
    s.close()
    admin = pg_ledger_url(pg_server, name)  # a client may not read the table itself
    rows = _psql(admin, "SELECT kind, round FROM expost.rounds WHERE ledger = %s", name)
    entries = [(kind, int(k)) for kind, k in rows]
    assert _open_rounds(entries) <= MAX_OPEN_ROUNDS
    assert ("reserve", MAX_OPEN_ROUNDS) in entries  # the session's round, past the cap
