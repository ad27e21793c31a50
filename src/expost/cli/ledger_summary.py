"""What ``expost ledger show`` prints about a session ledger's rounds: runs, spend, ε so far.

A *run* is a stretch of consecutive rounds of one mechanism and one cost (1,202 DP-SGD steps
at σ = 1, q = 0.01 are one line, not 2,404 entries). A DP-SGD step is shown by its noise
multiplier σ and sampling rate q (Opacus's ``noise_multiplier`` and ``sample_rate``), other
rounds by their cost. The ε so far is `expost.privacy_spent` at the filter's own δ: a fixed
composition, valid for a stop decided independently of the outputs (the line says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from expost.errors import ExpostError
from expost.filters import Cost, PrivacyFilter, SubsampledGaussianCost
from expost.ledger import LedgerEntry
from expost.ledger.records import Replay, decode
from expost.privacy_spent import privacy_spent

__all__ = ["left_shown", "runs", "so_far"]


def _cost(cost: Cost) -> str:
    if isinstance(cost, SubsampledGaussianCost):
        return f"σ = {cost.sigma:.6g}, q = {cost.sampling_prob:.6g}"
    return repr(cost)


def runs(entries: Sequence[LedgerEntry], where: str) -> list[str]:
    """One line per run of reservations (consecutive rounds of one mechanism and cost), and
    one for the reservations not settled (charged at their request)."""
    out: list[str] = []
    first, last, key = -1, -1, None
    settled = 0

    def close() -> None:
        if key is not None:
            mechanism, cost = key
            span = f"round {first}" if first == last else f"rounds {first}–{last}"
            out.append(f"  {span}: {last - first + 1} × {mechanism}, {_cost(cost)}")

    for e in entries:
        if e.kind == "settle":
            settled += 1
            continue
        this = (str(e.record.get("mechanism", "?")), decode(e.record["cost"], where))
        index = int(e.record["round"])
        if this != key:
            close()
            first, key = index, this
        last = index
    close()
    reserved = sum(1 for e in entries if e.kind == "reserve")
    if reserved > settled:
        out.append(f"  {reserved - settled} reserved and not settled (charged at their request)")
    return out


def left_shown(f: PrivacyFilter) -> str:
    """``remaining`` as shown: a number, or why there is none yet."""
    left = f.remaining
    if isinstance(left, float) and math.isinf(left):
        return "not yet fixed (the first round fixes the mechanism and so the count)"
    return repr(left)


def _delta(f: object) -> float | None:
    target = getattr(f, "target", None)
    delta = getattr(f, "delta", None) if target is None else target.delta
    return delta if isinstance(delta, float) and 0.0 < delta < 1.0 else None


def so_far(initial: PrivacyFilter, entries: Sequence[LedgerEntry], where: str) -> str:
    """The ε so far at the filter's δ (`expost.privacy_spent`), or why it is not shown."""
    f: Any = Replay(initial, where).update(entries)
    delta = _delta(f)
    if delta is None:
        return "ε so far: not shown (the filter has no δ of its own; see privacy_spent)"
    try:
        spent = privacy_spent(f, delta)
    except ExpostError as exc:
        return f"ε so far: not shown ({exc})"
    return (
        f"ε so far {spent.eps!r} at δ = {spent.delta!r} after {spent.rounds} rounds "
        f"({spent.accounting}); {spent.valid_for}"
    )
