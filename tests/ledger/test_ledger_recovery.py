"""Settles a connection cut interrupted, and the ledger tools a new user meets (issue 37).

A live session retries a settle whose write failed — before its next round and on close —
idempotently by round: a write that had committed before the cut is not written again. Tested
on every backend with an injected failure (before and after the commit), and on PostgreSQL with
a real cut (the session's backend terminated while its round runs). Then: `RDPFilter` ledgers
refused on PostgreSQL before anything is created, a copy that fails leaves nothing behind, an
empty ledger can be deleted with ``expost ledger delete``, ``ledger show`` prints configuration
only, and `ep.LedgerNotFound` is importable from ``expost``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli import main
from expost.errors import LedgerError, LedgerNotFound
from expost.filters import PLDFilter, PrivacyFilter, RDPFilter, RenyiFilter
from expost.ledger import LedgerBackend, LedgerEntry, init_ledger
from expost.ledger.base import Decide
from expost.ledger.records import session_config
from expost.ledger.sqlite import Ledger
from tests.conftest import pg_ledger_url
from tests.ledger.test_ledger_roles import _psql

BUDGET = ep.ZCDPFilter(1.0)
GRID = ep.TimeGrid([4.0, 2.0])  # request Δ²/(2·2) = 0.25; stopped at 4: realised 0.125


class _Cut:
    """The session's ledger, whose next settle write fails: ``after`` the commit (the reply
    lost) or before it (nothing written); every other call goes through."""

    def __init__(self, ledger: LedgerBackend, *, after: bool) -> None:
        self.ledger, self.after, self.armed = ledger, after, True

    def append(self, kind: str, decide: Decide) -> LedgerEntry:
        if kind == "settle" and self.armed:
            self.armed = False
            if self.after:
                self.ledger.append(kind, decide)
            raise LedgerError("connection cut (injected)")
        return self.ledger.append(kind, decide)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, name)


def _reader(target: str) -> tuple[float, list[tuple[str, int]]]:
    """(spent, [(kind, round), ...]) as a fresh session reads the ledger."""
    s = ep.PrivateSession(BUDGET, np.random.default_rng(1), ledger=target)
    assert s._ledger is not None
    try:
        spent = s.spent
        assert isinstance(spent, float)
        return spent, [(e.kind, int(e.record["round"])) for e in s._ledger.entries()]
    finally:
        s.close()


def _cut_session(target: str, *, after: bool) -> ep.PrivateSession:
    s = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=target, create=True)
    assert s._ledger is not None
    s._ledger = _Cut(s._ledger, after=after)  # a test double (a LedgerBackend by its protocol)
    with pytest.raises(LedgerError, match="injected"):
        s.brownian(1.0, 1.0, GRID, stop=ep.AtIndex(0))
    return s


@pytest.mark.parametrize("after", [False, True], ids=["before-commit", "after-commit"])
def test_a_cut_settle_is_retried_before_the_next_round(ledger_target: str, after: bool) -> None:
    s = _cut_session(ledger_target, after=after)
    spent, entries = _reader(ledger_target)
    assert spent == (0.125 if after else 0.25)  # not written: charged at its request
    assert entries == [("reserve", 0), *([("settle", 0)] if after else [])]
    s.gaussian(0.0, 1.0, 0.25)  # the retry first, then the round
    spent, entries = _reader(ledger_target)
    assert spent == 0.375
    assert entries == [("reserve", 0), ("settle", 0), ("reserve", 1), ("settle", 1)]
    s.close()


@pytest.mark.parametrize("after", [False, True], ids=["before-commit", "after-commit"])
def test_a_cut_settle_is_retried_on_close(ledger_target: str, after: bool) -> None:
    s = _cut_session(ledger_target, after=after)
    s.close()
    spent, entries = _reader(ledger_target)
    assert spent == 0.125
    assert entries == [("reserve", 0), ("settle", 0)]


def test_planted_twin_a_cut_settle_without_the_retry_stays_at_its_request(
    ledger_target: str,
) -> None:
    """The same cut with the session's memory of it erased (as before issue 37): the round
    stays charged at its worst case after the next round and the close."""
    s = _cut_session(ledger_target, after=False)
    s._unsettled.clear()
    s.gaussian(0.0, 1.0, 0.25)
    s.close()
    spent, entries = _reader(ledger_target)
    assert spent == 0.5
    assert ("settle", 0) not in entries


def test_a_real_cut_on_postgresql_is_retried(pg_server: Any) -> None:
    """The session's own backend is terminated while its round runs (from its stopping rule):
    the settle meets a dead connection; the next round reconnects and settles it first."""
    url = pg_ledger_url(pg_server, "real_cut")
    init_ledger(url, BUDGET)
    s = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=url)
    pid = s._ledger._connection().info.backend_pid  # type: ignore[union-attr]

    def cut(released: Any) -> bool:
        _psql(pg_server.get_uri(), "SELECT pg_terminate_backend(%s)", pid)
        return True

    with pytest.raises(LedgerError):
        s.brownian(1.0, 1.0, GRID, stop=cut)
    assert _reader(url) == (0.25, [("reserve", 0)])
    s.gaussian(0.0, 1.0, 0.25)
    assert _reader(url) == (
        0.375,
        [("reserve", 0), ("settle", 0), ("reserve", 1), ("settle", 1)],
    )
    s.close()


# ----------------------------------------------------------------------------- new-user items

RDP = RDPFilter(1.0, 1e-6)
# filters whose prices the server does not compute: refused on PostgreSQL at creation
UNSERVED = [
    (RDP, "RDPFilter(1.0, 1e-6)"),
    (RenyiFilter(1.0, 1e-6, 8.0), "RenyiFilter(1.0, 1e-6, 8.0)"),
    (PLDFilter(1.0, 1e-6), "PLDFilter(1.0, 1e-6)"),
]


def _missing(url: str, budget: PrivacyFilter = RDP) -> bool:
    try:
        ep.PrivateSession(budget, np.random.default_rng(0), ledger=url).close()
    except LedgerNotFound:
        return True
    return False


@pytest.mark.parametrize(("budget", "spelled"), UNSERVED, ids=["rdp", "renyi", "pld"])
def test_an_unserved_ledger_is_refused_on_postgresql_before_anything_is_created(
    pg_server: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    budget: PrivacyFilter,
    spelled: str,
) -> None:
    name = type(budget).__name__
    url = pg_ledger_url(pg_server, name.lower())
    with pytest.raises(ep.InvalidParameter, match="use a SQLite file"):
        init_ledger(url, budget)
    with pytest.raises(ep.InvalidParameter, match="use a SQLite file"):
        ep.PrivateSession(budget, np.random.default_rng(0), ledger=url, create=True)
    assert main(["ledger", "init", url, "--filter", spelled]) == 2
    source = str(tmp_path / f"{name}.sqlite")
    init_ledger(source, budget)
    assert main(["ledger", "copy", source, url]) == 2
    assert "use a SQLite file" in capsys.readouterr().out
    assert _missing(url, budget)
    with pytest.raises(Exception, match=f"cannot price rounds of a {name} ledger"):
        _psql(  # the server refuses it too, even to its administrator
            pg_server.get_uri(),
            f"SELECT expost.create_ledger('{name.lower()}', %s)",
            json.dumps(session_config(budget)),
        )


def test_a_failed_copy_leaves_no_ledger_behind(
    pg_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GDP budget's Laplace round has a price the server cannot compute: the copy to
    PostgreSQL is refused at that round, and the target ledger is not there at all."""
    gdp = ep.GaussianDPFilter(2.0)
    source = str(tmp_path / "gdp.sqlite")
    init_ledger(source, gdp)
    s = ep.PrivateSession(gdp, np.random.default_rng(0), ledger=source)
    s.gaussian(0.0, 1.0, 0.1)
    s.laplace(0.0, 1.0, 0.5)
    s.close()
    url = pg_ledger_url(pg_server, "half_copied")
    assert main(["ledger", "copy", source, url]) == 2
    assert "prices only GaussianCost" in capsys.readouterr().out
    with pytest.raises(LedgerNotFound):
        ep.PrivateSession(gdp, np.random.default_rng(0), ledger=url).close()
    assert main(["ledger", "copy", source, str(tmp_path / "copy.sqlite")]) == 0


def test_an_empty_ledger_is_deleted_and_one_with_rounds_kept(ledger_target: str) -> None:
    if "expost_client" in ledger_target:  # only the schema's owner deletes on PostgreSQL
        init_ledger(ledger_target, BUDGET)
        assert main(["ledger", "delete", ledger_target]) == 2
        return
    init_ledger(ledger_target, BUDGET)
    assert main(["ledger", "delete", ledger_target]) == 0
    with pytest.raises(LedgerNotFound):
        ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=ledger_target)
    init_ledger(ledger_target, BUDGET)  # the name is free again
    s = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=ledger_target)
    s.gaussian(0.0, 1.0, 0.25)
    s.close()
    assert main(["ledger", "delete", ledger_target]) == 2
    assert _reader(ledger_target)[0] == 0.25


def test_show_prints_configuration_only_and_old_configs_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "rdp.sqlite")
    init_ledger(path, RDP)
    assert main(["ledger", "show", path]) == 0
    assert "_carried" not in capsys.readouterr().out
    old = str(tmp_path / "old.sqlite")  # as the previous release described an RDPFilter
    config = session_config(RDP)
    Ledger.init(old, {**config, "filter": {**config["filter"], "_carried": None}})
    s = ep.PrivateSession(RDP, np.random.default_rng(0), ledger=old)
    s.gaussian(0.0, 1.0, 0.001)
    s.close()
    assert main(["ledger", "show", old]) == 0
    assert "_carried" not in capsys.readouterr().out


def test_ledger_not_found_is_importable_from_expost() -> None:
    assert ep.LedgerNotFound is LedgerNotFound
    assert "LedgerNotFound" in vars(ep)["__all__"]


def test_a_schema_an_earlier_release_installed_is_upgraded_by_its_owner(
    pg_server: Any, pg_client: str
) -> None:
    """A database whose functions predate `SERVER_VERSION` (simulated: its version function
    dropped, the old settle rule back): the owner's next ``init`` replaces every function; the
    client's grants and the rounds stay."""
    from expost.ledger.pg_schema import SERVER_VERSION, client_grants
    from tests.conftest import as_role

    admin = pg_server.get_uri()
    _psql(admin, "DROP DATABASE IF EXISTS upgraded WITH (FORCE)")
    _psql(admin, "CREATE DATABASE upgraded")
    admin = admin.replace("/postgres?", "/upgraded?", 1)
    init_ledger(f"{admin}&ledger=kept", BUDGET)
    for grant in client_grants("expost_client"):
        _psql(admin, grant)
    client = f"{as_role(admin, 'expost_client')}&ledger=kept"
    s = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=client)
    s.gaussian(0.0, 1.0, 0.25)
    s.close()
    _psql(admin, "DROP FUNCTION expost.server_version()")
    _psql(
        admin,
        "CREATE FUNCTION expost.at_most(s jsonb, r jsonb) RETURNS boolean "
        "LANGUAGE sql AS $$ SELECT true $$",
    )
    init_ledger(f"{admin}&ledger=another", BUDGET)  # the owner: upgrades, then creates
    assert _psql(admin, "SELECT expost.server_version()") == [(SERVER_VERSION,)]
    assert _psql(admin, "SELECT to_regprocedure('expost.at_most(jsonb, jsonb)')") == [(None,)]
    s = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=client)
    assert s.spent == 0.25
    s.gaussian(0.0, 1.0, 0.25)  # the client's grants survived the replaced functions
    s.close()
    _psql(pg_server.get_uri(), "DROP DATABASE upgraded WITH (FORCE)")
