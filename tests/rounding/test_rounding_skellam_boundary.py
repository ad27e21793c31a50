"""Rounding audit of the Skellam privacy boundary ψ (THEORY §10) and of its inverse `time_for`.

ψ(t) = max over 1 <= D <= Δ of log p(z* + 1) − log p(z* + 1 − D), with p the Skellam(λt, λt)
pmf and z* the largest z <= −1 whose mixture M(z) = Σ_j w_j·p(z + j)/p(z) reaches 1/delta. The
reference computes it from that definition with 50-digit mpmath Bessel functions
(p(z) = e^(−2λt)·I_|z|(2λt)), its own bisection for z* and every D, independently of
`expost.skellam`; the library's ψ adds a stated margin for its float log-pmf (2e-10 plus 1e-14
of |log p|) and must never lie below the reference. Its z* is never above the exact one (a float
M near 1/delta may take the next lower z, a slightly larger ψ: the safe side), so ψ is at most
the definition's value at z* − 1 plus the margin.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import mpmath as mp
import numpy as np

from expost import SkellamPrivacyBoundary
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, audits, log_uniform

Mp = Any
# the library's stated margin: twice 1e-10 (each log pmf), plus 1e-14 + 4 ulps of |log p| per term
ABSOLUTE, RELATIVE = 2e-10, 1e-14 + 4 * 2.0**-52


def _boundaries() -> list[SkellamPrivacyBoundary]:
    out = []
    for scale in (1.5, 4.0, 12.0):
        for delta in (1e-3, 1e-6, 1e-9):
            for sensitivity, rate in ((1, 1.0), (3, 2.5)):
                for mixing in ("normal", "single"):
                    out.append(SkellamPrivacyBoundary(scale, delta, sensitivity, rate, mixing))
    return out


def exact_psi(b: SkellamPrivacyBoundary, t: float) -> tuple[Mp, Mp]:
    """ψ(t) from its definition at 50 digits, and the most the library may report: the loss one
    z lower plus the stated margin on its log pmfs (module docstring)."""
    with mp.workdps(DIGITS):
        x = 2 * mp.mpf(b.rate) * mp.mpf(t)
        weights = [mp.mpf(float(w)) for w in b.weights()]
        target = 1 / mp.mpf(b.delta)

        @cache
        def p(z: int) -> Mp:
            return mp.besseli(abs(z), x) * mp.exp(-x)

        def reaches(z: int) -> bool:
            return bool(mp.fsum(w * p(z + j + 1) for j, w in enumerate(weights)) >= target * p(z))

        hi, lo = 0, -1  # M(hi) < 1/delta (z* <= −1), M non-increasing in z: gallop, then bisect
        while not reaches(lo):
            hi, lo = lo, 2 * lo
        while hi - lo > 1:
            mid = (hi + lo) // 2
            hi, lo = (hi, mid) if reaches(mid) else (mid, lo)

        def loss(z: int) -> Mp:
            return max(mp.log(p(z)) - mp.log(p(z - d)) for d in range(1, b.sensitivity + 1))

        size = abs(mp.log(p(lo))) + abs(mp.log(p(lo - b.sensitivity)))
        return loss(lo + 1), loss(lo) + ABSOLUTE + RELATIVE * size + mp.mpf(2) ** -40


def _cases(n_per: int, seed: int) -> list[tuple[SkellamPrivacyBoundary, float]]:
    rng = np.random.default_rng(seed)
    return [
        (b, float(t)) for b in _boundaries() for t in log_uniform(rng, 0.5 / b.rate, 60.0, n_per)
    ]


@audits("SkellamPrivacyBoundary.__call__")
def test_psi_is_never_below_its_definition(rounded: Rounded) -> None:
    """180 (boundary, t) pairs: ψ at or above the 50-digit value, and at most its value one z
    lower plus the stated margin; twin: the reference rounded to the nearest float (no margin)
    lies below it somewhere."""
    assert rounded.up
    cases = _cases(5, 41)
    want, most = zip(*(exact_psi(b, t) for b, t in cases), strict=True)
    got = [b(t) for b, t in cases]
    with mp.workdps(DIGITS):
        below = sum(mp.mpf(g) < w for g, w in zip(got, want, strict=True))
        assert below == 0, f"{below} values below ψ"
        assert all(mp.mpf(g) <= m for g, m in zip(got, most, strict=True))
        assert any(mp.mpf(float(w)) < w for w in want)


@audits("SkellamPrivacyBoundary.time_for")
def test_time_for_meets_its_level_exactly(rounded: Rounded) -> None:
    """72 (boundary, level) pairs, levels 1.2 to 3 times ψ's floor (ψ at rate·t = 1e5; lower
    levels need more than the largest mean): the exact ψ at ``time_for(level)`` is at most the
    level (a later time is the safe side: more noise); twin: 1e-4 earlier, ψ exceeds the level
    somewhere (the time is not far above the crossing)."""
    assert rounded.up
    rng = np.random.default_rng(42)
    cases = [
        (b, float(u) * b(1e5 / b.rate)) for b in _boundaries() for u in rng.uniform(1.2, 3.0, 2)
    ]
    times = [b.time_for(e) for b, e in cases]
    assert all(exact_psi(b, t)[0] <= e for (b, e), t in zip(cases, times, strict=True))
    earlier = [exact_psi(b, t * (1 - 1e-4))[0] > e for (b, e), t in zip(cases, times, strict=True)]
    assert any(earlier)
