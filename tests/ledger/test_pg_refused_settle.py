"""A settle the PostgreSQL server refuses is written once at its request, never retried
(issue 41 items 1 and 6; docs/session.md, "The round protocol").

The session's replay takes a settle at a smaller Gaussian than reserved, but the server's rule
(``expost.settles``: a fixed-price round settles at exactly its reservation) refuses it. The
round must then settle at its request, once: the ledger and the live filter agree, the next
round runs, and nothing is left to retry. Before, the refused settle was kept and retried
before every later round, and each of them failed with the same refusal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import expost as ep
from expost import session as session_module
from expost.filters import GaussianCost
from expost.ledger import init_ledger
from expost.ledger.records import encode
from expost.ledger.targets import open_ledger, stored_config
from tests.conftest import pg_ledger_url


def _settles(url: str) -> list[tuple[str, Any]]:
    with open_ledger(url, stored_config(url)) as ledger:
        return [(e.kind, dict(e.record["cost"])) for e in ledger.entries()]


def _refused_then_one_more(url: str) -> ep.PrivateSession:
    """A round reserved at rho = 0.25, settled (refused by the server) at 0.125, then another
    round of rho = 0.0625."""
    budget = ep.ZCDPFilter(1.0)
    init_ledger(url, budget)
    s = ep.PrivateSession(budget, np.random.default_rng(0), ledger=url)
    key = s._reserve("gaussian", GaussianCost(0.25))
    with pytest.raises(ep.LedgerRefused, match="does not fit its reservation"):
        s._settle(key, GaussianCost(0.25), GaussianCost(0.125))
    s.gaussian(0.0, 1.0, 0.0625)
    return s


def test_a_refused_settle_settles_at_its_request_once(pg_server: Any) -> None:
    url = pg_ledger_url(pg_server, "refused_settle")
    s = _refused_then_one_more(url)
    assert not s._unsettled
    assert s.spent == 0.3125  # 0.25 at its request + 0.0625
    s.close()
    request, later = encode(GaussianCost(0.25)), encode(GaussianCost(0.0625))
    assert _settles(url) == [
        ("reserve", request),
        ("settle", request),
        ("reserve", later),
        ("settle", later),
    ]
    reopened = ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(1), ledger=url)
    assert reopened.spent == 0.3125  # the ledger and the live filter agree
    reopened.close()


def test_planted_twin_a_refused_settle_kept_to_retry_jams_the_session(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old handling (a refusal kept as if the connection had failed): the next round
    retries the refused settle first, and fails with it."""

    class _Never(Exception):
        pass

    monkeypatch.setattr(session_module, "LedgerRefused", _Never)
    with pytest.raises(ep.LedgerRefused):
        _refused_then_one_more(pg_ledger_url(pg_server, "refused_settle_twin"))
