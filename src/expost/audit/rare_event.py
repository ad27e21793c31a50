"""Importance-sampled claims ``P(event) <= delta`` (or ``E[h] <= delta``) for small delta (issue 13).

Plain Monte Carlo needs about 10/delta runs to see anything at delta. Here each run is drawn
under a proposal law Q that makes the event common and weighted by the likelihood ratio
``w = dP/dQ`` of what was drawn: ``X = w·1{event}`` has ``E_Q[X] = P(event)``. More generally
``X = w·h`` for any h ∈ [0, 1] computed from the run (e.g. the hockey-stick integrand
``(1 − e^(eps − L))⁺`` of a total loss L) has ``E_Q[X] = E_P[h]``. When the proposal
keeps ``0 <= X <= B`` (the *weight bound*, derived for each proposal and checked on every sample:
a sample above B refutes the claim, `ImportanceClaim`), ``X/B`` is a [0, 1]-valued i.i.d.
sequence and its mean has exact, finite-sample confidence bounds by betting:

Betting confidence bounds (Waudby-Smith & Ramdas 2023, "Estimating means of bounded random
variables by betting", JRSS-B; Thm 3 with predictable plug-in bets, §5). For Y_i ∈ [0, 1]
i.i.d. with mean μ and a candidate m, the capital processes

    K⁺_t(m) = ∏_(i<=t) (1 + λ⁺_i(m)·(Y_i − m)),   λ⁺_i(m) = min(λ_i, c/m),
    K⁻_t(m) = ∏_(i<=t) (1 − λ⁻_i(m)·(Y_i − m)),   λ⁻_i(m) = min(λ_i, c/(1 − m)),

with c = 1/2 and λ_i ≥ 0 computed from Y_1..Y_(i−1) only (the predictable plug-in
``λ_i = sqrt(2 log(1/α) / (n σ̂²_(i−1)))``, σ̂² a regularised running variance), are nonnegative
martingales under μ = m (K⁺ a supermartingale for μ <= m, K⁻ for μ >= m). By Ville's inequality
``P(max_(t<=n) K⁺_t(μ) >= 1/α) <= α``, so ``lower = sup{m : max_t K⁺_t(m) >= 1/α}`` is a valid
(1 − α) lower confidence bound for μ, and likewise ``upper`` from K⁻; together they are a
(1 − 2α) interval. Each factor is monotone in m (nonincreasing for K⁺, nondecreasing for K⁻),
so the rejected candidates form an interval and bisection on m finds its end; the bound
reported is the rejected end of the final bracket (conservative). Assumptions: the samples are
i.i.d. (they are drawn in a fixed order from seeded chunks) and lie in [0, B]; nothing else —
no variance bound, no normal approximation.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import as_float, finite, open_probability, positive, validator
from expost.audit.verdict import Verdict
from expost.errors import InvalidParameter

__all__ = ["ImportanceClaim", "betting_bounds", "effective_sample_size"]

FloatArray = npt.NDArray[np.float64]

_C = 0.5  # truncation of the bets: each factor stays >= 1 − c > 0
_STEPS = 60  # bisection steps on log m (relative precision ~ range·2^-60)
_FLOOR = 1e-300


def _plug_in_bets(y: FloatArray, alpha: float) -> FloatArray:
    """λ_i from Y_1..Y_(i−1): WSR 2023 eq. (26) tuned for a fixed n (predictable)."""
    n = y.size
    i = np.arange(1, n + 1, dtype=np.float64)
    running_mean = (0.5 + np.cumsum(y)) / (i + 1.0)
    running_var = (0.25 + np.cumsum((y - running_mean) ** 2)) / (i + 1.0)
    previous_var = np.concatenate([[0.25], running_var[:-1]])
    bets: FloatArray = np.sqrt(2.0 * math.log(1.0 / alpha) / (n * previous_var))
    return bets


def _max_log_capital(y: FloatArray, bets: FloatArray, m: float, sign: float) -> float:
    """``log max_t K^±_t(m)`` (sign +1: K⁺, −1: K⁻)."""
    cap = _C / m if sign > 0 else _C / (1.0 - m)
    steps = np.log1p(sign * np.minimum(bets, cap) * (y - m))
    return float(np.max(np.cumsum(steps)))


def _rejected(y: FloatArray, bets: FloatArray, m: float, sign: float, threshold: float) -> bool:
    return _max_log_capital(y, bets, m, sign) >= threshold


def _lower(y: FloatArray, bets: FloatArray, threshold: float) -> float:
    """``sup{m : max_t K⁺_t(m) >= 1/α}``; K⁺ is nonincreasing in m."""
    hi = float(y.max())  # at m >= max Y every factor is <= 1: never rejected
    if hi <= 0.0:
        return 0.0
    lo = hi
    while not _rejected(y, bets, lo, 1.0, threshold):
        lo /= 2.0
        if lo < _FLOOR:
            return 0.0
    for _ in range(_STEPS):
        mid = math.sqrt(lo * hi)
        if _rejected(y, bets, mid, 1.0, threshold):
            lo = mid
        else:
            hi = mid
        if hi / lo < 1.0 + 1e-6:
            break
    return lo


def _upper(y: FloatArray, bets: FloatArray, threshold: float) -> float:
    """``inf{m : max_t K⁻_t(m) >= 1/α}`` (1 if none); K⁻ is nondecreasing in m.

    Bisection on log m (geometric midpoints, as `_lower`) in [mean/2^k, 1 − 1e-12], to a
    relative width of 1e-6 in m.
    """
    hi = 1.0 - 1e-12
    if not _rejected(y, bets, hi, -1.0, threshold):
        return 1.0
    lo = max(float(y.mean()), _FLOOR)
    while _rejected(y, bets, lo, -1.0, threshold):
        lo /= 2.0
        if lo < _FLOOR:
            return lo
    for _ in range(_STEPS):
        mid = math.sqrt(lo * hi)
        if _rejected(y, bets, mid, -1.0, threshold):
            hi = mid
        else:
            lo = mid
        if hi / lo < 1.0 + 1e-6:
            break
    return hi


def betting_bounds(y: npt.ArrayLike, alpha: float) -> tuple[float, float]:
    """(lower, upper): each a (1 − alpha) confidence bound for the mean of i.i.d. Y ∈ [0, 1].

    Waudby-Smith & Ramdas (2023) betting bounds with predictable plug-in bets (module
    docstring); jointly a (1 − 2·alpha) interval.
    """
    a = open_probability("alpha", alpha)
    arr = _vector("y", y, "must be a non-empty 1-d array in [0, 1]")
    if not np.all((arr >= 0.0) & (arr <= 1.0)):
        raise InvalidParameter("y", arr[(arr < 0.0) | ~(arr <= 1.0)][:3], "must lie in [0, 1]")
    bets = _plug_in_bets(arr, a)
    threshold = math.log(1.0 / a)
    return _lower(arr, bets, threshold), _upper(arr, bets, threshold)


def _vector(name: str, values: npt.ArrayLike, rule: str) -> FloatArray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
        raise InvalidParameter(name, arr.shape if arr.ndim != 1 else arr.dtype, rule)
    return arr.astype(np.float64)


def effective_sample_size(x: npt.ArrayLike) -> float:
    """``(Σw)²/Σw²`` over the nonzero samples (0 when there are none; NaN when one is +inf).

    Computed on ``w / max(w)``, so it does not overflow for huge finite weights.
    """
    w = np.asarray(x, dtype=np.float64)
    w = w[w > 0.0]
    if w.size == 0:
        return 0.0
    top = w.max()
    if not np.isfinite(top):
        return math.nan
    v = w / top
    return float(v.sum() ** 2 / np.sum(v**2))


def _text(name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter(
            name, value, "must be a non-empty string (a proposal or quantity name)"
        )


def _open_unit(name: str, value: object) -> None:
    x = finite(name, value)
    if not 0.0 < x < 1.0:
        raise InvalidParameter(name, value, "must lie in (0, 1)")


@frozen
class ImportanceClaim:
    """``P(event) <= delta``, or ``E_P[h] <= delta``, audited from importance-weighted runs.

    ``simulate(n, rng)`` returns the n values ``X = w·1{event}`` (w = dP/dQ of the run drawn
    under the proposal Q named ``proposal``; 0 where the event did not happen), or more generally
    ``X = w·h`` with h ∈ [0, 1] a function of the run, whose mean is E_P[h]; ``quantity`` names
    what is bounded (default ``"P(event)"``). The proposal's derivation must give
    ``0 <= X <= B = weight_bound``. The claim is refuted iff

    - a sample exceeds B (the derivation fails on that run: a sure refutation, whatever alpha;
      ``extra["violation"]`` names the largest sample, B and its run; a weight that overflowed
      to +inf counts as one), or
    - the betting lower bound (level 1 − alpha, module docstring) on ``E[min(X, B)/B]`` times B
      exceeds delta (min(X, B) <= X, so it is a lower bound on E[X] even after a violation).

    The lower bound never exceeds the largest sample, so when B <= delta only the first can
    refute: the weight bound on the event is the claim's own inequality, and the interval
    measures the fraction of delta used. ``Verdict.extra``: the proposal, B, the ratio to delta
    with its interval (no upper bound after a violation: X is then not known to lie in [0, B]),
    the upper bound and the effective sample size.
    """

    delta: float = field(converter=as_float, validator=validator(_open_unit))
    weight_bound: float = field(converter=as_float, validator=validator(positive))
    proposal: str = field(validator=validator(_text))
    quantity: str = field(default="P(event)", validator=validator(_text))

    def describe(self) -> str:
        return f"{self.quantity} <= {self.delta:g} (importance sampling: {self.proposal})"

    def _checked(self, samples: npt.ArrayLike) -> FloatArray:
        x = _vector("samples", samples, "must be a non-empty 1-d real array of w·h, h in [0, 1]")
        if np.any(np.isnan(x)):
            raise InvalidParameter("samples", x[np.isnan(x)][:3], "must not be NaN")
        if np.any(x < 0.0):
            raise InvalidParameter(
                "samples", float(x.min()), "must be >= 0 (weight·h, h in [0, 1])"
            )
        return x

    def _violation(self, x: FloatArray) -> str:
        """What breaks the weight bound: the largest sample and its run ("" if none exceeds B)."""
        worst = int(np.argmax(x))
        if x[worst] <= self.weight_bound:
            return ""
        above = int(np.count_nonzero(x > self.weight_bound))
        return (
            f"weight bound violated: max w·h = {x[worst]:.6g}, B = {self.weight_bound:.6g}, "
            f"at run {worst} ({above} of {x.size} runs above B)"
        )

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        a = open_probability("alpha", alpha)
        x = self._checked(samples)
        b, d = self.weight_bound, self.delta
        violation = self._violation(x)
        # min(X, B) <= X: its lower bound is still one for E[X] when a sample exceeds B.
        lower, upper = betting_bounds(np.minimum(x, b) / b, a)
        estimate = float(x.mean())
        p_lower, p_upper = lower * b, upper * b
        ess = effective_sample_size(x)
        extra: dict[str, float | str] = {"proposal": self.proposal, "weight_bound": b}
        if violation:
            extra |= {"violation": violation, "ratio": estimate / d, "ratio_lower": p_lower / d}
            bounds = f"{violation}; P/delta = {estimate / d:.4g}, {1 - a:.6g} lower bound "
            bounds += f"{p_lower / d:.4g} (of min(w·h, B); no upper bound)"
        else:
            extra |= {
                "upper": p_upper,
                "ratio": estimate / d,
                "ratio_lower": p_lower / d,
                "ratio_upper": p_upper / d,
            }
            bounds = f"P/delta = {estimate / d:.4g}, {1 - a:.6g} bounds "
            bounds += f"[{p_lower / d:.4g}, {p_upper / d:.4g}]"
        extra |= {"ess": ess, "nonzero": float(np.count_nonzero(x))}
        detail = (
            f"{bounds}; {np.count_nonzero(x)} events, ESS {ess:.4g}, B = {b:.4g} ({self.proposal})"
        )
        refuted = bool(violation) or p_lower > d
        return Verdict(x.size, estimate, p_lower, d, refuted, detail, extra)
