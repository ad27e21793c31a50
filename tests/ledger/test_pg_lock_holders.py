"""No SQL a client with the documented grants can run holds a PostgreSQL ledger's lock past the
hold limit (issue 41, item 4): each holder below runs as a client role with exactly
`client_grants`, takes the ledger's lock and keeps its connection busy with keep-alives (a
bounded loop of ``SELECT 1`` every 0.2 s on the loopback socket); an honest round on the same
ledger waits at most the hold limit (1 s in this database) plus a second, and the holder's
connection is ended.

The wait is the contract's, in seconds, and is measured on the server's clock (`Waiting`): from
the start of the honest round's transaction, seen waiting for the lock in ``pg_stat_activity``
(its ``xact_start``), to the start of its ``append_round`` (``created``, stamped with
``clock_timestamp()``). Neither the client's start-up, connection and replay nor a loaded
machine's scheduling of them counts; besides the lock wait only the server's read of the ledger
and one loopback round trip lie between the two (milliseconds), so the second of margin is the
contract's own, not slack for load. The planted twin — the previous rule (a holder's
``xact_start``/``state_change``, read from a snapshot frozen for the waiter's transaction) —
lets a session-level holder with keep-alives delay the honest round past that bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.ledger import init_ledger
from expost.ledger.pg_schema import _LOCK, client_grants
from tests.conftest import as_role
from tests.ledger.test_ledger_roles import _psql, _with_ledger, client_role

ROLE = "expost_holder"  # exactly the documented grants, nothing more
LIMIT_S = 1
TWIN_LIMIT_S = 2
KEY = "1702391924, hashtext('budget') & 2147483647"  # the ledger's advisory lock
BUDGET = ep.ZCDPFilter(1.0)


def _database(server: Any, name: str, limit: float = LIMIT_S) -> tuple[str, str]:
    """A fresh database with one ledger ``budget`` and the hold limit at ``limit``; (the
    administrator's URL, the client role's URL of the ledger)."""
    admin = server.get_uri()
    _psql(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    _psql(admin, f"CREATE DATABASE {name}")
    admin = admin.replace("/postgres?", f"/{name}?", 1)
    init_ledger(_with_ledger(admin, "budget"), BUDGET)
    _psql(admin, f"UPDATE expost.settings SET hold_limit_s = {limit}")
    client_role(server.get_uri(), ROLE)
    for grant in client_grants(ROLE):
        _psql(admin, grant)
    return admin, _with_ledger(as_role(admin, ROLE), "budget")


@pytest.fixture(scope="module")
def holders_db(pg_server: Any, pg_client: str) -> tuple[str, str]:
    return _database(pg_server, "holders")


class Holder:
    """A client connection that runs ``setup`` (statements; ``{id}`` is the ledger's id, ``{n}``
    its next round), then
    ``keep`` every 0.2 s, at most `rounds` times, until the server ends the connection."""

    def __init__(self, url: str, ledger_id: str, setup: list[str], keep: list[str]) -> None:
        import psycopg

        self.conn = psycopg.connect(url.split("&ledger=")[0], autocommit=True)
        for sql in setup:
            self.conn.execute(sql.format(id=ledger_id, n=_reserved(url)))
        self.keep, self.ended = keep, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for _ in range(60):  # at most ~12 s
            time.sleep(0.2)
            try:
                for sql in self.keep:
                    self.conn.execute(sql)
            except Exception:  # noqa: BLE001  # ended by the server: what the tests wait for
                self.ended.set()
                return

    def close(self) -> None:
        self.thread.join(timeout=15)
        self.conn.close()


LOCK = "SELECT expost.lock_ledger('budget', '{id}')"
HOLDERS = {
    # a session-level advisory lock on the ledger's key, outside any transaction
    "session-lock, SELECT 1": ([f"SELECT pg_advisory_lock({KEY})"], ["SELECT 1"]),
    "session-lock, short transactions": (
        [f"SELECT pg_advisory_lock({KEY})"],
        ["BEGIN", "SELECT 1", "COMMIT"],
    ),
    "session-lock taken twice": (
        [f"SELECT pg_advisory_lock({KEY})", f"SELECT pg_advisory_lock({KEY})"],
        ["SELECT 1"],
    ),
    "transaction, lock_ledger": (["BEGIN", LOCK], ["SELECT 1"]),
    "transaction, append_round": (
        [
            "BEGIN",
            (
                "SELECT * FROM expost.append_round('budget', '{id}', 'reserve',"
                ' \'{{"round": {n}, "mechanism": "m", "cost": {{"type": "ZCDPCost", "rho": 1e-3}}}}\')'
            ),
        ],
        ["SELECT 1"],
    ),
    "transaction, savepoint released": (
        ["BEGIN", "SAVEPOINT s", LOCK, "RELEASE s"],
        ["SAVEPOINT k", "SELECT 1", "RELEASE k"],
    ),
    "open cursor": (
        ["BEGIN", f"DECLARE c CURSOR FOR {LOCK} UNION ALL SELECT NULL", "FETCH 1 FROM c"],
        ["SELECT 1"],
    ),
    "sleeping statement": (["BEGIN", LOCK], ["SELECT pg_sleep(5)"]),
}


def _round(url: str) -> None:
    """One honest Gaussian round on the ledger (its own session)."""
    s = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=url)
    try:
        s.gaussian(0.0, 1.0, 1e-4)
    finally:
        s.close()


class Waiting:
    """Watches the server (the administrator's connection, every 0.05 s) for a transaction
    waiting on an advisory lock; `wait` is, on the server's clock, the time from the earliest
    such transaction's start to the start of the next reservation's ``append_round``."""

    def __init__(self, admin: str, name: str = "budget") -> None:
        import psycopg

        self.admin, self.name = admin, name
        rows = f"SELECT coalesce(max(id) + 1, 0) FROM expost.read_rounds('{name}', 0)"
        self.first = int(_psql(admin, rows)[0][0])
        self.since: float | None = None
        self.conn = psycopg.connect(admin, autocommit=True)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        sql = (
            "SELECT extract(epoch FROM min(xact_start)) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
        )
        while self.since is None and not self.stop.wait(0.05):
            row = self.conn.execute(sql).fetchone()
            if row is not None and row[0] is not None:
                self.since = float(row[0])

    def wait(self) -> float:
        """Seconds the round waited (0 if it was never seen waiting: it did not wait a poll)."""
        self.close()
        sql = (
            f"SELECT created FROM expost.read_rounds('{self.name}', {self.first})"
            " WHERE kind = 'reserve' ORDER BY id LIMIT 1"
        )
        reserved = float(_psql(self.admin, sql)[0][0])
        return 0.0 if self.since is None else reserved - self.since

    def close(self) -> None:
        if not self.stop.is_set():
            self.stop.set()
            self.thread.join(timeout=5)
            self.conn.close()


def _reserved(url: str) -> int:
    sql = "SELECT count(*) FROM expost.read_rounds('budget', 0) WHERE kind = 'reserve'"
    return int(_psql(url, sql)[0][0])


def _ledger_id(admin: str) -> str:
    return str(_psql(admin, "SELECT ledger_id FROM expost.header('budget')")[0][0])


@pytest.mark.parametrize("kind", list(HOLDERS))
def test_a_holder_with_keep_alives_is_ended_within_the_limit(
    holders_db: tuple[str, str], kind: str
) -> None:
    admin, url = holders_db
    setup, keep = HOLDERS[kind]
    holder = Holder(url, _ledger_id(admin), setup, keep)
    try:
        waiting = Waiting(admin)
        _round(url)
        waited = waiting.wait()
        assert LIMIT_S <= waited < LIMIT_S + 1, (kind, waited)  # it waited, and not too long
        assert holder.ended.wait(timeout=5), f"{kind}: the holder was not ended"
    finally:
        holder.close()


@pytest.fixture
def old_rule_db(pg_server: Any, pg_client: str) -> Iterator[tuple[str, str]]:
    """A database whose ``expost.take_lock`` is the previous rule (the planted twin), with a
    hold limit of `TWIN_LIMIT_S` (the previous rule ends this holder after about twice it)."""
    admin, url = _database(pg_server, "holders_twin", TWIN_LIMIT_S)
    old = _LOCK
    for new, previous in (
        ("IF clock_timestamp() - v_since >= v_limit THEN", "IF true THEN"),
        (
            "AND l.pid = ANY (v_seen)",
            (
                "AND (SELECT coalesce(a.xact_start, a.state_change) FROM pg_stat_activity a"
                " WHERE a.pid = l.pid) < clock_timestamp() - v_limit"
            ),
        ),
    ):
        assert old.count(new) == 1, new
        old = old.replace(new, previous)
    _psql(admin, old)
    yield admin, url
    _psql(pg_server.get_uri(), "DROP DATABASE IF EXISTS holders_twin WITH (FORCE)")


def test_planted_twin_the_previous_rule_lets_a_session_lock_kept_alive_delay_a_round(
    old_rule_db: tuple[str, str],
) -> None:
    """The same holder against the previous rule: the honest round waits past the bound (or is
    refused at its lock_timeout of 8 s) — what the test above catches."""
    admin, url = old_rule_db
    setup, keep = HOLDERS["session-lock, SELECT 1"]
    holder = Holder(url, _ledger_id(admin), setup, keep)
    try:
        waiting = Waiting(admin)
        refused = ""
        try:
            _round(url + "&options=-c%20lock_timeout%3D8000")
        except ep.LedgerError as exc:  # refused after its 8 s lock_timeout: past the bound
            refused = str(exc)
        waiting.close()
        waited = 8.0 if refused else waiting.wait()
        print(f"old rule: waited {waited:.2f} s (server clock) {refused}")
        assert waited >= TWIN_LIMIT_S + 1
        assert refused in ("",) or "busy" in refused
    finally:
        holder.close()
