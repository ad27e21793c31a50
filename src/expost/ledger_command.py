"""``expost ledger show LEDGER`` and ``expost ledger copy SRC DST`` (either backend).

A LEDGER is a SQLite file or a ``postgresql://…?ledger=NAME`` URL. ``show`` prints the filter,
every round and the spend; ``copy`` appends SRC's rounds, in order, to a new or empty DST with
the same configuration, then checks that DST holds the same records and the same exact spend
(the records are copied, not their timestamps). Exit codes: 0 done, 1 the check failed,
2 bad usage or a ledger that cannot be used.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import numpy as np

from expost.errors import ExpostError
from expost.ledger import LedgerEntry, open_ledger, stored_config
from expost.session import PrivateSession, filter_from_description

__all__ = ["add_parser", "copy", "show"]


def add_parser(sub: Any) -> None:
    """Register ``expost ledger``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "ledger",
        help="show or copy a budget ledger (SQLite file or PostgreSQL URL)",
        description="Show a session ledger's rounds and spend, or copy it to another backend.",
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    show_p = verbs.add_parser("show", help="print the filter, the rounds and the spend")
    show_p.add_argument("ledger", metavar="LEDGER")
    copy_p = verbs.add_parser("copy", help="copy every round to a new or empty ledger")
    copy_p.add_argument("source", metavar="SRC")
    copy_p.add_argument("target", metavar="DST")
    p.set_defaults(run=run)


def _spend(target: str) -> tuple[Any, Any, int]:
    """(spent, remaining, rounds) of the session a ledger implies (read only)."""
    config = stored_config(target)
    session = PrivateSession(
        filter_from_description(config["filter"]), np.random.default_rng(0), ledger=target
    )
    try:
        return session.spent, session.remaining, session.filter.rounds
    finally:
        session.close()


def show(target: str) -> str:
    """The filter, one line per round and the spend of the ledger at ``target``."""
    config = stored_config(target)
    with open_ledger(target, config) as ledger:
        entries = ledger.entries()
    spent, remaining, rounds = _spend(target)
    lines = [f"ledger {target}", f"format {config.get('format')}, filter {_json(config['filter'])}"]
    lines += [f"{e.index:>6}  {e.kind:<8} {_json(e.record)}" for e in entries]
    lines.append(f"{rounds} rounds; spent {spent!r}, remaining {remaining!r}")
    return "\n".join(lines)


def copy(source: str, target: str) -> tuple[int, bool]:
    """Append SRC's rounds to DST (new, or empty with SRC's configuration); (rounds, same spend)."""
    config = stored_config(source)
    with open_ledger(source, config) as src:
        entries = src.entries()
    with open_ledger(target, config) as dst:
        if dst.entries():
            raise ExpostError(f"{target!r} already holds rounds: copy only into an empty ledger")
        for entry in entries:
            dst.append(entry.kind, _same(entry))
        copied = dst.entries()
    same = [(e.kind, dict(e.record)) for e in copied] == [(e.kind, dict(e.record)) for e in entries]
    return len(copied), same and _spend(source) == _spend(target)


def _same(entry: LedgerEntry) -> Any:
    def decide(entries: tuple[LedgerEntry, ...]) -> Mapping[str, Any]:
        if len(entries) != entry.index:
            raise ExpostError("another writer appended to the target during the copy")
        return entry.record

    return decide


def _json(value: Any) -> str:
    import json

    def plain(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: plain(x) for k, x in v.items()}
        return [plain(x) for x in v] if isinstance(v, tuple) else v

    return json.dumps(plain(value), sort_keys=True)


def run(args: argparse.Namespace) -> int:
    """Run ``expost ledger VERB``."""
    try:
        if args.verb == "show":
            print(show(args.ledger))
            return 0
        n, same = copy(args.source, args.target)
    except ExpostError as exc:
        print(f"expost ledger: {exc}")
        return 2
    print(f"copied {n} rounds; records and spend {'identical' if same else 'DIFFER'}")
    return 0 if same else 1
