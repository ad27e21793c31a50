"""The ``expost`` command: every subcommand's module lives in this package, the top layer.

``prove`` (`expost.cli.prove`), ``reproduce`` (`expost.cli.reproduce`), ``audit``
(`expost.cli.audit`) and ``ledger`` (`expost.cli.ledger`); nothing below imports it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from expost import __version__
from expost.cli import audit as audit_cli
from expost.cli import ledger as ledger_command
from expost.cli import prove as prove_cli
from expost.cli import reproduce as reproduce_cli

__all__ = ["main"]

_COMMANDS = (prove_cli, reproduce_cli, audit_cli, ledger_command)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="expost", description="Accuracy-first differential privacy: proofs, audits, papers."
    )
    parser.add_argument(
        "--version", action="version", version=f"expost {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 a check failed, 2 bad usage)."""
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code
