"""``expost prove``: placeholder replaced by the proof runner."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register ``expost prove``."""
    p: argparse.ArgumentParser = sub.add_parser("prove", help="run every symbolic proof check")
    p.set_defaults(run=lambda _args: 0)
