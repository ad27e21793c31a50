"""The PostgreSQL ledger's target and its errors: the URL (the ledger's name in it, the password
never shown) and a database error as the `LedgerError` a caller sees.

Target: ``postgresql://user@host:port/database?ledger=NAME`` (`expost.ledger.postgres`); a
failure of the server's own checks is `LedgerRefused` (written again, it would be refused
again), any other failure (access, connection, lock) a `LedgerError`.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from expost.errors import InvalidParameter, LedgerError, LedgerRefused

__all__ = ["SCHEMES", "is_postgres_url", "ledger_error", "shown_url", "split_url"]

SCHEMES: Final = ("postgresql://", "postgres://")
_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL ledger (a ``postgresql://`` URL)."""
    return isinstance(target, str) and target.startswith(SCHEMES)


def split_url(url: str) -> tuple[str, str, str, frozenset[str]]:
    """(libpq URL without ``ledger``, ledger name, URL for messages without the password,
    the names of the URL's other query parameters)."""
    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    if not database:
        raise InvalidParameter("ledger", shown_url(url), "must name a database: postgresql://…/DB")
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = [v for k, v in query if k == "ledger"]
    name = names[-1] if names else "expost"
    if not _NAME.fullmatch(name):
        raise InvalidParameter(
            "ledger", name, "must be a lower-case identifier: [a-z_][a-z0-9_]*, at most 63"
        )
    rest = [(k, v) for k, v in query if k != "ledger"]
    libpq = urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
    return libpq, name, shown_url(url), frozenset(k for k, _ in rest)


def shown_url(url: str) -> str:
    """``url`` as messages show it: the password (in the address or a ``password`` query
    parameter) replaced by ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username}:***@{netloc.rsplit('@', 1)[-1]}"
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "password" for k, _ in query):
        hidden = urlencode(
            [(k, "***" if k == "password" else v) for k, v in query], safe="*", quote_via=quote
        )
        return urlunsplit(parts._replace(netloc=netloc, query=hidden))
    return urlunsplit(parts._replace(netloc=netloc))


_CLIENT: Final = "USAGE on schema expost and EXECUTE on its functions (client_grants)"
_HINTS: Final = (  # insufficient_privilege: which role lacks what, by PostgreSQL's message
    ("permission denied for (schema expost|function)", f"a client role needs {_CLIENT}"),
    ("permission denied (for database|to create)", "the administrator needs CREATE on the DB"),
    ("must be owner", "only the role that owns schema expost may do this"),
)


_REFUSALS: Final = ("P0001", "22", "23", "54")
"""The SQLSTATEs (or their classes) of the server's own checks refusing a record: a raised
exception, a data error, a constraint, a limit; sent again, it would be refused again."""


def ledger_error(where: str, exc: Exception) -> LedgerError:
    """``exc`` as a `LedgerError` naming the ledger; `LedgerRefused` where the server's checks
    refused the record (``expost: no reservation of round …`` among them), not the access."""
    hint, said = "", str(exc)
    state = str(getattr(exc, "sqlstate", None) or "")
    if state == "42501" and "owner of schema expost" not in said:
        why = next((h for p, h in _HINTS if re.search(p, said)), "a role lacks a privilege")
        hint = f" ({why}: docs/sharing-a-budget.md, 'Deployment')"
    message = f"PostgreSQL ledger {where!r} could not be used: {said}{hint}".strip()
    if state.startswith(_REFUSALS) or (state == "42501" and "expost: no reservation" in said):
        return LedgerRefused(message)
    return LedgerError(message)
