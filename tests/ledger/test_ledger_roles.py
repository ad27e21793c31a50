"""A shared budget that a client cannot reset or rewrite (issue 31), on a real server and on files.

Explicit creation on both backends (a missing ledger raises and creates nothing; a pinned id
refuses a re-created ledger), then the red-team attempts of the issue as a PostgreSQL client role
with exactly the documented grants: each fails, and the budget, the entries and the ledger's
usability are unchanged afterwards. Connection settings from the URL are honoured.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli import main
from expost.errors import InvalidParameter, LedgerError, LedgerMismatch, LedgerNotFound
from expost.ledger import init_ledger, open_ledger
from expost.ledger.pg_schema import client_grants
from expost.ledger.postgres import PostgresLedger
from expost.ledger.records import session_config
from tests.conftest import as_role, pg_ledger_url

BUDGET = ep.ZCDPFilter(1.0)
ANALYST = "expost_analyst"  # exactly the documented grants, nothing more


def _psql(url: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """One autocommit statement as the URL's role; database errors propagate."""
    import psycopg

    with psycopg.connect(url.split("&ledger=")[0], autocommit=True) as conn:
        cur = conn.execute(sql, params or None)
        return cur.fetchall() if cur.description else []


def _with_ledger(uri: str, name: str) -> str:
    return f"{uri}{'&' if '?' in uri else '?'}ledger={name}"


def _session(target: str, **kwargs: Any) -> ep.PrivateSession:
    return ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=target, **kwargs)


# ----------------------------------------------------------------------------- explicit creation


def _absent(target: str) -> Callable[[], bool]:
    """A check that nothing was created for ``target``."""
    if "://" not in target:
        return lambda: not Path(target).exists() and os.listdir(Path(target).parent) == []

    def nothing() -> bool:
        name = target.rsplit("ledger=", 1)[1]
        schema = _psql(target, "SELECT to_regnamespace('expost') IS NOT NULL")[0][0]
        if not schema:
            return True
        return _psql(target, "SELECT count(*) FROM expost.header(%s)", name) == [(0,)]

    return nothing


def test_a_missing_ledger_is_refused_and_nothing_is_created(ledger_target: str) -> None:
    nothing = _absent(ledger_target)
    for attempt in (
        lambda: _session(ledger_target),
        lambda: open_ledger(ledger_target, session_config(BUDGET)),
        lambda: ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=ledger_target),
    ):
        with pytest.raises(LedgerNotFound, match=r"there is no ledger .*nothing was created"):
            attempt()
        assert nothing()
    assert main(["ledger", "show", ledger_target]) == 2
    assert nothing()


def test_explicit_creation_then_open_and_a_pinned_id(ledger_target: str) -> None:
    ledger_id = init_ledger(ledger_target, BUDGET)
    assert str(uuid.UUID(ledger_id)) == ledger_id
    with pytest.raises(LedgerError, match="already exists"):
        init_ledger(ledger_target, BUDGET)  # never re-created over the old one
    s = _session(ledger_target, ledger_id=ledger_id)
    s.gaussian(0.0, 1.0, 0.25)
    s.close()
    again = _session(ledger_target, ledger_id=ledger_id.upper())  # the same id, other case
    assert again.spent == 0.25
    again.close()
    with pytest.raises(LedgerMismatch, match="was pinned") as info:
        _session(ledger_target, ledger_id=str(uuid.uuid4()))
    assert info.value.what == "id"
    with pytest.raises(InvalidParameter, match="ledger_id"):
        _session(ledger_target, ledger_id="not-a-uuid")


def test_a_pinned_id_refuses_a_recreated_sqlite_ledger(tmp_path: Path) -> None:
    path = str(tmp_path / "budget.sqlite")
    first = init_ledger(path, BUDGET)
    s = _session(path, ledger_id=first)
    s.gaussian(0.0, 1.0, 0.75)
    s.close()
    os.remove(path)  # someone deletes the file: a fresh one would have the full budget
    second = init_ledger(path, BUDGET)
    assert second != first
    with pytest.raises(LedgerMismatch, match=f"id {second} but id {first} was pinned"):
        _session(path, ledger_id=first)
    with pytest.raises(LedgerMismatch, match="use another file"):
        _session(path, ledger_id=first)


def test_a_pinned_id_refuses_a_recreated_postgres_ledger(pg_server: Any) -> None:
    admin = pg_server.get_uri()
    _psql(admin, "DROP DATABASE IF EXISTS recreated WITH (FORCE)")
    _psql(admin, "CREATE DATABASE recreated")
    url = _with_ledger(admin.replace("/postgres?", "/recreated?", 1), "budget")
    first = init_ledger(url, BUDGET)
    _session(url, ledger_id=first).close()
    _psql(admin, "DROP DATABASE recreated WITH (FORCE)")  # the administrator starts over
    _psql(admin, "CREATE DATABASE recreated")
    with pytest.raises(LedgerNotFound):
        _session(url, ledger_id=first)
    second = init_ledger(url, BUDGET)
    with pytest.raises(LedgerMismatch, match="was pinned") as info:
        _session(url, ledger_id=first)
    assert "use another ledger name" in str(info.value)  # the advice fits the backend
    assert second in str(info.value)
    _psql(admin, "DROP DATABASE recreated WITH (FORCE)")


# ----------------------------------------------------------------------------- the client role


@pytest.fixture(scope="module")
def analyst(pg_server: Any, pg_client: str) -> str:
    """The server URL as a role holding only `client_grants` (USAGE, EXECUTE on seven functions);
    the schema installed by the administrator (``pg_client`` does that)."""
    return client_role(pg_server.get_uri(), ANALYST)


def client_role(admin: str, role: str) -> str:
    """``admin``'s server URL as ``role`` (created if missing) with only `client_grants`."""
    if not _psql(admin, "SELECT 1 FROM pg_roles WHERE rolname = %s", role):
        _psql(admin, f"CREATE ROLE {role} LOGIN")
    for grant in client_grants(role):
        _psql(admin, grant)
    return as_role(admin, role)


@pytest.fixture
def shared(pg_server: Any, analyst: str) -> tuple[str, str]:
    """A session ledger created by the administrator; (the analyst's URL for it, its name)."""
    name = f"red_{uuid.uuid4().hex[:8]}"
    init_ledger(pg_ledger_url(pg_server, name), BUDGET)
    return _with_ledger(analyst, name), name


def test_a_client_role_runs_a_session_end_to_end(shared: tuple[str, str]) -> None:
    url, _ = shared
    a, b = _session(url), _session(url, create=True)  # create=True opens an existing one as is
    a.gaussian(3.0, 1.0, 0.5)
    b.brownian(3.0, 1.0, ep.TimeGrid([4.0, 2.0]), stop=ep.AtIndex(1))
    with pytest.raises(ep.BudgetExceeded):
        a.gaussian(3.0, 1.0, 0.5)
    a.refresh()
    assert a.spent == b.spent == 0.75
    a.close()
    b.close()
    with pytest.raises(LedgerError, match=r"permission denied.*client role needs"):
        init_ledger(url.replace("ledger=red_", "ledger=new_"), BUDGET)  # clients do not create


def _state(url: str) -> tuple[object, int]:
    s = _session(url)
    try:
        assert s._ledger is not None
        return s.spent, len(s._ledger.entries())
    finally:
        s.close()


FORGED_SETTLE = {"round": 1, "cost": {"type": "ZCDPCost", "rho": 1e-9, "delta": 0.0}}


def _attacks(name: str, ledger_id: str) -> list[tuple[str, tuple[object, ...], str]]:
    """(SQL, parameters, the server's refusal) for every tampering attempt of issue 31."""
    append = "SELECT * FROM expost.append_round(%s, %s::uuid, %s, %s, %s::uuid)"
    reserve = {"round": 2, "mechanism": "m", "cost": {"type": "ZCDPCost", "rho": 0.1}}
    return [
        (append, (name, ledger_id, "settle", json.dumps(FORGED_SETTLE), None), "no reservation"),
        (
            append,
            (name, ledger_id, "settle", json.dumps(FORGED_SETTLE), str(uuid.uuid4())),
            "no reservation",
        ),
        (append, (name, ledger_id, "round", '{"cost": NaN', None), "invalid input syntax"),
        (append, (name, ledger_id, "settle", "[1, 2]", None), "JSON object"),
        (append, (name, ledger_id, "note", '{"round": 2}', None), "reserve and settle"),
        (
            append,
            (name, ledger_id, "reserve", json.dumps({**reserve, "round": 5}), None),
            "out of order",
        ),
        (
            append,
            (
                name,
                ledger_id,
                "reserve",
                json.dumps({**reserve, "cost": {"type": "ZCDPCost", "rho": -1}}),
                None,
            ),
            "invalid rho",
        ),
        (
            append,
            (name, ledger_id, "reserve", json.dumps({**reserve, "cost": {"type": "Free"}}), None),
            "unknown cost",
        ),
        (append, (name, str(uuid.uuid4()), "reserve", json.dumps(reserve), None), "no ledger"),
        (
            "INSERT INTO expost.rounds VALUES (%s, 2, 'settle', %s, 0, 1, NULL)",
            (name, json.dumps(FORGED_SETTLE)),
            "permission denied",
        ),
        ("UPDATE expost.rounds SET record = '{}' WHERE ledger = %s", (name,), "permission denied"),
        ("DELETE FROM expost.rounds WHERE ledger = %s", (name,), "permission denied"),
        ("TRUNCATE expost.rounds", (), "permission denied"),
        ("SELECT token FROM expost.rounds WHERE ledger = %s", (name,), "permission denied"),
        ("DROP TABLE expost.rounds", (), "must be owner"),
        ("DROP SCHEMA expost CASCADE", (), "must be owner"),
        ("ALTER TABLE expost.rounds DISABLE TRIGGER ALL", (), "must be owner"),
        ("SET session_replication_role = replica", (), "permission denied"),
        ("SELECT expost.create_ledger(%s, '{}')", (name,), "permission denied"),
        ("CREATE TABLE expost.shadow (x int)", (), "permission denied"),
    ]


def test_every_tampering_attempt_fails_for_a_client_and_changes_nothing(
    shared: tuple[str, str],
) -> None:
    url, name = shared
    s = _session(url)
    s.gaussian(0.0, 1.0, 0.25)  # round 0, settled
    ledger = s._ledger
    assert isinstance(ledger, PostgresLedger)
    assert ledger.ledger_id is not None
    open_round = s._reserve("gaussian", ep.ZCDPCost(0.5))  # round 1, open: charged 0.5
    assert open_round == 1
    before = _state(url)
    assert before == (0.75, 3)
    for sql, params, refusal in _attacks(name, ledger.ledger_id):
        with pytest.raises(Exception, match=refusal):
            _psql(url, sql, *params)
        assert _state(url) == before, sql
    # its owner settles it once, never above the reservation
    with pytest.raises(LedgerError, match="does not fit its reservation"):
        s._settle(1, ep.ZCDPCost(0.5), ep.ZCDPCost(0.6))
    s._settle(1, ep.ZCDPCost(0.5), ep.ZCDPCost(0.5))
    assert _state(url) == (0.75, 4)
    second = {"round": 1, "cost": {"type": "ZCDPCost", "rho": 0.1, "delta": 0.0}}
    with pytest.raises(LedgerError, match="no reservation of round 1"):
        ledger.append("settle", lambda _entries: second)  # once: its token is used up
    s._settle(1, ep.ZCDPCost(0.5), ep.ZCDPCost(0.1))  # the session's retry: already settled
    assert _state(url) == (0.75, 4)
    s.close()
    assert _state(url) == (0.75, 4)


def test_planted_twin_the_owner_can_still_forge_a_settlement(
    pg_server: Any, shared: tuple[str, str]
) -> None:
    """The same forged row, inserted by the schema's owner: the check above sees the change.

    What an administrator can still do (docs/sharing-a-budget.md): write the tables directly."""
    url, name = shared
    s = _session(url)
    s.gaussian(0.0, 1.0, 0.25)
    s._reserve("gaussian", ep.ZCDPCost(0.5))
    before = _state(url)
    forged = "INSERT INTO expost.rounds VALUES (%s, 3, 'settle', %s, 0, 1, NULL)"
    _psql(pg_server.get_uri(), forged, name, json.dumps(FORGED_SETTLE))
    assert _state(url) != before
    assert _state(url)[0] == pytest.approx(0.25)
    s.close()


def test_settle_is_never_above_the_reservation_where_the_request_is_the_worst_case(
    shared: tuple[str, str],
) -> None:
    url, _ = shared
    s = _session(url)
    for request, above in (
        (ep.ZCDPCost(0.1), ep.ZCDPCost(0.1, 1e-9)),
        (ep.BrownianCost(4.0), ep.BrownianCost(3.9)),
        (ep.BrownianCost(4.0), ep.BrownianCost(5.0, 2.0)),
        (ep.ZCDPCost(0.1), ep.DPCost(0.01)),
    ):
        key = s._reserve("m", request)
        with pytest.raises(  # by the server, or first by the replay (issue 41: never written)
            (LedgerError, InvalidParameter),
            match=r"does not fit its reservation|stays charged at its request",
        ):
            s._settle(key, request, above)
        s._settle(key, request, request)
    s.close()


# ----------------------------------------------------------------------------- settings and URLs


def test_url_settings_are_honoured_and_defaults_fill_in(pg_server: Any) -> None:
    url = pg_ledger_url(pg_server, "settings")
    init_ledger(url, BUDGET)
    plain = PostgresLedger.open(url, session_config(BUDGET), timeout=7.0)
    conn = plain._connection()
    assert conn.info.get_parameters()["connect_timeout"] == "7"
    assert conn.execute("SHOW lock_timeout").fetchone()[0] == "7s"
    plain.close()
    told = (
        url + "&connect_timeout=3&options=-c%20lock_timeout%3D1234%20-c%20synchronous_commit%3Doff"
    )
    ledger = PostgresLedger.open(told, session_config(BUDGET), timeout=7.0)
    conn = ledger._connection()
    assert conn.info.get_parameters()["connect_timeout"] == "3"
    assert conn.execute("SHOW lock_timeout").fetchone()[0] == "1234ms"
    assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"  # the contract
    ledger.close()


@pytest.mark.parametrize("target", ["mysql://x/y", "sqlite:///budget.sqlite", "http://u:pw@h/db"])
def test_an_unsupported_scheme_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidParameter, match=r"scheme .* is not supported") as info:
        _session(target, create=True)
    assert "pw" not in str(info.value)
    assert os.listdir(tmp_path) == []


def test_passwords_are_never_printed(pg_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    uri: str = pg_server.get_uri()
    in_netloc = uri.replace("postgres:@", "postgres:s3cret-pw@", 1) + "&ledger=secret_a"
    in_query = uri + "&password=s3cret-pw&ledger=secret_b"
    for url in (in_netloc, in_query):
        assert main(["ledger", "show", url]) == 2  # missing
        assert main(["ledger", "init", url, "--filter", "ZCDPFilter(1.0)"]) == 0
        assert main(["ledger", "show", url]) == 0
        assert main(["ledger", "init", url, "--filter", "ZCDPFilter(1.0)"]) == 2
        out = capsys.readouterr().out
        assert "s3cret" not in out
        assert "***" in out


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("ZCDPFilter(1.0)", ep.ZCDPFilter(1.0)),
        ("UnifiedFilter.from_dp(eps=10, delta=1e-6)", ep.UnifiedFilter.from_dp(10, 1e-6)),
        (
            "ConcurrentFilter(ZCDPFilter(1.0), ExPostFilter(1.0, 0.01), delta_second=1e-6)",
            ep.ConcurrentFilter(ep.ZCDPFilter(1.0), ep.ExPostFilter(1.0, 0.01), 1e-6),
        ),
        ('{"type": "ZCDPFilter", "rho": 2.0, "delta": 0.0}', ep.ZCDPFilter(2.0)),
    ],
)
def test_init_parses_a_filter_without_evaluating_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, expected: object
) -> None:
    from expost.cli.ledger import parse_filter

    assert parse_filter(spec) == expected
    path = str(tmp_path / "l.sqlite")
    assert main(["ledger", "init", path, "--filter", spec]) == 0
    assert "with id" in capsys.readouterr().out
    assert isinstance(expected, ep.PrivacyFilter)
    ep.PrivateSession(expected, np.random.default_rng(0), ledger=path).close()


@pytest.mark.parametrize(
    "spec",
    [
        "__import__('os').system('true')",
        "ZCDPFilter(1.0).spend(ZCDPCost(0.5))",
        "ZCDPFilter(rho=1.0 + 1.0)",
        "ZCDPFilter(**{'rho': 1.0})",
        "GaussianMechanism(1.0, 0.5)",
        "ZCDPFilter.__init__(1.0)",
        "ZCDPFilter(1.0",
        "ApproxDP(1.0, 1e-6)",
    ],
)
def test_init_refuses_anything_but_filter_calls(tmp_path: Path, spec: str) -> None:
    from expost.cli.ledger import parse_filter

    with pytest.raises(InvalidParameter, match="filter"):
        parse_filter(spec)
    assert main(["ledger", "init", str(tmp_path / "l.sqlite"), "--filter", spec]) == 2
    assert os.listdir(tmp_path) == []


def test_every_ledger_argument_is_described(capsys: pytest.CaptureFixture[str]) -> None:
    for verb, args in (
        ("init", ("LEDGER", "--filter")),
        ("show", ("LEDGER",)),
        ("copy", ("SRC", "DST")),
    ):
        with pytest.raises(SystemExit):
            main(["ledger", verb, "--help"])
        text = capsys.readouterr().out
        for arg in args:
            line = next(x for x in text.splitlines() if x.strip().startswith(arg))
            described = line.split(arg, 1)[1].strip() or "x"
            assert len(described) > 1, (verb, arg, text)


def test_the_server_accepts_every_release_method_s_settlement(shared: tuple[str, str]) -> None:
    """Each session method's reserve and settle pass the server's checks (a ConcurrentFilter
    ledger created by the administrator, opened by the client role)."""
    url, name = shared
    f = ep.ConcurrentFilter(ep.UnifiedFilter.from_dp(50.0, 1e-6), ep.ExPostFilter(50.0, 1e-3), 1e-6)
    concurrent = url.replace(f"ledger={name}", f"ledger={name}_c")
    init_ledger(concurrent.replace(ANALYST, "postgres", 1), f)
    rng = np.random.default_rng(3)
    s = ep.PrivateSession(f, rng, ledger=concurrent)
    psi = ep.MixturePrivacyBoundary(10.0, 1e-4)
    grid = ep.TimeGrid([400.0, 100.0, 25.0])
    s.gaussian(1.0, 1.0, 0.01)
    s.laplace(1.0, 1.0, 0.1)
    s.exponential_mechanism([1.0, 2.0, 3.0], 0.1, monotone=True)
    s.above_threshold([0.0, 5.0, 50.0], 0.5, threshold=10.0)
    s.doubling(100.0, 1.0, 1e-4, 2.0)
    s.brownian(100.0, 1.0, grid, stop=ep.RelativeError(0.5))
    s.brownian(100.0, 1.0, grid, stop=ep.RelativeError(0.5), boundary=psi)
    s.laplace_noise_reduction(100.0, 1.0, [20.0, 5.0], stop=ep.RelativeError(0.5))
    s.skellam(120, 1, (400.0, 100.0, 25.0), boundary=ep.SkellamPrivacyBoundary(8.0, 1e-6))
    s.reduced_above_threshold(100.0, lambda v: float(v[0]), grid, psi, threshold=0.0)
    secure = ep.PrivateSession(f, rng, ledger=concurrent, exact=True)
    secure.gaussian(1, 1, 0.01)
    secure.doubling(100, 1, 1e-4, 2.0)
    secure.above_threshold([0, 5, 50], 0.5, threshold=10)
    rounds = len(s.history) + len(secure.history)
    s.close()
    secure.close()
    again = ep.PrivateSession(f, rng, ledger=concurrent)
    assert again.filter.rounds == rounds == 13
    assert again._ledger is not None
    assert [e.kind for e in again._ledger.entries()] == ["reserve", "settle"] * rounds
    again.close()


def test_a_missing_database_is_refused_and_nothing_is_created(pg_server: Any) -> None:
    admin: str = pg_server.get_uri()
    url = _with_ledger(admin.replace("/postgres?", "/no_such_db?", 1), "budget")
    with pytest.raises(LedgerError, match='database "no_such_db" does not exist'):
        _session(url, create=True)
    with pytest.raises(LedgerError, match="does not exist"):
        init_ledger(url, BUDGET)
    assert _psql(admin, "SELECT count(*) FROM pg_database WHERE datname = 'no_such_db'") == [(0,)]


def test_a_file_made_before_ledger_ids_opens_but_cannot_be_pinned(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    init_ledger(path, BUDGET)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DELETE FROM meta WHERE key = 'ledger_id'")  # as the previous release wrote it
    conn.close()
    s = _session(str(path))
    assert s._ledger is not None
    assert s._ledger.ledger_id is None
    s.close()
    with pytest.raises(LedgerMismatch, match="has id None"):
        _session(str(path), ledger_id=str(uuid.uuid4()))


def _bypass(url: str, name: str, ledger_id: str, rounds: int, rho: float) -> None:
    """A client that skips the filter's check: a reservation straight through the function."""
    record = {"round": rounds, "mechanism": "m", "cost": {"type": "ZCDPCost", "rho": rho}}
    _psql(
        url,
        "SELECT * FROM expost.append_round(%s, %s::uuid, 'reserve', %s, NULL)",
        name,
        ledger_id,
        json.dumps(record),
    )


@pytest.mark.parametrize(
    "budget",
    [ep.ZCDPFilter(1.0), ep.UnifiedFilter(1.0)],
    ids=lambda f: type(f).__name__,
)
def test_the_server_caps_the_rho_sum_of_a_zcdp_budget(
    pg_server: Any, analyst: str, budget: ep.PrivacyFilter
) -> None:
    """A reservation past a zCDP-family budget is refused by the server even when the client
    skips its check (the other filter kinds: tests/ledger/test_ledger_server_caps.py)."""
    name = f"cap_{type(budget).__name__.lower()}"
    ledger_id = init_ledger(pg_ledger_url(pg_server, name), budget)
    url = _with_ledger(analyst, name)
    s = ep.PrivateSession(budget, np.random.default_rng(0), ledger=url)
    s.gaussian(0.0, 1.0, 0.75)
    with pytest.raises(Exception, match="exceeds the budget"):
        _bypass(url, name, ledger_id, 1, 0.5)
    with pytest.raises(Exception, match="exceeds the budget"):
        _bypass(url, name, ledger_id, 1, 0.2500001)
    _bypass(url, name, ledger_id, 1, 0.25)  # exactly to the budget: accepted
    s.refresh()
    assert s.spent == 1.0
    s.close()


def test_the_server_cap_is_never_stricter_than_the_filter(pg_server: Any, analyst: str) -> None:
    """Rounds of 0.1 (a double above 1/10) and Brownian rounds up to the budget: the server
    admits exactly what the filter admits without a ledger."""
    budget = ep.UnifiedFilter.from_dp(10.0, 1e-6)
    init_ledger(pg_ledger_url(pg_server, "cap_exact"), budget)
    shared = ep.PrivateSession(
        budget, np.random.default_rng(0), ledger=_with_ledger(analyst, "cap_exact")
    )
    alone = ep.PrivateSession(budget, np.random.default_rng(0))
    for s in (shared, alone):
        while True:
            try:
                s.gaussian(0.0, 1.0, budget.rho / 7)
                s.brownian(0.0, 1.0, ep.TimeGrid([30.0, 9.0]), stop=ep.AtIndex(1))
            except ep.BudgetExceeded:
                break
    assert len(shared.history) == len(alone.history) > 7
    assert shared.spent == alone.spent
    shared.close()
    last = "SELECT spent_rho FROM expost.rounds WHERE ledger = 'cap_exact' ORDER BY id DESC LIMIT 1"
    (total,) = _psql(pg_server.get_uri(), last)[0]  # the server's running total, exact decimals
    assert float(total) == pytest.approx(alone.spent, rel=1e-12)
