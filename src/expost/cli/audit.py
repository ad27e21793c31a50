"""``expost audit``: run a suite of statistical audits, print a table, optionally write JSON.

Exit codes: 0 every claim has its expected verdict and every planted bug is refuted; 1
otherwise; 2 bad usage (bad arguments, unknown suite or ``--only`` name, a ``--module`` that
cannot be imported, a JSON file that cannot be written, an optional extra — dask, torch — that
is missing).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any, TextIO

from expost.audit.core import ALPHA_AUDIT, Audit, run_audits
from expost.audit.registry import QUICK, default_registry
from expost.backends import ArrayBackend
from expost.cli._progress import ProgressLine
from expost.cli._scale import (
    add_backend_arguments,
    add_execution_arguments,
    backend_of,
    execution_of,
    int_at_least,
)
from expost.errors import InvalidParameter

__all__ = ["ProgressBar", "add_parser", "run"]


def _delta(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} must lie in (0, 1)")
    return value


def add_parser(sub: Any) -> None:
    """Register ``expost audit``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "audit",
        help="run statistical audits of the library's claims",
        description=(
            "Simulate each claim N times with a fixed seed and test it at level "
            f"alpha_audit = {ALPHA_AUDIT:g}; every planted-bug twin must be refuted."
        ),
    )
    p.add_argument(
        "--suite",
        default=QUICK,
        metavar="NAME",
        help="quick (default), paper, deploy (deltas 1e-6, 1e-9, 1e-12) or deploy-quick",
    )
    p.add_argument(
        "--delta",
        action="append",
        type=_delta,
        default=None,
        metavar="D",
        help="run the suite's delta-parameterised audits at D instead (repeatable)",
    )
    p.add_argument(
        "--only", action="append", default=None, metavar="NAME", help="run only this audit"
    )
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the report here")
    p.add_argument("--seed", type=int_at_least(0), default=0, metavar="S", help="default 0")
    add_execution_arguments(p)
    add_backend_arguments(p)
    p.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (a downstream project's audits register themselves)",
    )
    p.add_argument("--list", action="store_true", help="list the suite's audits and exit")
    p.set_defaults(run=run)


class ProgressBar:
    """Audit progress as a `ProgressLine`: chunks done of all, and the audit's name."""

    def __init__(self, stream: TextIO) -> None:
        self.line = ProgressLine(stream)

    def __call__(self, done: int, total: int, name: str) -> None:
        self.line.show(done / max(total, 1), f"{done}/{total} chunks  {name[:40]}")
        if done >= total:
            self.line.close()


def _error(message: str) -> int:
    print(f"expost audit: {message}", file=sys.stderr)
    return 2


def _select(audits: tuple[Audit, ...], only: list[str] | None) -> list[Audit] | str:
    if only is None:
        return list(audits)
    names = [a.name for a in audits]
    unknown = [n for n in only if n not in names]
    if unknown:
        return f"no audit named {unknown} in this suite; there are: {', '.join(names)}"
    return [a for a in audits if a.name in only]


def run(args: argparse.Namespace) -> int:
    """Run the suite; see the module docstring for the exit codes."""
    for module in args.module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return _error(f"cannot import --module {module}: {exc}")
    try:
        audits = default_registry().suite(args.suite, args.delta)
    except InvalidParameter as exc:
        return _error(str(exc))
    if args.list:
        for a in audits:
            where = "" if a.runs_on(ArrayBackend("torch")) else "  [numpy only]"
            print(f"{a.name}  ({a.source}) {a.statement}{where}")
        return 0
    chosen = _select(audits, args.only)
    if isinstance(chosen, str):
        return _error(chosen)
    try:
        execution, backend = execution_of(args), backend_of(args)
    except ImportError as exc:
        return _error(str(exc))
    report = run_audits(
        chosen,
        seed=args.seed,
        progress=ProgressBar(sys.stderr),
        execution=execution,
        backend=backend,
    )
    print(report.table())
    if args.json is not None:
        try:
            args.json.write_text(report.dumps(), encoding="utf-8")
        except OSError as exc:
            return _error(f"cannot write --json {args.json}: {exc}")
    return report.exit_code
