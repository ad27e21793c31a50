"""The session's ledger record format: what `PrivateSession` writes, and how it is read back.

A session ledger's configuration is ``{"format": FORMAT, "filter": describe(filter)}``; each
round is a ``reserve`` entry ``{"round": k, "mechanism": name, "cost": encode(request)}``
committed before the round runs and a ``settle`` entry ``{"round": k, "cost":
encode(realised)}`` committed before its result is returned (ARCHITECTURE "Filters guard
budgets"); `expost.ledger.replay.Replay` turns the entries back into the filter they imply. The classes a record
may name are listed explicitly: costs by the table of kinds (`expost.filters.kinds.KINDS`, which
also decodes the records of older formats, e.g. ``SubsampledGaussianCost``), filters and values
in `DESCRIBABLE`: a ledger never makes this module import anything by a name read from disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from expost.errors import InvalidParameter, LedgerCorrupted, LedgerMismatch
from expost.filters import (
    Cost,
    PrivacyFilter,
)
from expost.filters.kinds import decode_cost, encode_cost
from expost.ledger.base import LedgerBackend
from expost.ledger.descriptions import (
    COSTS,
    DESCRIBABLE,
    configuration,
    describe,
    filter_from_description,
)
from expost.ledger.targets import init_target, open_ledger

__all__ = [
    "COSTS",
    "DESCRIBABLE",
    "FORMAT",
    "OLD_FORMATS",
    "configuration",
    "decode",
    "describe",
    "encode",
    "filter_from_description",
    "init_ledger",
    "open_session_ledger",
    "session_config",
]

FORMAT: Final = "expost-session/4"  # /4: the table of kinds (PoissonSampled, PairCost, ...)
OLD_FORMATS: Final = ("expost-session/1", "expost-session/2", "expost-session/3")
"""Formats whose records decode as they did (a subset of /4's, read through the table)."""


def encode(cost: Cost) -> dict[str, Any]:
    """A cost as a record: its kind's name as ``type`` and its fields (`encode_cost`)."""
    return encode_cost(cost)


def decode(record: Mapping[str, Any], path: Path | str) -> Cost:
    """The cost a record describes, or `LedgerCorrupted` naming the ledger."""
    if not isinstance(record, Mapping) or str(record.get("type")) not in COSTS:
        raise LedgerCorrupted(path, f"unknown cost record {record!r}")
    try:
        return decode_cost(record)  # type: ignore[no-any-return]  # a kind's constructor
    except (TypeError, ValueError, InvalidParameter) as err:
        raise LedgerCorrupted(path, f"bad cost record {dict(record)!r}: {err}") from err


def session_config(filter: PrivacyFilter) -> dict[str, Any]:
    """The configuration a session ledger for ``filter`` holds."""
    return {"format": FORMAT, "filter": describe(filter)}


def init_ledger(
    target: str | os.PathLike[str], filter: PrivacyFilter, *, timeout: float = 30.0
) -> str:
    """Create the session ledger for ``filter`` at ``target`` (a SQLite path or a
    ``postgresql://…?ledger=NAME`` URL); its ledger id, to pin with
    ``PrivateSession(..., ledger_id=...)``. An existing ledger is refused and left as it is."""
    if not isinstance(filter, PrivacyFilter):
        raise InvalidParameter("filter", filter, "must be a privacy filter")
    if filter.rounds:
        raise InvalidParameter("filter", filter, "must have no recorded rounds")
    return init_target(target, session_config(filter), timeout=timeout)


def open_session_ledger(
    target: str | os.PathLike[str],
    filter: PrivacyFilter,
    *,
    create: bool = False,
    ledger_id: str | None = None,
) -> LedgerBackend:
    """The session ledger for ``filter``; a ledger of an older format (its costs decode and
    price as they did) opens under its own format, any other config is a `LedgerMismatch`."""
    config = session_config(filter)
    try:
        return open_ledger(target, config, create=create, ledger_id=ledger_id, lazy=True)
    except LedgerMismatch as err:
        stored = json.loads(err.stored) if err.what == "config" else None
        if (
            isinstance(stored, dict)
            and stored.get("format") in (FORMAT, *OLD_FORMATS)
            and _same(stored.get("filter"), json.loads(json.dumps(config["filter"])))
        ):
            return open_ledger(target, stored, create=create, ledger_id=ledger_id, lazy=True)
        raise


def _same(stored: object, current: object) -> bool:
    """Whether a stored description is the current one, read through today's codec (an old
    record of a `PLDFilter`'s mechanism, ``SubsampledGaussianCost``, is the same round)."""
    stored = configuration(stored)
    if stored == current:
        return True
    try:
        rebuilt = describe(filter_from_description(stored))  # type: ignore[arg-type]  # a non-mapping raises (caught)
    except (InvalidParameter, TypeError, ValueError):
        return False
    return bool(json.loads(json.dumps(rebuilt)) == current)
