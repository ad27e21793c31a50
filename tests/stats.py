"""Statistical assertions shared by the tests.

Every check has a stated false-alarm level ``alpha`` (default 1e-6): when the claim is
true, the check fails with probability at most ``alpha`` (up to the normal approximation
of a mean of many independent draws, where that is used). Tolerances come from the sample
size and ``alpha``, never from tuning. Confidence bounds are the library's own
(`expost.audit`); the generic two-sample and goodness-of-fit tests here are test-only.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import stats

from expost import audit

ALPHA = 1e-6


def z_two_sided(alpha: float = ALPHA) -> float:
    """The normal quantile z with P(|Z| > z) = alpha."""
    return float(stats.norm.isf(alpha / 2.0))


def mean_is_consistent(
    samples: npt.ArrayLike, mean: float, sd: float, alpha: float = ALPHA
) -> bool:
    """Is the sample mean within z·sd/sqrt(n) of ``mean`` (sd: the true standard deviation)?"""
    x = np.asarray(samples, dtype=float).ravel()
    return abs(float(x.mean()) - mean) <= z_two_sided(alpha) * sd / math.sqrt(x.size)


def variance_is_consistent(
    samples: npt.ArrayLike, variance: float, fourth_central: float, alpha: float = ALPHA
) -> bool:
    """Is the sample variance within z·sqrt((mu4 − var²)/n) of ``variance``?"""
    x = np.asarray(samples, dtype=float).ravel()
    se = math.sqrt(max(fourth_central - variance**2, 0.0) / x.size)
    return abs(float(x.var(ddof=1)) - variance) <= z_two_sided(alpha) * se


def proportion_is_consistent(hits: int, n: int, p: float, alpha: float = ALPHA) -> bool:
    """Two-sided exact binomial test of ``hits ~ Binomial(n, p)`` at level alpha."""
    return bool(stats.binomtest(hits, n, p).pvalue > alpha)


def clopper_pearson_upper(hits: int, n: int, alpha: float = ALPHA) -> float:
    """The library's one-sided Clopper–Pearson upper bound, at the tests' default level."""
    return audit.clopper_pearson_upper(hits, n, alpha)


def same_law(a: npt.ArrayLike, b: npt.ArrayLike, alpha: float = ALPHA) -> bool:
    """Two-sample Kolmogorov–Smirnov test: True unless the laws differ at level alpha."""
    return bool(stats.ks_2samp(np.ravel(a), np.ravel(b)).pvalue > alpha)


def follows(samples: npt.ArrayLike, cdf: object, alpha: float = ALPHA) -> bool:
    """One-sample Kolmogorov–Smirnov test against a continuous ``cdf`` at level alpha."""
    return bool(stats.kstest(np.ravel(samples), cdf).pvalue > alpha)


def clopper_pearson_lower(hits: int, n: int, alpha: float = ALPHA) -> float:
    """The library's one-sided Clopper–Pearson lower bound, at the tests' default level."""
    return audit.clopper_pearson_lower(hits, n, alpha)


def rate_is_at_most(hits: int, n: int, p: float, alpha: float = ALPHA) -> bool:
    """Is ``hits`` out of ``n`` consistent with a rate <= p? (exact one-sided test at level alpha)

    False only when the Clopper–Pearson lower bound exceeds p, which happens with
    probability at most alpha when the true rate is <= p.
    """
    return clopper_pearson_lower(hits, n, alpha) <= p


def same_discrete_law(a: npt.ArrayLike, b: npt.ArrayLike, alpha: float = ALPHA) -> bool:
    """Chi-square test of homogeneity of two samples of a discrete variable at level alpha.

    Categories whose expected count is below 5 in either sample are pooled into one, so the
    chi-square approximation holds. True unless the laws differ at level alpha.
    """
    x, y = np.ravel(a), np.ravel(b)
    categories, where = np.unique(np.concatenate([x, y]), return_inverse=True)
    counts = np.vstack(
        [
            np.bincount(where[: x.size], minlength=categories.size),
            np.bincount(where[x.size :], minlength=categories.size),
        ]
    )
    expected = np.outer([x.size, y.size], counts.sum(axis=0)) / (x.size + y.size)
    small = np.any(expected < 5.0, axis=0)
    table = np.hstack([counts[:, ~small], counts[:, small].sum(axis=1, keepdims=True)])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return True
    return bool(stats.chi2_contingency(table, correction=False).pvalue > alpha)
