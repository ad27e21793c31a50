"""``expost reproduce EXPERIMENT``: each experiment's command module registers its sub-command."""

from __future__ import annotations

import argparse
from typing import Any

from expost.cli import dp_sgd, erm, lnr_composition, relative_error

__all__ = ["add_parser"]

# Modules with ``add_parser(subparsers)``; each sets ``run`` via ``set_defaults``.
_EXPERIMENTS: tuple[Any, ...] = (relative_error, erm, lnr_composition, dp_sgd)


def add_parser(sub: Any) -> None:
    """Register ``expost reproduce`` and one sub-command per experiment."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "reproduce", help="reproduce a paper's experiment (table, JSON and figures)"
    )
    experiments = parser.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for module in _EXPERIMENTS:
        module.add_parser(experiments)
