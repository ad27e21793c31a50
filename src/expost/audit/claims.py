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
from expost.errors import InvalidParameter

__all__ = [
    "CUT_LEVELS",
    "DPClaim",
    "EValueClaim",
    "ProbabilityClaim",
    "Tally",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "eps_lower_bound",
]

FloatArray = npt.NDArray[np.float64]


def clopper_pearson_lower(hits: int, n: int, alpha: float) -> float:
    """One-sided lower confidence bound (level 1 − alpha) for a binomial proportion."""
    from scipy import stats  # lazy: keeps the `expost` command fast

    return 0.0 if hits <= 0 else float(stats.beta.ppf(alpha, hits, n - hits + 1))


def clopper_pearson_upper(hits: int, n: int, alpha: float) -> float:
    """One-sided upper confidence bound (level 1 − alpha) for a binomial proportion.

    The upper alpha-quantile by ``beta.isf(alpha, …)``: ``ppf(1 − alpha, …)`` would round
    1 − alpha to a double, off by up to 2x in the tail mass for alpha near 1e-16.
    """
    from scipy import stats  # lazy: keeps the `expost` command fast

    return 1.0 if hits >= n else float(stats.beta.isf(alpha, hits + 1, n - hits))


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


# Bets of the mixture test; mixing over several λ keeps power for large and small effects.
_LAMBDAS = np.array([0.9, 0.75, 0.5, 0.25, 0.125, 1 / 16, 1 / 32, 1 / 64, 1 / 128])
_BLOCK = 65_536


def _max_log_wealth(x: FloatArray, mean: float) -> float:
    """log of ``max_(1<=n<=N) K_n`` for the betting test of ``E[X] <= mean`` (module docstring).

    n = 0 (K_0 = 1) is left out: it never reaches 1/alpha > 1, and without it the function
    has no flat part, which keeps the root search of the lower bound fast.
    """
    lam = _LAMBDAS[:, None]
    carry = np.zeros((_LAMBDAS.size, 1))
    best = -math.inf
    for start in range(0, x.size, _BLOCK):
        with np.errstate(over="ignore", divide="ignore"):
            steps = np.log1p(lam * (x[None, start : start + _BLOCK] / mean - 1.0))
        np.cumsum(steps, axis=1, out=steps)
        steps += carry
        carry = steps[:, -1:]
        top = steps.max(axis=0)
        finite = np.isfinite(top)
        if not np.all(finite):
            return math.inf
        with np.errstate(under="ignore"):
            mixed = top + np.log(np.exp(steps - top).mean(axis=0))
        best = max(best, float(mixed.max()))
    return best


def _evalue_lower_bound(x: FloatArray, threshold: float) -> float:
    """``inf{m > 0 : max_n K_n(m) < 1/alpha}``: K_n(m) is continuous and decreasing in m."""
    if not np.any(x > 0.0):
        return 0.0

    def excess(log_m: float) -> float:
        # asinh tames the steep rise at small m, so Brent's method converges in few steps
        return math.asinh(_max_log_wealth(x, math.exp(log_m)) - threshold)

    hi = math.log(max(float(x.mean()), 1e-300))
    while excess(hi) >= 0.0:
        hi += math.log(2.0)
    lo = hi - math.log(2.0)
    while excess(lo) < 0.0:
        lo -= math.log(2.0)
        if lo < math.log(1e-300):
            return 0.0
    from scipy import optimize  # lazy: keeps the `expost` command fast

    return math.exp(float(optimize.brentq(excess, lo, hi, xtol=1e-5)))


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
        wealth = _max_log_wealth(x, self.bound)
        lower = _evalue_lower_bound(x, threshold)
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


def eps_lower_bound(
    hits_x: npt.ArrayLike,
    n_x: int,
    hits_x_prime: npt.ArrayLike,
    n_x_prime: int,
    alpha: float,
    delta: float = 0.0,
) -> FloatArray:
    """``log((CP_lower(P(E|x)) − delta) / CP_upper(P(E|x')))``, each limit at alpha/2, elementwise.

    For an (eps, delta)-DP mechanism P(E|x) <= e^eps P(E|x') + delta (the hockey-stick form), so
    with probability >= 1 − alpha (Bonferroni over the two exact one-sided limits) the value is
    <= eps for a fixed event E. −inf where the lower limit does not exceed delta. Hit counts may
    be non-integer (scaled counts predict a later test's bound). The upper limit is taken by
    ``beta.isf(alpha/2, …)``, exact for tiny alpha (see `clopper_pearson_upper`).
    """
    from scipy import stats  # lazy: keeps the `expost` command fast

    a = np.asarray(hits_x, dtype=np.float64)
    b = np.asarray(hits_x_prime, dtype=np.float64)
    lower = np.where(a > 0, stats.beta.ppf(alpha / 2, np.maximum(a, 1e-12), n_x - a + 1), 0.0)
    upper = np.where(
        b < n_x_prime,
        stats.beta.isf(alpha / 2, b + 1, np.maximum(n_x_prime - b, 1e-12)),
        1.0,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        result: FloatArray = np.where(lower > delta, np.log(lower - delta) - np.log(upper), -np.inf)
    return result


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
