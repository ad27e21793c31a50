"""Which backend a ledger target names: a ``postgresql://`` URL or a SQLite file path.

A string with another URL scheme (``mysql://…``, ``sqlite:///…``) is refused by name rather than
taken for a file path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Final

from expost.errors import InvalidParameter
from expost.ledger.postgres import PostgresLedger, is_postgres_url
from expost.ledger.sqlite import Ledger

__all__ = ["init_target", "open_ledger", "stored_config"]

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


def open_ledger(
    target: str | os.PathLike[str],
    config: Mapping[str, object],
    *,
    create: bool = False,
    ledger_id: str | None = None,
    timeout: float = 30.0,
) -> Ledger | PostgresLedger:
    """Open the existing ledger at ``target`` for ``config`` (``create=True``: create it if it
    is missing): a ``postgresql://`` URL is a `PostgresLedger`, a path a SQLite `Ledger`."""
    if _is_postgres(target):
        assert isinstance(target, str)  # _is_postgres checks it
        return PostgresLedger.open(
            target, config, create=create, ledger_id=ledger_id, timeout=timeout
        )
    return Ledger.open(target, config, create=create, ledger_id=ledger_id, timeout=timeout)


def init_target(
    target: str | os.PathLike[str], config: Mapping[str, object], *, timeout: float = 30.0
) -> str:
    """Create a new ledger at ``target`` for ``config`` (an existing one is refused); its id."""
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
