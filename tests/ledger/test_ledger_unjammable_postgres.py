"""No PostgreSQL ledger can be jammed by the server's slack (issue 41 item 2).

The issue's example: a client with exactly the documented grants reserves straight through
``expost.append_round``, inside the server's relative slack of 1e-9, past the filter's exact
budget. The server accepts it; every open, ``refresh`` and ``expost ledger show`` used to raise
`BudgetExceeded`. The replay now takes what the server accepted as written: the ledger opens,
over budget, read-only (every release refused, a round in flight still settles), and ``show``
reports it.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli.ledger import show
from expost.filters import Cost, GaussianCost, ZCDPCost
from expost.filters.base import Filter
from expost.ledger import init_ledger
from expost.ledger.records import encode
from tests.conftest import pg_ledger_url
from tests.ledger.test_ledger_roles import _psql, _with_ledger, client_role

ROLE = "expost_unjammed"  # the documented grants, nothing more


@pytest.fixture(scope="module")
def analyst(pg_server: Any, pg_client: str) -> str:
    return client_role(pg_server.get_uri(), ROLE)


def test_reservations_inside_the_slack_leave_the_ledger_open_read_only(
    pg_server: Any, analyst: str
) -> None:
    name = "unjammed_slack"
    budget = ep.ZCDPFilter(1.0)
    ledger_id = init_ledger(pg_ledger_url(pg_server, name), budget)
    url = _with_ledger(analyst, name)
    honest = ep.PrivateSession(budget, np.random.default_rng(0), ledger=url)
    honest.gaussian(0.0, 1.0, 0.5)
    in_flight = honest._reserve("gaussian", GaussianCost(0.25))
    for key, rho in ((2, 0.125), (3, 0.1250000003)):  # the second ends 3e-10 past rho = 1
        entry = {"round": key, "mechanism": "m", "cost": encode(ZCDPCost(rho))}
        _psql(
            url,
            "SELECT * FROM expost.append_round(%s, %s::uuid, 'reserve', %s, NULL)",
            name,
            ledger_id,
            json.dumps(entry),
        )
    again = ep.PrivateSession(budget, np.random.default_rng(1), ledger=url)  # opens
    assert again.read_only
    assert again.spent == 0.875
    with pytest.raises(ep.LedgerError, match="read-only"):
        again.gaussian(0.0, 1.0, 1e-9)
    honest.refresh()  # no exception
    assert honest.read_only
    honest._settle(in_flight, GaussianCost(0.25), GaussianCost(0.25))  # still written
    text = show(url)
    assert "OVER BUDGET" in text
    assert "round 3: its reservation" in text
    again.close()
    honest.close()


def test_a_flood_of_open_reservations_costs_one_spend_each(
    pg_server: Any, analyst: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41 item 6 on PostgreSQL (which keeps no checkpoint): an open of a ledger flooded
    with open reservations spends each once, and a round after it a few spends."""
    import psycopg

    name, flood = "unjammed_flood", 300
    budget = ep.ZCDPFilter(1.0)
    ledger_id = init_ledger(pg_ledger_url(pg_server, name), budget)
    url = _with_ledger(analyst, name)
    with psycopg.connect(analyst, autocommit=True) as conn:
        for key in range(flood):
            entry = {"round": key, "mechanism": "m", "cost": encode(ZCDPCost(1e-6))}
            conn.execute(
                "SELECT * FROM expost.append_round(%s, %s::uuid, 'reserve', %s, NULL)",
                (name, ledger_id, json.dumps(entry)),
            )
    calls = [0]
    spend = Filter.spend

    def counted(self: Filter, realised: Cost) -> Filter:
        calls[0] += 1
        return spend(self, realised)

    monkeypatch.setattr(Filter, "spend", counted)
    s = ep.PrivateSession(budget, np.random.default_rng(0), ledger=url)
    assert calls[0] == flood
    s.gaussian(0.0, 1.0, 1e-3)
    assert calls[0] - flood <= 4
    s.close()
