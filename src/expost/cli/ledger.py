"""``expost ledger init|show|copy|delete`` (either backend).

A LEDGER is a SQLite file or a ``postgresql://…?ledger=NAME`` URL. ``init`` creates a session
ledger for a filter (``--filter 'UnifiedFilter.from_dp(eps=10, delta=1e-6)'`` or its JSON
description) and prints its id; ``show`` prints the filter, its runs (every entry with
``--entries``), the spend and the ε so far; ``copy``
appends SRC's entries, in order, to DST (created if missing, else empty, with the same
configuration), then checks that DST holds the same records and the same exact spend (the
records are copied, not their timestamps; all or nothing where DST is created, and on
PostgreSQL); ``delete`` removes a ledger that holds no rounds. Passwords in URLs are never printed. Exit codes:
0 done, 1 the check failed, 2 bad usage or a ledger that cannot be used.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from expost.cli.ledger_summary import left_shown, runs, so_far
from expost.errors import ExpostError, InvalidParameter
from expost.filters import PrivacyFilter
from expost.ledger import Ledger, LedgerEntry, PostgresLedger, open_ledger, stored_config
from expost.ledger.checkpoints import verify_checkpoints
from expost.ledger.pg_checks import PRICED_PARTS, part_fault
from expost.ledger.postgres import is_postgres_url, shown_url
from expost.ledger.records import (
    DESCRIBABLE,
    configuration,
    filter_from_description,
    init_ledger,
)
from expost.ledger.replay import Replay
from expost.ledger.targets import delete_empty, servable

__all__ = ["add_parser", "copy", "delete", "init", "parse_filter", "show"]

_LEDGER_HELP = "a SQLite file path, or postgresql://USER@HOST/DB?ledger=NAME"


def add_parser(sub: Any) -> None:
    """Register ``expost ledger``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "ledger",
        help="create, show, copy or delete a budget ledger (SQLite file or PostgreSQL URL)",
        description="Create a session ledger, show its rounds and spend, copy it to another "
        "backend, or delete an empty one. Passwords in URLs are never printed.",
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    init_p = _verb(
        verbs,
        "init",
        "create a new ledger for a filter and print its id",
        "Create a new session ledger (refused if one exists) and print its id, to pin with "
        "PrivateSession(..., ledger_id=ID). On PostgreSQL this needs the administrator's role; "
        "it installs the expost schema if the database has none (or upgrades an earlier "
        "release's functions).",
        "where to create it",
    )
    init_p.add_argument(
        "--filter",
        required=True,
        metavar="FILTER",
        help="the budget: a constructor call such as 'UnifiedFilter.from_dp(eps=10, "
        "delta=1e-6)' or 'ZCDPFilter(1.0)' (numbers, strings and nested filter calls only; "
        "never evaluated as Python), or the JSON description `ledger show` prints",
    )
    show_p = _verb(
        verbs,
        "show",
        "print the filter, a summary of its runs and the spend",
        "Print the ledger's id, filter, its rounds summarised as runs (consecutive rounds of "
        "one mechanism and cost: how many, and σ and q for DP-SGD steps), the spend it implies "
        "and the ε so far (a fixed composition). --entries lists every entry instead.",
        "the ledger to show",
    )
    show_p.add_argument(
        "--entries",
        "--all",
        action="store_true",
        help="list every entry (reserve and settle) instead of the summary of runs",
    )
    copy_p = verbs.add_parser(
        "copy",
        help="copy every entry to a new or empty ledger",
        description="Append SRC's entries to DST (created if missing, else it must be empty "
        "and have SRC's configuration), then check records and spend are identical. All or "
        "nothing where DST is created, and on PostgreSQL.",
    )
    copy_p.add_argument("source", metavar="SRC", help=f"the ledger to copy: {_LEDGER_HELP}")
    copy_p.add_argument(
        "target", metavar="DST", help=f"a new or empty ledger to copy into: {_LEDGER_HELP}"
    )
    _verb(
        verbs,
        "delete",
        "delete a ledger that holds no rounds",
        "Delete an empty ledger (no rounds: e.g. one made by a mistaken init); a ledger with "
        "rounds is refused and kept. On PostgreSQL this needs the role that owns the expost "
        "schema.",
        "the empty ledger",
    )
    p.set_defaults(run=run)


def _verb(verbs: Any, name: str, help: str, description: str, what: str) -> Any:
    """The parser of ``expost ledger NAME`` with its LEDGER argument."""
    parser = verbs.add_parser(name, help=help, description=description)
    parser.add_argument("ledger", metavar="LEDGER", help=f"{what}: {_LEDGER_HELP}")
    return parser


def parse_filter(spec: str) -> PrivacyFilter:
    """The filter ``spec`` names: a call of a filter class or ``Class.from_…`` with number,
    string and nested-call arguments (parsed, never evaluated), or a JSON description."""
    if spec.lstrip().startswith("{"):
        try:
            description = json.loads(spec)
        except ValueError as exc:
            raise InvalidParameter("filter", spec, f"is not valid JSON ({exc})") from exc
        if (fault := part_fault(description)) is not None:
            raise InvalidParameter("filter", description.get("type"), fault)
        return filter_from_description(description)
    try:
        tree = ast.parse(spec.strip(), mode="eval")
    except SyntaxError as exc:
        raise InvalidParameter("filter", spec, f"is not a constructor call ({exc.msg})") from exc
    built = _build(spec, tree.body)
    if not isinstance(built, PrivacyFilter):
        raise InvalidParameter("filter", spec, "does not describe a privacy filter")
    return built


def _build(spec: str, node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | None):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
    ):
        return -node.operand.value
    if isinstance(node, ast.Call):
        func = node.func
        maker: Any = None
        if isinstance(func, ast.Name):
            maker = DESCRIBABLE.get(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = DESCRIBABLE.get(func.value.id)
            if owner is not None and func.attr.startswith("from_"):
                maker = getattr(owner, func.attr, None)
        if maker is not None and all(k.arg is not None for k in node.keywords):
            args = [_build(spec, a) for a in node.args]
            kwargs = {str(k.arg): _build(spec, k.value) for k in node.keywords}
            try:
                return maker(*args, **kwargs)
            except TypeError as exc:  # attrs' validators: a composite's part named plainly
                said = _part_fault(maker, args, kwargs) or str(exc.args[0] if exc.args else exc)
                raise InvalidParameter("filter", spec, said) from exc
    raise InvalidParameter(
        "filter",
        spec,
        f"may hold only calls of {', '.join(DESCRIBABLE)} (or their from_… constructors), "
        "numbers and strings",
    )


def _part_fault(maker: Any, args: list[Any], kwargs: dict[str, Any]) -> str | None:
    """`part_fault` for the call of a composite filter (a `ConcurrentFilter`) on these values."""
    if getattr(maker, "__name__", None) not in PRICED_PARTS or not attrs.has(maker):
        return None
    given = dict(zip([a.alias for a in attrs.fields(maker) if a.init], args, strict=False))
    parts = {k: {"type": type(v).__name__} for k, v in (given | kwargs).items()}
    return part_fault({"type": maker.__name__, **parts})


def _shown(target: str) -> str:
    return shown_url(target) if is_postgres_url(target) else target


def init(target: str, spec: str) -> str:
    """Create the session ledger at ``target`` for the filter ``spec``; a line naming its id."""
    f = parse_filter(spec)
    ledger_id = init_ledger(target, f)
    return f"created ledger {_shown(target)} with id {ledger_id} for {type(f).__name__}"


def _spend(config: Mapping[str, Any], entries: tuple[LedgerEntry, ...], where: str) -> str:
    """The session rounds and spend a ledger's entries imply."""
    if "filter" not in config:
        return f"{_count(len(entries), 'entry', 'entries')} (not a session ledger)"
    replay = Replay(filter_from_description(config["filter"]), where)
    f = replay.update(entries)
    counts = f"{_count(len(entries), 'entry', 'entries')}, {_count(replay.rounds, 'round')}"
    lines = [f"{counts}; spent {f.spent!r}, remaining {left_shown(f)}"]
    if replay.over_budget:  # opens anyway (issue 41): the spend of the rounds it can charge
        lines.append("OVER BUDGET: the ledger is read-only (no session admits a round on it)")
    lines += [f"not as written: {fault}" for fault in replay.faults]
    return "\n".join(lines)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def show(target: str, entries: bool = False) -> str:
    """The id, filter, a summary of the runs (every entry with ``entries``) and the spend of
    the ledger at ``target`` (`expost.cli.ledger_summary`), every checkpoint checked against
    the entries it covers."""
    config = stored_config(target)
    with open_ledger(target, config) as ledger:
        held = ledger.entries()
        where, ledger_id = str(ledger.path), ledger.ledger_id
        checkpoints = ledger.checkpoints() if isinstance(ledger, Ledger | PostgresLedger) else ()
    filt = _json(configuration(config["filter"]) if "filter" in config else config)
    lines = [f"ledger {where}", f"id {ledger_id}, format {config.get('format')}, filter {filt}"]
    if entries or "filter" not in config:
        lines += [f"{e.index:>6}  {e.kind:<8} {_json(e.record)}" for e in held]
    else:
        lines += runs(held, where)
    lines.append(_spend(config, held, where))
    if "filter" in config:
        initial = filter_from_description(config["filter"])
        lines.append(so_far(initial, held, where))
        if checkpoints:
            wrong = verify_checkpoints(initial, where, held, checkpoints)
            lines += [f"{len(checkpoints)} checkpoints", *(f"NOT SOUND: {w}" for w in wrong)]
    return "\n".join(lines)


def copy(source: str, target: str) -> tuple[str, bool]:
    """Append SRC's entries to DST (created, or empty with SRC's configuration); (the summary
    of what was copied, whether records and spend are identical). All or nothing where DST is
    created (and on PostgreSQL always): a refused entry leaves no ledger behind."""
    config = stored_config(source)
    servable(target, config)
    with open_ledger(source, config) as src:
        entries = src.entries()
    if is_postgres_url(target):
        PostgresLedger.copy_in(target, config, entries)
    elif Path(target).exists():
        _append_all(target, config, entries)
    else:  # built beside it, then linked into place: the file appears complete or not at all
        tmp = Path(target).with_name(f".{Path(target).name}.{os.getpid()}.copy")
        tmp.unlink(missing_ok=True)
        try:
            _append_all(str(tmp), config, entries)
            os.link(tmp, target)
        except FileExistsError as exc:
            raise ExpostError(f"{target!r} appeared during the copy: it was left as it is") from exc
        finally:
            tmp.unlink(missing_ok=True)
    with open_ledger(target, config) as dst:
        copied = dst.entries()
        where = str(dst.path)
    same = [(e.kind, dict(e.record)) for e in copied] == [(e.kind, dict(e.record)) for e in entries]
    summary = _spend(config, copied, where)
    return summary, same and summary == _spend(config, entries, where)


def _append_all(target: str, config: Mapping[str, Any], entries: tuple[LedgerEntry, ...]) -> None:
    with open_ledger(target, config, create=True) as dst:
        if dst.entries():
            raise ExpostError(
                f"{str(dst.path)!r} already holds rounds: copy only into an empty ledger"
            )
        for entry in entries:
            dst.append(entry.kind, _same(entry))


def delete(target: str) -> str:
    """Delete the ledger at ``target`` if it holds no rounds; a line saying so."""
    delete_empty(target)
    return f"deleted the empty ledger {_shown(target)}"


def _same(entry: LedgerEntry) -> Any:
    def decide(entries: tuple[LedgerEntry, ...]) -> Mapping[str, Any]:
        if len(entries) != entry.index:
            raise ExpostError("another writer appended to the target during the copy")
        return entry.record

    return decide


def _json(value: Any) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: plain(x) for k, x in v.items()}
        return [plain(x) for x in v] if isinstance(v, tuple) else v

    return json.dumps(plain(value), sort_keys=True)


def run(args: argparse.Namespace) -> int:
    """Run ``expost ledger VERB``."""
    try:
        if args.verb == "init":
            print(init(args.ledger, args.filter))
            return 0
        if args.verb == "show":
            print(show(args.ledger, args.entries))
            return 0
        if args.verb == "delete":
            print(delete(args.ledger))
            return 0
        summary, same = copy(args.source, args.target)
    except ExpostError as exc:
        print(f"expost ledger: {exc}")
        return 2
    print(f"copied {summary}; records and spend {'identical' if same else 'DIFFER'}")
    return 0 if same else 1
