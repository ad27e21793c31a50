"""Skellam noise reduction (BNR App. E; THEORY §10): integer noise for counts.

The constructor validates everything a price or a run will need (times finite, > 0 and strictly
decreasing, the rate finite and > 0 with every λt a positive finite double, the sensitivity a
positive integer, the boundary's rate and sensitivity), and `SkellamNoiseReduction.check_value`
validates a value (the one value rule: the session's prepare step applies it too), so that a
caller can refuse bad input before anything is spent. Exactness is a property of the noise
(issue 28, item 4): ``exact=True`` draws the Poisson and binomial integers exactly from a
`BitSource`, ``exact=False`` from a numpy Generator; the price is the same. The prices answer or refuse in bounded time: ``fixed_cost`` needs one
`SkellamLoss` (the shift Δ alone, by monotonicity) and refuses, before building a table, a
mean below 1e-3 or a window of more than `expost.skellam.loss.MAX_TERMS` mpmath terms.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    exact_integers,
    flag,
    float_tuple,
    noise_source,
    open_probability,
    positive,
    positive_decreasing,
    positive_int,
    validator,
)
from expost.errors import InvalidParameter, refused
from expost.exact import samplers
from expost.exact.bits import BitSource
from expost.filters.costs import DPCost, ExPostCost
from expost.guarantees import ExPost
from expost.mechanisms.exact_additive import add_exact
from expost.mechanisms.noise_reduction import batch_rule, grid_walker, stop_points, walk
from expost.mechanisms.transcript import BatchTranscript, Transcript
from expost.processes import SkellamPath, sample_skellam_grid
from expost.rounding import SMALLEST, down_exact
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.skellam.loss import MAX_TERMS, SkellamLoss, akl_eps_for_delta, hockey_stick_terms
from expost.skellam.pmf import MIN_MEAN
from expost.stopping import StoppingRule, first_stops, rule_or_never

__all__ = ["FIXED_PRICES", "FixedPrice", "SkellamNoiseReduction", "fixed_cost_method"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

FixedPrice = Literal["exact", "akl"]
FIXED_PRICES: tuple[FixedPrice, ...] = ("exact", "akl")
"""The two ways to compute `SkellamNoiseReduction.fixed_cost`: the exact hockey-stick sums
(bounded work, `MAX_TERMS`) or AKL's closed-form Rényi bound (any mean and Δ)."""


def fixed_cost_method(name: str, value: object) -> FixedPrice:
    """``"exact"`` or ``"akl"`` (`FIXED_PRICES`), nothing else (no other strings or types)."""
    if not isinstance(value, str) or value not in FIXED_PRICES:
        raise InvalidParameter(name, value, "must be 'exact' or 'akl'")
    return value


def _check_means(instance: SkellamNoiseReduction, _attribute: object, rate: float) -> None:
    """Every λt a positive finite double (no overflow to inf, no underflow to 0)."""
    with np.errstate(over="ignore", under="ignore"):
        means = rate * np.array(instance.times)
    if not (np.all(np.isfinite(means)) and np.all(means > 0.0)):
        raise InvalidParameter(
            "rate", rate, f"times rate·t must be finite and > 0 for every time {instance.times!r}"
        )


@functools.lru_cache(maxsize=256)
def _exact_fixed_eps(mean: float, sensitivity: int, delta: float) -> float:
    """`SkellamLoss` (mean, Δ).eps_for_delta(delta): a pure function of its arguments, kept so a
    session's repeated rounds on one grid compute it once (about 0.15 s at mean 1e4)."""
    return SkellamLoss(mean, sensitivity).eps_for_delta(delta)


def _exact_counts(rate: float, bits: BitSource, size: int) -> Callable[[float], npt.NDArray[Any]]:
    """The counts of ``size`` Poisson processes of rate λ at decreasing times, drawn exactly
    from ``bits``: Poisson(λt) at the first time asked, then N(t) ~ Binomial(N(s), t/s) given
    the count N(s) at the previous time s (THEORY §10; λ and the float times are exact
    rationals)."""
    state: list[tuple[Fraction, npt.NDArray[Any]]] = []  # (previous time, counts)

    def at(t: float) -> npt.NDArray[Any]:
        now = Fraction(t)
        if not state:
            counts = samplers.poisson(Fraction(rate) * now, bits, size)
        else:
            before, previous = state.pop()
            counts = samplers.binomial(previous, now / before, bits, size)
        state.append((now, counts))
        return counts

    return at


@frozen
class SkellamNoiseReduction:
    """Skellam noise reduction: ``f(x) + X_t`` at times t1 > t2 > … (BNR App. E).

    X_t = P1(t) − P2(t) for independent Poisson processes of rate λ = ``rate``, so
    X_t ~ Skellam(λt, λt) with independent increments: a noise reduction, whose loss after
    stopping at t is that of the last iterate alone, the `SkellamLoss` at mean λt (``loss``).
    BNR App. E states no privacy guarantee; with a `SkellamPrivacyBoundary` ψ (same rate and
    sensitivity) a run on a scalar query is (ψ(t_stop), delta)-ex-post private for every
    stopping rule (THEORY §10; proof in docs/mechanisms/skellam.md): its transcripts carry
    ``ex_post`` and an `ExPostCost`. Without one, ``cost`` and ``ex_post`` are None; the run
    still has the fixed (eps, delta) of ``fixed_cost`` (or see ``loss(time=...)``). Stopping
    rules see ``times = 2λt``, the noise variance, and the releases as floats (correctly
    rounded).

    ``exact`` (keyword-only, default False) chooses the noise, not the price: False draws the
    counts from a numpy Generator (`SkellamPath`, `sample_skellam_grid`), True draws them
    exactly from a `BitSource` (`expost.exact.samplers`: Poisson(λt_1), then binomial
    thinning, THEORY §10; λ and the float times are exact rationals). Both release integers,
    both have the same law and price. Values (``check_value``, the same in both modes) are
    integers of magnitude at most 2**1000, as every secure release (docs/session.md, "The input
    contract"); the sensitivity Δ1 is an integer; releases are exactly value + noise
    (`add_exact`: int64 when every entry fits, else Python ints).
    """

    times: tuple[float, ...] = field(
        converter=float_tuple, validator=validator(positive_decreasing)
    )
    rate: float = field(
        default=1.0, converter=as_float, validator=[validator(positive), _check_means]
    )
    sensitivity: int = field(default=1, validator=validator(positive_int))
    stop: StoppingRule = field(default=None, converter=rule_or_never)
    boundary: SkellamPrivacyBoundary | None = field(default=None)
    exact: bool = field(default=False, kw_only=True, validator=validator(flag))

    @boundary.validator
    def _check_boundary(self, _attribute: object, psi: object) -> None:
        if psi is None:
            return
        if not isinstance(psi, SkellamPrivacyBoundary):
            raise InvalidParameter("boundary", psi, "must be a SkellamPrivacyBoundary or None")
        if psi.rate != self.rate or psi.sensitivity != self.sensitivity:
            raise InvalidParameter(
                "boundary",
                psi,
                f"has rate {psi.rate!r} and sensitivity {psi.sensitivity!r}, the mechanism "
                f"{self.rate!r} and {self.sensitivity!r}",
            )

    @property
    def array(self) -> FloatArray:
        """The times, decreasing."""
        return np.array(self.times)

    def check_value(self, value: object) -> npt.NDArray[Any]:
        """``value`` as integers of shape (d,), or InvalidParameter: the secure mode's value
        rule in both modes (`exact_integers`: ints of any size, numpy integers, integral floats;
        magnitude at most 2**1000, so the floats the stopping rule sees stay finite), int64
        when every entry fits, else Python ints; one count when there is a boundary. What
        ``run`` and ``run_batch`` check first; the session checks it before spending."""
        v = exact_integers("value", value).reshape(-1)
        if self.boundary is not None and v.size != 1:
            why = f"must be one count: the Skellam boundary is proven for scalars (shape {v.shape})"
            raise refused("value", value, why)
        return v

    def cost_at(self, time: float) -> ExPostCost:
        """The run stopped at ``time``: (ψ(t), delta)-ex-post private (THEORY §10)."""
        psi = self._boundary()
        return ExPostCost(float(psi(positive("time", time))), psi.delta)

    def cost(self) -> ExPostCost:
        """The worst case over the grid, max_t ψ(t): what a filter must afford before the run
        (ψ need not be monotone between the integer steps of z*, so the maximum is taken)."""
        psi = self._boundary()
        return ExPostCost(float(np.max(psi.boundary(self.array))), psi.delta)

    def fixed_cost(self, delta: float, method: FixedPrice = "exact") -> DPCost:
        """The whole run's (eps, delta)-DP, whatever the stopping rule: a stopped run is a
        post-processing of the run down to the smallest time, whose loss is that of the release
        at t_min alone (sufficiency, THEORY §10). For one count; charge it to any (eps, delta)
        filter. Rounded up; λ·t_min is rounded down (less noise is the safe side).

        ``"exact"``: eps = `SkellamLoss` (λ·t_min, Δ).eps_for_delta(delta). The largest shift
        is the worst (docs/mechanisms/skellam.md, "monotone in the shift"): Skellam(μ, μ) is
        log-concave, so its shifts have a monotone likelihood ratio and the Neyman–Pearson
        tests are thresholds; a larger shift is stochastically larger, so its trade-off curve
        lies below and every hockey-stick divergence is at least as large; symmetric noise
        gives both directions one law. Refused (InvalidParameter, before any table) for
        λ·t_min < 1e-3 and where 12·sqrt(2λ·t_min) + 16·Δ exceeds `MAX_TERMS` = 6500 (bounded
        work: λ·t_min up to about 1.46e5 at Δ = 1, Δ up to 405 at small means).
        ``"akl"``: `akl_eps_for_delta` (Agarwal–Kairouz–Liu's Rényi bound, converted; a
        closed form for any λ·t_min and Δ). The same in both modes (``exact``)."""
        d = open_probability("delta", delta)
        how = fixed_cost_method("method", method)
        mean = down_exact(Fraction(self.rate) * Fraction(self.times[-1]))
        if how == "exact":
            self._check_exact_price(mean)
            eps = _exact_fixed_eps(mean, self.sensitivity, d)
        else:
            if not mean > 0.0:
                raise InvalidParameter("times", self.times, "rate·times[-1] underflows to 0")
            eps = akl_eps_for_delta(mean, self.sensitivity, d)
        return DPCost(max(eps, SMALLEST), d)  # eps = 0 only if delta covers the whole run

    def _check_exact_price(self, mean: float) -> None:
        terms = hockey_stick_terms(mean, mean, self.sensitivity)
        if mean < MIN_MEAN or terms > MAX_TERMS:
            raise InvalidParameter(
                "times",
                self.times,
                f"with rate {self.rate!r} and sensitivity {self.sensitivity}, the exact price "
                f"needs rate·times[-1] >= {MIN_MEAN:g} (it is {mean!r}) and 12·sqrt(2·rate·"
                f"times[-1]) + 16·sensitivity <= {MAX_TERMS} (it is {terms:.0f}; bounded work); "
                "use fixed_cost(delta, 'akl') beyond (a session: fixed_price='akl')",
            )

    def _boundary(self) -> SkellamPrivacyBoundary:
        if self.boundary is None:
            raise InvalidParameter(
                "boundary", None, "no guarantee without a SkellamPrivacyBoundary"
            )
        return self.boundary

    def loss(self, distance: int | None = None, time: float | None = None) -> SkellamLoss:
        """The loss at ``time`` (default t_min) for an integer shift ``distance`` (default Δ1).

        The shift is in one coordinate; over several coordinates the losses add independently.
        """
        d = self.sensitivity if distance is None else positive_int("distance", distance)
        t = self.times[-1] if time is None else positive("time", time)
        return SkellamLoss(self.rate * t, d)

    def _rule_time(self, t: float) -> float:
        return 2.0 * self.rate * t

    def run(self, value: object, source: np.random.Generator | BitSource) -> Transcript:
        """One interactive run: the counts of each Poisson part drawn lazily, Poisson(λt_1)
        at the largest time, then thinned, N(t) ~ Binomial(N(s), t/s) (BNR App. E, THEORY
        §10), from ``source``: a numpy Generator (`SkellamPath`), or a `BitSource` when
        ``exact`` (`expost.exact.samplers`)."""
        v = self.check_value(value)
        noise = noise_source(self.exact, source)
        if isinstance(noise, np.random.Generator):
            return self._transcript(v, SkellamPath(v.size, noise, self.rate, self.rate).next)
        counts = _exact_counts(self.rate, noise, 2 * v.size)

        def draw(t: float) -> npt.NDArray[Any]:
            both = counts(t)
            out: npt.NDArray[Any] = both[: v.size] - both[v.size :]
            return out

        return self._transcript(v, draw)

    def _transcript(
        self, v: npt.NDArray[Any], draw: Callable[[float], npt.NDArray[Any]]
    ) -> Transcript:
        """Walk the grid; the rule sees each release value + noise as floats (correctly
        rounded from the exact sum), the transcript holds the releases exactly (`add_exact`)."""
        noise: list[npt.NDArray[Any]] = []

        def record(t: float) -> FloatArray:
            z = draw(t)
            noise.append(z)
            return add_exact(v, z).astype(np.float64)

        times = self.array
        walked, stopped = walk(
            np.zeros(v.size),  # + the float release from record: exactly the release
            float(times[0]),
            grid_walker(times),
            record,
            self.stop,
            self.sensitivity,
            self._rule_time,
        )
        t = walked.times
        eps = self.sensitivity / np.sqrt(self._rule_time(1.0) * t)
        noises = np.stack(noise)
        released = add_exact(np.broadcast_to(v, noises.shape), noises)
        if self.boundary is None:
            return Transcript(released, t, eps, stopped, None, None)
        cost = self.cost_at(float(t[-1]))
        return Transcript(released, t, eps, stopped, cost, ExPost(cost.bound, cost.delta))

    def _grid(self, trials: int, d: int, source: np.random.Generator | BitSource) -> IntArray:
        """``trials`` paths at every time, shape (trials, K, d): numpy's increments
        (`sample_skellam_grid`) or, exactly, Poisson(λt_1) then binomial thinning."""
        times = self.array
        if isinstance(source, np.random.Generator):
            return sample_skellam_grid(times, trials, d, source, rate1=self.rate, rate2=self.rate)
        counts = _exact_counts(self.rate, source, 2 * trials * d)
        grid = np.stack([counts(t) for t in self.times]).reshape(times.size, 2, trials, d)
        out: IntArray = np.transpose(grid[:, 0] - grid[:, 1], (1, 0, 2))
        return out

    def run_batch(
        self, value: object, trials: int, source: np.random.Generator | BitSource
    ) -> BatchTranscript:
        """``trials`` independent runs: whole paths (`_grid`, from ``source`` as in ``run``)
        and the rule's vectorised form."""
        v = self.check_value(value)
        n = positive_int("trials", trials)
        noise = noise_source(self.exact, source)
        rule = batch_rule(self.stop)
        times = self.array
        paths = self._grid(n, v.size, noise)
        iterates = add_exact(np.broadcast_to(v, paths.shape), paths)
        fired = first_stops(
            rule, iterates.astype(np.float64), 2.0 * self.rate * times, self.sensitivity
        )
        index, stopped = stop_points(fired, times.size - 1)
        eps = self.sensitivity / np.sqrt(self._rule_time(1.0) * times[index])
        values = iterates[np.arange(n), index]
        if self.boundary is None:
            return BatchTranscript(index, values, times[index], eps, stopped, None, None, None)
        bound = self.boundary.boundary(times)[index]
        delta = self.boundary.delta
        return BatchTranscript(index, values, times[index], eps, stopped, bound, bound, delta)
