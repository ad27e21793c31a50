"""The doubling method: fresh Gaussian releases at doubling eps² until a rule stops (APC Sec. 7.1).

The noise is float (numpy, ``exact=False``) or exact (discrete Gaussian integers from a
`BitSource`, ``exact=True``, CKS Alg. 3): the same levels, rule, caps and rho; the price differs
only in type (`DoublingMethod.cost`).
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import Converter, converters, field, frozen, validators

from expost._validation import (
    FLOAT_LIMIT,
    as_float,
    exact_integers,
    exact_sensitivity,
    finite_array,
    flag,
    noise_source,
    point,
    positive,
    positive_int,
    read_only,
    validator,
)
from expost.errors import InvalidParameter
from expost.ex_post_rdp import ExPostRDP
from expost.exact.bits import BitSource
from expost.exact.samplers import discrete_gaussian
from expost.filters._exact import prefix_sums_up
from expost.filters.costs import GaussianCost, ZCDPCost
from expost.grids import EpsilonGrid
from expost.guarantees import ZCDP
from expost.mechanisms.additive import GaussianMechanism
from expost.mechanisms.exact_additive import add_exact, integers
from expost.stopping import (
    BatchStoppingRule,
    RelativeError,
    Released,
    StoppingRule,
    as_stopping_rule,
    first_stops,
    run_rule_on_path,
)

__all__ = ["DoublingBatch", "DoublingMethod", "DoublingTranscript"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]


def _ratio(name: str, value: object) -> None:
    if positive(name, value) <= 1.0:
        raise InvalidParameter(name, value, "must be > 1")


def _optional_int(name: str, value: object) -> None:
    if value is not None:
        positive_int(name, value)


def _sensitivity(value: Any, self_: Any) -> float | int:
    """Δ: a float (float noise; the validator checks it), or with exact noise a positive integer
    (integer tries need an integer Δ, `exact_sensitivity`) of at most 2**1000, so that the grid's
    float times Δ²/eps² can be formed (they are checked there)."""
    if not self_.exact:
        return as_float(value)
    d = exact_sensitivity(value)
    if d > FLOAT_LIMIT:
        raise InvalidParameter("sensitivity", value, "must be at most 2**1000")
    return d


@frozen(eq=False)
class DoublingTranscript:
    """One run of the doubling method: every try was released and every try is paid.

    ``released`` (tries, *value.shape) per try, noisiest first: floats (float noise) or integers
    (exact noise: int64, Python ints beyond); ``eps2`` (tries,), the exact eps_i², per try;
    ``stopped``: whether the rule accepted a try, ``stop_index`` its index (None: none was);
    ``cost``: Σ eps_i²/2 over the tries made, rounded up, a `GaussianCost` for float tries and a
    `ZCDPCost` for discrete Gaussian ones (`DoublingMethod.cost`); ``costs`` the rho of each try
    as `ZCDP` values (APC Sec. 7.1). Vocabulary: `expost.mechanisms.transcript`.
    """

    released: npt.NDArray[Any]
    eps2: FloatArray
    stopped: bool
    stop_index: int | None
    cost: ZCDPCost
    costs: tuple[ZCDP, ...]

    @property
    def eps(self) -> FloatArray:
        """The privacy level eps_i of each try."""
        return read_only(np.sqrt(self.eps2))

    @property
    def tries(self) -> int:
        """How many tries were made (and paid)."""
        return int(self.eps2.size)

    @property
    def value(self) -> npt.NDArray[Any]:
        """The last released try (its dtype kept): the accepted one on success."""
        last = np.array(self.released[-1])
        last.flags.writeable = False
        return last

    @property
    def ex_post_rdp(self) -> ExPostRDP:
        """Ex-post zCDP of the tries released (THEORY §11): rho(y) = Σ_(i<=k) eps_i²/2 over the k
        tries made (``cost.rho``, rounded up), immune to post-processing. Fresh Gaussian tries
        stopped adaptively compose into an exponential martingale; discrete Gaussian tries are
        each eps_i²/2-zCDP (CKS Thm 4), so the product of their per-try factors is a
        supermartingale (THEORY §11, Filters) and optional stopping gives the same bound."""
        return ExPostRDP.of_rho(self.cost.rho)


@frozen(eq=False)
class DoublingBatch:
    """Many independent runs of the doubling method, one entry per trial.

    ``stop_index`` (−1 exactly where ``stopped`` is False, the convention of
    `expost.mechanisms.transcript`), ``stopped``, ``tries`` made, ``cost`` = Σ eps_i²/2 over them
    (rho, zCDP), and ``value`` (trials, *value.shape), the last released try of each trial
    (floats, or with exact tries integers: int64 when they fit, else Python ints).
    """

    stop_index: IndexArray
    stopped: BoolArray
    tries: IndexArray
    cost: FloatArray
    value: npt.NDArray[Any]


@frozen
class DoublingMethod:
    """Fresh Gaussian releases at eps_1² = ``start_eps2``, eps_(i+1)² = ``ratio``·eps_i² (APC Sec. 7.1).

    Try i is `GaussianMechanism` (Δ, rho_i = eps_i²/2), i.e. noise sd σ_i = Δ/eps_i. After each
    try the stopping rule sees a `Released` view of all tries so far (times t_i = Δ²/eps_i²,
    so its sd is σ_i); the run stops at the first try it accepts, or after the last try:
    the largest eps² <= ``max_eps2`` and at most ``max_tries`` tries (at least one of the two
    caps is required, so the worst case is finite). Every try is paid: the run costs
    Σ rho_i over the tries made, composed by a filter (APC Thm 1).

    ``exact=True``: try i is the discrete Gaussian f(x) + N_Z(0, σ_i²) with σ_i² = Δ²/eps_i²
    exactly (CKS Alg. 3; `GaussianMechanism` with ``exact=True``), drawn from a `BitSource`, on an integer
    value with an integer Δ; the levels are the same floats, the sampler uses their exact
    rational values, and each try is eps_i²/2-zCDP (CKS Thm 4), the same rho. The levels stay
    floats in both modes (``start_eps2``, ``ratio``, ``max_eps2``): noise and price use the same
    float levels, so nothing is rounded between them. Batch runs (`run_batch`, `run_trials`)
    draw float tries only.
    """

    exact: bool = field(default=False, kw_only=True, validator=validator(flag))
    sensitivity: int | float = field(
        default=1.0,
        converter=Converter(_sensitivity, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
        validator=validator(positive),
    )
    start_eps2: float = field(default=1e-4, converter=as_float, validator=validator(positive))
    ratio: float = field(default=2.0, converter=as_float, validator=validator(_ratio))
    max_eps2: float | None = field(
        default=None,
        converter=converters.optional(as_float),
        validator=validators.optional(validator(positive)),
    )
    stop: StoppingRule = field(default=RelativeError(0.1), converter=as_stopping_rule)
    max_tries: int | None = field(default=None, kw_only=True, validator=validator(_optional_int))
    _grid: EpsilonGrid = field(init=False, repr=False, eq=False)
    _sigma: FloatArray = field(init=False, repr=False, eq=False)
    _times: FloatArray = field(init=False, repr=False, eq=False)
    _cumulative: FloatArray = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_grid", self._build_grid())
        object.__setattr__(self, "_cumulative", read_only(prefix_sums_up(self._grid.rho)))
        object.__setattr__(self, "_sigma", read_only([m.sigma for m in self._gaussian_tries()]))
        object.__setattr__(self, "_times", self._grid.times.array)

    def _build_grid(self) -> EpsilonGrid:
        if self.max_eps2 is None:
            if self.max_tries is None:
                raise InvalidParameter(
                    "max_eps2",
                    None,
                    "give max_eps2 or max_tries: the number of tries must be bounded",
                )
            with np.errstate(over="ignore"):
                eps2 = self.start_eps2 * self.ratio ** np.arange(self.max_tries, dtype=np.float64)
            try:
                return EpsilonGrid.from_eps2(eps2, self.sensitivity)
            except InvalidParameter as exc:
                raise InvalidParameter("max_tries", self.max_tries, exc.rule) from exc
        if self.max_eps2 < self.start_eps2:
            raise InvalidParameter(
                "max_eps2", self.max_eps2, f"must be >= start_eps2 = {self.start_eps2!r}"
            )
        grid = EpsilonGrid.geometric_in_eps2(
            self.start_eps2, self.max_eps2, self.ratio, self.sensitivity
        )
        if self.max_tries is not None and self.max_tries < len(grid):
            return EpsilonGrid.from_eps2(grid.eps2[: self.max_tries], self.sensitivity)
        return grid

    @property
    def grid(self) -> EpsilonGrid:
        """The levels of all possible tries, eps_1 < eps_2 < … (times Δ²/eps_i²)."""
        return self._grid

    @property
    def tries(self) -> tuple[GaussianMechanism, ...]:
        """The mechanism of each possible try, rho_i = eps_i²/2: `GaussianMechanism`, or with
        ``exact`` the exact `GaussianMechanism` with σ_i² = Δ²/eps_i² exactly."""
        return self._discrete_tries() if self.exact else self._gaussian_tries()

    def _gaussian_tries(self) -> tuple[GaussianMechanism, ...]:
        return tuple(GaussianMechanism(self.sensitivity, float(r)) for r in self._grid.rho)

    def _discrete_tries(self) -> tuple[GaussianMechanism, ...]:
        d = int(self.sensitivity)
        return tuple(
            GaussianMechanism.from_sigma2(d, Fraction(d * d) / Fraction(float(e2)), exact=True)
            for e2 in self._grid.eps2
        )

    def guarantee(self) -> ZCDP:
        """The worst case: every try up to the cap made, Σ_i eps_i²/2-zCDP (APC Lemma 2.2)."""
        return ZCDP(float(self._cumulative[-1]))

    def cost(self) -> ZCDPCost:
        """The worst case as a cost: every try's rho summed (= ``guarantee().rho``).

        Float tries: a `GaussianCost` (a `ZCDPCost` subclass): Gaussian tries compose to a
        Gaussian round (mu² = Σ eps_i², THEORY §9). Exact tries: a plain `ZCDPCost` of the same
        rho: the discrete Gaussian is zCDP (CKS Thm 4) but not GDP (its privacy loss is a discrete
        variable, not N(rho, 2rho)), so a `GaussianDPFilter` refuses it.
        """
        return self._priced(self.guarantee().rho)

    def _priced(self, rho: float) -> ZCDPCost:
        return ZCDPCost(rho) if self.exact else GaussianCost(rho)

    @property
    def cumulative_cost(self) -> FloatArray:
        """Σ_(i<=k) eps_i²/2 for k = 1, …, len(grid): what a run that made k tries is charged.

        Each sum is exact, rounded up to a float (`prefix_sums_up`), so no run is under-charged.
        """
        return self._cumulative

    def run(
        self, value: npt.ArrayLike, source: np.random.Generator | BitSource
    ) -> DoublingTranscript:
        """One run: release tries until the rule accepts one or the cap is reached.

        ``value``: a finite scalar or 1-d array (integers with ``exact``); ``source``: a numpy
        Generator, or with ``exact`` a `BitSource` (`noise_source`). The rule sees the released
        values as floats.
        """
        v = exact_integers("value", value) if self.exact else point("value", value)
        releases = self._releases(v, noise_source(self.exact, source))
        released: list[npt.NDArray[Any]] = []
        stopped_at: int | None = None
        for k, y in enumerate(releases):
            released.append(y)
            path = np.reshape(released, (k + 1, -1)).astype(np.float64)
            if self.stop(Released(path, self._times[: k + 1], self.sensitivity)):
                stopped_at = k
                break
        made = len(released)
        out = np.stack(released)
        out.flags.writeable = False
        return DoublingTranscript(
            released=out,
            eps2=read_only(self._grid.eps2[:made]),
            stopped=stopped_at is not None,
            stop_index=stopped_at,
            cost=self._priced(float(self._cumulative[made - 1])),
            costs=tuple(ZCDP(float(r)) for r in self._grid.rho[:made]),
        )

    def _releases(
        self, v: npt.NDArray[Any], source: np.random.Generator | BitSource
    ) -> Iterator[npt.NDArray[Any]]:
        """Each try's release in order, drawn only when the run gets to it."""
        if isinstance(source, np.random.Generator):
            return (m.run(v, source) for m in self._gaussian_tries())
        return (m.run(v, source) for m in self._discrete_tries())

    def run_batch(
        self, value: npt.ArrayLike, trials: int, source: np.random.Generator | BitSource
    ) -> DoublingBatch:
        """``trials`` independent runs, all tries drawn at once (trials, tries, *value.shape).

        A `BatchStoppingRule` is evaluated in one vectorised call (`first_stops`); any other
        rule falls back to a Python loop over trials (`run_rule_on_path`), which is slower.
        With ``exact`` the value is integer and every try exact (`run`), each try's noise drawn
        for all trials in one call of the discrete Gaussian sampler.
        """
        src = noise_source(self.exact, source)
        v = exact_integers("value", value) if self.exact else point("value", value)
        n = positive_int("trials", trials)
        return self._run_rows(np.broadcast_to(v, (n, *v.shape)), src, None)

    def run_trials(
        self,
        values: npt.ArrayLike,
        source: np.random.Generator | BitSource,
        max_tries: npt.ArrayLike | None = None,
    ) -> DoublingBatch:
        """Independent runs, one per row of ``values`` (trials,) or (trials, d), as `run_batch`.

        ``max_tries`` (trials,) caps each trial's tries (1 <= cap <= len(grid)), e.g. at what each
        trial's remaining budget affords; a trial stopped by its cap is a failure and pays its tries.
        """
        src = noise_source(self.exact, source)
        rows = integers("values", values) if self.exact else finite_array("values", values)
        if not 1 <= rows.ndim <= 2 or rows.size == 0:
            raise InvalidParameter("values", rows.shape, "must have shape (trials,) or (trials, d)")
        caps = None
        if max_tries is not None:
            caps = np.asarray(max_tries)
            count = len(self._grid)
            if (
                caps.shape != rows.shape[:1]
                or caps.dtype.kind not in "iu"
                or np.any(caps < 1)
                or np.any(caps > count)
            ):
                raise InvalidParameter(
                    "max_tries", max_tries, f"must be {rows.shape[0]} integers in [1, {count}]"
                )
        return self._run_rows(rows, src, caps)

    def _tries_released(
        self, rows: npt.NDArray[Any], source: np.random.Generator | BitSource
    ) -> npt.NDArray[Any]:
        """Every try for every row, (trials, tries, *shape): float Gaussian noise scaled by each
        σ_i, or exact discrete Gaussian noise added exactly (`add_exact`)."""
        n, shape = rows.shape[0], rows.shape[1:]
        count = len(self._grid)
        if isinstance(source, np.random.Generator):
            noise = source.standard_normal((n, count, *shape))
            return rows[:, None] + noise * self._sigma.reshape(count, *([1] * len(shape)))
        size = n * int(np.prod(shape, dtype=np.int64))
        draws = [discrete_gaussian(t.sigma2, source, size) for t in self._discrete_tries()]
        tries = np.stack([d.reshape((n, *shape)) for d in draws], axis=1)
        return add_exact(np.broadcast_to(rows[:, None], tries.shape), tries)

    def _run_rows(
        self,
        rows: npt.NDArray[Any],
        source: np.random.Generator | BitSource,
        caps: npt.NDArray[np.integer] | None,
    ) -> DoublingBatch:
        n, count = rows.shape[0], len(self._grid)
        values = self._tries_released(rows, source)
        paths = values.reshape(n, count, -1).astype(np.float64)  # the rule sees floats
        times = self._times
        if isinstance(self.stop, BatchStoppingRule):
            stopped = first_stops(self.stop, paths, times, self.sensitivity)
        else:
            found = (run_rule_on_path(self.stop, path, times, self.sensitivity) for path in paths)
            stopped = np.fromiter((-1 if k is None else k for k in found), np.intp, count=n)
        if caps is not None:
            stopped = np.where(stopped < caps, stopped, -1)
        success = stopped >= 0
        success.flags.writeable = False
        made = np.where(success, stopped + 1, count if caps is None else caps)
        return DoublingBatch(
            stop_index=_locked(stopped),
            stopped=success,
            tries=_locked(made),
            cost=read_only(self._cumulative[made - 1]),
            value=_frozen_copy(values[np.arange(n), made - 1]),
        )


def _frozen_copy(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A read-only copy, dtype kept (floats, int64 or Python ints)."""
    out = np.array(values)
    out.flags.writeable = False
    return out


def _locked(values: IndexArray) -> IndexArray:
    """A read-only copy of an index array."""
    out = np.array(values, dtype=np.intp)
    out.flags.writeable = False
    return out
