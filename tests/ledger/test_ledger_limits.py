"""Number limits identical on both backends (issue 41, item 4): one table
(`expost.ledger.limits`: `SMALLEST_NUMBER`, `LARGEST_NUMBER`, `MAX_DIGITS`, `POSITIVE_FIELDS`,
`BELOW`) drives the Python check every backend runs before it writes (`number_fault`) and the
server's ``expost.check_cost``; for every cost field and value at and around the limits both
sides decide alike, and a SQLite ledger holding rounds at the extremes copies into PostgreSQL.
The planted twin: the previous Python side (sizes only) accepted a ρ of 5e-324 that the server
refuses — the copy that failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.cli import main
from expost.errors import InvalidParameter, LedgerCorrupted
from expost.ledger import LedgerEntry, init_ledger, open_ledger
from expost.ledger.base import canonical, record_text
from expost.ledger.limits import LARGEST_NUMBER, MAX_RECORD_CHARS, SMALLEST_NUMBER, check_text
from expost.ledger.records import decode, session_config
from tests.conftest import pg_ledger_url

BASES: dict[str, dict[str, Any]] = {  # a valid cost of each shape; one field varies below
    "ZCDPCost": {"rho": 0.5, "delta": 0.0},
    "SubsampledGaussianCost": {"rho": 0.5, "delta": 0.0, "sampling_prob": 0.5},
    "DPCost": {"eps": 1.0, "delta": 0.0},
    "BrownianCost": {"time": 1.0, "sensitivity": 1.0, "bound": 1.0, "delta": 0.0},
    "ExPostCost": {"bound": 1.0, "delta": 0.0, "eps_max": 1.0},
}
VALUES: tuple[float | int, ...] = (
    0.0,
    5e-324,  # the smallest subnormal: what SQLite recorded and PostgreSQL refused
    2.2250738585072014e-308,
    1e-301,
    SMALLEST_NUMBER,
    0.5,
    1.0 - 2.0**-53,
    1.0,
    1.5,
    1e308,
    LARGEST_NUMBER,
    -1.0,
    12345678901234567891,  # an int of 20 significant digits
    10**20,
)
CASES = [(kind, field, value) for kind, base in BASES.items() for field in base for value in VALUES]


def _cost(kind: str, field: str, value: float) -> dict[str, Any]:
    return {"type": kind, **BASES[kind], field: value}


def _server_accepts(conn: Any, cost: dict[str, Any]) -> bool:
    import psycopg

    try:
        with conn.transaction():
            conn.execute("SELECT expost.check_cost(%s::jsonb)", (json.dumps(cost),))
    except psycopg.errors.RaiseException:
        return False
    return True


def _python_accepts(cost: dict[str, Any]) -> bool:
    try:
        record_text({"round": 0, "mechanism": "m", "cost": cost})
    except InvalidParameter:
        return False
    return True


@pytest.fixture(scope="module")
def checker(pg_server: Any) -> Any:
    """A connection to a database whose schema is installed (the administrator's)."""
    import psycopg

    init_ledger(pg_ledger_url(pg_server, "limits_probe"), ep.ZCDPFilter(1.0))
    with psycopg.connect(pg_server.get_uri()) as conn:
        yield conn


def _constructible(cost: dict[str, Any]) -> bool:
    """Whether the cost class takes these fields (what the library can record at all)."""
    try:
        decode(cost, "probe")
    except LedgerCorrupted:
        return False
    return True


def test_both_sides_decide_every_number_alike(checker: Any) -> None:
    costs = {case: _cost(*case) for case in CASES}
    decided = {
        case: (_python_accepts(cost), _server_accepts(checker, cost))
        for case, cost in costs.items()
        if _constructible(cost)
    }
    differ = {case: d for case, d in decided.items() if d[0] != d[1]}
    assert not differ
    refused = [case for case, (ours, _) in decided.items() if not ours]
    assert ("ZCDPCost", "rho", 5e-324) in refused
    assert ("ZCDPCost", "rho", 12345678901234567891) in refused
    assert ("ZCDPCost", "rho", SMALLEST_NUMBER) not in refused
    assert len(refused) < len(decided)
    assert len(decided) > len(CASES) // 2


def test_planted_twin_sizes_only_accepted_what_the_server_refuses(checker: Any) -> None:
    """The previous Python side checked a record's size only: it let 5e-324 through."""
    cost = _cost("ZCDPCost", "rho", 5e-324)
    record = {"round": 0, "mechanism": "m", "cost": cost}
    assert check_text("record", canonical("record", record), MAX_RECORD_CHARS)
    assert not _server_accepts(checker, cost)


def test_a_refused_number_writes_nothing_on_sqlite(tmp_path: Path) -> None:
    path = str(tmp_path / "budget.sqlite")
    init_ledger(path, ep.ZCDPFilter(1.0))
    s = ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(0), ledger=path)
    with pytest.raises(InvalidParameter, match=r"GaussianCost\.rho=5e-324 .*\[1e-300, "):
        s.gaussian(0.0, 1.0, rho=5e-324)
    assert s.filter.rounds == 0
    s.close()
    with open_ledger(path, session_config(ep.ZCDPFilter(1.0))) as ledger:
        assert ledger.entries() == ()


def _fixed(record: dict[str, Any]) -> Callable[[tuple[LedgerEntry, ...]], dict[str, Any]]:
    return lambda entries: record


def test_a_ledger_at_the_extremes_copies_into_postgres(tmp_path: Path, pg_server: Any) -> None:
    budget = ep.UnifiedFilter(rho=1.0, delta=0.5)
    path = str(tmp_path / "extremes.sqlite")
    init_ledger(path, budget)
    s = ep.PrivateSession(budget, np.random.default_rng(0), ledger=path)
    s.gaussian(0.0, 1.0, rho=SMALLEST_NUMBER)  # the smallest number a record holds
    s.gaussian(0.0, 1.0, rho=1.0 - 2.0**-20)
    s.close()
    with open_ledger(path, session_config(budget)) as ledger:
        n = len(ledger.entries())
        for kind, record in (  # a bare reservation at each limit the filter can charge
            (
                "reserve",
                {
                    "round": 2,
                    "mechanism": "m",
                    "cost": _cost("ZCDPCost", "delta", SMALLEST_NUMBER) | {"rho": SMALLEST_NUMBER},
                },
            ),
            (
                "reserve",
                {
                    "round": 3,
                    "mechanism": "m",
                    "cost": _cost("BrownianCost", "time", LARGEST_NUMBER) | {"bound": None},
                },
            ),
        ):
            ledger.append(kind, _fixed(record))
        assert len(ledger.entries()) == n + 2
    target = pg_ledger_url(pg_server, f"extremes_{abs(hash(path)) % 10**8}")
    assert main(["ledger", "copy", path, target]) == 0
