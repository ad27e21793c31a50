"""The ledger on both backends, and the PostgreSQL fault tests (issue 24), on a real server.

`pgserver` starts a throwaway PostgreSQL (its own binaries, no root, no network: a unix
socket in a temporary directory) once for this module; every test gets a ledger of its own
name in it. Where psycopg or pgserver is missing, or the server does not start, the
PostgreSQL cases skip with the reason. The same semantics tests run on SQLite files.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli import main
from expost.errors import (
    BudgetExceeded,
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
)
from expost.ledger import PostgresLedger, open_ledger
from tests.conftest import pg_ledger_url
from tests.ledger_worker import CONFIG, budget_decide, spent
from tests.workers import Workers

WORKER = Path(__file__).parents[1] / "ledger_worker.py"


@pytest.fixture
def workers() -> Iterator[Workers]:
    pool = Workers(WORKER)
    yield pool
    pool.stop()


# ----------------------------------------------------------------------------- both backends


def test_append_read_and_reopen(ledger_target: str) -> None:
    with open_ledger(ledger_target, CONFIG, create=True) as ledger:
        assert ledger.entries() == ()
        first = ledger.append("round", lambda entries: {"cost": 0.5, "seen": len(entries)})
        second = ledger.append("round", lambda entries: {"cost": 0.25, "seen": len(entries)})
        assert (first.index, second.index) == (0, 1)
        assert dict(second.record) == {"cost": 0.25, "seen": 1}
    with open_ledger(ledger_target, CONFIG) as again:
        assert [dict(e.record) for e in again.entries()] == [
            {"cost": 0.5, "seen": 0},
            {"cost": 0.25, "seen": 1},
        ]


def test_refused_decide_writes_nothing(ledger_target: str) -> None:
    with open_ledger(ledger_target, CONFIG, create=True) as ledger:
        ledger.append("round", budget_decide(1.0, 0.75, "a"))
        with pytest.raises(BudgetExceeded):
            ledger.append("round", budget_decide(1.0, 0.75, "b"))
        assert spent(ledger.entries()) == 0.75
    with open_ledger(ledger_target, CONFIG) as again:
        assert len(again.entries()) == 1


def test_another_config_is_a_mismatch(ledger_target: str) -> None:
    open_ledger(ledger_target, CONFIG, create=True).close()
    with pytest.raises(LedgerMismatch, match="refusing to mix budgets"):
        open_ledger(ledger_target, {**CONFIG, "unit": "eps"})


def test_sessions_share_one_budget_and_refusals_spend_nothing(ledger_target: str) -> None:
    f = ep.ZCDPFilter(1.0)
    a = ep.PrivateSession(f, np.random.default_rng(1), ledger=ledger_target, create=True)
    b = ep.PrivateSession(f, np.random.default_rng(2), ledger=ledger_target)
    a.gaussian(3.0, 1.0, rho=0.5)
    b.gaussian(3.0, 1.0, rho=0.25)
    with pytest.raises(BudgetExceeded):
        a.gaussian(3.0, 1.0, rho=0.5)  # a sees b's round under the lock: 0.75 spent
    a.refresh()
    assert a.spent == b.spent == 0.75
    a.close()
    b.close()
    resumed = ep.PrivateSession(f, np.random.default_rng(3), ledger=ledger_target)
    assert resumed.spent == 0.75
    assert resumed.filter.rounds == 2
    resumed.close()


def test_processes_cannot_jointly_overspend_even_when_some_are_killed(
    ledger_target: str, workers: Workers
) -> None:
    """Fault test (a): four writers on one budget, two SIGKILLed mid-run."""
    budget, cost = 8.0, 0.25
    procs = workers.released(*[("spend", ledger_target, budget, cost, f"w{k}") for k in range(4)])
    admitted: dict[int, str] = {}
    for k, proc in enumerate(procs):
        if k < 2:  # killed after its third admitted round (unless the budget ran out first)
            for _ in range(3):
                if (text := workers.line(proc)) == "done":
                    break
                admitted[int(text)] = f"w{k}"
            proc.send_signal(signal.SIGKILL)
            rest, _ = workers.finish(proc)
            lines = [x for x in rest.splitlines(keepends=True) if x.endswith("\n")]
            admitted |= {int(x): f"w{k}" for x in lines if x.strip() not in ("done", "")}
            continue
        while (text := workers.line(proc)) != "done":
            admitted[int(text)] = f"w{k}"
        assert proc.wait() == 0
    with open_ledger(ledger_target, CONFIG, create=True) as ledger:
        entries = ledger.entries()
    assert spent(entries) <= budget
    assert {e.index: e.record["worker"] for e in entries if e.index in admitted} == admitted
    assert len(entries) - len(admitted) in (0, 1, 2)  # a killed writer's last commit unprinted
    assert len(entries) == math.floor(budget / cost)  # the survivors spent the rest


def test_a_writer_waits_for_the_lock_held_during_decide(
    ledger_target: str, workers: Workers
) -> None:
    open_ledger(ledger_target, CONFIG, create=True).close()
    holder = workers.start("hold", ledger_target)
    assert workers.line(holder) == "ready"
    workers.send(holder)
    assert workers.line(holder) == "locked 0"
    with open_ledger(ledger_target, CONFIG, timeout=0.5) as ledger:
        with pytest.raises(LedgerError):
            ledger.append("round", lambda entries: {"cost": 1.0, "seen": len(entries)})
        assert ledger.entries() == ()
        workers.send(holder)
        assert workers.line(holder) == "0"
        assert ledger.append("round", lambda e: {"cost": 1.0, "seen": len(e)}).index == 1


# ----------------------------------------------------------------------------- PostgreSQL only


def _psql(server: Any, sql: str) -> list[tuple[Any, ...]]:
    """Run ``sql`` behind the ledger's back (autocommit); database errors propagate."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def test_the_database_refuses_update_and_delete_even_to_its_owner(pg_server: Any) -> None:
    url = pg_ledger_url(pg_server, "append_only")
    with open_ledger(url, CONFIG, create=True) as ledger:
        ledger.append("round", lambda entries: {"cost": 1.0})
    for sql in (
        "UPDATE expost.rounds SET kind = 'x'",
        "DELETE FROM expost.rounds",
        "TRUNCATE expost.rounds CASCADE",
        "DELETE FROM expost.ledgers",
    ):
        with pytest.raises(Exception, match="append-only"):  # psycopg's RaiseException
            _psql(pg_server, sql)
    with open_ledger(url, CONFIG) as ledger:
        assert len(ledger.entries()) == 1


def test_a_connection_cut_mid_transaction_writes_nothing(pg_server: Any, workers: Workers) -> None:
    """Fault test (c): the holder's backend is terminated while it holds the lock in decide."""
    url = pg_ledger_url(pg_server, "cut")
    with open_ledger(url, CONFIG, create=True) as ledger:
        ledger.append("round", lambda entries: {"cost": 1.0, "seen": len(entries)})
    holder = workers.start("hold", url)
    assert workers.line(holder) == "ready"
    workers.send(holder)
    assert workers.line(holder) == "locked 1"
    _psql(
        pg_server,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE state = 'idle in transaction' AND pid <> pg_backend_pid()",
    )
    workers.send(holder)  # its INSERT and COMMIT now meet a closed connection
    _, err = workers.finish(holder)
    assert holder.returncode != 0
    assert "LedgerError" in err
    with open_ledger(url, CONFIG, create=True) as ledger:
        assert len(ledger.entries()) == 1  # nothing half-written
        assert ledger.append("round", lambda e: {"cost": 1.0, "seen": len(e)}).index == 1


def _restart(server: Any) -> None:
    """Start the killed server again, as an operator would after a crash.

    The killed postmaster can stay a zombie here (no init reaps it in a container), and
    PostgreSQL takes a live pid in its lock files for a running server: those are removed.
    """
    pgdata = Path(server.pgdata)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    for lock in pgdata.glob(".s.PGSQL.*.lock"):
        lock.unlink()
    deadline = time.monotonic() + 30.0
    while True:
        try:
            server.ensure_postgres_running()
            return
        except Exception:  # old backends still exiting: shared memory busy for a moment
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_server_killed_and_restarted_loses_no_admitted_round(
    pg_server: Any, workers: Workers
) -> None:
    """Fault test (b): SIGKILL of the postmaster while a worker appends in a loop."""
    url = pg_ledger_url(pg_server, "restart")
    ledger = open_ledger(url, CONFIG, create=True)
    decide = budget_decide(1000.0, 1.0, "client")
    ledger.append("round", decide)
    writer = workers.start("loop", url)
    printed = [int(workers.line(writer)) for _ in range(20)]
    os.kill(pg_server.get_pid(), signal.SIGKILL)
    rest, err = workers.finish(writer)  # the writer meets the dead server mid-run
    printed += [int(x) for x in rest.splitlines(keepends=True) if x.endswith("\n")]
    assert writer.returncode != 0
    assert "LedgerError" in err
    for _ in range(3):  # while it is down, every call is a clear LedgerError
        with pytest.raises(LedgerError, match="could not be used"):
            ledger.append("round", decide)
    _restart(pg_server)
    ledger.append("round", decide)  # the client goes on
    entries = ledger.entries()
    indices = [e.index for e in entries]
    assert indices == list(range(len(indices)))
    assert set(printed) <= set(indices)  # every round returned before the kill survived
    assert len(indices) - len(printed) - 2 in (0, 1)  # at most one committed, not printed
    assert spent(entries) == len(indices) <= 1000.0
    ledger.close()


def test_bad_targets_and_an_altered_ledger_are_clear_errors(pg_server: Any) -> None:
    """Fault test (d): each a clear error, nothing changed."""
    uri: str = pg_server.get_uri()
    no_db = uri.replace("/postgres?", "/?", 1)
    with pytest.raises(InvalidParameter, match="must name a database"):
        open_ledger(no_db, CONFIG, create=True)
    for name in ("Budget", "1st", "a-b", "x" * 64, ""):
        with pytest.raises(InvalidParameter, match="lower-case identifier"):
            open_ledger(pg_ledger_url(pg_server, name), CONFIG, create=True)
    url = pg_ledger_url(pg_server, "altered")
    with open_ledger(url, CONFIG, create=True) as ledger:
        ledger.append("round", lambda entries: {"cost": 1.0})
    version = "UPDATE expost.ledgers SET schema_version = {} WHERE name = 'altered'"
    bypass = "ALTER TABLE expost.ledgers {} TRIGGER ledgers_append_only"
    for sql in (bypass.format("DISABLE"), version.format(9), bypass.format("ENABLE")):
        _psql(pg_server, sql)  # what its owner can still do
    try:
        with pytest.raises(LedgerCorrupted, match="schema version 9"):
            open_ledger(url, CONFIG)
        count = "SELECT count(*) FROM expost.rounds WHERE ledger = 'altered'"
        assert _psql(pg_server, count) == [(1,)]
    finally:
        for sql in (bypass.format("DISABLE"), version.format(2), bypass.format("ENABLE")):
            _psql(pg_server, sql)
    with pytest.raises(InvalidParameter, match="postgresql://"):
        PostgresLedger.open("sqlite:///x", CONFIG)


# ----------------------------------------------------------------------------- expost ledger


def test_copy_sqlite_to_postgres_and_back_keeps_the_spend(
    pg_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(tmp_path / "a.sqlite")
    f = ep.ConcurrentFilter(ep.UnifiedFilter.from_dp(10.0, 1e-6), ep.ExPostFilter(1.0, 1e-6), 1e-6)
    s = ep.PrivateSession(f, np.random.default_rng(1), ledger=source, create=True)
    s.gaussian(3.0, 1.0, rho=0.1)
    s.exponential_mechanism([1.0, 2.0, 3.0], 0.1, monotone=True)
    s.laplace(2.0, 1.0, eps=0.3)
    spent = s.spent
    s.close()
    remote, back = pg_ledger_url(pg_server, "copied"), str(tmp_path / "b.sqlite")
    assert main(["ledger", "copy", source, remote]) == 0
    assert main(["ledger", "copy", remote, back]) == 0
    copied = capsys.readouterr().out
    assert copied.count("copied 6 entries, 3 rounds; spent") == 2
    assert copied.count("records and spend identical") == 2
    for target in (remote, back):
        again = ep.PrivateSession(f, np.random.default_rng(2), ledger=target)
        assert again.spent == spent
        again.close()
        assert main(["ledger", "show", target]) == 0
        shown = capsys.readouterr().out
        assert f"6 entries, 3 rounds; spent {spent!r}" in shown  # the counts `copy` printed
        assert "ConcurrentFilter" in shown
    assert main(["ledger", "copy", source, remote]) == 2  # not into a ledger with rounds
    assert "already holds rounds" in capsys.readouterr().out
    assert main(["ledger", "show", pg_ledger_url(pg_server, "absent")]) == 2
    assert "there is no ledger" in capsys.readouterr().out
