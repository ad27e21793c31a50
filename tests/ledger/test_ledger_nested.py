"""A ledger whose filter holds a part no client can build is refused at its creation, on every
path (issue 41, item 4): a `ConcurrentFilter` composes a zCDP filter (`ZCDPFilter` or
`UnifiedFilter`) with an `ExPostFilter`, and one described with a `PLDFilter` or a Rényi filter
inside is refused — by the server's ``expost.create_ledger`` (called raw, as the administrator
and as a client allowed to create), by `open_ledger(create=True)` (what a session with
``create=True`` calls; its own filter is an object, which cannot hold such a part), both backends'
``init`` and ``open(create=True)``, ``expost ledger init`` and ``expost ledger copy`` — naming
the part and what to use; nothing is created.
"""

from __future__ import annotations

import json
import re
import sqlite3
import typing
from pathlib import Path
from typing import Any

import pytest

import expost as ep
from expost.cli import main
from expost.errors import InvalidParameter, LedgerNotFound
from expost.filters import RDPFilter
from expost.ledger import init_ledger, open_ledger
from expost.ledger.pg_checks import PRICED_PARTS
from expost.ledger.postgres import PostgresLedger
from expost.ledger.records import FORMAT, describe, session_config
from expost.ledger.sqlite import Ledger
from tests.conftest import pg_ledger_url
from tests.ledger.test_ledger_roles import _psql

GOOD = ep.ConcurrentFilter(ep.ZCDPFilter(1.0), ep.ExPostFilter(1.0, 0.01), delta_second=1e-6)
INSIDE = {
    "PLDFilter": ("zcdp", ep.PLDFilter(1.0, 1e-6)),
    "RenyiFilter": ("zcdp", ep.RenyiFilter(1.0, 1e-6, 2.0)),
    "RDPFilter": ("zcdp", RDPFilter(1.0, 1e-6)),
    "PLDFilter as ex_post": ("ex_post", ep.PLDFilter(1.0, 1e-6)),
}
REFUSAL = r"ConcurrentFilter's (zcdp|ex_post) part must be .*, not (PLD|Renyi|RDP)Filter.*SQLite"


def _nested(name: str) -> dict[str, Any]:
    part, inner = INSIDE[name]
    return {"format": FORMAT, "filter": {**describe(GOOD), part: describe(inner)}}


def test_the_python_class_takes_the_same_parts_as_the_server() -> None:
    """`PRICED_PARTS` states what `ConcurrentFilter` validates: its parts' types."""
    make: Any = ep.ConcurrentFilter
    for part, inner in INSIDE.values():
        with pytest.raises(TypeError):
            make(**{"zcdp": GOOD.zcdp, "ex_post": GOOD.ex_post, part: inner})
    hints = typing.get_type_hints(ep.ConcurrentFilter)
    for part, allowed in PRICED_PARTS["ConcurrentFilter"].items():
        declared = typing.get_args(hints[part]) or (hints[part],)
        assert {c.__name__ for c in declared} == set(allowed), part


@pytest.mark.parametrize("name", list(INSIDE))
def test_the_server_refuses_a_raw_create_ledger(pg_server: Any, pg_client: str, name: str) -> None:
    import psycopg

    config = json.dumps(_nested(name))
    for url in (pg_server.get_uri(), pg_client):  # the administrator, a client allowed to create
        with pytest.raises(psycopg.errors.FeatureNotSupported, match=REFUSAL):
            _psql(url, "SELECT expost.create_ledger('nested', %s)", config)
    assert _psql(pg_server.get_uri(), "SELECT count(*) FROM expost.header('nested')") == [(0,)]


@pytest.mark.parametrize("name", list(INSIDE))
def test_every_library_path_refuses_it(ledger_target: str, name: str) -> None:
    config = _nested(name)
    backend: Any = PostgresLedger if "://" in ledger_target else Ledger
    for create in (
        lambda: open_ledger(ledger_target, config, create=True),
        lambda: backend.init(ledger_target, config),
        lambda: backend.open(ledger_target, config, create=True),
    ):
        with pytest.raises(InvalidParameter, match=REFUSAL):
            create()
    assert main(["ledger", "init", ledger_target, "--filter", json.dumps(config["filter"])]) == 2
    with pytest.raises(LedgerNotFound):
        open_ledger(ledger_target, session_config(GOOD))
    if "://" not in ledger_target:
        assert not Path(ledger_target).exists()


def test_copy_refuses_a_forged_source(tmp_path: Path, pg_server: Any, capsys: Any) -> None:
    """A SQLite ledger whose configuration was rewritten by hand (its meta table) to hold a
    PLDFilter part: copying it is refused, into either backend, and nothing is created."""
    source = str(tmp_path / "forged.sqlite")
    init_ledger(source, GOOD)
    with sqlite3.connect(source) as conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'config'",
            (json.dumps(_nested("PLDFilter"), sort_keys=True, separators=(",", ":")),),
        )
    conn.close()
    target = pg_ledger_url(pg_server, "forged_copy")
    for into in (target, str(tmp_path / "copy.sqlite")):
        assert main(["ledger", "copy", source, into]) == 2
        assert "must be ZCDPFilter or UnifiedFilter, not PLDFilter" in capsys.readouterr().out
    assert not (tmp_path / "copy.sqlite").exists()
    assert _psql(pg_server.get_uri(), "SELECT count(*) FROM expost.header('forged_copy')") == [(0,)]


@pytest.mark.parametrize(
    "spec",
    [
        "ConcurrentFilter(PLDFilter(1.0, 1e-6), ExPostFilter(1.0, 0.01), delta_second=1e-6)",
        "ConcurrentFilter(ZCDPFilter(1.0), ex_post=RenyiFilter(1.0, 1e-6, 2.0))",
        json.dumps(_nested("RDPFilter")["filter"]),
    ],
    ids=["call", "keyword", "json"],
)
def test_the_cli_names_the_part_and_what_to_use(
    tmp_path: Path, spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "n.sqlite")
    assert main(["ledger", "init", target, "--filter", spec]) == 2
    said = capsys.readouterr().out
    assert re.search(REFUSAL, said), said
    assert not Path(target).exists()
