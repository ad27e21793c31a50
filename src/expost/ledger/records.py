"""The session's ledger record format: what `PrivateSession` writes, and how it is read back.

A session ledger's configuration is ``{"format": FORMAT, "filter": describe(filter)}``; each
round is a ``reserve`` entry ``{"round": k, "mechanism": name, "cost": encode(request)}``
committed before the round runs and a ``settle`` entry ``{"round": k, "cost":
encode(realised)}`` committed before its result is returned (ARCHITECTURE "Filters guard
budgets"). `Replay` turns the entries back into the filter they imply. The classes a record
may name are listed here explicitly (`COSTS`, `DESCRIBABLE`): a ledger never makes this
module import anything by a name read from disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from expost.errors import (
    ExpostError,
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
)
from expost.filters import (
    ApproxDPFilter,
    BoundedRangeCost,
    BrownianCost,
    BrownianFilter,
    ConcurrentFilter,
    Cost,
    DPCost,
    ExPostCost,
    ExPostFilter,
    GaussianCost,
    GaussianDPFilter,
    LaplaceCost,
    PLDFilter,
    PrivacyFilter,
    RDPFilter,
    RenyiFilter,
    SubsampledGaussianCost,
    UnifiedFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.guarantees import ZCDP, ApproxDP, GaussianDP, PureDP
from expost.ledger.base import LedgerBackend, LedgerEntry
from expost.ledger.targets import init_target, open_ledger

__all__ = [
    "COSTS",
    "DESCRIBABLE",
    "FORMAT",
    "OLD_FORMATS",
    "Replay",
    "configuration",
    "decode",
    "describe",
    "encode",
    "filter_from_description",
    "init_ledger",
    "open_session_ledger",
    "session_config",
]

COSTS: Final[Mapping[str, type[Cost]]] = {
    c.__name__: c
    for c in (
        ZCDPCost,
        GaussianCost,
        SubsampledGaussianCost,
        BrownianCost,
        DPCost,
        LaplaceCost,
        BoundedRangeCost,
        ExPostCost,
    )
}
"""Every cost a record may name, by its ``type``."""

DESCRIBABLE: Final[Mapping[str, type]] = {
    c.__name__: c
    for c in (
        ZCDPFilter,
        UnifiedFilter,
        BrownianFilter,
        ApproxDPFilter,
        ExPostFilter,
        GaussianDPFilter,
        ConcurrentFilter,
        RDPFilter,
        RenyiFilter,
        PLDFilter,
        ApproxDP,
        ZCDP,
        PureDP,
        GaussianDP,
        *COSTS.values(),  # a PLDFilter's mechanism
    )
}
"""Every filter, and every value a filter holds, that a ledger's configuration may name."""

FORMAT: Final = "expost-session/3"  # /3: Gaussian rounds are recorded as GaussianCost
OLD_FORMATS: Final = ("expost-session/1", "expost-session/2")  # their records: a subset of /3


def encode(cost: Cost) -> dict[str, Any]:
    """A cost as a record: its class name as ``type`` and its fields."""
    return {"type": type(cost).__name__, **attrs.asdict(cost)}


def decode(record: Mapping[str, Any], path: Path | str) -> Cost:
    """The cost a record describes, or `LedgerCorrupted` naming the ledger."""
    fields = dict(record)
    kind = COSTS.get(fields.pop("type", None))
    if kind is None:
        raise LedgerCorrupted(path, f"unknown cost record {dict(record)!r}")
    try:
        return kind(**fields)
    except (TypeError, InvalidParameter) as err:
        raise LedgerCorrupted(path, f"bad cost record {dict(record)!r}: {err}") from err


def describe(f: Any) -> dict[str, Any]:
    """The filter's configuration (type and parameters, not its history) as JSON."""
    out: dict[str, Any] = {"type": type(f).__name__}
    for a in attrs.fields(type(f)):
        if a.alias == "realised" or a.alias.startswith("_") or not a.init:  # state
            continue
        value = getattr(f, a.name)
        out[a.name] = describe(value) if attrs.has(type(value)) else value
    return out


def session_config(filter: PrivacyFilter) -> dict[str, Any]:
    """The configuration a session ledger for ``filter`` holds."""
    return {"format": FORMAT, "filter": describe(filter)}


def filter_from_description(description: Mapping[str, Any]) -> PrivacyFilter:
    """The fresh filter a ledger's configuration describes (the inverse of `describe`: type
    and parameters, nested values likewise; only the classes of `DESCRIBABLE`)."""

    def build(value: Any) -> Any:
        if not isinstance(value, Mapping) or "type" not in value:
            return value
        kind = DESCRIBABLE.get(str(value["type"]))
        if kind is None:
            raise InvalidParameter(
                "description",
                dict(value),
                f"names no filter or value a ledger may hold ({', '.join(DESCRIBABLE)})",
            )
        try:
            return kind(**{k: build(v) for k, v in value.items() if k != "type"})
        except TypeError as err:
            raise InvalidParameter("description", dict(value), str(err)) from err

    built = build(description)
    if not isinstance(built, PrivacyFilter):
        raise InvalidParameter("description", dict(description), "does not describe a filter")
    return built


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
        return open_ledger(target, config, create=create, ledger_id=ledger_id)
    except LedgerMismatch as err:
        stored = json.loads(err.stored) if err.what == "config" else None
        if (
            isinstance(stored, dict)
            and stored.get("format") in (FORMAT, *OLD_FORMATS)
            and configuration(stored.get("filter")) == json.loads(json.dumps(config["filter"]))
        ):
            return open_ledger(target, stored, create=create, ledger_id=ledger_id)
        raise


def configuration(description: object) -> object:
    """A filter's description without the state an earlier release wrote into it (an
    `RDPFilter`'s ``_carried``): what `describe` writes now."""
    if not isinstance(description, Mapping):
        return description
    return {k: v for k, v in description.items() if not str(k).startswith("_")}


_REFUSED: Final = (ExpostError, ArithmeticError, ValueError)
"""What a filter raises for a cost it cannot charge where the replay stands."""


@attrs.define
class _Round:
    """One reserved round as the replay folds it (key order: reservation order)."""

    request: Cost
    settled: Cost | None = None  # the cost of its (first) settle entry
    charged: Cost | None = None  # what the fold charged: ``settled``, ``request`` or None
    before: PrivacyFilter | None = None  # the filter before it, kept while it is open


def _charge(f: PrivacyFilter, r: _Round) -> tuple[PrivacyFilter, Cost | None]:
    """``f`` with round ``r`` charged: at its settled cost if the filter takes it there, else at
    its request (a reservation stays charged until a valid settle replaces it), else nothing."""
    for cost in (r.settled, r.request):
        if cost is not None:
            try:
                return f.spend(cost), cost
            except _REFUSED:
                continue
    return f, None


def _rank(r: _Round, charged: Cost | None) -> int:
    """0: not charged, 1: charged at its request, 2: at its settled cost."""
    if charged is None:
        return 0
    return 2 if r.settled is not None and charged is r.settled else 1


def _fixed_by(f: PrivacyFilter, request: Cost) -> PrivacyFilter:
    """``f`` with what the first reservation fixes fixed by it (a `PLDFilter`'s mechanism)."""
    return f.fixed_by(request) if isinstance(f, PLDFilter) else f


class Replay:
    """The filter a ledger implies: every round in reservation order (its key), charged at its
    settled cost once a valid settle replaced its reservation, else at its request.

    A reservation never settled (its process died) stays charged at its request; a settle the
    filter cannot take where its round stands (forged, or a mechanism's bug) leaves the round
    charged at its request; a round whose reservation the filter cannot take (a record written
    outside this library, or admitted by a server's slack) is not charged and makes the ledger
    *over budget*: it still opens, read-only (`check_writable`), and `faults` names it. A
    `PLDFilter`'s mechanism is fixed by the first reservation. An update folds the new entries
    in once, from the earliest round they change: a reservation costs one ``spend``, a settle
    one per round reserved after it.
    """

    def __init__(self, initial: PrivacyFilter, path: Path | str) -> None:
        self._initial = initial
        self._top = initial
        self._rounds: list[_Round] = []  # rounds from key ``_first`` on (earlier ones are final)
        self._first = 0
        self._seen = 0
        self._path = path
        self._uncharged: dict[int, Cost] = {}  # over budget: reservations nothing could charge
        self._kept: dict[int, Cost] = {}  # settles refused: charged at their requests
        self._unread: list[str] = []  # entries that are no round's reserve or settle
        self._unread_reserve = False  # one of them may stand for a round: over budget

    @property
    def rounds(self) -> int:
        """How many rounds the ledger holds (reserved, settled or not)."""
        return self._first + len(self._rounds)

    @property
    def over_budget(self) -> bool:
        """Whether the ledger holds a round the filter cannot charge (the session is read-only)."""
        return bool(self._uncharged) or self._unread_reserve

    @property
    def faults(self) -> tuple[str, ...]:
        """What the replay could not take as written, one line each (empty for a sound ledger)."""
        over = [
            f"round {k}: its reservation {c!r} does not fit" for k, c in self._uncharged.items()
        ]
        kept = [
            f"round {k}: its settle {c!r} does not fit (charged at its request)"
            for k, c in self._kept.items()
        ]
        return (*over, *kept, *self._unread)

    def check_writable(self) -> None:
        """`LedgerError` if the ledger is over budget: no new round may be reserved on it."""
        if self.over_budget:
            raise LedgerError(
                f"ledger {str(self._path)!r} is over its budget, so it is open read-only and "
                f"admits no new round (nothing was spent): {'; '.join(self.faults[:3])} "
                "(records written outside this library, or admitted by a server's slack; "
                "`expost ledger show` lists them)"
            )

    def _open(self, key: object) -> _Round | None:
        i = key - self._first if isinstance(key, int) and not isinstance(key, bool) else -1
        r = self._rounds[i] if 0 <= i < len(self._rounds) else None
        return r if r is not None and r.settled is None else None

    def is_open(self, key: int, entries: Sequence[LedgerEntry]) -> bool:
        """Whether round ``key`` is reserved and not settled after ``entries`` (every entry of
        the ledger, in order)."""
        self.update(entries)
        return self._open(key) is not None

    def _append(self, request: Cost) -> int:
        if self.rounds == 0:
            self._initial = self._top = _fixed_by(self._initial, request)
        self._rounds.append(_Round(request))
        return self.rounds - 1

    def reserve(self, request: Cost) -> int:
        """Record round `rounds` as open at its ``request`` (check it first); its key."""
        key = self._append(request)
        self._fold(key, self._top)
        return key

    def check_settle(self, key: int, cost: Cost) -> None:
        """`InvalidParameter` unless settling open round ``key`` at ``cost`` charges it there and
        leaves every later round charged as it is (the replay before a settle is written)."""
        r = self._open(key)
        if r is None or r.before is None:
            raise InvalidParameter("round", key, "is not an open reservation of this ledger")
        trial = _Round(r.request, cost)
        f, charged = _charge(r.before, trial)
        why = "the filter does not take it in place of the reservation"
        if _rank(trial, charged) == 2:
            for k, later in enumerate(self._rounds[key - self._first + 1 :], key + 1):
                f, charged = _charge(f, later)
                if _rank(later, charged) < _rank(later, later.charged):
                    why = f"round {k}, reserved after it, would no longer fit"
                    break
            else:
                return
        raise InvalidParameter(
            "realised",
            cost,
            f"cannot settle round {key} (reserved at {r.request!r}): {why}; the round stays "
            "charged at its request",
        )

    def settle(self, key: int, cost: Cost) -> bool:
        """Replace open round ``key``'s reservation by ``cost`` where the filter takes it (else
        it stays charged at its request); False if the round is not open."""
        r = self._open(key)
        if r is None or r.before is None:
            return False
        r.settled = cost
        self._fold(key, r.before)
        return True

    def current(self) -> PrivacyFilter:
        """The filter after every round, in reservation order."""
        return self._top

    def _fold(self, start: int, f: PrivacyFilter) -> None:
        """Charge the rounds from key ``start`` on again, ``f`` the filter before it."""
        for k, r in enumerate(self._rounds[start - self._first :], start):
            r.before = f if r.settled is None else None
            f, r.charged = _charge(f, r)
            self._uncharged.pop(k, None)
            self._kept.pop(k, None)
            if r.charged is None:
                self._uncharged[k] = r.request
            elif r.settled is not None and r.charged is not r.settled:
                self._kept[k] = r.settled
        self._top = f
        final = 0  # a settled prefix never changes again: no fold starts before an open round
        while final < len(self._rounds) and self._rounds[final].settled is not None:
            final += 1
        del self._rounds[:final]
        self._first += final

    def update(self, entries: Sequence[LedgerEntry]) -> PrivacyFilter:
        """The filter after ``entries`` (every entry of the ledger, in order): the new ones are
        read, then folded in once from the earliest round they change."""
        start, before = self.rounds, self._top
        for entry in entries[self._seen :]:
            try:
                key, cost = entry.record["round"], decode(entry.record["cost"], self._path)
            except (KeyError, TypeError, LedgerCorrupted) as err:
                self._unread_entry(entry, f"unreadable ({err})")
                continue
            r = self._open(key)
            if entry.kind == "reserve" and key == self.rounds and not isinstance(key, bool):
                self._append(cost)
                if key == 0:  # the first reservation fixed what it fixes
                    before = self._top
            elif entry.kind == "settle" and r is not None:
                r.settled = cost
                if key < start and r.before is not None:
                    start, before = key, r.before
            else:
                self._unread_entry(entry, "out of order")
        self._seen = max(self._seen, len(entries))
        if start < self.rounds:
            self._fold(start, before)
        return self._top

    def _unread_entry(self, entry: LedgerEntry, why: str) -> None:
        self._unread.append(f"entry {entry.index} ({entry.kind}): {why}")
        self._unread_reserve |= entry.kind != "settle"
