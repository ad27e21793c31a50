"""The budget ledger in PostgreSQL, for a budget shared by several machines (psycopg 3).

Same contract as the SQLite ledger (`expost.ledger.base`). One database holds many ledgers in
the schema ``expost`` (`expost.ledger.pg_schema`): each a row of ``expost.ledgers`` (name,
random id, format, schema version, configuration) and its rounds in ``expost.rounds``. Clients
act only through SECURITY DEFINER functions (least privilege: no client can write, alter or
drop the tables); an administrator creates the schema and each ledger once (`PostgresLedger.init`,
``expost ledger init``), and `PostgresLedger.open` opens only an existing ledger unless
``create=True``.

**Locking.** `append` runs one transaction: ``expost.lock_ledger`` (the ledger's advisory
lock, `expost.ledger.pg_schema`), read the rounds committed since the last read, ``decide``,
``expost.append_round``, ``COMMIT``. The lock serialises the writers of one ledger (writers of
other ledgers do not wait), and the read happens after the lock is granted, so under READ
COMMITTED it sees every round committed before: the decision is made on exactly the entries
that precede the write. We chose the lock over SERIALIZABLE with retries because a budget check
is a read-then-insert on one ledger's rounds, which SERIALIZABLE would abort and repeat under
contention (every retry re-runs ``decide``), while the lock simply queues the writers in order;
``append_round`` takes the same lock and numbers the round itself. The server bounds how long
any transaction holds it (the hold limit: a waiting client ends a holder past it).

**Durability.** ``synchronous_commit = on`` for every connection (the one setting a URL cannot
change), so ``COMMIT`` returns only once the round is flushed to the server's write-ahead log;
a round returned by `append` survives a crash of the client, of the server (SIGKILL of the
postmaster) or of the machine. A connection lost mid-transaction rolls back on the server:
nothing is half-written. Every database error is a `LedgerError` naming the ledger (the URL
without its password); a later call reconnects.

Target: ``postgresql://user@host:port/database?ledger=NAME`` (``ledger`` defaults to
``expost``; a name is a lower-case SQL identifier, at most 63 characters). Every other query
parameter is passed to libpq as given (``sslmode``, ``connect_timeout``, ``options``, …): the
library's defaults (``connect_timeout`` and ``lock_timeout`` from ``timeout``) apply only where
the URL, the environment (``PGCONNECT_TIMEOUT``) and the server's settings are silent.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from expost._validation import flag, positive
from expost.errors import (
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
    LedgerNotFound,
)
from expost.ledger.base import (
    ClosesOnExit,
    Decide,
    LedgerEntry,
    StartsAt,
    canonical,
    config_text,
    entry_from_row,
    frozen_json,
    ledger_id_value,
    parse_object,
    record_text,
    valid_kind,
)
from expost.ledger.pg_schema import INSTALL, SCHEMA_VERSION, SERVER_VERSION, UPGRADE
from expost.ledger.pg_target import (
    SCHEMES,
    is_postgres_url,
    ledger_error,
    shown_url,
    split_url,
)
from expost.spendable import Spendable

__all__ = ["SCHEMES", "PostgresLedger", "is_postgres_url", "shown_url"]

_T = TypeVar("_T")
_FORMAT: Final = "expost-ledger"
_LOCK_KEY: Final = 0x65787073  # "exps": the advisory lock held while a ledger is created
_ADVICE: Final = "use another ledger name (?ledger=NAME)"
_INIT: Final = "an administrator creates it with `expost ledger init URL --filter ...`"


class PostgresLedger(ClosesOnExit, StartsAt, Spendable):
    """An open PostgreSQL ledger; open it with `PostgresLedger.open` (or `open_ledger`)."""

    def __init__(
        self, url: str, name: str, shown: str, params: frozenset[str], timeout: float
    ) -> None:
        """Internal: use `PostgresLedger.open`."""
        self._url, self._name, self._shown, self._params = url, name, shown, params
        self._timeout = positive("timeout", timeout)
        self._config: Mapping[str, Any] = {}
        self._id: str | None = None
        self._conn: Any = None
        self._entries: tuple[LedgerEntry, ...] = ()
        self._base = 0  # the index of the first entry read (`start_at`: a checkpoint's)
        self._tokens: dict[int, uuid.UUID] = {}
        self._closed = False

    @classmethod
    def _at(cls, url: str, timeout: float) -> PostgresLedger:
        if not is_postgres_url(url):
            shown = shown_url(url) if isinstance(url, str) else url
            raise InvalidParameter("url", shown, "must start with postgresql:// or postgres://")
        return cls(*split_url(url), timeout)

    @classmethod
    def open(
        cls,
        url: str,
        config: Mapping[str, object],
        *,
        create: bool = False,
        ledger_id: str | None = None,
        timeout: float = 30.0,
        lazy: bool = False,
    ) -> PostgresLedger:
        """Open the existing ledger named in ``url`` (``create=True``: create it, and the
        schema, if missing — needs the administrator's privileges); ``lazy``: read no round
        yet (`start_at`, then `entries`).

        A missing ledger is `LedgerNotFound` (nothing created); an existing one must hold
        exactly this config, else `LedgerMismatch`, and the pinned ``ledger_id`` if given.
        ``timeout`` (seconds) bounds the wait for the connection and for a lock unless the URL
        or the server sets them.
        """
        text = config_text(config)
        pinned = None if ledger_id is None else ledger_id_value(ledger_id)
        flag("create", create)
        ledger = cls._at(url, timeout)
        try:
            if create:
                ledger._run(ledger._install)
                ledger._run(lambda cur: ledger._create(cur, text, exclusive=False))
            stored, stored_id = ledger._run(ledger._header)
            if pinned is not None and stored_id != pinned:
                raise LedgerMismatch(ledger.path, stored_id, pinned, what="id", advice=_ADVICE)
            if stored != text:
                raise LedgerMismatch(ledger.path, stored, text, advice=_ADVICE)
            ledger._config, ledger._id = frozen_json(json.loads(text)), stored_id
            if not lazy:
                ledger._refresh()
        except BaseException:
            ledger.close()
            raise
        return ledger

    @classmethod
    def init(cls, url: str, config: Mapping[str, object], *, timeout: float = 30.0) -> str:
        """Create the ledger named in ``url`` for ``config`` (and the schema, if the database
        has none); its ledger id. An existing ledger is refused (`LedgerError`), unchanged."""
        text = config_text(config)
        ledger = cls._at(url, timeout)
        try:
            ledger._run(ledger._install)
            return ledger._run(lambda cur: ledger._create(cur, text, exclusive=True))
        finally:
            ledger.close()

    @classmethod
    def stored_config(cls, url: str, *, timeout: float = 30.0) -> Mapping[str, Any]:
        """The configuration the ledger named in ``url`` was created for (creates nothing)."""
        reader = cls._at(url, timeout)
        try:
            text, _ = reader._run(reader._header)
        finally:
            reader.close()
        config: Mapping[str, Any] = frozen_json(parse_object(reader.path, "the config", text))
        return config

    @classmethod
    def drop_empty(cls, url: str, *, timeout: float = 30.0) -> None:
        """Delete the ledger named in ``url`` if it holds no rounds (``expost.drop_empty_ledger``,
        the schema owner's); one with rounds is refused (`LedgerError`), unchanged."""
        ledger = cls._at(url, timeout)
        try:
            ledger._run(ledger._header)
            ledger._run(
                lambda cur: cur.execute("SELECT expost.drop_empty_ledger(%s)", (ledger._name,))
            )
        finally:
            ledger.close()

    @classmethod
    def copy_in(
        cls,
        url: str,
        config: Mapping[str, object],
        entries: Sequence[LedgerEntry],
        *,
        timeout: float = 30.0,
    ) -> None:
        """Append ``entries`` (a ledger's, in order) to the ledger named in ``url`` for ``config``,
        created if missing, else empty: all in one transaction, so a refused entry leaves
        nothing behind (not even a created ledger)."""
        text = config_text(config)
        ledger = cls._at(url, timeout)

        def work(cur: Any) -> None:
            ledger._install(cur)
            lid = uuid.UUID(ledger._create(cur, text, exclusive=False))
            stored, _ = ledger._header(cur)
            if stored != text:
                raise LedgerMismatch(ledger.path, stored, text, advice=_ADVICE)
            cur.execute("SELECT expost.lock_ledger(%s, %s)", (ledger._name, lid))
            if ledger._read(cur):
                raise LedgerError(
                    f"{ledger.path!r} already holds rounds: copy only into an empty ledger"
                )
            tokens: dict[int, uuid.UUID] = {}
            for entry in entries:
                record = record_text(entry.record)
                key = _round_of(json.loads(record))
                token = (
                    tokens.pop(key, None) if entry.kind == "settle" and key is not None else None
                )
                index, _, new = ledger._write(cur, lid, entry.kind, record, token)
                if index != entry.index:
                    raise LedgerCorrupted(
                        ledger.path, f"the server numbered round {entry.index} {index}"
                    )
                if key is not None and new is not None:
                    tokens[key] = new

        try:
            ledger._run(work)
        finally:
            ledger.close()

    @property
    def path(self) -> str:
        """The ledger's URL without its password, with the ledger name."""
        return f"{self._shown.split('?', 1)[0]}?ledger={self._name}"

    @property
    def config(self) -> Mapping[str, Any]:
        """The configuration this ledger was created for (deeply read-only)."""
        return self._config

    @property
    def ledger_id(self) -> str | None:
        """The random id the server gave the ledger at its creation."""
        return self._id

    def _connection(self) -> Any:
        if self._closed:
            raise LedgerError(f"ledger {self.path!r} is closed")
        if self._conn is None or self._conn.closed or self._conn.broken:
            import psycopg  # lazy: the optional extra expost[postgres]

            defaults: dict[str, Any] = {}
            if "connect_timeout" not in self._params and "PGCONNECT_TIMEOUT" not in os.environ:
                defaults["connect_timeout"] = max(1, round(self._timeout))
            try:
                conn: Any = psycopg.connect(self._url, **defaults)
            except psycopg.Error as exc:
                raise ledger_error(self.path, exc) from exc
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT source FROM pg_settings WHERE name = 'lock_timeout'")
                    if cur.fetchone()[0] == "default":
                        cur.execute(f"SET lock_timeout = {round(self._timeout * 1000)}")
                    cur.execute("SET synchronous_commit = on")
                conn.commit()
            except psycopg.Error as exc:
                conn.close()
                raise ledger_error(self.path, exc) from exc
            self._conn = conn
        return self._conn

    def _run(self, work: Callable[[Any], _T]) -> _T:
        """``work(cursor)`` in one transaction; database failures become `LedgerError`."""
        import psycopg

        conn = self._connection()
        try:
            with conn.transaction(), conn.cursor() as cur:
                return work(cur)
        except psycopg.Error as exc:
            raise ledger_error(self.path, exc) from exc

    def _header(self, cur: Any) -> tuple[str, str]:
        """(canonical config, ledger id) of the ledger; `LedgerNotFound` if there is none."""
        cur.execute("SELECT to_regnamespace('expost') IS NOT NULL")
        if not cur.fetchone()[0]:
            raise LedgerNotFound(self.path, f"the database has no expost schema; {_INIT}")
        cur.execute(
            "SELECT ledger_id, format, schema_version, config FROM expost.header(%s)",
            (self._name,),
        )
        row = cur.fetchone()
        if row is None:
            raise LedgerNotFound(
                self.path,
                f"no ledger {self._name!r} in this database (a typo in the database or ledger "
                f"name?); {_INIT}, or pass create=True",
            )
        ledger_id, fmt, version, stored = row
        if fmt != _FORMAT or version != SCHEMA_VERSION:
            raise LedgerCorrupted(
                self.path,
                f"format {fmt!r} schema version {version!r}, this library reads "
                f"{_FORMAT!r} version {SCHEMA_VERSION}",
            )
        return canonical("config", parse_object(self.path, "the config", stored)), str(ledger_id)

    def _install(self, cur: Any) -> None:
        """Install the schema if missing, or bring the functions of a schema an earlier release
        installed up to date (`UPGRADE`: its owner only), under the creation lock — taken only
        when there is something to do, so a client holding it cannot stall the usual path."""
        for locked in (False, True):
            cur.execute("SELECT to_regnamespace('expost') IS NULL")
            missing = cur.fetchone()[0]
            if not missing:
                cur.execute("SELECT to_regprocedure('expost.server_version()') IS NULL")
                old = cur.fetchone()[0] or _server_version(cur) < SERVER_VERSION
            if not (missing or old):
                return
            if locked:
                for statement in INSTALL if missing else UPGRADE:
                    cur.execute(statement)
                return
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))

    def _create(self, cur: Any, text: str, *, exclusive: bool) -> str:
        """Create the ledger if missing, under the creation lock (``exclusive``: refuse an
        existing one); its id. An existing ledger is found without the lock."""
        for locked in (False, True):
            cur.execute("SELECT ledger_id FROM expost.header(%s)", (self._name,))
            row = cur.fetchone()
            if row is not None:
                if exclusive:
                    raise LedgerError(f"ledger {self.path!r} already exists: it was left as it is")
                return str(row[0])
            if locked:
                break
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        cur.execute("SELECT expost.create_ledger(%s, %s)", (self._name, text))
        return str(cur.fetchone()[0])

    def read(self, start: int, stop: int) -> tuple[LedgerEntry, ...]:
        """The committed entries with ``start <= index < stop`` (kept nowhere)."""

        def work(cur: Any) -> tuple[LedgerEntry, ...]:
            cur.execute(
                "SELECT id, kind, record, created FROM expost.read_rounds(%s, %s, %s)",
                (self._name, start, stop),
            )
            return tuple(entry_from_row(self.path, tuple(row)) for row in cur.fetchall())

        return self._run(work)

    def checkpoints(self, latest: bool = False) -> tuple[tuple[int, dict[str, Any]], ...]:
        """Every checkpoint (``latest``: the last only) as (the number of entries it covers,
        its state), oldest first: each one the server confirmed (``expost.write_checkpoint``)."""

        def work(cur: Any) -> tuple[tuple[int, dict[str, Any]], ...]:
            cur.execute(
                "SELECT entry, state FROM expost.read_checkpoints(%s, %s)", (self._name, latest)
            )
            rows = cur.fetchall()
            return tuple((int(e), parse_object(self.path, f"checkpoint {e}", t)) for e, t in rows)

        return self._run(work)

    def _write_checkpoint(self, decide: Callable[[tuple[LedgerEntry, ...]], object]) -> None:
        """Under the ledger's lock: re-read, ``state = decide(entries)`` (None: none), then
        ``expost.write_checkpoint`` of every entry read, which stores it only if the server
        confirms it (`expost.ledger.pg_checkpoints`; else `LedgerRefused`)."""
        lid = uuid.UUID(str(self._id))

        def work(cur: Any) -> None:
            cur.execute("SELECT expost.lock_ledger(%s, %s)", (self._name, lid))
            self._entries = self._read(cur)
            state = decide(self._entries)
            if state is not None:
                cur.execute(
                    "SELECT expost.write_checkpoint(%s, %s, %s, %s)",
                    (
                        self._name,
                        lid,
                        self._base + len(self._entries),
                        canonical("checkpoint", state),
                    ),
                )

        self._run(work)

    def _read(self, cur: Any) -> tuple[LedgerEntry, ...]:
        start = self._base + len(self._entries)
        cur.execute(
            "SELECT id, kind, record, created FROM expost.read_rounds(%s, %s)", (self._name, start)
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
        A session ledger's ``settle`` presents the token its ``reserve`` got from the server.
        """
        valid_kind(kind)
        lid = uuid.UUID(str(self._id))

        def write(cur: Any) -> tuple[tuple[LedgerEntry, ...], LedgerEntry, int | None, Any]:
            cur.execute("SELECT expost.lock_ledger(%s, %s)", (self._name, lid))
            entries = self._read(cur)
            text = record_text(decide(entries))
            key = _round_of(json.loads(text))
            token = self._tokens.get(key) if kind == "settle" and key is not None else None
            index, created, new_token = self._write(cur, lid, kind, text, token)
            if index != self._base + len(entries):
                raise LedgerCorrupted(
                    self.path, f"the server numbered round {self._base + len(entries)} {index}"
                )
            return entries, entry_from_row(self.path, (index, kind, text, created)), key, new_token

        entries, entry, key, new_token = self._run(write)
        if key is not None and new_token is not None:
            self._tokens[key] = new_token
        elif key is not None and kind == "settle":
            self._tokens.pop(key, None)
        self._entries = (*entries, entry)
        return entry

    def _write(
        self, cur: Any, lid: uuid.UUID, kind: str, text: str, token: uuid.UUID | None
    ) -> tuple[int, float, uuid.UUID | None]:
        """``expost.append_round``: (the entry's id, its time, a reservation's settle token)."""
        cur.execute(
            "SELECT id, created, token FROM expost.append_round(%s, %s, %s, %s, %s)",
            (self._name, lid, kind, text, token),
        )
        index, created, new_token = cur.fetchone()
        return index, created, new_token

    def close(self) -> None:
        """Close the connection (idempotent); committed rounds are already durable."""
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._entries)} rounds read"
        return f"PostgresLedger({self.path!r}, {state})"


def _server_version(cur: Any) -> int:
    cur.execute("SELECT expost.server_version()")
    return int(cur.fetchone()[0])


def _round_of(record: object) -> int | None:
    """The session round a record belongs to (its ``round``), if it names one."""
    value = record.get("round") if isinstance(record, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
