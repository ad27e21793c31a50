"""Which backend a ledger target names: a ``postgresql://`` URL or a SQLite file path.

A string with another URL scheme (``mysql://…``, ``sqlite:///…``) is refused by name rather than
taken for a file path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Final

from expost.errors import InvalidParameter, LedgerCorrupted, LedgerError
from expost.ledger.descriptions import configuration, filter_from_description
from expost.ledger.pg_checks import PRICED_FILTERS, part_fault
from expost.ledger.postgres import PostgresLedger, is_postgres_url
from expost.ledger.sqlite import Ledger

__all__ = ["delete_empty", "init_target", "open_ledger", "servable", "stored_config"]

_URL: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def _is_postgres(target: object) -> bool:
    """Whether ``target`` is a PostgreSQL URL; InvalidParameter for a URL of another scheme."""
    if is_postgres_url(target):
        return True
    if isinstance(target, str) and (match := _URL.match(target)):
        raise InvalidParameter(
            "ledger",
            f"{match.group(1)}://{target[match.end() :].split('@')[-1]}",  # no credentials
            f"the scheme {match.group(1)!r} is not supported: a ledger is a SQLite file path "
            "or a postgresql:// URL",
        )
    return False


def servable(target: object, config: Mapping[str, Any]) -> None:
    """`InvalidParameter` for a session ledger no client could open (a filter description the
    library cannot build, such as a `ConcurrentFilter` holding a `PLDFilter`), on either
    backend, or one the PostgreSQL server could not price (an `RDPFilter`'s: a minimum over
    orders it does not compute): refused before anything is created, naming what to use (the
    server refuses both too)."""
    described = config.get("filter")
    kind = described.get("type") if isinstance(described, Mapping) else None
    session = str(config.get("format", "")).startswith("expost-session/")
    if (fault := part_fault(described)) is not None:
        raise InvalidParameter("filter", kind, fault)
    if session and isinstance(described, Mapping):
        plain = configuration(described)
        if isinstance(plain, Mapping):
            filter_from_description(plain)
    if session and kind not in PRICED_FILTERS and _is_postgres(target):
        raise InvalidParameter(
            "filter",
            kind,
            "cannot be kept in a PostgreSQL ledger: the server prices only "
            f"{', '.join(PRICED_FILTERS)} rounds; use a SQLite file",
        )


def open_ledger(
    target: str | os.PathLike[str],
    config: Mapping[str, object],
    *,
    create: bool = False,
    ledger_id: str | None = None,
    timeout: float = 30.0,
    lazy: bool = False,
) -> Ledger | PostgresLedger:
    """Open the existing ledger at ``target`` for ``config`` (``create=True``: create it if it
    is missing): a ``postgresql://`` URL is a `PostgresLedger`, a path a SQLite `Ledger`
    (``lazy``: reading no round yet, so that a replay may start at a checkpoint)."""
    if create:
        servable(target, config)
    if _is_postgres(target):
        assert isinstance(target, str)  # _is_postgres checks it
        return PostgresLedger.open(
            target, config, create=create, ledger_id=ledger_id, timeout=timeout, lazy=lazy
        )
    return Ledger.open(
        target, config, create=create, ledger_id=ledger_id, timeout=timeout, lazy=lazy
    )


def init_target(
    target: str | os.PathLike[str], config: Mapping[str, object], *, timeout: float = 30.0
) -> str:
    """Create a new ledger at ``target`` for ``config`` (an existing one is refused); its id."""
    servable(target, config)
    if _is_postgres(target):
        assert isinstance(target, str)  # _is_postgres checks it
        return PostgresLedger.init(target, config, timeout=timeout)
    return Ledger.init(target, config, timeout=timeout)


def stored_config(target: str | os.PathLike[str]) -> Mapping[str, Any]:
    """The configuration of the existing ledger at ``target`` (either backend; creates nothing)."""
    if _is_postgres(target):
        assert isinstance(target, str)  # _is_postgres checks it
        return PostgresLedger.stored_config(target)
    return Ledger.stored_config(target)


def delete_empty(target: str | os.PathLike[str]) -> None:
    """Delete the ledger at ``target`` if it holds no rounds (an empty ledger, e.g. left by a
    mistaken ``init``); one with rounds is refused, unchanged. On PostgreSQL this needs the
    schema owner's role (``expost.drop_empty_ledger``)."""
    if _is_postgres(target):
        assert isinstance(target, str)  # _is_postgres checks it
        PostgresLedger.drop_empty(target)
        return
    config = Ledger.stored_config(target)
    with Ledger.open(target, config) as ledger:
        if ledger.entries():
            raise LedgerError(f"ledger {str(ledger.path)!r} holds rounds: it is kept")
        path = ledger.path
    try:
        os.remove(path)
    except OSError as exc:
        raise LedgerCorrupted(path, f"it could not be removed ({exc})") from exc
