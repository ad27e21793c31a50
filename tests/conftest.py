"""Hypothesis profiles: reproducible in CI, searching locally.

CI (the environment variable ``CI`` set, as ``.ci/run`` is run) loads ``ci``: derandomized, so a
run on a commit is the same run every time and a red CI names a real fault of that commit, not
a new random draw; no per-example deadline (the 2-core CI machine runs the suite with other
work). Locally the default profile keeps drawing new examples; a counterexample it finds is
pinned with ``@example`` in the test that found it. ``HYPOTHESIS_PROFILE`` picks one explicitly.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("default", print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A throwaway PostgreSQL (pgserver: its own binaries, a unix socket, no root, no network)
    for the whole test session (one per xdist worker); a skip, with the reason, where it cannot
    run. Its data directory lies outside pytest's temporary tree, which pytest keeps private
    (0700) and pgserver's server user (when run as root) could not reach on a restart."""
    pgserver = pytest.importorskip("pgserver", reason="the postgres extra is not installed")
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    pgdata = Path(tempfile.mkdtemp(prefix="expost-pg-"))
    try:
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:  # noqa: BLE001  # any failure to start the server: a skip, with why
        shutil.rmtree(pgdata, ignore_errors=True)
        pytest.skip(f"pgserver could not start PostgreSQL here: {exc}")
    yield server
    server.cleanup()
    shutil.rmtree(pgdata, ignore_errors=True)


class _DistroServer:
    """A throwaway cluster of the distribution's PostgreSQL (its own data directory and unix
    socket, trust authentication, no TCP), shaped like pgserver's server for the tests."""

    def __init__(self, bindir: Path, pgdata: Path, user: str | None) -> None:
        self.bindir, self.pgdata, self.user = bindir, pgdata, user
        data = pgdata / "data"
        run = functools.partial(subprocess.run, check=True, capture_output=True, user=user)
        run([bindir / "initdb", "-D", data, "--auth=trust", "-U", "postgres", "-E", "utf8"])
        options = f"-k {pgdata} -c listen_addresses=''"
        run([bindir / "pg_ctl", "-D", data, "-l", pgdata / "log", "-w", "-o", options, "start"])

    def get_uri(self) -> str:
        return f"postgresql://postgres:@/postgres?host={self.pgdata}"

    def cleanup(self) -> None:
        subprocess.run(
            [self.bindir / "pg_ctl", "-D", self.pgdata / "data", "-m", "fast", "-w", "stop"],
            capture_output=True,
            check=False,  # stopping is best effort: its data directory is removed next
            user=self.user,
        )


@pytest.fixture(scope="session")
def distro_pg_server() -> Iterator[Any]:
    """The distribution's PostgreSQL server (Debian's ``postgresql`` package, its binaries in
    /usr/lib/postgresql/N/bin; .ci/run installs it where it can), started throwaway for the
    test session; a skip, with the reason, where it is not installed or cannot start. As root it
    runs as the package's system user ``postgres`` (initdb refuses root)."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    found = sorted(
        (int(p.parent.parent.name), p.parent)
        for p in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")
        if p.parent.parent.name.isdigit()
    )
    if not found:
        pytest.skip("no distribution PostgreSQL server (apt-get install postgresql)")
    user = None
    pgdata = Path(tempfile.mkdtemp(prefix="expost-distro-pg-"))
    if os.geteuid() == 0:
        import pwd

        try:
            entry = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("the distribution's server has no system user postgres to run as")
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
        user = "postgres"
    try:
        server = _DistroServer(found[-1][1], pgdata, user)
    except (OSError, subprocess.CalledProcessError) as exc:
        shutil.rmtree(pgdata, ignore_errors=True)
        detail = getattr(exc, "stderr", b"") or b""
        pytest.skip(f"the distribution's PostgreSQL could not start: {exc} {detail[-300:]!r}")
    yield server
    server.cleanup()
    shutil.rmtree(pgdata, ignore_errors=True)


_LEDGERS = itertools.count()


def pg_ledger_url(server: Any, name: str) -> str:
    """The URL of the ledger ``name`` in the test server's database."""
    uri: str = server.get_uri()
    return f"{uri}{'&' if '?' in uri else '?'}ledger={name}"


CLIENT_ROLE = "expost_client"


def as_role(url: str, role: str) -> str:
    """``url`` with its user replaced by ``role`` (no password: the test server trusts local)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rsplit('@', 1)[-1]}"))


@pytest.fixture(scope="session")
def pg_client(pg_server: Any) -> str:
    """The test server's URL as a client role with the documented grants (docs/sharing-a-budget.md,
    "Deployment"), plus ``expost.create_ledger`` so it can start the tests' fresh ledgers; the
    schema installed by the administrator (the server's superuser)."""
    import psycopg

    from expost.ledger.pg_schema import client_grants
    from expost.ledger.postgres import PostgresLedger

    PostgresLedger.open(
        pg_ledger_url(pg_server, "installed"), {"installed": True}, create=True
    ).close()
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (CLIENT_ROLE,)).fetchone():
            conn.execute(f"CREATE ROLE {CLIENT_ROLE} LOGIN")
        for grant in client_grants(CLIENT_ROLE):
            conn.execute(grant)
        conn.execute(f"GRANT EXECUTE ON FUNCTION expost.create_ledger(text, text) TO {CLIENT_ROLE}")
    return as_role(pg_server.get_uri(), CLIENT_ROLE)


@pytest.fixture(params=["sqlite", "postgres", "postgres-client"])
def ledger_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh ledger on each backend: a SQLite file, or a new ledger in the test server, opened
    by its superuser or by a client role with only the documented grants."""
    if request.param == "sqlite":
        return str(tmp_path / "budget.sqlite")
    name = f"t{next(_LEDGERS)}_{os.getpid()}"
    if request.param == "postgres-client":
        uri: str = request.getfixturevalue("pg_client")
        return f"{uri}{'&' if '?' in uri else '?'}ledger={name}"
    return pg_ledger_url(request.getfixturevalue("pg_server"), name)
