"""`BatchBudget`: the rho accounting of a zCDP or GDP filter for many independent trials at once.

Used by `expost.apps.relative_error` to run thousands of trials in lock-step rounds.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import as_float, positive, positive_int, validator
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters import GaussianDPFilter, UnifiedFilter, ZCDPFilter
from expost.rounding import largest_where_array

__all__ = ["BatchBudget"]

_U = 2.0**-53  # unit roundoff of float64
_BM_BUMP = 1.0 + 2.0**-48  # covers the few roundings in the scalar price Δ²/(2t) of a BM (<= 5u)


def _read_only_floats(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.array(values, dtype=np.float64)
    arr.flags.writeable = False
    return arr


@frozen(eq=False)
class BatchBudget:
    """The rho accounting of `UnifiedFilter` / `ZCDPFilter` (or of `GaussianDPFilter` in rho
    units, mu²/2: `start`) for many independent trials at once.

    Trial i has spent ``spent[i]`` (a float running sum of rho; ``error[i]`` bounds its distance
    to the exact sum). Condition (3) of APC Thm 5 is applied per trial; rounds carry no delta.
    Conservative by construction: a cost c is admitted only if
    fl(fl(spent + c) + error) <= rho·(1 − 2⁻⁵⁰), and every float operation errs by at most a
    factor (1 ± 2⁻⁵³), so the exact sum of the recorded costs plus c is <= rho: the batch never
    admits what the scalar filter, fed the same costs, would refuse. A BM stopped at eps² is
    charged `bm_cost` (eps²/2 rounded past the scalar filter's rounded-up
    `expost.filters._exact.rho_of_brownian`).
    """

    rho: float = field(converter=as_float, validator=validator(positive))
    spent: npt.NDArray[np.float64] = field(converter=_read_only_floats)
    error: npt.NDArray[np.float64] = field(converter=_read_only_floats)

    def __attrs_post_init__(self) -> None:
        if self.spent.ndim != 1 or self.error.shape != self.spent.shape:
            raise InvalidParameter("spent", self.spent.shape, "spent and error must be (trials,)")
        if not (np.all(np.isfinite(self.spent)) and np.all(self.spent >= 0.0)):
            raise InvalidParameter("spent", self.spent, "must be finite and >= 0")

    @classmethod
    def start(
        cls, filter: UnifiedFilter | ZCDPFilter | GaussianDPFilter, trials: int
    ) -> BatchBudget:
        """``trials`` copies of ``filter``'s budget and spend (its rounds must carry no delta).

        A `GaussianDPFilter` (unit mu²) is held in rho units, mu²/2: halving is exact, and its
        prices of Gaussian and BM rounds are exactly twice the zCDP ones (2·rho, 2·Δ²/(2t)
        rounded up as the zCDP filter does), so the same charges and `bm_cost` apply.
        """
        if not isinstance(filter, UnifiedFilter | ZCDPFilter | GaussianDPFilter):
            raise InvalidParameter(
                "filter", filter, "must be a UnifiedFilter, ZCDPFilter or GaussianDPFilter"
            )
        n = positive_int("trials", trials)
        unit = 2.0 if isinstance(filter, GaussianDPFilter) else 1.0
        spent = filter.spent / unit  # correctly rounded: within u·spent of the exact sum
        return cls(filter.budget / unit, np.full(n, spent), np.full(n, 2.0 * _U * spent))

    @property
    def trials(self) -> int:
        """How many trials."""
        return int(self.spent.size)

    @property
    def _safe(self) -> float:
        return self.rho * (1.0 - 2.0**-50)

    @staticmethod
    def bm_cost(eps2: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """What a BM stopped at eps² is charged: eps²/2, rounded up past the scalar filter's price."""
        out: npt.NDArray[np.float64] = np.asarray(eps2, dtype=np.float64) / 2.0 * _BM_BUMP
        return out

    def _rows(self, where: npt.ArrayLike | None) -> npt.NDArray[np.intp] | slice:
        return slice(None) if where is None else np.asarray(where, dtype=np.intp)

    def remaining(self, where: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
        """A lower bound on what is left per trial (or for the trials ``where``)."""
        rows = self._rows(where)
        left: npt.NDArray[np.float64] = np.maximum(
            0.0, self._safe - self.spent[rows] - self.error[rows]
        )
        return left

    def admits(
        self, rho: npt.ArrayLike, where: npt.ArrayLike | None = None
    ) -> npt.NDArray[np.bool_]:
        """Per trial (or for the trials ``where``): may a round costing at most ``rho`` run?"""
        rows = self._rows(where)
        c = np.asarray(rho, dtype=np.float64)
        result: npt.NDArray[np.bool_] = (c >= 0.0) & (
            (self.spent[rows] + c) + self.error[rows] <= self._safe
        )
        return result

    def spend(self, rho: npt.ArrayLike, where: npt.ArrayLike | None = None) -> BatchBudget:
        """A new budget with ``rho`` recorded for every trial (or the trials ``where``).

        `BudgetExceeded` (nothing recorded) if any of those trials does not admit it.
        """
        rows = self._rows(where)
        c = np.broadcast_to(np.asarray(rho, dtype=np.float64), self.spent[rows].shape)
        ok = self.admits(c, where)
        if not np.all(ok):
            bad = int(np.argmin(ok))
            raise BudgetExceeded(
                float(self.spent[rows][bad]), float(c[bad]), float(self.remaining(where)[bad])
            )
        spent, error = self.spent.copy(), self.error.copy()
        spent[rows] = self.spent[rows] + c
        error[rows] = self.error[rows] + 2.0 * _U * spent[rows]
        return BatchBudget(self.rho, spent, error)

    def max_bm_eps(self, where: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
        """The largest eps per trial with ``bm_cost(eps²)`` admitted (0 where none is): a BM
        grid may go up to it (as `UnifiedFilter.max_bm_eps`, APC Thm 5 condition (3))."""
        start = np.sqrt(np.maximum(0.0, 2.0 * self.remaining(where) / _BM_BUMP))

        def admitted(x: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
            with np.errstate(over="ignore", under="ignore"):  # far probes: x² is 0 or inf
                return (x > 0.0) & self.admits(self.bm_cost(x * x), where)

        found = largest_where_array(admitted, start)  # bounded: about 130 vectorised checks
        return np.where(start > 0.0, found, 0.0)
