"""Exception types of `expost`.

Every error the library raises on purpose is an `ExpostError`. Bad input is an
`InvalidParameter` (also a `ValueError`) whose message names the argument, the value and
the rule it broke; running out of budget is `BudgetExceeded`, which says what was spent,
what was asked and what remains.
"""

from __future__ import annotations

__all__ = ["BudgetExceeded", "ExpostError", "InvalidParameter", "NotAStoppingTime"]


class ExpostError(Exception):
    """Base class of every error raised on purpose by `expost`."""


class InvalidParameter(ExpostError, ValueError):
    """A parameter broke a rule: ``InvalidParameter("delta", 1.5, "must lie in [0, 1)")``."""

    def __init__(self, name: str, value: object, rule: str) -> None:
        self.name = name
        self.value = value
        self.rule = rule
        super().__init__(f"{name}={value!r} is invalid: {rule}")


class BudgetExceeded(ExpostError):
    """A round was refused because it could exceed the privacy budget; nothing was spent."""

    def __init__(self, spent: float, requested: float, remaining: float, unit: str = "rho") -> None:
        self.spent = spent
        self.requested = requested
        self.remaining = remaining
        self.unit = unit
        super().__init__(
            f"budget exceeded: already spent {unit}={spent!r}, this round asks for "
            f"{unit}={requested!r}, only {unit}={remaining!r} remains; the round was refused "
            "and nothing was spent"
        )


class NotAStoppingTime(ExpostError, TypeError):
    """A stopping rule asked for something other than the released iterates."""
