"""Checkpoints of PostgreSQL ledgers (issue 41 item 6; docs/session.md, "Checkpoints").

A client with only the documented grants writes a checkpoint every `CHECKPOINT_EVERY` settled
rounds (here 8) through ``expost.write_checkpoint``; an open restores the latest and reads only
the entries after it, and agrees with the full replay of every entry. The server stores a
checkpoint only once it confirmed it: a forged one (sums below what the server charged, a tail
or a round count that is not the ledger's) is refused, and with the sums check removed (the planted
twin) the same forgery is stored and an open trusts it. A schema of the previous server version
gains the table and the functions when its owner upgrades it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli.ledger import show
from expost.filters import (
    BoundedRangeCost,
    BrownianCost,
    Cost,
    DPCost,
    ExPostCost,
    GaussianCost,
    ZCDPCost,
)
from expost.ledger import checkpoints as checkpoints_module
from expost.ledger import init_ledger
from expost.ledger.checkpoints import verify_checkpoints
from expost.ledger.limits import STALE_ROUNDS
from expost.ledger.records import encode
from expost.ledger.replay import Replay
from expost.ledger.targets import open_ledger, stored_config
from tests.conftest import pg_ledger_url
from tests.ledger.test_ledger_roles import _psql, _with_ledger, client_role

EVERY = 8
ROLE = "expost_checkpointer"  # the documented grants, nothing more

BUDGETS: list[tuple[ep.PrivacyFilter, list[Cost]]] = [
    (ep.ZCDPFilter(100.0, 1e-3), [GaussianCost(0.25), ZCDPCost(0.125, 1e-6), DPCost(0.5)]),
    (
        ep.ConcurrentFilter(ep.ZCDPFilter(100.0), ep.ExPostFilter(100.0, 0.5), 1e-6),
        [GaussianCost(0.25), ExPostCost(0.5, 1e-4, eps_max=0.5)],
    ),
    (ep.ExPostFilter(100.0, 0.5), [ExPostCost(0.3, 1e-4, eps_max=0.5), DPCost(0.1)]),
    (ep.GaussianDPFilter(30.0), [GaussianCost(0.25), GaussianCost(0.1)]),
    (ep.ApproxDPFilter(50.0, 1e-6, 1e-6), [DPCost(0.1), BoundedRangeCost(0.3)]),
    (ep.BrownianFilter(100.0, 1e-6), [BrownianCost(3.0), BrownianCost(7.0, 2.0)]),
]


@pytest.fixture(autouse=True)
def _often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints_module, "CHECKPOINT_EVERY", EVERY)


@pytest.fixture(scope="module")
def analyst(pg_server: Any, pg_client: str) -> str:
    return client_role(pg_server.get_uri(), ROLE)


def _session(f: ep.PrivacyFilter, url: str) -> ep.PrivateSession:
    return ep.PrivateSession(f, np.random.default_rng(0), ledger=url)


def _run(f: ep.PrivacyFilter, costs: list[Cost], url: str, n: int = 5 * EVERY) -> None:
    """Two clients' rounds, interleaved; one round held open across several checkpoints."""
    a, b = _session(f, url), _session(f, url)
    held = a._reserve("m", costs[0])
    for i in range(n):
        s = (a, b)[i % 2]
        cost = costs[i % len(costs)]
        s._settle(s._reserve("m", cost), cost, cost)
    a._settle(held, costs[0], costs[0])
    for i in range(3):
        cost = costs[i % len(costs)]
        b._settle(b._reserve("m", cost), cost, cost)
    a.close()
    b.close()


def _full(f: ep.PrivacyFilter, url: str) -> Any:
    with open_ledger(url, stored_config(url)) as ledger:
        return Replay(f, url).update(ledger.entries())


def _checkpoints(url: str) -> Any:
    with open_ledger(url, stored_config(url)) as ledger:
        return ledger.checkpoints(), ledger.entries()


@pytest.mark.parametrize("case", range(len(BUDGETS)))
def test_an_open_from_the_latest_checkpoint_agrees_with_the_full_replay(
    pg_server: Any, analyst: str, case: int
) -> None:
    f, costs = BUDGETS[case]
    name = f"ckpt_{case}_{uuid.uuid4().hex[:6]}"
    init_ledger(pg_ledger_url(pg_server, name), f)
    url = _with_ledger(analyst, name)
    _run(f, costs, url)
    stored, entries = _checkpoints(url)
    assert len(stored) >= 4  # confirmed by the server, written by the client role
    assert verify_checkpoints(f, url, entries, stored) == ()
    s = _session(f, url)
    assert s._checkpointed == stored[-1][1]["rounds"] > 0  # restored, not replayed
    assert s._ledger is not None
    assert s._ledger.entries()[0].index == stored[-1][0]
    full = _full(f, url)
    assert s.spent == full.spent
    assert s.filter.rounds == full.rounds
    s.close()
    shown = show(url)
    assert f"{len(stored)} checkpoints" in shown
    assert "NOT SOUND" not in shown


def _forge(url: str, name: str, change: dict[str, Any]) -> None:
    """Write the honest state of the ledger's entries, changed by ``change``, as the client."""
    f = ep.ZCDPFilter(100.0)
    with open_ledger(url, stored_config(url)) as ledger:
        entries, lid = ledger.entries(), ledger.ledger_id
    replay = Replay(f, url)
    replay.update(entries)
    state = replay.state()
    assert state is not None
    state.update(change)
    _psql(
        url,
        "SELECT expost.write_checkpoint(%s, %s::uuid, %s, %s)",
        name,
        lid,
        len(entries),
        json.dumps(state),
    )


def _forged_ledger(pg_server: Any, analyst: str) -> tuple[str, str]:
    """A ZCDP ledger of 3 Gaussian rounds (rho 0.25 each) and one left open."""
    name = f"forged_{uuid.uuid4().hex[:6]}"
    init_ledger(pg_ledger_url(pg_server, name), ep.ZCDPFilter(100.0))
    url = _with_ledger(analyst, name)
    s = _session(ep.ZCDPFilter(100.0), url)
    for _ in range(3):
        s.gaussian(0.0, 1.0, 0.25)
    s._reserve("gaussian", GaussianCost(0.25))
    s.close()
    return url, name


_G = encode(GaussianCost(0.25))
LOW = {"sums": {"amounts": [0.25], "deltas": [0.0], "rounds": 3}}  # 0.5 of rho hidden
FORGERIES = [
    ("sums below", LOW, "below what the ledger charged"),
    ("tail", {"tail": [[encode(GaussianCost(0.001)), None], [_G, _G]]}, "open rounds are not"),
    ("rounds", {"rounds": 4}, "rounds are not the ledger"),
]


@pytest.mark.parametrize(("what", "change", "message"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_the_server_refuses_a_forged_checkpoint(
    pg_server: Any, analyst: str, what: str, change: dict[str, Any], message: str
) -> None:
    import psycopg

    url, name = _forged_ledger(pg_server, analyst)
    _forge(url, name, {})  # the honest state is confirmed
    s = _session(ep.ZCDPFilter(100.0), url)
    s.gaussian(0.0, 1.0, 0.25)  # round 4: the open round 3 and it are the tail
    s.close()
    with pytest.raises(psycopg.Error, match=message):
        _forge(url, name, change)
    assert s.spent == _full(ep.ZCDPFilter(100.0), url).spent


def test_planted_twin_without_the_sums_check_a_forgery_is_stored_and_trusted(
    pg_server: Any, analyst: str
) -> None:
    admin = pg_server.get_uri()
    url, name = _forged_ledger(pg_server, analyst)
    real = _full(ep.ZCDPFilter(100.0), url).spent
    _psql(
        admin,
        "CREATE OR REPLACE FUNCTION expost.covers(f jsonb, s jsonb, rho numeric, "
        "delta numeric, eps numeric, eps_delta numeric) RETURNS boolean LANGUAGE sql "
        "IMMUTABLE AS $$ SELECT true $$",
    )
    try:
        _forge(url, name, LOW)
        s = _session(ep.ZCDPFilter(100.0), url)
        assert s.spent < real  # the open trusts what the server stored
        s.close()
    finally:
        from expost.ledger.pg_checkpoints import CHECKPOINT_FUNCTIONS

        _psql(admin, CHECKPOINT_FUNCTIONS[1])  # the real covers again


def test_the_upgrade_installs_checkpoints_on_an_older_schema(pg_server: Any) -> None:
    from expost.ledger.pg_schema import SERVER_VERSION, client_grants
    from tests.conftest import as_role

    admin = pg_server.get_uri()
    _psql(admin, "DROP DATABASE IF EXISTS ckpt_upgraded WITH (FORCE)")
    _psql(admin, "CREATE DATABASE ckpt_upgraded")
    admin = admin.replace("/postgres?", "/ckpt_upgraded?", 1)
    f = ep.ZCDPFilter(100.0)
    init_ledger(f"{admin}&ledger=kept", f)
    for statement in (
        "DROP FUNCTION expost.write_checkpoint(text, uuid, integer, text)",
        "DROP FUNCTION expost.read_checkpoints(text, boolean)",
        "DROP FUNCTION expost.read_rounds(text, integer, integer)",
        "DROP TABLE expost.checkpoints",
        "DROP FUNCTION expost.server_version()",
    ):
        _psql(admin, statement)
    _psql(
        admin, "CREATE FUNCTION expost.server_version() RETURNS integer LANGUAGE sql AS 'SELECT 5'"
    )
    init_ledger(f"{admin}&ledger=another", f)  # the owner: upgrades, then creates
    assert _psql(admin, "SELECT expost.server_version()") == [(SERVER_VERSION,)]
    for grant in client_grants("expost_client"):
        _psql(admin, grant)
    client = f"{as_role(admin, 'expost_client')}&ledger=kept"
    _run(f, [GaussianCost(0.25)], client, n=2 * EVERY)
    stored, _ = _checkpoints(client)
    assert stored
    _psql(pg_server.get_uri(), "DROP DATABASE ckpt_upgraded WITH (FORCE)")


FLOOD = 600


@pytest.mark.parametrize("twin", [False, True], ids=["replay", "old-replay-twin"])
def test_a_flood_of_open_reservations_costs_one_spend_each(
    pg_server: Any, analyst: str, monkeypatch: pytest.MonkeyPatch, twin: bool
) -> None:
    """As on SQLite (tests/ledger/test_ledger_checkpoints.py): a client with the documented
    grants reserves `FLOOD` tiny rounds and never settles them; an open spends each once, and
    a round after it a few spends; the old replay (the planted twin) spent every open
    reservation again on every update."""
    from tests.ledger.test_ledger_checkpoints import check_flood

    name = f"flood_{uuid.uuid4().hex[:6]}"
    budget = ep.ZCDPFilter(1.0)
    lid = init_ledger(pg_ledger_url(pg_server, name), budget)
    url = _with_ledger(analyst, name)
    _flood(url, name, lid, 0, FLOOD)
    check_flood(monkeypatch, lambda: _session(budget, url), twin, FLOOD)


def test_a_client_without_the_checkpoint_grants_replays_every_entry(pg_server: Any) -> None:
    """A role granted only the functions before server version 6 (an upgraded schema whose
    grants were not run again): its sessions work, write no checkpoint and open by a replay."""
    from expost.ledger.pg_schema import CLIENT_FUNCTIONS
    from tests.conftest import as_role

    admin = pg_server.get_uri()
    role = "expost_old_grants"
    if not _psql(admin, "SELECT 1 FROM pg_roles WHERE rolname = %s", role):
        _psql(admin, f"CREATE ROLE {role} LOGIN")
    _psql(admin, f"GRANT USAGE ON SCHEMA expost TO {role}")
    for function in CLIENT_FUNCTIONS[:4]:
        _psql(admin, f"GRANT EXECUTE ON FUNCTION {function} TO {role}")
    name = f"old_grants_{uuid.uuid4().hex[:6]}"
    f = ep.ZCDPFilter(100.0)
    init_ledger(pg_ledger_url(pg_server, name), f)
    url = _with_ledger(as_role(admin, role), name)
    _run(f, [GaussianCost(0.25)], url, n=2 * EVERY)
    assert _checkpoints(pg_ledger_url(pg_server, name))[0] == ()
    s = _session(f, url)
    assert s._checkpointed == 0
    assert s.spent == _full(f, pg_ledger_url(pg_server, name)).spent
    s.close()


def _flood(url: str, name: str, lid: str, first: int, n: int) -> None:
    """``n`` reservations from ``first`` on, written by a client straight through the server."""
    cost = encode(ZCDPCost(1e-6))
    rows = [
        json.dumps({"round": k, "mechanism": "m", "cost": cost}) for k in range(first, first + n)
    ]
    _psql(
        url,
        "SELECT count(*) FROM unnest(%s::text[]) WITH ORDINALITY r(t, k), LATERAL "
        "expost.append_round(%s, %s::uuid, 'reserve', r.t, NULL) ORDER BY 1",
        rows,
        name,
        lid,
    )


@pytest.mark.parametrize("later", [STALE_ROUNDS, STALE_ROUNDS - 1], ids=["stale", "twin-not-yet"])
def test_a_killed_clients_round_is_settled_at_its_request_once_stale(
    pg_server: Any, analyst: str, monkeypatch: pytest.MonkeyPatch, later: int
) -> None:
    """A client reserves round 0 and dies; once `STALE_ROUNDS` later rounds are reserved, another
    client's checkpoint pass settles it at its request without its token (the server allows it
    for a stale round, at exactly its reservation), so it cannot hold checkpoints back; one round
    short of stale (the twin), the server refuses, and the round stays open."""
    import psycopg

    monkeypatch.setattr(checkpoints_module, "CHECKPOINT_EVERY", STALE_ROUNDS)
    name = f"stale_{uuid.uuid4().hex[:6]}"
    budget = ep.ZCDPFilter(1.0)
    lid = init_ledger(pg_ledger_url(pg_server, name), budget)
    url = _with_ledger(analyst, name)
    dead = _session(budget, url)
    dead._reserve("m", GaussianCost(0.25))  # killed here: never settled, never closed
    _flood(url, name, lid, 1, later - 1)
    b = _session(budget, url)
    b.gaussian(0.0, 1.0, 1e-3)  # its settle runs the checkpoint pass
    b.close()
    with open_ledger(url, stored_config(url)) as ledger:
        settles = [e.record for e in ledger.entries() if e.kind == "settle"]
    settled_zero = [r for r in settles if r["round"] == 0]
    if later == STALE_ROUNDS:
        assert [dict(r["cost"]) for r in settled_zero] == [encode(GaussianCost(0.25))]
        dead._settle(0, GaussianCost(0.25), GaussianCost(0.25))  # alive after all: settled
        assert not dead._unsettled
    else:
        assert settled_zero == []
        record = json.dumps({"round": 0, "cost": encode(GaussianCost(0.25))})
        with pytest.raises(psycopg.Error, match="no reservation of round 0"):
            _psql(
                url,
                "SELECT * FROM expost.append_round(%s, %s::uuid, 'settle', %s, NULL)",
                name,
                lid,
                record,
            )
    assert b.spent == _full(budget, url).spent
