"""Skellam noise reduction (BNR App. E; THEORY §10): integer noise for counts.

The constructor validates everything a price or a run will need (times finite, > 0 and strictly
decreasing, the rate finite and > 0 with every λt a positive finite double, the sensitivity a
positive integer, the boundary's rate and sensitivity), and `SkellamNoiseReduction.check_value`
validates a value, so that a caller (the session's prepare step) can refuse bad input before
anything is spent. The prices answer or refuse in bounded time: ``fixed_cost`` needs one
`SkellamLoss` (the shift Δ alone, by monotonicity) and refuses, before building a table, a
mean below 1e-3 or a window of more than `expost.skellam.loss.MAX_TERMS` mpmath terms.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    float_tuple,
    generator,
    open_probability,
    path_value,
    positive,
    positive_decreasing,
    positive_int,
    validator,
)
from expost.errors import InvalidParameter
from expost.exact import samplers
from expost.exact.bits import BitSource
from expost.filters.costs import DPCost, ExPostCost
from expost.guarantees import ExPost
from expost.mechanisms.noise_reduction import batch_rule, grid_walker, stop_points, walk
from expost.mechanisms.transcript import BatchTranscript, Transcript
from expost.processes import SkellamPath, sample_skellam_grid
from expost.rounding import SMALLEST, down_exact
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.skellam.loss import MAX_TERMS, SkellamLoss, akl_eps_for_delta, hockey_stick_terms
from expost.skellam.pmf import MIN_MEAN
from expost.stopping import StoppingRule, first_stops, rule_or_never

__all__ = ["MAX_VALUE", "SkellamNoiseReduction"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_VALUE = 2**53
"""The largest |value| accepted: every such integer is a double, and value + noise is added in
int64 (noise counts stay far below 2**62), so a release is exactly value + noise."""
_NOISE_LIMIT = 2**62  # |noise| below this, |value| <= 2**53: value + noise cannot wrap in int64


def _check_means(instance: SkellamNoiseReduction, _attribute: object, rate: float) -> None:
    """Every λt a positive finite double (no overflow to inf, no underflow to 0)."""
    with np.errstate(over="ignore", under="ignore"):
        means = rate * np.array(instance.times)
    if not (np.all(np.isfinite(means)) and np.all(means > 0.0)):
        raise InvalidParameter(
            "rate", rate, f"times rate·t must be finite and > 0 for every time {instance.times!r}"
        )


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
    still has the fixed (eps, delta) of ``fixed_cost`` (or see ``loss(time=...)``). Values
    (|value| <= 2**53) and the sensitivity Δ1 are integers; releases are exactly value + noise
    (int64). Stopping rules see ``times = 2λt``, the noise variance.
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

    def check_value(self, value: npt.ArrayLike) -> IntArray:
        """``value`` as an int64 array of shape (d,), or InvalidParameter: finite integers of
        magnitude <= 2**53 (``MAX_VALUE``), one count when there is a boundary. What ``run``,
        ``run_exact`` and ``run_batch`` check first; a caller may check before spending."""
        v = path_value(value)
        if np.any(v != np.round(v)) or np.any(np.abs(v) > MAX_VALUE):
            raise InvalidParameter("value", value, "must be integers of magnitude <= 2**53")
        if self.boundary is not None and v.size != 1:
            raise InvalidParameter(
                "value", value, "must be one count: the Skellam boundary is proven for scalars"
            )
        return v.astype(np.int64)

    def cost_at(self, time: float) -> ExPostCost:
        """The run stopped at ``time``: (ψ(t), delta)-ex-post private (THEORY §10)."""
        psi = self._boundary()
        return ExPostCost(float(psi(positive("time", time))), psi.delta)

    def cost(self) -> ExPostCost:
        """The worst case over the grid, max_t ψ(t): what a filter must afford before the run
        (ψ need not be monotone between the integer steps of z*, so the maximum is taken)."""
        psi = self._boundary()
        return ExPostCost(float(np.max(psi.boundary(self.array))), psi.delta)

    def fixed_cost(self, delta: float, method: Literal["exact", "akl"] = "exact") -> DPCost:
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
        closed form for any λ·t_min and Δ)."""
        d = open_probability("delta", delta)
        mean = down_exact(Fraction(self.rate) * Fraction(self.times[-1]))
        if method == "exact":
            self._check_exact_price(mean)
            eps = SkellamLoss(mean, self.sensitivity).eps_for_delta(d)
        elif method == "akl":
            if not mean > 0.0:
                raise InvalidParameter("times", self.times, "rate·times[-1] underflows to 0")
            eps = akl_eps_for_delta(mean, self.sensitivity, d)
        else:
            raise InvalidParameter("method", method, "must be 'exact' or 'akl'")
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
                "use fixed_cost(delta, 'akl') beyond",
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

    def run(self, value: npt.ArrayLike, rng: np.random.Generator) -> Transcript:
        """One interactive run on one `SkellamPath` (Poisson thinning)."""
        v = self.check_value(value)
        path = SkellamPath(v.size, generator(rng), self.rate, self.rate)
        return self._transcript(v, path.next)

    def _transcript(self, v: IntArray, draw: Callable[[float], IntArray]) -> Transcript:
        """Walk the grid; the rule sees value + noise as floats, the transcript holds the
        releases exactly (value + noise in int64)."""
        noise: list[IntArray] = []

        def record(t: float) -> IntArray:
            z = draw(t)
            if np.any(np.abs(z) >= _NOISE_LIMIT):  # not reachable for Poisson means < 2**61
                raise InvalidParameter("rate", self.rate, "gives noise beyond 2**62")
            noise.append(z)
            return z

        times = self.array
        walked, stopped = walk(
            v.astype(np.float64),
            float(times[0]),
            grid_walker(times),
            record,
            self.stop,
            self.sensitivity,
            self._rule_time,
        )
        t = walked.times
        eps = self.sensitivity / np.sqrt(self._rule_time(1.0) * t)
        released = v[None, :] + np.stack(noise)
        if self.boundary is None:
            return Transcript(released, t, eps, stopped, None, None)
        cost = self.cost_at(float(t[-1]))
        return Transcript(released, t, eps, stopped, cost, ExPost(cost.bound, cost.delta))

    def run_exact(self, value: npt.ArrayLike, bits: BitSource) -> Transcript:
        """`run` with integers drawn exactly from a bit source (`SecureBits` for releases).

        N_i(t_1) ~ Poisson(λt_1) exactly (rational λt_1: the floats λ and t are exact
        rationals), then N_i(t) ~ Binomial(N_i(s), t/s) at each smaller time (THEORY §10).
        """
        v = self.check_value(value)
        rate = Fraction(self.rate)
        state: list[tuple[Fraction, IntArray]] = []  # (previous time, counts)

        def draw(t: float) -> IntArray:
            now = Fraction(t)
            if not state:
                counts = samplers.poisson(rate * now, bits, 2 * v.size)
            else:
                before, previous = state.pop()
                counts = samplers.binomial(previous, now / before, bits, 2 * v.size)
            state.append((now, counts))
            out: IntArray = counts[: v.size] - counts[v.size :]
            return out

        return self._transcript(v, draw)

    def run_batch(
        self, value: npt.ArrayLike, trials: int, rng: np.random.Generator
    ) -> BatchTranscript:
        """``trials`` independent runs: `sample_skellam_grid` paths and the rule's vectorised form."""
        v = self.check_value(value)
        n = positive_int("trials", trials)
        rng = generator(rng)
        rule = batch_rule(self.stop)
        times = self.array
        iterates = v + sample_skellam_grid(times, n, v.size, rng, rate1=self.rate, rate2=self.rate)
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
