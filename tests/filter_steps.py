"""One adversary step against a filter: check, then spend (shared by the filter overspend tests)."""

from __future__ import annotations

from typing import Any, Literal

from expost.errors import BudgetExceeded

Outcome = Literal["refused", "overspent", "spent"]


def check_then_spend(f: Any, request: Any, realised: Any) -> tuple[Outcome, Any]:
    """``admits`` and ``check`` agree on ``request``; a refused request stops there
    ("refused"), a realised cost the filter cannot afford leaves it as it was ("overspent"),
    else the new filter ("spent")."""
    admitted = f.admits(request)
    try:
        f.check(request)
    except BudgetExceeded:
        assert not admitted
    else:
        assert admitted
    if not admitted:
        return "refused", f
    try:
        return "spent", f.spend(realised)
    except BudgetExceeded:
        return "overspent", f
