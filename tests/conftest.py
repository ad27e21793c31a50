"""Hypothesis profiles: reproducible in CI, searching locally.

CI (the environment variable ``CI`` set, as ``.ci/run`` is run) loads ``ci``: derandomized, so a
run on a commit is the same run every time and a red CI names a real fault of that commit, not
a new random draw; no per-example deadline (the 2-core CI machine runs the suite with other
work). Locally the default profile keeps drawing new examples; a counterexample it finds is
pinned with ``@example`` in the test that found it. ``HYPOTHESIS_PROFILE`` picks one explicitly.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


_LEDGERS = itertools.count()


def pg_ledger_url(server: Any, name: str) -> str:
    """The URL of the ledger ``name`` in the test server's database."""
    uri: str = server.get_uri()
    return f"{uri}{'&' if '?' in uri else '?'}ledger={name}"


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh ledger on each backend: a SQLite file, or a new ledger in the test server."""
    if request.param == "sqlite":
        return str(tmp_path / "budget.sqlite")
    return pg_ledger_url(request.getfixturevalue("pg_server"), f"t{next(_LEDGERS)}_{os.getpid()}")
