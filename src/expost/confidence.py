"""Confidence bounds that the audits, the testing helpers and the applications share.

- `clopper_pearson_lower` / `clopper_pearson_upper`: exact one-sided limits (level 1 − alpha) for
  a binomial proportion (Clopper & Pearson 1934), by beta quantiles.
- `eps_lower_bound`: a lower confidence bound on eps from the hit counts of one event under
  neighbouring inputs (the hockey-stick form of (eps, delta)-DP, Bonferroni over two limits).
- `max_log_wealth` / `evalue_lower_bound`: the betting test of ``E[X] <= m`` for X >= 0 and its
  inversion: the wealth ``K_n = mean over λ of prod_(i<=n) (1 + λ(X_i/m − 1))`` is a nonnegative
  supermartingale under E[X] <= m, so by Ville's inequality ``P(max_n K_n >= 1/alpha) <= alpha``
  (Waudby-Smith & Ramdas 2023); no moment beyond the mean is needed.

A low module: it imports nothing from the library (numpy; scipy on first use), so `expost.audit`,
`expost.testing` and `expost.apps` build on it without an arrow between them.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "eps_lower_bound",
    "evalue_lower_bound",
    "max_log_wealth",
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


# Bets of the mixture test; mixing over several λ keeps power for large and small effects.
_LAMBDAS = np.array([0.9, 0.75, 0.5, 0.25, 0.125, 1 / 16, 1 / 32, 1 / 64, 1 / 128])
_BLOCK = 65_536


def max_log_wealth(x: FloatArray, mean: float) -> float:
    """log of ``max_(1<=n<=N) K_n`` for the betting test of ``E[X] <= mean`` (`expost.audit.claims`).

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


def evalue_lower_bound(x: FloatArray, threshold: float) -> float:
    """``inf{m > 0 : max_n K_n(m) < 1/alpha}``: K_n(m) is continuous and decreasing in m."""
    if not np.any(x > 0.0):
        return 0.0

    def excess(log_m: float) -> float:
        # asinh tames the steep rise at small m, so Brent's method converges in few steps
        return math.asinh(max_log_wealth(x, math.exp(log_m)) - threshold)

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
