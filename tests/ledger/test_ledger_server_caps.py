"""The server's budget check for every filter kind (issue 31): a client role that skips the filter
and calls ``expost.append_round`` directly cannot reserve past the budget, and the server refuses
nothing the filter admits (tested at the budget's edge: the largest float the Python filter admits
is accepted, one a millionth above it refused; relative slack 1e-9, docs/sharing-a-budget.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.ledger import init_ledger
from expost.ledger.records import encode
from tests.conftest import pg_ledger_url
from tests.ledger.test_ledger_roles import _psql, _with_ledger, client_role

ROLE = "expost_capped"  # exactly the documented grants, nothing more


@pytest.fixture(scope="module")
def analyst(pg_server: Any, pg_client: str) -> str:
    """The server URL as a role holding only `client_grants`; the schema installed by the
    administrator (``pg_client`` does that)."""
    return client_role(pg_server.get_uri(), ROLE)


def _edge(admits: Callable[[float], bool], start: float) -> float:
    """The largest float x near ``start`` with ``admits(x)`` (and ``admits`` false just above)."""
    x = start
    while not admits(x):
        x = math.nextafter(x, 0.0)
    while admits(math.nextafter(x, math.inf)):
        x = math.nextafter(x, math.inf)
    return x


class _Client:
    """A session ledger made by the administrator, used by the client role with the documented
    grants: an honest session, and a dishonest one that reserves straight through the function."""

    def __init__(self, pg_server: Any, analyst: str, budget: ep.PrivacyFilter, name: str) -> None:
        self.budget, self.name = budget, name
        self.ledger_id = init_ledger(pg_ledger_url(pg_server, name), budget)
        self.url = _with_ledger(analyst, name)
        self.session = ep.PrivateSession(budget, np.random.default_rng(0), ledger=self.url)

    def state(self) -> tuple[object, int]:
        s = ep.PrivateSession(self.budget, np.random.default_rng(0), ledger=self.url)
        try:
            assert s._ledger is not None
            return s.spent, len(s._ledger.entries())
        finally:
            s.close()

    def reserve(self, cost: ep.Cost | dict[str, Any]) -> None:
        record = cost if isinstance(cost, dict) else encode(cost)
        s = ep.PrivateSession(self.budget, np.random.default_rng(0), ledger=self.url)
        rounds = s.filter.rounds
        s.close()
        entry = {"round": rounds, "mechanism": "m", "cost": record}
        _psql(
            self.url,
            "SELECT * FROM expost.append_round(%s, %s::uuid, 'reserve', %s, NULL)",
            self.name,
            self.ledger_id,
            json.dumps(entry),
        )

    def refused(self, cost: ep.Cost | dict[str, Any], match: str = "exceeds the budget") -> None:
        before = self.state()
        with pytest.raises(Exception, match=match):
            self.reserve(cost)
        assert self.state() == before  # nothing changed

    def filter(self) -> ep.PrivacyFilter:
        self.session.refresh()
        return self.session.filter

    def left(self) -> float:
        """What remains of a one-budget filter (the session's view, from the ledger)."""
        left = self.filter().remaining
        assert isinstance(left, float)
        return left


def test_an_ex_post_budget_is_enforced_by_the_server(pg_server: Any, analyst: str) -> None:
    c = _Client(pg_server, analyst, ep.ExPostFilter(1.0, 1e-6), "cap_ex_post")
    c.session.laplace(0.0, 1.0, 0.5)
    c.refused(ep.DPCost(0.5000005))
    c.refused(ep.ExPostCost(0.6, 0.0))
    c.refused(ep.BrownianCost(1.0, bound=0.6))
    c.refused(ep.ExPostCost(0.1, 2e-6))  # the delta budget
    c.refused(ep.ZCDPCost(0.1), match="cannot charge")  # the filter refuses it too
    c.refused(ep.BrownianCost(1.0), match="cannot charge")  # no boundary: no ex-post bound
    f = c.filter()
    eps = _edge(lambda e: f.admits(ep.ExPostCost(e, 1e-6)), c.left())
    c.reserve(ep.ExPostCost(eps, 1e-6))  # the filter's edge: accepted
    assert not c.filter().admits(ep.ExPostCost(1e-6, 0.0))
    c.refused(ep.ExPostCost(1e-6, 0.0))
    c.session.close()


def test_an_approx_dp_budget_is_enforced_by_the_server(pg_server: Any, analyst: str) -> None:
    """FAC Thm 2 as a zCDP filter: rho_m = eps_m²/2 against rho*(eps, delta'') (`rho_for_dp`),
    which the server computes in numeric (ln, sqrt); delta' summed."""
    budget = ep.ApproxDPFilter(1.0, 1e-6, 1e-6)
    c = _Client(pg_server, analyst, budget, "cap_approx_dp")
    c.session.laplace(0.0, 1.0, 0.1)
    c.refused(ep.ZCDPCost(1e-6), match="cannot charge")  # FAC Thm 2 takes DP rounds only
    c.refused(ep.ExPostCost(0.01), match="cannot charge")  # no eps_max
    c.refused(ep.DPCost(1e-3, 1.1e-6))  # the delta' budget
    f = c.filter()
    left = c.left()
    assert left > 0.0
    c.refused(ep.BoundedRangeCost(1.5 * math.sqrt(2 * left)))  # eps²/2 (eps²/8 would fit)
    eps = _edge(lambda e: f.admits(ep.DPCost(e, 1e-6)), math.sqrt(2 * left))
    c.refused(ep.DPCost(eps * (1 + 1e-6), 1e-6))
    c.reserve(ep.DPCost(eps, 1e-6))  # the filter's edge: accepted
    assert not c.filter().admits(ep.DPCost(1e-4))
    c.refused(ep.DPCost(1e-4))
    c.session.close()


def test_a_gaussian_dp_budget_is_enforced_by_the_server(pg_server: Any, analyst: str) -> None:
    """mu² = 2·rho for Gaussian rounds, Δ²/t for Brownian ones, against mu²; rounds whose price
    needs Φ⁻¹ (pure DP, bounded range, ex-post with eps_max) are refused on PostgreSQL."""
    budget = ep.GaussianDPFilter(1.0)
    c = _Client(pg_server, analyst, budget, "cap_gdp")
    c.session.gaussian(0.0, 1.0, 0.25)
    c.refused(ep.GaussianCost(0.2500005))
    c.refused(ep.BrownianCost(1.9999))
    for cost in (ep.DPCost(0.01), ep.BoundedRangeCost(0.01), ep.ExPostCost(0.01, 0.0, 0.01)):
        assert c.filter().admits(cost)  # admitted by the filter; not priced by the server
        c.refused(cost, match="prices only GaussianCost and BrownianCost")
    with pytest.raises(ep.LedgerError, match="prices only GaussianCost"):
        c.session.laplace(0.0, 1.0, 0.01)
    c.refused(ep.ZCDPCost(0.01), match="cannot charge")
    f = c.filter()
    rho = _edge(lambda r: f.admits(ep.GaussianCost(r)), c.left() / 2)
    c.reserve(ep.GaussianCost(rho))  # the filter's edge: accepted
    c.refused(ep.BrownianCost(1e6))
    c.session.close()


def test_a_concurrent_budget_is_enforced_in_both_parts(pg_server: Any, analyst: str) -> None:
    budget = ep.ConcurrentFilter(ep.ZCDPFilter(1.0, 1e-6), ep.ExPostFilter(1.0, 1e-6), 1e-6)
    c = _Client(pg_server, analyst, budget, "cap_concurrent")
    c.session.gaussian(0.0, 1.0, 0.5)
    c.refused(ep.ZCDPCost(0.5000005))
    c.refused(ep.DPCost(1.0000005))  # eps²/2 in the zCDP part
    c.refused(ep.ZCDPCost(0.1, 2e-6))
    c.refused(ep.ExPostCost(1.0000005, 0.0))
    c.refused(ep.ExPostCost(0.1, 2e-6))
    c.reserve(ep.ExPostCost(1.0, 1e-6))  # the ex-post part, to its edge
    c.reserve(ep.ZCDPCost(0.5, 1e-6))  # the zCDP part, to its edge
    assert c.filter().remaining == (0.0, 0.0)
    c.refused(ep.ExPostCost(1e-6, 0.0))  # (1e-9 is within the slack)
    c.refused(ep.BrownianCost(1e5))
    c.session.close()


def test_a_brownian_budget_takes_brownian_rounds_only(pg_server: Any, analyst: str) -> None:
    """The twin of the zCDP-family cap: the server priced every cost of a BrownianFilter ledger as
    a zCDP filter would; the filter takes BrownianCost only, and so does the server now."""
    c = _Client(pg_server, analyst, ep.BrownianFilter(1.0, 1e-6), "cap_brownian")
    c.refused(ep.ZCDPCost(0.1), match="cannot charge")
    c.refused(ep.BrownianCost(0.4999995))
    c.reserve(ep.BrownianCost(0.5))
    c.session.close()


@pytest.mark.parametrize(
    "record",
    [
        {"type": "GaussianCost", "rho": 0.1, "delta": 0.001},
        {"type": "BrownianCost", "time": 100.0, "sensitivity": 1.0, "bound": None, "delta": 0.01},
        {"type": "ZCDPCost", "rho": 1e-320, "delta": 0.0},  # a double rounds it to 0
        {"type": "ExPostCost", "bound": 1e400, "delta": 0.0, "eps_max": None},  # not a double
    ],
)
def test_a_cost_the_client_could_not_decode_is_refused(
    pg_server: Any, analyst: str, record: dict[str, Any]
) -> None:
    """Each of these decoded to an `InvalidParameter` on every client (the ledger unreadable for
    everyone); the server refuses them first. Twin: the same costs, valid, are accepted."""
    name = f"bad_{abs(hash(json.dumps(record))) % 10**8}"
    c = _Client(
        pg_server,
        analyst,
        ep.ConcurrentFilter(ep.ZCDPFilter(1.0), ep.ExPostFilter(1.0, 0.1), 1e-6),
        name,
    )
    c.refused(record, match="invalid")
    valid = {**record, **({"delta": 0.0} if "delta" in record else {})}
    valid.update(
        {k: 0.5 for k in ("rho", "bound") if k in valid and record["type"] != "BrownianCost"}
    )
    c.reserve(valid)
    c.session.close()


def test_within_the_slack_the_server_admits_what_every_replay_then_refuses(
    pg_server: Any, analyst: str
) -> None:
    """The documented limit of the server's check: a direct reservation 5e-10 past rho = 1 (inside
    the relative slack 1e-9) is accepted, and every client's replay then finds the ledger over
    budget: it opens read-only (issue 41: no ledger is jammed); 2e-9 past is refused."""
    c = _Client(pg_server, analyst, ep.ZCDPFilter(1.0), "cap_slack")
    c.refused(ep.ZCDPCost(1.000000002))
    c.reserve(ep.ZCDPCost(1.0000000005))
    c.filter()
    assert c.session.read_only
    again = ep.PrivateSession(c.budget, np.random.default_rng(0), ledger=c.url)
    assert again.read_only
    with pytest.raises(ep.LedgerError, match="read-only"):
        again.gaussian(0.0, 1.0, 1e-9)
    again.close()
    c.session.close()
