"""`Replay`: the filter a session ledger implies, and the decisions a session writes by it.

Every round is charged in reservation order (its key): at its settled cost once a valid settle
replaced its reservation, else at its request; the live session, and every replay of a SQLite
or PostgreSQL ledger, fold the same records the same way (docs/session.md, "The round
protocol"). Nothing a ledger holds makes the replay raise: what the filter cannot take is named
in `Replay.faults`, and a round it cannot charge makes the ledger over budget (read-only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs

from expost.errors import (
    ExpostError,
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerRefused,
)
from expost.filters import ConcurrentFilter, Cost, PLDFilter, PrivacyFilter
from expost.filters._exact import Chain, Totals
from expost.filters.base import Filter
from expost.ledger.base import LedgerEntry
from expost.ledger.limits import MAX_OPEN_ROUNDS
from expost.ledger.records import decode, describe, encode, filter_from_description

__all__ = ["Replay", "Settled", "reserve_record", "settle_record", "sums_of"]

_TAIL: Final = 2048  # the most open (and later) rounds a checkpoint carries
_FORMAT: Final = "expost-checkpoint/1"
_F = TypeVar("_F", bound=PrivacyFilter)

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


def _unchanged(r: _Round, cost: Cost) -> bool:
    """Whether settling open round ``r`` at ``cost`` charges what it is charged already."""
    return r.charged is not None and r.charged is r.request and cost == r.request


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
        if _unchanged(r, cost):
            return
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
        if _unchanged(r, cost):
            self._mark(r, cost)
            self._prune()
        else:
            r.settled = cost
            self._fold(key, r.before)
        return True

    @staticmethod
    def _mark(r: _Round, cost: Cost) -> None:
        """Settle round ``r`` at the cost it is charged already: nothing after it changes."""
        r.settled = r.charged = cost
        r.before = None

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
        self._prune()

    def _prune(self) -> None:
        """Forget the settled prefix: it never changes again (no fold starts before an open
        round)."""
        final = 0
        while final < len(self._rounds) and self._rounds[final].settled is not None:
            final += 1
        del self._rounds[:final]
        self._first += final

    def update(self, entries: Sequence[LedgerEntry]) -> PrivacyFilter:
        """The filter after ``entries`` (every entry of the ledger, in order): the new ones are
        read, then folded in once from the earliest round they change."""
        start, before = self.rounds, self._top
        offset = entries[0].index if entries else 0  # a ledger read from a checkpoint on
        for entry in entries[max(0, self._seen - offset) :]:
            try:
                key, cost = entry.record["round"], decode(entry.record["cost"], self._path)
            except (KeyError, TypeError, ValueError, LedgerCorrupted) as err:
                self._unread_entry(entry, f"unreadable ({err})")
                continue
            r = self._open(key)
            if entry.kind == "reserve" and key == self.rounds and not isinstance(key, bool):
                self._append(cost)
                if key == 0:  # the first reservation fixed what it fixes
                    before = self._top
            elif entry.kind == "settle" and r is not None:
                if key < start and _unchanged(r, cost):
                    self._mark(r, cost)  # a settle at its charge: nothing to fold
                    continue
                r.settled = cost
                if key < start and r.before is not None:
                    start, before = key, r.before
            else:
                self._unread_entry(entry, "out of order")
        self._seen = max(self._seen, offset + len(entries))
        if start < self.rounds:
            self._fold(start, before)
        self._prune()
        return self._top

    def stale(self, age: int) -> list[tuple[int, Cost]]:
        """The open rounds reserved ``age`` or more rounds ago (key, request)."""
        last = self.rounds - age
        if self._first >= last:  # the oldest open round is recent: none is stale (O(1))
            return []
        rounds = self._rounds[: last - self._first]
        return [(k, r.request) for k, r in enumerate(rounds, self._first) if r.settled is None]

    @property
    def settled_prefix(self) -> int:
        """How many rounds, from the first, are settled (what a checkpoint would summarise)."""
        return self._first

    def state(self) -> dict[str, Any] | None:
        """A checkpoint of this replay: the filter after the settled prefix (its description
        and exact sums) and every round after it (request, settle); None where there is none to
        take (faults, a filter whose state is not its sums — `RDPFilter` — or a long tail)."""
        f = self._rounds[0].before if self._rounds else self._top
        sums = None if f is None or self.faults or len(self._rounds) > _TAIL else sums_of(f)
        if f is None or sums is None:
            return None
        tail = [
            [encode(r.request), None if r.settled is None else encode(r.settled)]
            for r in self._rounds
        ]
        return {
            "format": _FORMAT,
            "rounds": self._first,
            "filter": describe(f),
            "sums": sums,
            "tail": tail,
        }

    @classmethod
    def restore(
        cls,
        initial: PrivacyFilter,
        path: Path | str,
        entry: int,
        state: Mapping[str, Any],
        first: Cost,
    ) -> Replay:
        """The replay a checkpoint ``state`` of the first ``entry`` entries stands for (``first``:
        the ledger's first reservation, which fixes a `PLDFilter`'s mechanism); its
        filter's ``realised`` lists only the rounds after the settled prefix (its sums and
        ``rounds`` count every round). `LedgerCorrupted` if the state is not one this module
        writes for ``initial``'s configuration."""
        try:
            if state["format"] != _FORMAT:
                raise ValueError(f"format {state['format']!r}")
            base = filter_from_description(state["filter"])
            described, expected = describe(base), describe(_fixed_by(initial, first))
            if described != expected:
                raise ValueError(f"its filter {described} is not {expected}")
            f = _restored(base, state["sums"])
            replay = cls(initial, path)
            replay._initial = base
            replay._first = int(state["rounds"])
            replay._top = f
            replay._seen = entry
            for request, settled in state["tail"]:
                replay._rounds.append(
                    _Round(
                        decode(request, path), None if settled is None else decode(settled, path)
                    )
                )
            if replay._rounds:
                replay._fold(replay._first, f)
        except (KeyError, TypeError, ValueError, ExpostError) as err:
            raise LedgerCorrupted(
                path, f"checkpoint of entry {entry} is not sound ({err})"
            ) from err
        return replay

    def _unread_entry(self, entry: LedgerEntry, why: str) -> None:
        self._unread.append(f"entry {entry.index} ({entry.kind}): {why}")
        self._unread_reserve |= entry.kind != "settle"


def sums_of(f: PrivacyFilter) -> dict[str, Any] | None:
    """A filter's state as a checkpoint holds it: its exact sums (partials) and round count."""
    if isinstance(f, ConcurrentFilter):
        zcdp, ex_post = sums_of(f.zcdp), sums_of(f.ex_post)
        return None if zcdp is None or ex_post is None else {"zcdp": zcdp, "ex_post": ex_post}
    if isinstance(f, Filter):
        totals = f._sums
        return {"amounts": list(totals.amounts), "deltas": list(totals.deltas), "rounds": f.rounds}
    return None


def _restored(f: _F, sums: Mapping[str, Any]) -> _F:
    """``f`` (fresh) carrying the sums of `sums_of`: its history holds no cost, its count all."""
    if isinstance(f, ConcurrentFilter):
        return attrs.evolve(
            f, zcdp=_restored(f.zcdp, sums["zcdp"]), ex_post=_restored(f.ex_post, sums["ex_post"])
        )
    if not isinstance(f, Filter):
        raise TypeError(f"no checkpoint of a {type(f).__name__}")
    rounds = sums["rounds"]
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        raise ValueError(f"round count {rounds!r}")
    parts = [tuple(_finite(x) for x in sums[k]) for k in ("amounts", "deltas")]
    if any(math.fsum(p) < 0.0 for p in parts):
        raise ValueError("a negative sum")
    chain: Chain[Cost] = Chain(None, rounds)
    return attrs.evolve(f, realised=chain, _totals=Totals(chain, *parts))


def _finite(x: object) -> float:
    if not isinstance(x, float) or not math.isfinite(x):
        raise ValueError(f"partial sum {x!r}")
    return x


class Settled(Exception):
    """A settle's write found its round already settled (a retry after a cut): nothing to do."""


def reserve_record(
    replay: Replay, mechanism: str, request: Cost
) -> Callable[[tuple[LedgerEntry, ...]], Mapping[str, Any]]:
    """The decision of a reservation: its record if the ledger, replayed, admits ``request``
    (`BudgetExceeded` otherwise; `LedgerError` on a ledger over budget; `LedgerRefused` while
    a round `MAX_OPEN_ROUNDS` rounds back is open)."""

    def decide(entries: tuple[LedgerEntry, ...]) -> Mapping[str, Any]:
        replay.update(entries)
        replay.check_writable()
        stale = replay.stale(MAX_OPEN_ROUNDS - 1)  # round r − MAX_OPEN_ROUNDS or earlier
        if stale:  # as the PostgreSQL server refuses it
            raise LedgerRefused(
                f"ledger {str(replay._path)!r}: round {stale[0][0]} is open while {MAX_OPEN_ROUNDS} later rounds"
                f" were reserved: settle it (at its reservation) before reserving round"
                f" {replay.rounds}"
            )
        replay.current().check(request)
        return {"round": replay.rounds, "mechanism": mechanism, "cost": encode(request)}

    return decide


def settle_record(
    replay: Replay, key: int, cost: Cost
) -> Callable[[tuple[LedgerEntry, ...]], Mapping[str, Any]]:
    """The decision of round ``key``'s settle: its record, `Settled` if the ledger already holds
    one (the write a cut interrupted had committed), or the replay's refusal (never written)."""

    def decide(entries: tuple[LedgerEntry, ...]) -> Mapping[str, Any]:
        if not replay.is_open(key, entries):
            raise Settled
        replay.check_settle(key, cost)
        return {"round": key, "cost": encode(cost)}

    return decide
