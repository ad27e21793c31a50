"""The error μ of pocketfft's long double twiddles, by exhaustion (docs/theory/fft-error.md §4).

For every length n = 2^m, m <= 30, the tables v1, v2 of pocketfft's ``sincos_2pibyn<long
double>`` are rebuilt operation by operation (`expost.pld.twiddles.build_tables`) and each entry
is compared with e^{2πix/n} at 158 bits: their largest error τ bounds every twiddle
ŵ = fl(v̂1·v̂2) by μ = 2τ + τ² + √2γ_2(1 + τ)² (Higham 2002, Lemma 3.5, and
|v̂1v̂2 − v1v2| <= |v̂1||v̂2 − v2| + |v̂1 − v1||v2|). The claim is μ/u (the library's
`TWIDDLE_ERROR`); the wrong variant, μ = u/2 (twiddles all but correctly rounded), is rejected.
On Linux the tables are also built with glibc's ``sincosl`` (the function scipy's pocketfft
extension imports), called through ctypes, and must equal numpy's bit for bit; and every
table's fingerprint must be the library's (`PROVEN`), so the library knows at run time that
its platform gives these very tables.
Assumptions: pocketfft's arithmetic as transcribed (pocketfft_hdronly.h ``sincos_2pibyn``,
``calc``, ``operator[]``, ``cfftp::comp_twiddle``), run in x87 extended precision with
round-to-nearest; elsewhere than Linux, that numpy's long double cos/sin are the libm functions
scipy's pocketfft calls.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from expost.pld import twiddles
from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

LOGS = range(1, twiddles.PROVEN_LOG2 + 1)


@functools.lru_cache(maxsize=1)
def _worst_tau() -> float:
    """max over m <= 30 of τ(2^m)/u (exhaustive; cached: the wrong variant reuses it)."""
    return max(twiddles.table_error(1 << m) for m in LOGS)


def _sincosl() -> twiddles.CosSin:
    libm = ctypes.CDLL("libm.so.6")
    fn = libm.sincosl
    fn.restype = None
    fn.argtypes = [ctypes.c_longdouble, ctypes.c_void_p, ctypes.c_void_p]

    def cos_sin(arg: twiddles.LongArray) -> tuple[twiddles.LongArray, twiddles.LongArray]:
        values = np.ascontiguousarray(arg, dtype=np.longdouble).copy()
        s, c = np.empty_like(values), np.empty_like(values)
        step = values.itemsize
        for i in range(values.size):  # the argument passed by value, bit for bit
            fn(
                ctypes.c_longdouble.from_buffer(values.data, i * step),
                s.ctypes.data + i * step,
                c.ctypes.data + i * step,
            )
        return c, s

    return cos_sin


@functools.lru_cache(maxsize=1)
def _glibc_steps() -> tuple[Step, ...]:
    if not sys.platform.startswith("linux"):
        return ()
    import scipy.fft._pocketfft.pypocketfft as binary

    with open(binary.__file__, "rb") as f:
        imports = b"sincosl" in f.read()
    cos_sin = _sincosl()
    same = True
    for m in LOGS:
        _, re, im = twiddles.tables(1 << m)
        _, re2, im2 = twiddles.build_tables(1 << m, cos_sin)
        same = same and bool(np.array_equal(re, re2) and np.array_equal(im, im2))
        same = same and bool(np.array_equal(np.signbit(re), np.signbit(re2)))
    return (
        Step("scipy's pocketfft extension imports libm's sincosl", imports),
        Step(
            "glibc's sincosl and numpy's long double cos/sin give the same tables, bit for bit, "
            "for every n = 2^m, m <= 30",
            same,
        ),
    )


def _indices_below_n() -> bool:
    """cfftp::comp_twiddle takes twiddle[j·l1·i], j < ip, i < ido: every index is below n."""
    for m in LOGS:
        n = 1 << m
        l1 = 1
        for ip in (8,) * (m // 3) + {0: (), 1: (2,), 2: (4,)}[m % 3]:
            ido = n // (l1 * ip)
            if (ip - 1) * l1 * (ido - 1) >= n:
                return False
            l1 *= ip
    return True


def check(form: Any) -> tuple[Step, ...]:
    """The tables (fingerprints, glibc), τ by exhaustion, the product lemma, μ <= claim·u."""
    claim = Fraction(str(sp.nsimplify(form)))
    fingerprints = all(twiddles.fingerprint(1 << m) == twiddles.PROVEN[m] for m in LOGS)
    tau_units = _worst_tau()
    u = Fraction(1, 2**64)
    tau = Fraction(tau_units) * u
    g2 = 2 * u / (1 - 2 * u)
    t, gamma = sp.symbols("tau gamma_2", nonnegative=True)
    mu_bound = sp.Rational(2) * t + t**2 + sp.sqrt(2) * gamma * (1 + t) ** 2
    value = mu_bound.subs({t: sp.Rational(tau.numerator, tau.denominator)})
    value = value.subs({gamma: sp.Rational(g2.numerator, g2.denominator)})
    mu_units = value / sp.Rational(u.numerator, u.denominator)
    return (
        Step("long double is x87 extended (u = 2^-64)", np.finfo(np.longdouble).nmant == 63),
        Step(
            "cfftp's twiddle indices j·l1·i are below n for every n = 2^m, m <= 30",
            _indices_below_n(),
        ),
        Step("every table's fingerprint is the library's PROVEN one", fingerprints),
        *_glibc_steps(),
        Step(
            f"τ = max |v̂ − e^(2πix/n)| over every table, n <= 2^30, against 158-bit mpmath: "
            f"{tau_units:.4f}u (exhaustive)",
            tau_units < 2.0,
        ),
        identity("|v̂1v̂2 − v1v2| <= (1+τ)τ + τ = 2τ + τ²", (1 + t) * t + t, 2 * t + t**2),
        Step(
            f"μ/u = (2τ + τ² + √2γ_2(1+τ)²)/u = {float(mu_units):.4f} <= {float(claim)} (exact)",
            bool(sp.Le(mu_units, sp.Rational(claim.numerator, claim.denominator))),
        ),
        Step("the library's TWIDDLE_ERROR is the claim", Fraction(twiddles.TWIDDLE_ERROR) == claim),
    )


PROOF = Proof(
    name="fft-twiddle-error",
    source="docs/theory/fft-error.md §4 (Higham 2002 Lemma 3.5; exhaustion)",
    statement=(
        "Every twiddle of pocketfft's long double complex transform of length n = 2^m, m <= 30, "
        "is within μ = 5.5u of e^(−2πik/n) (u = 2^-64)."
    ),
    assumptions=(
        "pocketfft's sincos_2pibyn arithmetic as transcribed, in x87 extended precision",
        "off Linux: numpy's long double cos/sin are the libm functions pocketfft calls",
    ),
    claim=sp.Rational(11, 2),
    wrong_claim=sp.Rational(1, 2),
    check=check,
)
