"""``expost reproduce lnr-composition``: the command of `expost.apps.lnr_composition` (APC App. C)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from expost.apps.lnr_composition import DEFAULT_ROUNDS, measure, table
from expost.errors import InvalidParameter

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Register ``expost reproduce lnr-composition``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "lnr-composition",
        help="APC App. C: slack of summing k Laplace noise-reduction ex-post bounds",
        description="Measure c(delta) = inf{c: P(L > c·Σ eps_i) <= delta} for k independent "
        "Laplace noise-reduction rounds, each stopped by a rule that sees its own releases, by "
        "exact simulation and, for fixed stops, by a bracketed numerical convolution.",
    )
    p.add_argument("--trials", type=int, default=100_000, help="composed trials per rule")
    p.add_argument(
        "--rounds",
        type=int,
        nargs="+",
        default=list(DEFAULT_ROUNDS),
        metavar="K",
        help="numbers k of composed rounds (default 2 5 10 20)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the rows here")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """The command: the slack table on stdout, JSON if asked. 2 on bad input."""
    try:
        rows = measure(args.trials, args.seed, args.rounds)
    except InvalidParameter as exc:
        print(f"expost reproduce lnr-composition: {exc}", file=sys.stderr)
        return 2
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0
