"""Secure-mode rounds on a PostgreSQL ledger (issue 40 item 3): a scalar discrete Gaussian round
is recorded as a `DiscreteGaussianCost`, a scalar discrete Laplace round as a
`DiscreteLaplaceCost`, and the server prices them exactly as it priced the same rounds before
(a `ZCDPCost` of the same rho, a `DPCost` of the same eps) for every filter it prices: an
exact-mode session on a PostgreSQL ledger is not newly refused.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.exact.bits import GeneratorBits
from expost.filters.costs import DiscreteGaussianCost, DiscreteLaplaceCost
from expost.ledger.descriptions import describe
from expost.ledger.records import encode
from tests.conftest import pg_ledger_url
from tests.ledger.test_ledger_roles import _psql

FILTERS: list[ep.PrivacyFilter] = [
    ep.ZCDPFilter(1.0),
    ep.UnifiedFilter.from_dp(1.0, 1e-6),
    ep.ApproxDPFilter(1.0, 1e-3, 1e-6),
    ep.ExPostFilter(1.0, 1e-6),
    ep.GaussianDPFilter(1.0),
    ep.BrownianFilter(1.0, 1e-6),
    ep.ConcurrentFilter(ep.ZCDPFilter(1.0), ep.ExPostFilter(1.0, 1e-6), 1e-6),
]
PAIRS = [  # (the new kind, the kind the same round was recorded as before)
    (DiscreteGaussianCost(2.0, 1, rho=0.125), ep.ZCDPCost(0.125)),
    (DiscreteGaussianCost(1.5, 3, rho=2.0), ep.ZCDPCost(2.0)),
    (DiscreteLaplaceCost(4.0, 2, eps=0.5), ep.DPCost(0.5)),
    (DiscreteLaplaceCost(3.0, 1), ep.DPCost(1 / 3 + 2**-54)),  # eps: 1/3 rounded up
]


def _price(url: str, f: Any, cost: dict[str, Any]) -> tuple[Decimal, ...] | str:
    """The server's price of ``cost`` for ``f``, or the text of its refusal."""
    try:
        rows = _psql(url, "SELECT * FROM expost.price(%s, %s)", json.dumps(describe(f)),
                     json.dumps(cost))  # fmt: skip
    except Exception as err:  # noqa: BLE001  # the server's refusal, compared as text
        return re.sub(r"\{[^}]*\}", "COST", str(err).split("\n")[0])  # the cost as jsonb
    return tuple(rows[0])


@pytest.fixture(scope="module")
def server_url(pg_server: Any) -> str:
    url = pg_ledger_url(pg_server, "exact_pairs_schema")
    ep.PrivateSession(ep.ZCDPFilter(1.0), exact=True, ledger=url, create=True).close()  # schema
    return url


@pytest.mark.parametrize(("new", "old"), PAIRS)
def test_the_server_prices_the_new_kinds_as_the_old_ones(
    server_url: str, new: Any, old: Any
) -> None:
    assert DiscreteLaplaceCost(3.0, 1).eps == 1 / 3 + 2**-54
    for f in FILTERS:
        got, want = _price(server_url, f, encode(new)), _price(server_url, f, encode(old))
        if isinstance(want, str):
            assert isinstance(got, str)
            assert got == want, type(f).__name__
        else:
            assert got == want, type(f).__name__


def test_a_record_without_the_level_is_refused_by_the_server(server_url: str) -> None:
    """The planted twin: a record without the rho or eps the server prices by is refused by its
    record check and by its price, never priced as free."""
    for bare, level in (
        ({"type": "DiscreteLaplaceCost", "scale": 4.0, "sensitivity": 2}, "eps"),
        ({"type": "DiscreteGaussianCost", "sigma": 2.0, "sensitivity": 1}, "rho"),
    ):
        assert "cannot charge" in str(_price(server_url, ep.ZCDPFilter(1.0), bare))
        with pytest.raises(Exception, match=f"lacks {level}"):
            _psql(server_url, "SELECT expost.check_cost(%s)", json.dumps(bare))
        _psql(server_url, "SELECT expost.check_cost(%s)", json.dumps({**bare, level: 0.5}))


def test_a_secure_session_on_postgres_records_and_replays_the_new_kinds(pg_server: Any) -> None:
    url = pg_ledger_url(pg_server, "exact_pairs_session")
    budget = ep.ZCDPFilter(1.0)
    bits = GeneratorBits(np.random.default_rng(3))
    s = ep.PrivateSession(budget, ledger=url, create=True, bits=bits)
    s.gaussian(7, sensitivity=1, rho=0.125)
    s.laplace(7, sensitivity=2, eps=0.5)
    s.laplace([1, 2], sensitivity=2, eps=0.5)  # a vector: DPCost, as before
    kinds = [type(r.request).__name__ for r in s.history]
    assert kinds == ["DiscreteGaussianCost", "DiscreteLaplaceCost", "DPCost"]
    spent = s.spent
    assert spent == 0.125 + 0.125 + 0.125  # rho, eps²/2, eps²/2: as before
    s.close()
    again = ep.PrivateSession(budget, ledger=url, exact=True)
    assert again.spent == spent
    assert again.filter.realised == s.filter.realised  # type: ignore[attr-defined]  # a ZCDPFilter
    again.close()
