"""Rounding audit of the doubling method's price (APC Sec. 7.1; issue 28's registry).

The worst case of a schedule is Σ_i eps_i²/2 over every try, each eps_i² a stored float: the
exact sum must be rounded up (`prefix_sums_up`), in both noises (float tries: `GaussianCost`,
exact tries: `ZCDPCost`). Reference: the exact rational sum, in 50-digit arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np

from expost import DoublingMethod
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, N, audit, audits, log_uniform


def _methods() -> list[DoublingMethod]:
    """N schedules: start eps² log-uniform on [1e-8, 1], ratio in [1.01, 4], 1 to 40 tries,
    sensitivity 1 to 50, every other one with exact noise."""
    rng = np.random.default_rng(29)
    starts = log_uniform(rng, 1e-8, 1.0, N)
    ratios = rng.uniform(1.01, 4.0, N)
    tries = rng.integers(1, 41, N)
    sens = rng.integers(1, 51, N)
    return [
        DoublingMethod(int(d), float(s), float(r), max_tries=int(k), exact=bool(i % 2))
        for i, (s, r, k, d) in enumerate(zip(starts, ratios, tries, sens, strict=True))
    ]


def _exact_total(m: DoublingMethod) -> Fraction:
    return sum((Fraction(float(e2)) / 2 for e2 in m.grid.eps2), Fraction(0))


@audits("DoublingMethod.cost", "DoublingMethod.guarantee")
def test_the_worst_case_rho_is_the_exact_sum_rounded_up(rounded: Rounded) -> None:
    """Within 1 ulp above Σ eps_i²/2, never below; twin: numpy's float sum (round to nearest
    at every addition)."""
    methods = _methods()
    got = [m.cost().rho if rounded.name.endswith("cost") else m.guarantee().rho for m in methods]
    with mp.workdps(DIGITS):
        want = [mp.mpf(t.numerator) / t.denominator for t in map(_exact_total, methods)]
    twin = [float(np.sum(m.grid.eps2 / 2.0)) for m in methods]
    audit(got, want, rounded.up, ulps=1.0, twin=twin)
