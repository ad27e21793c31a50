"""Claims and their statistical tests (ARCHITECTURE "Statistical audits").

Every test here has false-alarm level at most ``alpha`` when its claim is true, and reports a
lower confidence bound (level 1 − alpha) on the audited quantity; the claim is refuted iff that
bound exceeds the claimed value.

- `ProbabilityClaim`: ``P(event) <= delta`` by the exact one-sided binomial test
  (Clopper–Pearson lower bound).
- `EValueClaim`: ``E[X] <= c`` for X >= 0 by a betting test: the wealth
  ``K_n = mean over λ of prod_(i<=n) (1 + λ(X_i/c − 1))``. Under E[X] <= c each factor has
  conditional mean <= 1 and is >= 1 − λ > 0, so K is a nonnegative supermartingale with K_0 = 1
  and, by Ville's inequality, ``P(max_n K_n >= 1/alpha) <= alpha``. No moment beyond the mean is
  needed, so it stays valid for heavy tails (a t-test does not).
- `DPClaim`: "the mechanism is eps-DP" by a distinguishing test on neighbouring inputs.

The statistics themselves (Clopper–Pearson limits, the betting test's wealth and its inversion,
eps lower bounds) live in `expost.confidence`, which the applications use too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    nonnegative,
    open_probability,
    positive,
    probability,
    validator,
)
from expost.audit.verdict import Verdict
from expost.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    eps_lower_bound,
    evalue_lower_bound,
    max_log_wealth,
)
from expost.errors import InvalidParameter

__all__ = [
    "CUT_LEVELS",
    "DPClaim",
    "EValueClaim",
    "ProbabilityClaim",
    "Tally",
]

FloatArray = npt.NDArray[np.float64]


def _alpha(alpha: object) -> float:
    return open_probability("alpha", alpha)


def _samples(samples: npt.ArrayLike, ndim: int, rule: str) -> npt.NDArray[Any]:
    arr = np.asarray(samples)
    if arr.ndim != ndim or arr.shape[0] == 0:
        raise InvalidParameter("samples", arr.shape, rule)
    return arr


@frozen
class Tally:
    """Runs and events among them: all a `ProbabilityClaim` needs, so chunks add up (``+``)."""

    n: int
    hits: int

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.n + other.n, self.hits + other.hits)


@frozen
class ProbabilityClaim:
    """``P(event) <= delta``; samples are one boolean per run (True: the event happened).

    Exact one-sided binomial test: refuted iff the Clopper–Pearson lower bound at level alpha
    exceeds delta, i.e. iff ``P(Binomial(n, delta) >= hits) < alpha``.
    """

    delta: float = field(converter=as_float, validator=validator(probability))

    def describe(self) -> str:
        return f"P(event) <= {self.delta:g}"

    @staticmethod
    def tally(samples: npt.ArrayLike) -> Tally:
        """The test's sufficient statistic of ``samples``: (runs, events)."""
        events = _samples(samples, 1, "must be a non-empty 1-d boolean array of events")
        if events.dtype != np.bool_:
            raise InvalidParameter("samples", events.dtype, "must be a boolean array of events")
        return Tally(events.size, int(np.count_nonzero(events)))

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        return self.verdict_of(self.tally(samples), alpha)

    def verdict_of(self, tally: Tally, alpha: float) -> Verdict:
        """The verdict from the runs' `Tally` alone (chunks of a large audit are tallied apart)."""
        a = _alpha(alpha)
        n, hits = tally.n, tally.hits
        lower = clopper_pearson_lower(hits, n, a)
        upper = clopper_pearson_upper(hits, n, a)
        detail = f"{hits}/{n} events; {1 - a:.6g} bounds [{lower:.4g}, {upper:.4g}]"
        return Verdict(n, hits / n, lower, self.delta, lower > self.delta, detail)


@frozen
class EValueClaim:
    """``E[X] <= bound`` for nonnegative X (an e-value when bound = 1), by the betting test.

    Refuted iff the mixture wealth reaches 1/alpha (valid by Ville's inequality, module
    docstring); the reported bound is the lower confidence bound on E[X] from inverting it.
    """

    bound: float = field(default=1.0, converter=as_float, validator=validator(positive))

    def describe(self) -> str:
        return f"E[X] <= {self.bound:g}"

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        a = _alpha(alpha)
        x = _samples(samples, 1, "must be a non-empty 1-d array of nonnegative values")
        if x.dtype.kind not in "iuf":
            raise InvalidParameter("samples", x.dtype, "must be real numbers")
        x = x.astype(np.float64)
        if not (np.all(np.isfinite(x)) and np.all(x >= 0.0)):
            bad = x[~(np.isfinite(x) & (x >= 0.0))][:3]
            raise InvalidParameter("samples", bad, "must be finite and nonnegative")
        threshold = math.log(1.0 / a)
        wealth = max_log_wealth(x, self.bound)
        lower = evalue_lower_bound(x, threshold)
        detail = f"max log-wealth {wealth:.4g} vs log(1/alpha) = {threshold:.4g}"
        return Verdict(x.size, float(x.mean()), lower, self.bound, wealth >= threshold, detail)


# Quantile levels of the candidate thresholds, finer in the tails where ratios are largest.
_TAIL = np.geomspace(1e-4, 1e-2, 9)
CUT_LEVELS = np.unique(np.concatenate([_TAIL, np.linspace(0.01, 0.99, 99), 1.0 - _TAIL]))


def _counts_at_least(sorted_values: FloatArray, cuts: FloatArray) -> npt.NDArray[np.int64]:
    return sorted_values.size - np.searchsorted(sorted_values, cuts, side="left")


def _event_counts(a: FloatArray, b: FloatArray, cuts: FloatArray) -> tuple[Any, Any, int]:
    """Hits under (A, B) of the events {y >= c} and {y < c} in both orders: arrays (4, cuts)."""
    m = a.size
    ha = _counts_at_least(np.sort(a), cuts)
    hb = _counts_at_least(np.sort(b), cuts)
    first = np.stack([ha, m - ha, hb, m - hb])
    second = np.stack([hb, m - hb, ha, m - ha])
    return first, second, m


_EVENTS = (
    "y >= c under x vs x'",
    "y < c under x vs x'",
    "y >= c under x' vs x",
    "y < c under x' vs x",
)


@frozen
class DPClaim:
    """Claim "the mechanism is eps-DP", by a distinguishing test on neighbouring inputs x, x'.

    Samples have shape (n, 2): column 0 a scalar output under x, column 1 under x' (any scalar
    statistic of the output: post-processing keeps DP). The first half of the rows chooses an
    event S = {y >= c} or its complement and an order of (x, x'); on the second half,
    ``eps_lb = log(CP_lower(P(S|x)) / CP_upper(P(S|x')))``, each bound at alpha/2, so
    ``P(eps_lb > eps) <= alpha`` for an eps-DP mechanism. Refuted iff eps_lb > eps.
    """

    eps: float = field(converter=as_float, validator=validator(nonnegative))

    def describe(self) -> str:
        return f"mechanism is {self.eps:g}-DP"

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        a = _alpha(alpha)
        pairs = _samples(samples, 2, "must have shape (n, 2): outputs under x and x'")
        if pairs.shape[1] != 2 or pairs.shape[0] < 2 or pairs.dtype.kind not in "iuf":
            raise InvalidParameter("samples", pairs.shape, "must be real, shape (n >= 2, 2)")
        y = pairs.astype(np.float64)
        half = y.shape[0] // 2
        choose, test = y[:half], y[half : 2 * half]
        cuts = np.unique(np.quantile(choose, CUT_LEVELS))
        first, second, m = _event_counts(choose[:, 0], choose[:, 1], cuts)
        score = eps_lower_bound(first, m, second, m, a)
        kind, at = np.unravel_index(int(np.argmax(score)), score.shape)
        first, second, m = _event_counts(test[:, 0], test[:, 1], cuts[at : at + 1])
        hit_a, hit_b = int(first[kind, 0]), int(second[kind, 0])
        bound = max(0.0, float(eps_lower_bound(first[kind], m, second[kind], m, a)[0]))
        observed = math.log((hit_a + 0.5) / (hit_b + 0.5))
        detail = f"S: {_EVENTS[kind]}, c = {cuts[at]:.4g}; hits {hit_a}/{m} vs {hit_b}/{m}"
        return Verdict(y.shape[0], observed, bound, self.eps, bound > self.eps, detail)
