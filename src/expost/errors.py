"""Exception types of `expost`.

Every error the library raises on purpose is an `ExpostError`. Bad input is an
`InvalidParameter` (also a `ValueError`) whose message names the argument, the value and
the rule it broke; running out of budget is `BudgetExceeded`, which says what was spent,
what was asked and what remains.

A message never quotes private data: an array (or a private input wrapped in `Described`) is
shown by its type, shape and dtype only, and the check that refused it names the index and kind
of the fault (`expost._faults`; docs/session.md, "Private values stay out of errors"). Every
error pickles with its type, message and fields (a worker's error re-raises in the parent).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

__all__ = [
    "BudgetExceeded",
    "Described",
    "ExpostError",
    "InvalidParameter",
    "LedgerCorrupted",
    "LedgerError",
    "LedgerMismatch",
    "LedgerNotFound",
    "LedgerRefused",
    "NotAStoppingTime",
    "NotCopyable",
    "describe",
    "refused",
    "shown",
]


MAX_SHOWN = 200
"""The longest ``repr`` an error message quotes in full; a longer one is cut (`shown`)."""

_SHOWN_DIGITS = 40  # integers of more digits are described, not printed


class ExpostError(Exception):
    """Base class of every error raised on purpose by `expost`.

    Pickles with its type, message (``args``) and fields: the subclasses' constructors take
    other arguments than the message, so the copy is rebuilt from both (`_rebuilt`), a field
    that cannot be pickled kept as its `Described` form.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {key: _picklable(value) for key, value in self.__dict__.items()}
        return (_rebuilt, (type(self), self.args, fields))


def _picklable(value: object) -> object:
    import pickle  # lazy: `import expost` loads this module only

    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 -- any object may sit in a field (a lambda, a generator)
        return Described(value)
    return value


def _rebuilt(cls: type[ExpostError], args: tuple[Any, ...], fields: dict[str, Any]) -> ExpostError:
    """An `ExpostError` from its message and fields, without running its constructor."""
    err = cls.__new__(cls, *args)
    Exception.__init__(err, *args)
    err.__dict__.update(fields)
    return err


def describe(value: object) -> str:
    """A value by its type, shape and dtype, never its contents: "a float64 array of shape
    (3,)", "a list of 3 entries", "a float"."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:  # numpy and array-API arrays
        return f"a {dtype} scalar" if shape == () else f"a {dtype} array of shape {shape}"
    if isinstance(value, list | tuple | dict | set | frozenset):
        return f"a {type(value).__name__} of {len(value)} entries"
    return f"{'an' if type(value).__name__[0] in 'aeiou' else 'a'} {type(value).__name__}"


class Described:
    """A private input as messages show it: `describe`'s text, the value itself not kept."""

    __slots__ = ("text",)
    text: str

    def __init__(self, value: object) -> None:
        self.text = value.text if isinstance(value, Described) else describe(value)

    def __repr__(self) -> str:
        return f"<{self.text}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Described) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _integer(n: int) -> str:
    """A huge integer by its size and leading digits: ``2**1001`` is "a 302-digit integer
    (~2.1e301)" (no ``str(n)``: Python refuses to print integers of more than 4300 digits)."""
    size = abs(n)
    exponent = math.floor(math.log10(size))  # within one of the truth: corrected below
    if 10**exponent > size:
        exponent -= 1
    elif 10 ** (exponent + 1) <= size:
        exponent += 1
    lead = size // 10 ** (exponent - 2)  # the first three digits (truncated, hence "~")
    sign = "-" if n < 0 else ""
    return f"a {exponent + 1}-digit integer (~{sign}{lead // 100}.{lead // 10 % 10}e{exponent})"


def _part(n: int) -> str:
    return _integer(n) if abs(n) >= 10**_SHOWN_DIGITS else repr(n)


def shown(value: object) -> str:
    """``repr(value)`` as an error message quotes it: an array by its shape and dtype only
    (`describe`: arrays are data), integers (and the parts of a `Fraction`) of more than 40
    digits described by size, a longer ``repr`` than `MAX_SHOWN` cut, saying how long it was,
    and a ``repr`` that fails named by the value's type."""
    if getattr(value, "shape", ()) != () and hasattr(value, "dtype"):
        return f"<{describe(value)}>"
    if isinstance(value, int) and not isinstance(value, bool):
        return _part(value)
    if isinstance(value, Fraction):
        return f"Fraction({_part(value.numerator)}, {_part(value.denominator)})"
    try:
        text = repr(value)
    except Exception as err:  # noqa: BLE001 -- a message is built whatever repr raises (too long ints)
        return f"a {type(value).__name__} value that cannot be printed ({type(err).__name__})"
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[: MAX_SHOWN - 40]}… (a repr of {len(text)} characters)"


def refused(name: str, value: object, rule: str) -> InvalidParameter:
    """The refusal of an array or a private input: shown by type, shape and dtype only."""
    return InvalidParameter(name, Described(value), rule)


class InvalidParameter(ExpostError, ValueError):
    """A parameter broke a rule: ``InvalidParameter("delta", 1.5, "must lie in [0, 1)")``."""

    def __init__(self, name: str, value: object, rule: str) -> None:
        self.name = name
        self.value = value
        self.rule = rule
        super().__init__(f"{name}={shown(value)} is invalid: {rule}")


class BudgetExceeded(ExpostError):
    """A round was refused because it could exceed the privacy budget; nothing was spent.

    ``spent`` and ``remaining`` are what the filter (and a session) reports as ``spent`` and
    ``remaining``, in ``unit``; ``detail`` says how they relate where that is not plain.
    """

    def __init__(
        self,
        spent: float,
        requested: float,
        remaining: float,
        unit: str = "rho",
        *,
        detail: str = "",
    ) -> None:
        self.spent = spent
        self.requested = requested
        self.remaining = remaining
        self.unit = unit
        self.detail = detail
        note = f" ({detail})" if detail else ""
        super().__init__(
            f"budget exceeded: already spent {unit}={spent!r}, this round asks for "
            f"{unit}={requested!r}, only {unit}={remaining!r} remains{note}; the round was "
            "refused and nothing was spent"
        )


class NotAStoppingTime(ExpostError, TypeError):
    """A stopping rule asked for something other than the released iterates."""


class NotCopyable(ExpostError, TypeError):
    """An object that holds spendable state (a session, an open ledger) was copied or pickled.

    A copy would spend the same budget a second time (or share a connection that cannot be
    shared), so ``copy.copy``, ``copy.deepcopy`` and ``pickle`` refuse; ``advice`` says what to
    do instead (docs/session.md, "Threads, copies and pickles").
    """

    def __init__(self, what: str, advice: str) -> None:
        self.what = what
        self.advice = advice
        super().__init__(
            f"a {what} cannot be copied or pickled: a copy would spend the same budget again; "
            f"{advice}"
        )


class LedgerError(ExpostError):
    """The ledger could not be used: locked too long, not accessible, or closed."""


class LedgerRefused(LedgerError):
    """The ledger's server refused a record by its own checks (not a failure of access or of
    the connection): written again, it would be refused again."""


class LedgerMismatch(LedgerError):
    """The ledger holds another configuration (``what="config"``) or, pinned by its id, is
    not the ledger that was pinned (``what="id"``: it was re-created)."""

    def __init__(
        self,
        path: Path | str,
        stored: str,
        given: str,
        *,
        what: str = "config",
        advice: str = "use another ledger",
    ) -> None:
        self.path = path
        self.stored = stored
        self.given = given
        self.what = what
        if what == "id":
            message = (
                f"ledger {str(path)!r} has id {stored} but id {given} was pinned: it is not the "
                f"ledger that was pinned (re-created?); refusing to mix budgets"
            )
        else:
            message = (
                f"ledger {str(path)!r} was created for {what} {stored} but was opened with "
                f"{what} {given}; refusing to mix budgets"
            )
        super().__init__(f"{message} ({advice})")


class LedgerNotFound(LedgerError):
    """There is no ledger at the target; nothing was created (``create=True`` or
    ``expost ledger init`` creates one)."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"there is no ledger {str(path)!r}: {problem}; nothing was created")


class LedgerCorrupted(LedgerError):
    """The file is not a valid expost ledger; it was left exactly as it was."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(
            f"{str(path)!r} is not a valid expost ledger: {problem}; it was left "
            "unchanged (a ledger is never reset or overwritten)"
        )
