"""A private validation check under ex-post Rényi DP (THEORY §11; issue 29, item 5).

"Keep reducing noise until accuracy on a private validation set is high enough" (Räisä, Koskela
& Honkela, arXiv 2509.22213, name the problem; their algorithm is not reproduced here). Round k
has a model m_k, released before the check looks at it, and a validation score v_k = v(m_k, x)
of sensitivity Δ in the private data (a count of correct predictions: Δ = 1; a mean of per-point
losses in [a, a + r] over n points: Δ = r/n). The check is Brownian noise reduction of a moving
query, in privacy time s = 1/τ for decreasing noise times τ_1 > … > τ_K:

    X(s_k) = Σ_(j<=k) (s_j − s_(j−1))·v_j + W(s_k),   Y_k = X(s_k)/s_k = drift_k + B(τ_k),

with W a standard Brownian motion and B(τ) = τ·W(1/τ) (Lévy time inversion, THEORY §3): Y_k is
the precision-weighted mean of the scores so far plus noise of variance τ_k; with a constant
score it is exactly `BrownianNoiseReduction`. The check stops at the first k where a rule of the
*released* values Y_1..Y_k passes the target. The default rule post-processes them (free: the
guarantee is immune, THEORY §11) into the estimate of the last ``window`` increments,
(s_k·Y_k − s_(k−m)·Y_(k−m))/(s_k − s_(k−m)), which forgets older models (a smaller bias when
the models improve, a larger variance); ``window=None`` uses Y_k itself.

Privacy (THEORY §11, the argument of ex-post-rdp-brownian with a predictable drift): the
releases Y_1..Y_k and the increments of X determine each other, and the k-th increment is a
Gaussian measurement of v_k of variance s_k − s_(k−1), so the loss is L_k = Σ_j (D_j ΔW_j +
D_j² Δs_j/2) with |D_j| <= Δ, and exp((α−1)(L_k − αΔ²s_k/2)) is a supermartingale (a product of
Gaussian moment generating functions, each <= 1 since D_j² <= Δ²). The stopping time is bounded,
so optional stopping gives E[exp((α−1)(L_τ − α·ρ))] <= 1 with ρ = Δ²/(2τ_stop): ex-post zCDP,
immune to post-processing, charged ``ExPostRDP.of_rho(Δ²/(2τ_stop))`` rounded up. A run that
never stops is charged at τ_K. Together with the models' own mechanism the ex-post RDP values
add (the interleaved rounds form one supermartingale, THEORY §11 "Filters").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite,
    finite_array,
    generator,
    positive,
    positive_decreasing,
    read_only,
    validator,
)
from expost.errors import InvalidParameter
from expost.ex_post_rdp import ExPostRDP
from expost.filters.costs import BrownianCost
from expost.filters.rdp import ex_post_rdp_of
from expost.processes import BrownianPath, sample_brownian_grid_privacy_time

__all__ = ["ValidationCheck", "ValidationResult", "first_hits"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


def first_hits(fired: npt.NDArray[np.bool_]) -> IntArray:
    """Index of the first True of each row, or −1 where a row has none."""
    result: IntArray = np.where(fired.any(axis=1), np.argmax(fired, axis=1), -1)
    return result


def _times(value: npt.ArrayLike) -> FloatArray:
    return read_only(positive_decreasing("times", value))


def _window(value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidParameter("window", value, "must be None or an integer >= 1")
    return value


@frozen
class ValidationResult:
    """The stop (``stop_index``, 0-based; None: never passed, charged at the last time), the
    released estimates Y_1..Y_N in order, and the ex-post RDP charge at the stop."""

    stop_index: int | None
    released: tuple[float, ...]
    ex_post_rdp: ExPostRDP


@frozen
class ValidationCheck:
    """Brownian noise reduction of a moving validation score, stopped when the released estimate
    passes ``target`` (module docstring; ex-post zCDP ρ = Δ²/(2τ_stop), THEORY §11).

    ``times``: decreasing noise times τ_1 > … > τ_K (variance of the k-th estimate);
    ``sensitivity``: Δ of every score; ``below``: pass when the estimate is <= target (a loss),
    else when it is >= target (an accuracy or a count); ``window``: increments the estimate
    uses (None: all, the estimate is Y_k).
    """

    times: FloatArray = field(converter=_times, eq=False)
    sensitivity: float = field(converter=as_float, validator=validator(positive))
    target: float = field(converter=as_float, validator=validator(finite))
    below: bool = True
    window: int | None = field(default=None, converter=_window)

    def passes(self, estimate: float) -> bool:
        """Does an estimate pass the target?"""
        return estimate <= self.target if self.below else estimate >= self.target

    def estimates(self, released: npt.ArrayLike) -> FloatArray:
        """The rule's estimates (trials, k) from released values (trials, k) alone: Y itself, or
        the precision-weighted mean of the last ``window`` increments (module docstring)."""
        y = np.atleast_2d(finite_array("released", released))
        if y.shape[1] > self.times.size:
            raise InvalidParameter("released", y.shape, f"has more than {self.times.size} values")
        if self.window is None:
            return y
        s, m = 1.0 / self.times[: y.shape[1]], self.window
        x = y * s
        out: FloatArray = y.copy()  # the first m estimates use every increment: Y itself
        out[:, m:] = (x[:, m:] - x[:, :-m]) / (s[m:] - s[:-m])
        return out

    def decides(self, released: Sequence[float]) -> bool:
        """The default rule: does the estimate after the released values so far pass?"""
        return self.passes(float(self.estimates(np.asarray(released)[None, :])[0, -1]))

    def rho(self, index: int) -> float:
        """Ex-post zCDP ρ of a run stopped at ``index``: Δ²/(2τ_index) rounded up."""
        return self.charge(index).rho or 0.0

    def charge(self, index: int) -> ExPostRDP:
        """``ExPostRDP.of_rho(Δ²/(2τ_index))`` (module docstring), rounded up."""
        if isinstance(index, bool) or not 0 <= index < self.times.size:
            raise InvalidParameter("index", index, f"must be in [0, {self.times.size})")
        charge = ex_post_rdp_of(BrownianCost(float(self.times[index]), self.sensitivity))
        assert charge is not None  # a BrownianCost always has an ex-post RDP bound
        return charge

    def _drift_weights(self) -> FloatArray:
        """(s_j − s_(j−1))/s_k for j <= k as a lower-triangular (K, K) matrix, s_0 = 0."""
        s = 1.0 / self.times
        steps = np.diff(s, prepend=0.0)
        weights: FloatArray = np.tril(np.broadcast_to(steps, (s.size, s.size))) / s[:, None]
        return weights

    def releases_batch(self, scores: npt.ArrayLike, rng: np.random.Generator) -> FloatArray:
        """The estimates Y (trials, K) of every run for private scores (trials, K); the noise
        is `sample_brownian_grid_privacy_time` on ``times`` (the law of `BrownianPath`)."""
        v = finite_array("scores", scores)
        if v.ndim != 2 or v.shape[1] != self.times.size:
            raise InvalidParameter(
                "scores", v.shape, f"must have shape (trials, {self.times.size})"
            )
        rng = generator(rng)
        noise = sample_brownian_grid_privacy_time(self.times, v.shape[0], 1, rng)[..., 0]
        out: FloatArray = v @ self._drift_weights().T + noise
        return out

    def stops(self, released: npt.ArrayLike) -> IntArray:
        """The stop of each run (−1: none) from its released values (trials, K) alone."""
        e = self.estimates(released)
        return first_hits(e <= self.target if self.below else e >= self.target)

    def run_batch(self, scores: npt.ArrayLike, rng: np.random.Generator) -> IntArray:
        """Each run's stop index (−1: none) for private scores (trials, K)."""
        return self.stops(self.releases_batch(scores, rng))

    def run(
        self,
        scores: Iterable[float],
        rng: np.random.Generator,
        rule: Callable[[tuple[float, ...]], bool] | None = None,
    ) -> ValidationResult:
        """Consume ``scores`` lazily (round k's score may depend on what was released before
        it) and stop as soon as ``rule`` (default `decides`) accepts the released values so
        far; ``rule`` is given those and nothing else."""
        rng = generator(rng)
        accept = self.decides if rule is None else rule
        path = BrownianPath(1, rng)
        released: list[float] = []
        weighted, previous = 0.0, 0.0
        for k, score in enumerate(scores):
            if k == self.times.size:
                break
            t = float(self.times[k])
            weighted += (1.0 / t - previous) * finite("scores", score)
            previous = 1.0 / t
            released.append(weighted * t + float(path.next(t)[0]))
            if accept(tuple(released)):
                return ValidationResult(k, tuple(released), self.charge(k))
        if not released:
            raise InvalidParameter("scores", scores, "must give at least one score")
        return ValidationResult(None, tuple(released), self.charge(len(released) - 1))
