"""Threshold mechanisms: AboveThreshold and ReducedAboveThreshold (THEORY.md §2–3).

Both answer "is the utility of this candidate above the threshold τ?" for a stream of candidates,
on private data, and halt at the first yes. ``utilities[n]`` is u(candidate n, x), a utility of
sensitivity Δ in the data, computed by the caller inside the trusted boundary.

`AboveThreshold` draws its noises as floats from numpy or, with ``exact=True``, as exact integers
from a `BitSource` (issue 28 item 4: exactness is a property of the noise).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import Converter, field, frozen

from expost._validation import (
    as_float,
    exact_integer,
    exact_integers,
    exact_sensitivity,
    finite_array,
    flag,
    generator,
    int_array,
    noise_source,
    path_value,
    positive,
    private_real,
    rational,
    validator,
)
from expost.errors import InvalidParameter, refused
from expost.exact.bits import BitSource
from expost.exact.samplers import discrete_laplace
from expost.filters.costs import DPCost, ExPostCost
from expost.guarantees import ExPost, PureDP
from expost.mechanisms.exact_additive import add_exact, integers
from expost.mechanisms.noise_reduction import (
    BrownianNoiseReduction,
    PrivacyBoundaryWithDelta,
    check_boundary,
)
from expost.processes import BrownianPath, LaplaceProcess, sample_laplace_grid
from expost.rounding import up_exact
from expost.stopping import Never, ReleasedBuffer

__all__ = [
    "AboveThreshold",
    "AboveThresholdResult",
    "BrownianThresholdResult",
    "ReducedAboveThreshold",
    "ReducedAboveThresholdResult",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
AnyArray = npt.NDArray[Any]


def _utilities(utilities: npt.ArrayLike, exact: bool = False) -> AnyArray:
    """(trials, n) utilities, n >= 1: finite floats, or integers (`integers`) when ``exact``."""
    u = integers("utilities", utilities) if exact else finite_array("utilities", utilities)
    if u.ndim != 2 or u.shape[1] == 0:
        raise InvalidParameter("utilities", u.shape, "must have shape (trials, n), n >= 1")
    return u


def _first_hits(fired: npt.NDArray[np.bool_]) -> IntArray:
    """Index of the first True per row, or −1."""
    result: IntArray = np.where(fired.any(axis=1), np.argmax(fired, axis=1), -1)
    return result


def _laplace(source: np.random.Generator | BitSource, scale: Fraction | float, size: int) -> Any:
    """``size`` Laplace(scale) noises: numpy's floats from a Generator, exact discrete Laplace
    integers (CKS Alg. 2) from a `BitSource`."""
    if isinstance(source, np.random.Generator):
        return source.laplace(0.0, float(scale), size)
    return discrete_laplace(Fraction(scale), source, size)


@frozen
class AboveThresholdResult:
    """The first query at or above the threshold (``stop_index``, 0-based; None: none was), how
    many queries were asked and the round's ``cost``, DPCost(eps) (Lyu et al. 2017).

    What the run releases is ``stop_index`` alone. Vocabulary: `expost.mechanisms.transcript`.
    """

    stop_index: int | None
    queries_asked: int
    cost: DPCost

    @property
    def stopped(self) -> bool:
        """Whether a query was found above the threshold."""
        return self.stop_index is not None


def _exact(mechanism: Any) -> bool:
    """The mode, checked first (the converters below depend on it)."""
    return flag("exact", mechanism.exact)


def _eps(value: Any, self_: Any) -> Fraction | float:
    """eps: an exact `Fraction` for exact noise (a float taken exactly), else a float > 0."""
    return rational("eps", value) if _exact(self_) else positive("eps", value)


def _threshold(value: Any, self_: Any) -> int | float:
    """τ: an integer for exact noise, else a finite float."""
    return exact_integer("threshold", value) if _exact(self_) else private_real("threshold", value)


def _sensitivity(value: Any, self_: Any) -> int | float:
    """Δ: a positive integer for exact noise, else a float > 0."""
    return exact_sensitivity(value) if _exact(self_) else positive("sensitivity", value)


@frozen
class AboveThreshold:
    """AboveThreshold (sparse vector) of Lyu et al. (2017, Alg. 1): eps-DP however many queries
    (THEORY §2).

    Threshold noise ζ ~ Lap(2Δ/eps) once, query noise ξ_i ~ Lap(4Δ/eps) fresh per query; halts at
    the first i with u_i + ξ_i >= τ + ζ.

    ``exact=True``: integer utilities, threshold and Δ, exact rational eps (a float is taken
    exactly), and discrete Laplace noises of the same scales drawn exactly from a `BitSource`
    (CKS Alg. 2). The same price DPCost(eps), eps rounded up: Lyu et al.'s proof shifts the
    threshold noise by Δ and the answered query's noise by 2Δ and bounds each density ratio by
    e^{eps/2}; with integer utilities and Δ the shifts are integers and the discrete Laplace pmf
    ratios obey the same bounds, so the proof holds unchanged.
    """

    exact: bool = field(default=False, kw_only=True, validator=validator(flag))
    eps: Fraction | float = field(
        converter=Converter(_eps, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
    )
    threshold: int | float = field(
        converter=Converter(_threshold, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
    )
    sensitivity: int | float = field(
        default=1.0,
        converter=Converter(_sensitivity, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
    )

    def _eps_up(self) -> float:
        """eps as a float: stored (float), rounded up from the rational (exact)."""
        return up_exact(Fraction(self.eps)) if self.exact else float(self.eps)

    def guarantee(self) -> PureDP:
        """eps-DP (Lyu et al. 2017), eps rounded up in exact mode."""
        return PureDP(self._eps_up())

    def cost(self) -> DPCost:
        """The round as a cost: DPCost(eps) (Lyu et al. 2017), the same for both noises."""
        return DPCost(self._eps_up())

    @property
    def threshold_scale(self) -> Fraction | float:
        """2Δ/eps (a `Fraction`, exactly, in exact mode)."""
        return 2 * self.sensitivity / self.eps

    @property
    def query_scale(self) -> Fraction | float:
        """4Δ/eps (a `Fraction`, exactly, in exact mode)."""
        return 4 * self.sensitivity / self.eps

    def _utility(self, value: object) -> int | float:
        if not self.exact:
            return private_real("utilities", value)
        u = exact_integers("utilities", value)
        if u.ndim:
            raise refused("utilities", value, "must be a sequence of integers")
        return int(u)

    def run(
        self, utilities: Iterable[float], source: np.random.Generator | BitSource
    ) -> AboveThresholdResult:
        """Consume ``utilities`` lazily and halt at the first one found above the threshold.

        ``source``: a numpy Generator, or a `BitSource` when exact (`noise_source`)."""
        noise = noise_source(self.exact, source)

        def draw(scale: Fraction | float) -> Any:  # a Python float or int
            return _laplace(noise, scale, 1)[0].item()

        noisy_threshold: int | float = 0
        asked = 0
        for u in utilities:
            value = self._utility(u)
            if asked == 0:
                noisy_threshold = self.threshold + draw(self.threshold_scale)
            asked += 1
            if value + draw(self.query_scale) >= noisy_threshold:
                return AboveThresholdResult(asked - 1, asked, self.cost())
        return AboveThresholdResult(None, asked, self.cost())

    def run_batch(
        self, utilities: npt.ArrayLike, source: np.random.Generator | BitSource
    ) -> IntArray:
        """Each trial's ``stop_index`` (−1: none, `expost.mechanisms.transcript`) for (trials, n)
        utilities; all n noises drawn. Exact sums are exact (`add_exact`)."""
        u = _utilities(utilities, self.exact)
        noise = noise_source(self.exact, source)
        zeta = _laplace(noise, self.threshold_scale, u.shape[0]).reshape(-1, 1)
        xi = _laplace(noise, self.query_scale, u.size).reshape(u.shape)
        if not self.exact:
            return _first_hits(u + xi >= self.threshold + zeta)
        tau = np.broadcast_to(int_array([int(self.threshold)]), zeta.shape)
        return _first_hits(np.asarray(add_exact(u, xi) >= add_exact(tau, zeta), dtype=bool))


@frozen
class ReducedAboveThresholdResult:
    """Halting index N (``stop_index``, 0-based; None: no query passed), queries asked, and
    ``level`` = E_N.

    ``level`` bounds the threshold part of the loss: L <= L^Alg_(1:N) + E_N (BNR Thm 5.1);
    ``ex_post`` = ExPost(E_N) is that part and ``cost`` = ExPostCost(E_N) the same as a cost, to
    compose with the algorithm's own (APC Lemma B.1). With no halt, ``level`` is the last level
    asked: the all-zero answers cost at most E_n/2 given the algorithm's iterates (inequalities 1
    and 3 of the proof of Thm 5.1). No query asked: ``level`` and ``cost`` are None.
    """

    stop_index: int | None
    queries_asked: int
    level: float | None

    @property
    def stopped(self) -> bool:
        """Whether a query passed."""
        return self.stop_index is not None

    @property
    def ex_post(self) -> ExPost | None:
        """ExPost(E_N): the threshold part of the loss (BNR Thm 5.1)."""
        return None if self.level is None else ExPost(self.level)

    @property
    def cost(self) -> ExPostCost | None:
        """ExPostCost(E_N): the threshold part of the loss (BNR Thm 5.1)."""
        return None if self.level is None else ExPostCost(self.level)


@frozen
class BrownianThresholdResult:
    """ReducedAboveThreshold run on a Brownian mechanism's iterates (BNR Cor 5.2).

    ``stop_index``: the first iterate whose private check passed (None: none did); ``value``: that
    iterate, the only one released; ``time``: its Brownian time T_N; ``level``: ψ(T_N);
    ``ex_post``: ExPost(2ψ(T_N), delta) (BNR Cor 5.2), None if no check passed; ``cost``:
    ExPostCost(2ψ(T_N), delta) when it halted, else the worst case
    `ReducedAboveThreshold.brownian_cost`. Vocabulary: `expost.mechanisms.transcript`.
    """

    stop_index: int | None
    queries_asked: int
    value: FloatArray | None = field(eq=False)
    time: float | None
    level: float | None
    ex_post: ExPost | None
    cost: ExPostCost

    @property
    def stopped(self) -> bool:
        """Whether a check passed."""
        return self.stop_index is not None


def _eps_max_check(eps_max: float, levels: FloatArray | float, name: str) -> None:
    if np.any(np.asarray(levels) > eps_max):
        raise InvalidParameter(name, levels, f"must be <= eps_max = {eps_max!r}")


@frozen
class ReducedAboveThreshold:
    """ReducedAboveThreshold (BNR Algorithm 1, Thm 5.1): AboveThreshold with adaptive levels.

    For n = 1, 2, …: level eps_n <= eps_max; threshold noise ζ_n = Z(2Δ/eps_n) read from ONE
    continuous Laplace process Z (BNR eq. 4) with η = 2Δ/eps_max; query noise ξ_n ~ Lap(4Δ/eps_n)
    fresh; halt at the first n with u_n + ξ_n >= τ + ζ_n. The loss is at most
    L^Alg_(1:N) + eps_N (BNR Thm 5.1). Constant levels give AboveThreshold.

    Levels must be non-decreasing: the proof of Thm 5.1 conditions on the threshold noise at the
    current (smallest) scale and needs the earlier noises to be that value plus independent
    increments, which holds when Z is read at decreasing scales. So Z covers [η, 2Δ/eps_1].
    """

    threshold: float = field(converter=as_float, validator=validator(private_real))
    eps_max: float = field(converter=as_float, validator=validator(positive))
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))

    def _scale(self, level: float) -> float:
        return 2.0 * self.sensitivity / level

    def _level(self, level: object, previous: float | None) -> float:
        e = positive("levels", level)
        _eps_max_check(self.eps_max, e, "levels")
        if previous is not None and e < previous:
            raise InvalidParameter(
                "levels", level, f"must be non-decreasing (previous level {previous!r})"
            )
        return e

    def _steps(
        self,
        rounds: Iterable[tuple[object, object]],
        rng: np.random.Generator,
    ) -> tuple[int | None, int, float | None]:
        """Run Algorithm 1 on (utility, level) pairs; returns (index, asked, last level)."""
        process: LaplaceProcess | None = None
        level: float | None = None
        asked = 0
        for utility, raw_level in rounds:
            u = private_real("utilities", utility)
            level = self._level(raw_level, level)
            if process is None:
                process = LaplaceProcess(self._scale(self.eps_max), self._scale(level), 1, rng)
            asked += 1
            zeta = float(process.at(self._scale(level))[0])
            xi = rng.laplace(0.0, 2.0 * self._scale(level))
            if u + xi >= self.threshold + zeta:
                return asked - 1, asked, level
        return None, asked, level

    def run(
        self, utilities: Iterable[float], levels: Iterable[float], rng: np.random.Generator
    ) -> ReducedAboveThresholdResult:
        """Algorithm 1 on lazily consumed ``utilities[n]`` = u(Alg_n(x), x) and ``levels[n]`` = eps_n.

        Both may be generators computing round n from what was released before it.
        """
        rng = generator(rng)
        index, asked, level = self._steps(zip(utilities, levels, strict=False), rng)
        return ReducedAboveThresholdResult(index, asked, level)

    def run_batch(
        self, utilities: npt.ArrayLike, levels: npt.ArrayLike, rng: np.random.Generator
    ) -> IntArray:
        """Each trial's ``stop_index`` (−1: none, `expost.mechanisms.transcript`) for (trials, n)
        utilities and fixed levels (n,)."""
        u = _utilities(utilities)
        e = finite_array("levels", levels)
        if e.shape != (u.shape[1],) or np.any(e <= 0.0) or np.any(np.diff(e) < 0.0):
            raise InvalidParameter("levels", levels, "must be n positive, non-decreasing levels")
        _eps_max_check(self.eps_max, e, "levels")
        rng = generator(rng)
        scales = 2.0 * self.sensitivity / e
        distinct, where = np.unique(-scales, return_inverse=True)  # decreasing scales
        zeta = sample_laplace_grid(-distinct, u.shape[0], 1, rng)[:, where, 0]
        xi = rng.laplace(0.0, 2.0 * scales, size=u.shape)
        return _first_hits(u + xi >= self.threshold + zeta)

    def brownian_cost(self, bm: BrownianNoiseReduction, boundary: object = None) -> ExPostCost:
        """The most `run_with_brownian` may cost: ExPostCost(2ψ(t_min), delta) (BNR Cor 5.2).

        ψ is ``boundary`` (default ``bm.boundary``).
        """
        psi = self._boundary(bm, boundary)
        return ExPostCost(2.0 * float(psi(bm.smallest_time)), psi.delta)

    def _boundary(self, bm: BrownianNoiseReduction, boundary: object) -> PrivacyBoundaryWithDelta:
        psi = check_boundary(bm.boundary if boundary is None else boundary, bm.sensitivity)
        if psi is None:
            raise InvalidParameter("boundary", boundary, "a privacy boundary ψ is needed")
        return psi

    def run_with_brownian(
        self,
        bm: BrownianNoiseReduction,
        value: npt.ArrayLike,
        utility: Callable[[FloatArray], float],
        rng: np.random.Generator,
        boundary: object = None,
    ) -> BrownianThresholdResult:
        """BNR Cor 5.2: check BM iterates privately with levels E_n = ψ(T_n).

        Iterate n = f(x) + B(T_n) is drawn, ``utility(iterate)`` (on private data, sensitivity Δ)
        is checked by Algorithm 1 at level ψ(T_n), and only the first iterate that passes is
        released. Statement (BNR Cor 5.2): the run is (2ψ(T_N), delta)-ex-post private, where
        delta is the boundary's (default ``bm.boundary``): the loss is at most L^BM_N + ψ(T_N)
        (Thm 5.1 and the noise-reduction property), and L^BM_n <= ψ(T_n) for all n at once with
        probability >= 1 − delta (BNR Thm 3.6). The BM's own rule must be `Never`: the check
        decides when to stop. An adaptive time function sees the earlier iterates; the bound
        covers that (Thm 5.1 counts all of Alg_(1:N)). A run where no check passes releases
        only that fact; Cor 5.2 gives no ex-post bound for it (``ex_post`` is None) and its
        ``cost`` is the worst case, `brownian_cost`.
        """
        psi = self._boundary(bm, boundary)
        if not isinstance(bm.stop, Never):
            raise InvalidParameter("bm", bm, "must have stop=Never(): the private check stops it")
        if not callable(utility):
            raise InvalidParameter("utility", utility, "must be callable")
        _eps_max_check(self.eps_max, psi(bm.smallest_time), "bm")
        v = path_value(value)
        rng = generator(rng)
        path = BrownianPath(v.size, rng)
        hidden = ReleasedBuffer(v.size, bm.sensitivity)

        def rounds() -> Iterable[tuple[object, object]]:
            first, next_time = bm._next_time()
            t: float | None = first
            while t is not None:
                iterate = v + path.next(t)
                view = hidden.append(iterate, t, t)
                yield utility(iterate.copy()), psi(t)
                t = next_time(view)

        index, asked, _ = self._steps(rounds(), rng)
        if index is None:
            worst = self.brownian_cost(bm, psi)
            return BrownianThresholdResult(None, asked, None, None, None, None, worst)
        t_n = float(hidden.times[index])
        level = float(psi(t_n))
        bound = ExPost(2.0 * level, psi.delta)
        return BrownianThresholdResult(
            index,
            asked,
            hidden.values[index],
            t_n,
            level,
            bound,
            ExPostCost(bound.bound, psi.delta),
        )
