"""The discrete Gaussian's exact (eps, delta) (CKS 2020, Thm 7; issue 22 item 2).

The reference is computed here, independently of the library's formula: the hockey-stick
divergence Σ_z max(0, p(z) − e^eps·p(z − Δ)) summed directly at 50 digits, with the normaliser
Σ_z exp(−z²/(2σ²)) from Jacobi's theta function. The library's value must never be below it and
at most 256 ulps (relative, 6e-14) above; its round-to-nearest float twin must show unsafe results.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from expost.errors import InvalidParameter
from expost.guarantees import cks_delta
from expost.mechanisms.additive import GaussianMechanism
from expost.mechanisms.discrete_gaussian_dp import discrete_gaussian_delta, discrete_gaussian_eps
from expost.rounding_registry import Rounded
from tests.rounding_audit import audit, audits, log_uniform

N = 300  # inputs: each reference is a direct sum of up to ~2,000 terms at 50 digits
ULPS = 256.0  # the error terms of the module docstring allow about 100; measured <= 139


def reference(sigma2: Fraction, sensitivity: int, eps: float) -> Any:
    """Σ_z max(0, p(z) − e^eps·p(z − Δ)) at 50 digits, p = N_Z(0, σ²)."""
    with mp.workdps(50):
        s2 = mp.mpf(sigma2.numerator) / sigma2.denominator
        norm = mp.jtheta(3, 0, mp.exp(-1 / (2 * s2)))
        width = 40 * math.sqrt(float(sigma2)) + sensitivity + 5
        lo, hi = int(-width), int(eps * float(sigma2) / sensitivity + width)
        z = [mp.mpf(k) for k in range(lo, hi + 1)]
        ratio = mp.exp(mp.mpf(eps))
        total = mp.fsum(
            max(
                mp.exp(-(k**2) / (2 * s2)) - ratio * mp.exp(-((k - sensitivity) ** 2) / (2 * s2)), 0
            )
            for k in z
        )
        return total / norm


def _float_twin(sigma2: Fraction, sensitivity: int, eps: float) -> float:
    """The same sum in floats, rounded to nearest: no error terms, S = σ·sqrt(2π)."""
    s2, d = float(sigma2), sensitivity
    z = np.arange(-int(40 * math.sqrt(s2)) - d - 5, int(eps * s2 / d + 40 * math.sqrt(s2)) + d + 6)
    p = np.exp(-(z * z) / (2 * s2))
    q = np.exp(eps - ((z - d) ** 2) / (2 * s2))
    norm = math.sqrt(2 * math.pi * s2) if s2 >= 4 else float(p.sum())
    return float(np.maximum(p - q, 0.0).sum()) / norm


def _inputs(seed: int) -> list[tuple[Fraction, int, float]]:
    rng = np.random.default_rng(seed)
    s2 = log_uniform(rng, 0.05, 100.0, N)
    d = rng.integers(1, 6, N)
    rho = d * d / (2 * s2)
    eps = rng.uniform(0.0, 1.0, N) * (rho + 4 * np.sqrt(rho))  # where delta is far from 0 and 1
    return [(Fraction(float(a)), int(b), float(c)) for a, b, c in zip(s2, d, eps, strict=True)]


@audits("mechanisms.discrete_gaussian_dp.discrete_gaussian_delta")
def test_delta_is_an_upper_bound_within_256_ulps(rounded: Rounded) -> None:
    cases = _inputs(1)
    got = [discrete_gaussian_delta(*c) for c in cases]
    want = [reference(*c) for c in cases]
    twin = [_float_twin(*c) for c in cases]
    audit(got, want, rounded.up, ulps=ULPS, twin=twin, n=N)


def test_exact_delta_is_below_the_zcdp_conversions() -> None:
    """The discrete Gaussian is rho-zCDP (CKS Thm 4), so CKS's zCDP -> DP delta is an upper bound
    of its exact delta; the exact curve is never above it and strictly tighter wherever the
    conversion is below 1/2."""
    for s2, d, eps in _inputs(2):
        exact, converted = (
            discrete_gaussian_delta(s2, d, eps),
            cks_delta(float(d * d / (2 * s2)), eps),
        )
        assert exact <= converted
        assert exact < converted or converted >= 0.5


@pytest.mark.parametrize(("sigma2", "sensitivity", "delta"), [(10, 1, 1e-6), (2.5, 2, 1e-3)])
def test_eps_for_delta_meets_delta_and_is_nearly_the_smallest(
    sigma2: float, sensitivity: int, delta: float
) -> None:
    m = GaussianMechanism.from_sigma2(sensitivity, sigma2, exact=True)
    eps = m.eps_for_delta(delta)
    assert reference(Fraction(sigma2), sensitivity, eps) <= delta
    assert m.delta_for_eps(eps) <= delta
    assert reference(Fraction(sigma2), sensitivity, eps * (1 - 1e-9)) > delta


def test_mechanism_methods_are_the_module_functions() -> None:
    m = GaussianMechanism.from_sigma2(2, Fraction(7, 3), exact=True)
    assert m.delta_for_eps(0.7) == discrete_gaussian_delta(Fraction(7, 3), 2, 0.7)
    assert m.eps_for_delta(1e-4) == discrete_gaussian_eps(Fraction(7, 3), 2, 1e-4)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: discrete_gaussian_delta(Fraction(10**11), 1, 1.0), "sigma2"),
        (lambda: discrete_gaussian_delta(Fraction(1), 0, 1.0), "sensitivity"),
        (lambda: discrete_gaussian_delta(Fraction(1), 1, -1.0), "eps"),
        (lambda: discrete_gaussian_delta(Fraction(1), 1, math.nan), "eps"),
        (lambda: discrete_gaussian_eps(Fraction(1), 1, 0.0), "delta"),
        (lambda: discrete_gaussian_eps(Fraction(1), 1, 1.0), "delta"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call: Any, name: str) -> None:
    with pytest.raises(InvalidParameter, match=name):
        call()
