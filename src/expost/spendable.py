"""Objects that hold spendable state refuse to be copied or pickled (docs/session.md).

A `PrivateSession` holds its budget's state and an open ledger holds a connection: a copy
(``copy.copy``, ``copy.deepcopy``) or a pickled twin (``pickle``, ``multiprocessing``) would
spend the same budget a second time, so each raises `NotCopyable` naming what to do instead.
Immutable values (filters, costs, guarantees) are copied freely: a filter is a record of what
was spent, and the budget is spent only through the one session that holds it.
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

from expost.errors import NotCopyable

__all__ = ["Spendable"]


class Spendable:
    """Mixin: ``copy``, ``deepcopy`` and ``pickle`` raise `NotCopyable` with ``_COPY_ADVICE``."""

    _COPY_ADVICE: ClassVar[str] = "open another one on the same ledger instead"

    def _refuse_copy(self) -> NoReturn:
        raise NotCopyable(type(self).__name__, self._COPY_ADVICE)

    def __copy__(self) -> NoReturn:
        self._refuse_copy()

    def __deepcopy__(self, memo: object) -> NoReturn:
        self._refuse_copy()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        self._refuse_copy()

    def __reduce__(self) -> NoReturn:
        self._refuse_copy()
