"""Command-line options shared by ``expost audit`` and ``expost reproduce``: where chunks run.

``--workers N`` (local processes), ``--scheduler ADDRESS`` (a running Dask cluster) and
``--dask-local N`` (a Dask `LocalCluster` started for the run) are mutually exclusive
(argparse error); ``--backend``/``--device`` choose the array backend where a command has one.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from expost.backends import BACKENDS, ArrayBackend
from expost.execution import Execution

__all__ = [
    "add_backend_arguments",
    "add_execution_arguments",
    "backend_of",
    "execution_of",
    "int_at_least",
]


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= minimum`` (else `argparse.ArgumentTypeError`)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be >= {minimum}")
        return value

    return parse


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers`` | ``--scheduler`` | ``--dask-local`` (one of them at most)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--workers", type=int_at_least(1), default=1, metavar="N", help="local processes (1)"
    )
    group.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the chunks on this Dask cluster (needs pip install 'expost[dask]')",
    )
    group.add_argument(
        "--dask-local",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="start a Dask LocalCluster of N single-thread worker processes for the run",
    )


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend numpy|torch|cupy`` and ``--device`` (torch's device, e.g. cuda)."""
    parser.add_argument(
        "--backend", choices=BACKENDS, default="numpy", help="array library for the paths"
    )
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda, cuda:1)")


def execution_of(args: argparse.Namespace) -> Execution:
    """The `Execution` the options ask for, its optional extra imported now (ImportError)."""
    return Execution(args.workers, args.scheduler, args.dask_local).check()


def backend_of(args: argparse.Namespace) -> ArrayBackend:
    """The `ArrayBackend` the options ask for, imported now (ImportError naming the extra)."""
    return ArrayBackend(args.backend, args.device).check()
