"""The budget ledger in PostgreSQL, for a budget shared by several machines (psycopg 3).

Same contract as the SQLite ledger (`expost.ledger.base`). One database holds many ledgers,
each a row of ``expost_ledgers`` (name, format, schema version, configuration) and its rounds in
``expost_rounds`` (ledger, id, kind, record, created); triggers make both append-only (the
server refuses UPDATE and DELETE), and a second session must bring the same configuration
(`LedgerMismatch`).

**Locking.** `append` runs one transaction: ``SELECT … FOR UPDATE`` on the ledger's row, read
the rounds committed since the last read, ``decide``, ``INSERT``, ``COMMIT``. The row lock
serialises the writers of one ledger (writers of other ledgers do not wait), and the read
happens after the lock is granted, so under READ COMMITTED it sees every round committed
before: the decision is made on exactly the entries that precede the write. We chose the row
lock over SERIALIZABLE with retries because a budget check is a read-then-insert on one row's
rounds, which SERIALIZABLE would abort and repeat under contention (every retry re-runs
``decide``), while the lock simply queues the writers in order; the primary key (ledger, id)
would refuse a second round with the same id even if the lock were bypassed.

**Durability.** ``synchronous_commit = on`` for the session, so ``COMMIT`` returns only once
the round is flushed to the server's write-ahead log; a round returned by `append` survives a
crash of the client, of the server (SIGKILL of the postmaster) or of the machine. A connection
lost mid-transaction rolls back on the server: nothing is half-written. Every database error is
a `LedgerError` naming the ledger (the URL without its password); a later call reconnects.

Target: ``postgresql://user@host:port/database?ledger=NAME`` (``ledger`` defaults to
``expost``; a name is a lower-case SQL identifier, at most 63 characters). Every other query
parameter is passed to libpq (``sslmode``, ``connect_timeout``, …).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from expost._validation import positive
from expost.errors import InvalidParameter, LedgerCorrupted, LedgerError, LedgerMismatch
from expost.ledger.base import (
    ClosesOnExit,
    Decide,
    LedgerEntry,
    canonical,
    entry_from_row,
    frozen_json,
    parse_object,
)

__all__ = ["SCHEMES", "PostgresLedger", "is_postgres_url"]

_T = TypeVar("_T")
SCHEMES: Final = ("postgresql://", "postgres://")
SCHEMA_VERSION: Final = 1
_FORMAT: Final = "expost-ledger"
_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_LOCK_KEY: Final = 0x65787073  # "exps": the advisory lock held while the tables are created
_COLUMNS: Final = {
    "expost_ledgers": ("name", "format", "schema_version", "config"),
    "expost_rounds": ("ledger", "id", "kind", "record", "created"),
}
_SCHEMA: Final = (
    (
        "CREATE TABLE IF NOT EXISTS expost_ledgers (name TEXT PRIMARY KEY, format TEXT NOT NULL,"
        " schema_version INTEGER NOT NULL, config TEXT NOT NULL)"
    ),
    (
        "CREATE TABLE IF NOT EXISTS expost_rounds (ledger TEXT NOT NULL REFERENCES expost_ledgers,"
        " id INTEGER NOT NULL, kind TEXT NOT NULL, record TEXT NOT NULL,"
        " created DOUBLE PRECISION NOT NULL, PRIMARY KEY (ledger, id))"
    ),
    (
        "CREATE OR REPLACE FUNCTION expost_append_only() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'expost ledger tables are append-only'; END $$"
    ),
    *(
        f"CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE"
        f" ON {table} FOR EACH STATEMENT EXECUTE FUNCTION expost_append_only()"
        for table in ("expost_ledgers", "expost_rounds")
    ),
)


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL ledger (a ``postgresql://`` URL)."""
    return isinstance(target, str) and target.startswith(SCHEMES)


def _split(url: str) -> tuple[str, str, str]:
    """(libpq URL without ``ledger``, ledger name, URL for messages without the password)."""
    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    if not database:
        raise InvalidParameter("ledger", _shown(url), "must name a database: postgresql://…/DB")
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = [v for k, v in query if k == "ledger"]
    name = names[-1] if names else "expost"
    if not _NAME.fullmatch(name):
        raise InvalidParameter(
            "ledger", name, "must be a lower-case identifier: [a-z_][a-z0-9_]*, at most 63"
        )
    rest = urlencode([(k, v) for k, v in query if k != "ledger"])
    return urlunsplit(parts._replace(query=rest)), name, _shown(url)


def _shown(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _error(where: str, exc: Exception) -> LedgerError:
    return LedgerError(f"PostgreSQL ledger {where!r} could not be used: {exc}".strip())


class PostgresLedger(ClosesOnExit):
    """An open PostgreSQL ledger; create it with `PostgresLedger.open` (or `open_ledger`)."""

    def __init__(self, url: str, name: str, shown: str, config: Mapping[str, Any]) -> None:
        """Internal: use `PostgresLedger.open`."""
        self._url, self._name, self._shown = url, name, shown
        self._config = config
        self._conn: Any = None
        self._entries: tuple[LedgerEntry, ...] = ()
        self._closed = False
        self._timeout = 30.0

    @classmethod
    def open(
        cls, url: str, config: Mapping[str, object], *, timeout: float = 30.0
    ) -> PostgresLedger:
        """Open the ledger named in ``url``, creating its tables and row if they are missing.

        An existing ledger must hold exactly this config, else `LedgerMismatch`; tables that
        are not an expost ledger's (altered by hand) raise `LedgerCorrupted` and are left as
        they are. ``timeout`` (seconds) bounds the wait for the connection and for a lock.
        """
        if not is_postgres_url(url):
            raise InvalidParameter("url", url, "must start with postgresql:// or postgres://")
        libpq, name, shown = _split(url)
        text = canonical("config", config)
        ledger = cls(libpq, name, shown, frozen_json(json.loads(text)))
        ledger._timeout = positive("timeout", timeout)
        try:
            ledger._create(text)
            ledger._refresh()
        except BaseException:
            ledger.close()
            raise
        return ledger

    @classmethod
    def stored_config(cls, url: str, *, timeout: float = 30.0) -> Mapping[str, Any]:
        """The configuration the ledger named in ``url`` was created for (creates nothing)."""
        if not is_postgres_url(url):
            raise InvalidParameter("url", url, "must start with postgresql:// or postgres://")
        libpq, name, shown = _split(url)
        reader = cls(libpq, name, shown, {})
        reader._timeout = positive("timeout", timeout)

        def read(cur: Any) -> object:
            cur.execute("SELECT to_regclass('expost_ledgers') IS NOT NULL")
            if not cur.fetchone()[0]:
                return None
            cur.execute("SELECT config FROM expost_ledgers WHERE name = %s", (name,))
            row = cur.fetchone()
            return None if row is None else row[0]

        try:
            text = reader._run(read)
        finally:
            reader.close()
        if text is None:
            raise LedgerError(f"there is no ledger {reader.path!r}")
        config: Mapping[str, Any] = frozen_json(
            parse_object(reader.path, "the stored config", text)
        )
        return config

    @property
    def path(self) -> str:
        """The ledger's URL without its password, with the ledger name."""
        return f"{self._shown.split('?', 1)[0]}?ledger={self._name}"

    @property
    def config(self) -> Mapping[str, Any]:
        """The configuration this ledger was created for (deeply read-only)."""
        return self._config

    def _connection(self) -> Any:
        if self._closed:
            raise LedgerError(f"ledger {self.path!r} is closed")
        if self._conn is None or self._conn.closed or self._conn.broken:
            import psycopg  # lazy: the optional extra expost[postgres]

            try:
                self._conn = psycopg.connect(
                    self._url,
                    connect_timeout=max(1, round(self._timeout)),
                    options=(
                        f"-c synchronous_commit=on -c lock_timeout={round(self._timeout * 1000)}"
                    ),
                )
            except psycopg.Error as exc:
                raise _error(self.path, exc) from exc
        return self._conn

    def _run(self, work: Callable[[Any], _T]) -> _T:
        """``work(cursor)`` in one transaction; database failures become `LedgerError`."""
        import psycopg

        conn = self._connection()
        try:
            with conn.transaction(), conn.cursor() as cur:
                return work(cur)
        except psycopg.Error as exc:
            raise _error(self.path, exc) from exc

    def _create(self, text: str) -> None:
        def create(cur: Any) -> None:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            for statement in _SCHEMA:
                cur.execute(statement)
            self._check_tables(cur)
            cur.execute(
                "INSERT INTO expost_ledgers (name, format, schema_version, config)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (self._name, _FORMAT, SCHEMA_VERSION, text),
            )
            cur.execute(
                "SELECT format, schema_version, config FROM expost_ledgers WHERE name = %s",
                (self._name,),
            )
            fmt, version, stored = cur.fetchone()
            if fmt != _FORMAT or version != SCHEMA_VERSION:
                raise LedgerCorrupted(self.path, f"format {fmt!r} version {version!r}")
            stored_text = canonical("stored config", parse_object(self.path, "config", stored))
            if stored_text != text:
                raise LedgerMismatch(self.path, stored_text, text)

        self._run(create)

    def _check_tables(self, cur: Any) -> None:
        for table, columns in _COLUMNS.items():
            cur.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = %s"
                " ORDER BY ordinal_position",
                (table,),
            )
            found = tuple(row[0] for row in cur.fetchall())
            if found != columns:
                raise LedgerCorrupted(
                    self.path, f"table {table!r} has columns {found}, expected {columns}"
                )

    def _read(self, cur: Any) -> tuple[LedgerEntry, ...]:
        start = len(self._entries)
        cur.execute(
            "SELECT id, kind, record, created FROM expost_rounds"
            " WHERE ledger = %s AND id >= %s ORDER BY id",
            (self._name, start),
        )
        new = tuple(entry_from_row(self.path, tuple(row)) for row in cur.fetchall())
        for expected, entry in enumerate(new, start):
            if entry.index != expected:
                raise LedgerCorrupted(self.path, f"round {expected} is missing")
        return self._entries + new

    def _refresh(self) -> tuple[LedgerEntry, ...]:
        self._entries = self._run(self._read)
        return self._entries

    def entries(self) -> tuple[LedgerEntry, ...]:
        """All committed rounds, in order, including those appended by other clients."""
        return self._refresh()

    def append(self, kind: str, decide: Decide) -> LedgerEntry:
        """Under the ledger row's lock: re-read, ``record = decide(entries)``, commit.

        The round is durably committed (synchronous commit) before this returns. If ``decide``
        raises, the transaction rolls back, nothing is written and the exception propagates.
        """
        if not isinstance(kind, str) or not kind:
            raise InvalidParameter("kind", kind, "must be a non-empty string")

        def write(cur: Any) -> tuple[tuple[LedgerEntry, ...], LedgerEntry]:
            cur.execute("SELECT name FROM expost_ledgers WHERE name = %s FOR UPDATE", (self._name,))
            if cur.fetchone() is None:
                raise LedgerCorrupted(self.path, "its row in expost_ledgers is gone")
            entries = self._read(cur)
            text = canonical("record", decide(entries))
            row = (len(entries), kind, text, time.time())
            cur.execute(
                "INSERT INTO expost_rounds (ledger, id, kind, record, created)"
                " VALUES (%s, %s, %s, %s, %s)",
                (self._name, *row),
            )
            return entries, entry_from_row(self.path, row)

        entries, entry = self._run(write)
        self._entries = (*entries, entry)
        return entry

    def close(self) -> None:
        """Close the connection (idempotent); committed rounds are already durable."""
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._entries)} rounds read"
        return f"PostgresLedger({self.path!r}, {state})"
