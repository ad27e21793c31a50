"""The ``expost`` command. Each subcommand lives beside the feature it runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from expost import ledger_command
from expost.apps import cli as reproduce_cli
from expost.audit import cli as audit_cli
from expost.symbolic import cli as prove_cli

__all__ = ["main"]

_COMMANDS = (prove_cli, reproduce_cli, audit_cli, ledger_command)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="expost", description="Accuracy-first differential privacy: proofs, audits, papers."
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


if __name__ == "__main__":
    sys.exit(main())
