"""The least-privilege PostgreSQL recipe of docs/sharing-a-budget.md, run exactly as written
(issue 41, item 4): its code blocks are read from the page, each run as the role its first line
names (``-- as a superuser``, ``# as expost_admin``, …) — the superuser only for the lines the
page gives to a superuser — on the PostgreSQL the ``postgres`` extra brings (pgserver) and on the
distribution's server (Debian's ``postgresql``, skipped where it is not installed). Then Alice,
with only the client grants, spends from the ledger at the URL the page gives her, and a client
that holds the ledger's lock with keep-alives is ended by the least-privileged owner's functions
(the wait measured on the server's clock, `tests.ledger.test_pg_lock_holders.Waiting`).
"""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import pytest

import expost as ep
from expost.cli import main
from expost.ledger.pg_schema import client_grants
from tests.ledger.test_pg_lock_holders import Waiting

PAGE = Path(__file__).resolve().parents[2] / "docs" / "sharing-a-budget.md"
BLOCK = re.compile(r"^```(sql|sh)\n(.*?)^```", re.MULTILINE | re.DOTALL)
AS_ROLE = re.compile(r"(?:--|#) as (a superuser|[a-z_]+)\b")
ROLES = ("alice", "analysts", "expost_admin")  # what the recipe creates, dropped around it


def recipe() -> list[tuple[str, str, str]]:
    """(role, language, code) of every block whose first line names the role that runs it."""
    found = []
    for language, code in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if match := AS_ROLE.match(code):
            found.append((match.group(1), language, code))
    return found


def statements(code: str) -> list[str]:
    """The SQL statements of a block (its ``--`` comments dropped; none sits in a string)."""
    text = "\n".join(line.split("--", 1)[0] for line in code.splitlines())
    return [s.strip() for s in text.split(";") if s.strip()]


def at_server(url: str, server: Any) -> str:
    """A URL of the page (``postgresql://ROLE@db.example.org/DB?…``) at the test server: its
    role, database and query parameters, the server's address."""
    page, ours = urlsplit(url), urlsplit(server.get_uri())
    query = urlencode([*parse_qsl(ours.query), *parse_qsl(page.query)])
    netloc = f"{page.username}@{ours.netloc.rsplit('@', 1)[-1]}"
    return str(urlunsplit(ours._replace(netloc=netloc, path=page.path, query=query)))


def run_sql(server: Any, role: str, database: str, code: str) -> None:
    import psycopg

    user = "postgres" if role == "a superuser" else role
    url = at_server(f"postgresql://{user}@db.example.org/{database}", server)
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements(code):
            conn.execute(statement)


def forget(server: Any) -> None:
    """No database ``privacy`` and none of the recipe's roles (as the server's superuser)."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS privacy WITH (FORCE)")
        for role in ROLES:
            conn.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture(params=["pgserver", "distribution"])
def server(request: pytest.FixtureRequest) -> Any:
    name = "pg_server" if request.param == "pgserver" else "distro_pg_server"
    found = request.getfixturevalue(name)
    forget(found)
    yield found
    forget(found)


def test_the_page_gives_each_block_of_the_recipe_a_role() -> None:
    steps = [(role, language) for role, language, _ in recipe()]
    assert steps == [
        ("a superuser", "sql"),
        ("expost_admin", "sh"),
        ("expost_admin", "sql"),
        ("expost_admin", "sql"),
    ]
    grants = statements(recipe()[2][2])
    quoted = [g.replace('"analysts"', "analysts") for g in client_grants("analysts")]
    assert grants == quoted, "the page's grants are client_grants'"


def test_the_recipe_runs_as_written(server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    (_, _, roles), (_, _, init), (_, _, grants), (_, _, limit) = recipe()
    run_sql(server, "a superuser", "postgres", roles)
    argv = shlex.split(init.replace("\\\n", " "), comments=True)
    assert argv[:3] == ["expost", "ledger", "init"]
    assert (
        main([at_server(a, server) if a.startswith("postgresql://") else a for a in argv[1:]]) == 0
    )
    printed = capsys.readouterr().out
    ledger_id = re.search(r"with id ([0-9a-f-]{36})", printed)
    assert ledger_id is not None, printed
    run_sql(server, "expost_admin", "privacy", grants)

    alice_url = re.search(r'ledger="(postgresql://alice@[^"]+)"', PAGE.read_text("utf-8"))
    assert alice_url is not None
    url = at_server(alice_url.group(1), server)
    budget = ep.UnifiedFilter.from_dp(eps=10, delta=1e-6)  # the filter the page's init names
    alice = ep.PrivateSession(budget, np.random.default_rng(0), ledger=url, ledger_id=ledger_id[1])
    alice.gaussian(0.0, 1.0, rho=0.5)
    assert alice.spent == 0.5

    # the owner's shorter hold limit, then a client holding the lock with keep-alives is ended
    run_sql(server, "expost_admin", "privacy", limit)
    hostile = _keep_alive_holder(url.split("&ledger=")[0], ledger_id[1])
    superuser = at_server("postgresql://postgres@db.example.org/privacy", server)
    waiting = Waiting(superuser, "census_2026")  # the wait on the server's clock (its docstring)
    alice.gaussian(0.0, 1.0, rho=0.25)  # waits for the holder at most the 2 s limit (+ 1 s)
    waited = waiting.wait()
    assert 2 <= waited < 2 + 1, waited
    assert alice.spent == 0.75
    with pytest.raises(Exception, match=r"terminat|closed|consuming input"):
        hostile.execute("SELECT 1")
    hostile.close()
    alice.close()


def _keep_alive_holder(url: str, ledger_id: str) -> Any:
    """Alice's second connection: takes the ledger's lock in a transaction and keeps it alive
    with ``SELECT 1`` (a thread, bounded) until the server ends it."""
    import threading

    import psycopg

    conn = psycopg.connect(url)
    conn.execute("SELECT expost.lock_ledger('census_2026', %s)", (ledger_id,))
    lock = threading.Lock()

    def keep_alive() -> None:
        for _ in range(40):  # at most ~10 s
            time.sleep(0.25)
            try:
                with lock:
                    conn.execute("SELECT 1")
            except Exception:  # noqa: BLE001  # ended by the server: what the test waits for
                return

    threading.Thread(target=keep_alive, daemon=True).start()
    return conn


def test_planted_twin_a_custom_parameter_needs_a_grant_the_admin_lacks(server: Any) -> None:
    """The previous design set the hold limit as a function's ``SET expost.hold_limit``: on
    PostgreSQL 15 and later the recipe's administrator may not (what made ``init`` fail)."""
    import psycopg

    roles = recipe()[0][2]
    run_sql(server, "a superuser", "postgres", roles)
    url = at_server("postgresql://expost_admin@db.example.org/privacy", server)
    with psycopg.connect(url, autocommit=True) as conn:
        if conn.info.server_version < 150000:
            pytest.skip("PostgreSQL before 15 let any role set a placeholder parameter")
        conn.execute("CREATE SCHEMA twin")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"expost\.hold_limit"):
            conn.execute(
                "CREATE FUNCTION twin.f() RETURNS int LANGUAGE sql"
                " SET expost.hold_limit = '10' AS 'SELECT 1'"
            )


def test_a_privilege_error_names_the_role_that_lacks_it(
    server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recipe with a step left out: without CREATE on the database the administrator's
    ``init`` names the administrator's grant; a client without the client grants is told those
    (the hint once blamed the client's grants for every privilege error)."""
    roles = recipe()[0][2]
    run_sql(server, "a superuser", "postgres", roles.replace("GRANT CREATE ON DATABASE", "--"))
    ledger = "postgresql://expost_admin@db.example.org/privacy?ledger=census_2026"
    init = ["ledger", "init", at_server(ledger, server), "--filter", "ZCDPFilter(1.0)"]
    assert main(init) == 2
    said = capsys.readouterr().out
    assert "permission denied for database" in said
    assert "the administrator needs CREATE on the DB" in said
    assert "client role" not in said
    run_sql(server, "a superuser", "postgres", "GRANT CREATE ON DATABASE privacy TO expost_admin")
    assert main(init) == 0
    alice = at_server(ledger.replace("expost_admin@", "alice@"), server)
    with pytest.raises(ep.LedgerError, match=r"a client role needs USAGE on schema expost") as info:
        ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(0), ledger=alice)
    assert "administrator" not in str(info.value)
