"""The PostgreSQL server defends itself against a client with only the documented grants (issue 37).

Each attack runs as a client role holding exactly `client_grants`, straight through the server's
functions: a reservation no Python client could price in bounded time, records past the size
and number limits (`expost.ledger.limits`, the one place both sides read), a transaction that
takes the ledger's lock and idles, and settlements that leave their reservation's grid. Each is
refused, or (the lock) ended by the server, and every honest client goes on.
"""

from __future__ import annotations

import json
import uuid
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.filters import Cost, LaplaceCost, SubsampledGaussianCost
from expost.ledger import init_ledger
from expost.ledger.limits import (
    LARGEST_NUMBER,
    MAX_DIGITS,
    MAX_NAME_CHARS,
    MAX_RECORD_CHARS,
    SMALLEST_NUMBER,
)
from expost.ledger.pg_schema import client_grants
from expost.ledger.records import encode
from tests.conftest import as_role, pg_ledger_url
from tests.ledger.test_ledger_roles import _psql, _with_ledger, client_role

ROLE = "expost_hostile"  # exactly the documented grants, nothing more
APPEND = "SELECT * FROM expost.append_round(%s, %s::uuid, %s, %s, %s::uuid)"


@pytest.fixture(scope="module")
def analyst(pg_server: Any, pg_client: str) -> str:
    """The server URL as a role with only `client_grants`; the schema installed by the
    administrator (``pg_client`` does that)."""
    return client_role(pg_server.get_uri(), ROLE)


class _Ledger:
    """A session ledger the administrator made; the client's URL for it, and direct calls."""

    def __init__(self, server: Any, analyst: str, budget: ep.PrivacyFilter) -> None:
        self.budget, self.name = budget, f"h_{uuid.uuid4().hex[:8]}"
        self.id = init_ledger(pg_ledger_url(server, self.name), budget)
        self.url = _with_ledger(analyst, self.name)

    def session(self) -> ep.PrivateSession:
        return ep.PrivateSession(self.budget, np.random.default_rng(0), ledger=self.url)

    def rounds(self) -> int:
        s = self.session()
        try:
            return s.filter.rounds
        finally:
            s.close()

    def append(self, kind: str, record: str | dict[str, Any]) -> None:
        text = record if isinstance(record, str) else json.dumps(record)
        _psql(self.url, APPEND, self.name, self.id, kind, text, None)

    def reserve(self, cost: dict[str, Any], mechanism: str = "m") -> None:
        self.append("reserve", {"round": self.rounds(), "mechanism": mechanism, "cost": cost})

    def entries(self) -> int:
        count = "SELECT count(*) FROM expost.read_rounds(%s, 0)"
        return int(_psql(self.url, count, self.name)[0][0])


# ----------------------------------------------------------------------------- priceable records


def test_a_far_brownian_reservation_leaves_the_ledger_usable(pg_server: Any, analyst: str) -> None:
    """The issue's brick: time 1e308 priced 5e-309 by the server, which the replay took ~1e15
    float steps to reach; sensitivity 1.4e154 made every open raise ``x=nan``."""
    ledger = _Ledger(pg_server, analyst, ep.ZCDPFilter(1.0))
    far = ep.BrownianCost(1e308)
    wide = ep.BrownianCost(1e308, 1.4e154)
    ledger.reserve(encode(far))
    ledger.reserve(encode(wide))
    s = ledger.session()
    exact = sum(Fraction(c.sensitivity) ** 2 / (2 * Fraction(c.time)) for c in (far, wide))
    spent = s.spent
    assert isinstance(spent, float)
    assert exact <= Fraction(spent) <= 1  # charged at least the exact price, within budget
    assert s.filter.rounds == 2
    s.gaussian(0.0, 1.0, 0.01)  # and it goes on
    s.close()


def _cost(**fields: object) -> dict[str, object]:
    return {"type": "ZCDPCost", "rho": 0.25, "delta": 0.0, **fields}


@pytest.mark.parametrize(
    ("kind", "record", "refusal"),
    [
        ("reserve", {"mechanism": "m" * (MAX_NAME_CHARS + 1)}, "a reserve entry is"),
        ("reserve", {"mechanism": "m" * 2**25}, f"at most {MAX_RECORD_CHARS} characters"),
        ("reserve", {"cost": _cost(rho="0.25")}, "invalid rho"),  # a string
        ("reserve", {"cost": _cost(rho=float("0." + "3" * 16)) | {"pad": 0}}, "unknown field"),
        ("r" * (MAX_NAME_CHARS + 1), {}, f"a kind at most {MAX_NAME_CHARS}"),
    ],
    ids=["mechanism-name", "32MiB-mechanism", "rho-as-text", "unknown-field", "long-kind"],
)
def test_oversized_records_are_refused_and_change_nothing(
    pg_server: Any, analyst: str, kind: str, record: dict[str, Any], refusal: str
) -> None:
    ledger = _Ledger(pg_server, analyst, ep.ZCDPFilter(1.0))
    entry = {"round": 0, "mechanism": "m", "cost": _cost(), **record}
    with pytest.raises(Exception, match=refusal):
        ledger.append(kind, entry)
    assert ledger.entries() == 0
    ledger.reserve(_cost())  # the ledger still takes an honest round
    assert ledger.entries() == 1


def _number(text: str) -> str:
    """A reserve record whose rho is the JSON number ``text``, verbatim."""
    return (
        '{"cost": {"delta": 0.0, "rho": '
        + text
        + ', "type": "ZCDPCost"}, "mechanism": "m", "round": 0}'
    )


@pytest.mark.parametrize(
    "text",
    [
        "0." + "3" * 16383,  # the 16,383-digit rho: over the record size first
        "0." + "3" * MAX_DIGITS + "1",  # one significant digit too many
        repr(SMALLEST_NUMBER / 10),  # would decode to a double the server cannot match
        "1e-400",  # would decode to 0.0
        "2e308",  # would decode to inf
    ],
    ids=["16383-digits", "18-digits", "below-smallest", "1e-400", "2e308"],
)
def test_numbers_a_client_could_not_decode_exactly_are_refused(
    pg_server: Any, analyst: str, text: str
) -> None:
    ledger = _Ledger(pg_server, analyst, ep.ZCDPFilter(1.0))
    with pytest.raises(Exception, match=r"invalid rho|at most \d+ characters"):
        ledger.append("reserve", _number(text))
    assert ledger.entries() == 0


def test_at_the_limits_records_are_accepted(pg_server: Any, analyst: str) -> None:
    """The other side of each limit (a limit's constant is what both sides read)."""
    ledger = _Ledger(pg_server, analyst, ep.ZCDPFilter(1.0))
    ledger.append("reserve", _number("0." + "1" * (MAX_DIGITS - 1) + "3"))  # 17 digits
    ledger.reserve(_cost(rho=SMALLEST_NUMBER), mechanism="m" * MAX_NAME_CHARS)
    ledger.reserve(encode(ep.BrownianCost(LARGEST_NUMBER)))
    padded = {"round": 3, "mechanism": "m", "cost": _cost(rho=0.125)}
    text = json.dumps(padded)
    text = text[:-1] + " " * (MAX_RECORD_CHARS - len(text)) + "}"  # exactly the limit
    assert len(text) == MAX_RECORD_CHARS
    ledger.append("reserve", text)
    s = ledger.session()
    assert s.filter.rounds == 4
    s.close()


def test_the_python_side_refuses_what_the_server_would(tmp_path: Any) -> None:
    """Both backends refuse, before writing, a record past `MAX_RECORD_CHARS` and a kind past
    `MAX_NAME_CHARS`, so that a ledger copied between them never meets a refusal there."""
    from expost.ledger import open_ledger

    with open_ledger(str(tmp_path / "l.sqlite"), {"x": 1}, create=True) as ledger:
        with pytest.raises(ep.InvalidParameter, match=f"at most {MAX_RECORD_CHARS}"):
            ledger.append("round", lambda _e: {"pad": "x" * MAX_RECORD_CHARS})
        with pytest.raises(ep.InvalidParameter, match=f"at most {MAX_NAME_CHARS}"):
            ledger.append("k" * (MAX_NAME_CHARS + 1), lambda _e: {})
        assert ledger.entries() == ()


# ----------------------------------------------------------------------------- the lock


@pytest.fixture(scope="module")
def held(pg_server: Any, pg_client: str) -> tuple[str, str, str]:
    """A database of its own whose lock hold limit is 1 s (the administrator's UPDATE):
    (the administrator's URL, the client role's URL, the ledger's name)."""
    admin = pg_server.get_uri()
    _psql(admin, "DROP DATABASE IF EXISTS held WITH (FORCE)")
    _psql(admin, "CREATE DATABASE held")
    admin = admin.replace("/postgres?", "/held?", 1)
    init_ledger(_with_ledger(admin, "budget"), ep.ZCDPFilter(1.0))
    _psql(admin, "UPDATE expost.settings SET hold_limit_s = 1")
    client_role(pg_server.get_uri(), ROLE)  # the role (cluster-wide), then its grants here
    for grant in client_grants(ROLE):
        _psql(admin, grant)
    return admin, _with_ledger(as_role(admin, ROLE), "budget"), "budget"


def _hostile(url: str, sql: str) -> Any:
    """A connection as the client role that runs ``sql`` and idles: in the transaction it
    began, or (a session-level advisory lock) outside any transaction."""
    import psycopg

    conn = psycopg.connect(url.split("&ledger=")[0], autocommit="pg_advisory_lock" in sql)
    conn.execute(sql)
    return conn


def _ledger_id(admin: str) -> str:
    return str(_psql(admin, "SELECT ledger_id FROM expost.header('budget')")[0][0])


@pytest.mark.parametrize(
    "attack",
    [
        "SELECT expost.lock_ledger('budget', '{id}')",
        (
            "SELECT * FROM expost.append_round('budget', '{id}', 'reserve', "
            '\'{{"round": {n}, "mechanism": "m", "cost": {{"type": "ZCDPCost", "rho": 0.001}}}}\')'
        ),
        # the ledger's advisory lock (0x65787074, the name's hash), taken outside any transaction
        "SELECT pg_advisory_lock(1702391924, hashtext('budget') & 2147483647)",
    ],
    ids=["lock_ledger", "append_round", "advisory"],
)
def test_a_client_idling_with_the_lock_is_ended_past_the_hold_limit(
    held: tuple[str, str, str], attack: str
) -> None:
    admin, url, _ = held
    honest = ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(0), ledger=url)
    n = honest.filter.rounds
    hostile = _hostile(url, attack.format(id=_ledger_id(admin), n=n))  # and it idles
    honest.gaussian(0.0, 1.0, 0.001)  # waits the hold limit (1 s), not its lock_timeout (30 s)
    with pytest.raises(Exception, match=r"terminat|closed|consuming input"):
        hostile.execute("SELECT 1")  # the server ended its transaction
    hostile.close()
    honest.refresh()
    assert honest.filter.rounds == n + 1  # the hostile reservation was never committed
    honest.close()


def test_planted_twin_without_the_limit_the_idle_holder_blocks(held: tuple[str, str, str]) -> None:
    """The same idle holder with the hold limit at an hour: the honest client waits its whole
    lock_timeout (1 s, from the URL) and is refused — the limit is what frees the ledger."""
    admin, url, _ = held
    _psql(admin, "UPDATE expost.settings SET hold_limit_s = 3600")
    try:
        waiting = url + "&options=-c%20lock_timeout%3D1000"
        honest = ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(0), ledger=waiting)
        hostile = _hostile(url, f"SELECT expost.lock_ledger('budget', '{_ledger_id(admin)}')")
        with pytest.raises(ep.LedgerError, match="busy"):
            honest.gaussian(0.0, 1.0, 0.001)
        hostile.close()
        honest.close()
    finally:
        _psql(admin, "UPDATE expost.settings SET hold_limit_s = 1")


# ----------------------------------------------------------------------------- settlements

_OLD_RULE = """CREATE FUNCTION pg_temp.at_most(s jsonb, r jsonb) RETURNS boolean LANGUAGE sql AS $$
    SELECT (s->>'type' = r->>'type' OR s->>'type' = 'GaussianCost' AND r->>'type' = 'ZCDPCost')
        AND coalesce((s->>'rho')::numeric <= (r->>'rho')::numeric, true)
        AND coalesce((s->>'eps')::numeric <= (r->>'eps')::numeric, true)
        AND coalesce((s->>'delta')::numeric, 0) <= coalesce((r->>'delta')::numeric, 0)
        AND coalesce((s->>'time')::numeric >= (r->>'time')::numeric, true)
        AND coalesce((s->>'sensitivity')::numeric, 1) = coalesce((r->>'sensitivity')::numeric, 1)
        AND (r->>'eps_max' IS NULL
             OR coalesce((s->>'eps_max')::numeric <= (r->>'eps_max')::numeric, false)) $$"""

REFUSED: list[tuple[str, Cost, Cost]] = [
    ("gaussian", ep.GaussianCost(0.1), ep.GaussianCost(0.05)),
    ("laplace", ep.DPCost(1.0), ep.DPCost(0.5)),
    ("laplace", LaplaceCost(1.0), LaplaceCost(0.5)),
    ("exponential_mechanism", ep.BoundedRangeCost(1.0), ep.BoundedRangeCost(0.5)),
    (
        "dp_sgd",
        SubsampledGaussianCost(0.1, sampling_prob=0.01),
        SubsampledGaussianCost(0.05, sampling_prob=0.01),
    ),
    ("laplace_noise_reduction", ep.ExPostCost(1.0, eps_max=1.0), ep.ExPostCost(0.5, eps_max=0.5)),
]
ACCEPTED: list[tuple[str, Cost, Cost]] = [
    ("doubling", ep.GaussianCost(0.1), ep.GaussianCost(0.05)),  # the tries it made
    ("brownian", ep.BrownianCost(4.0), ep.BrownianCost(8.0)),  # a later time of its grid
    ("laplace_noise_reduction", ep.ExPostCost(1.0, eps_max=1.0), ep.ExPostCost(0.5, eps_max=1.0)),
    ("laplace", LaplaceCost(1.0), LaplaceCost(1.0)),  # a fixed price, exactly
]


def test_settlements_stay_within_their_reservation(pg_server: Any, analyst: str) -> None:
    ledger = _Ledger(pg_server, analyst, ep.ZCDPFilter(100.0))
    s = ledger.session()
    for mechanism, request, lower in REFUSED:
        key = s._reserve(mechanism, request)
        with pytest.raises(ep.LedgerError, match="does not fit its reservation"):
            s._settle(key, request, lower)
        s._settle(key, request, request)  # at its reservation: accepted
    earlier = ep.BrownianCost(3.0)
    key = s._reserve("brownian", ep.BrownianCost(4.0))
    with pytest.raises(ep.LedgerError, match="does not fit its reservation"):
        s._settle(key, ep.BrownianCost(4.0), earlier)  # below the grid's smallest time
    s._settle(key, ep.BrownianCost(4.0), ep.BrownianCost(4.0))
    for mechanism, request, realised in ACCEPTED:
        s._settle(s._reserve(mechanism, request), request, realised)
    s.close()


def test_planted_twin_the_old_rule_accepted_every_refused_settlement(pg_server: Any) -> None:
    """The rule before issue 37 (kept here only), on the same pairs: each passed it."""
    import psycopg

    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(_OLD_RULE)
        for _, request, lower in REFUSED:
            got = conn.execute(
                "SELECT pg_temp.at_most(%s::jsonb, %s::jsonb)",
                (json.dumps(encode(lower)), json.dumps(encode(request))),
            ).fetchone()
            assert got == (True,), (request, lower)


def test_a_held_creation_lock_does_not_stall_opening_an_existing_ledger(
    pg_server: Any, analyst: str
) -> None:
    """Any role can take the advisory lock under which ledgers are created (0x65787073); an
    existing ledger is opened without it, even with ``create=True``. Creating a new one still
    waits for it (the twin): an administrator ends such a holder by hand."""
    ledger = _Ledger(pg_server, analyst, ep.ZCDPFilter(1.0))
    hostile = _hostile(analyst, "SELECT pg_advisory_lock(1702391923)")  # and idles
    try:
        quick = ledger.url + "&options=-c%20lock_timeout%3D1000"
        s = ep.PrivateSession(ledger.budget, np.random.default_rng(0), ledger=quick, create=True)
        s.gaussian(0.0, 1.0, 0.25)
        s.close()
        admin = pg_ledger_url(pg_server, f"n_{uuid.uuid4().hex[:8]}")
        with pytest.raises(ep.LedgerError, match="lock timeout"):
            init_ledger(admin + "&options=-c%20lock_timeout%3D1000", ep.ZCDPFilter(1.0))
    finally:
        hostile.close()
