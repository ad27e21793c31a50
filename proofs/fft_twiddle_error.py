"""The error μ of pocketfft's twiddles, long double and double, by exhaustion
(docs/theory/fft-error.md §4).

For every length n = 2^m, m <= 30, and each precision the library transforms in (x87 long
double, u = 2^-64; double, u = 2^-53), the tables v1, v2 of pocketfft's ``sincos_2pibyn<T>``
are rebuilt operation by operation (`expost.pld.twiddles.build_tables`) and each entry is
compared with e^{2πix/n} at 158 (long double) or 128 (double) bits: their largest error τ bounds
every twiddle ŵ = fl(v̂1·v̂2) by μ = 2τ + τ² + √2γ_2(1 + τ)² (Higham 2002, Lemma 3.5, and
|v̂1v̂2 − v1v2| <= |v̂1||v̂2 − v2| + |v̂1 − v1||v2|). The claim is the pair of μ/u (the
library's `TWIDDLE_ERROR`, `TWIDDLE_ERROR64`); the wrong variant, μ = u/2 for both (twiddles all
but correctly rounded), is rejected. On Linux the tables are also built with glibc's ``sincosl``
and ``sincos`` (the functions scipy's pocketfft extension imports), called through ctypes, and
must equal the library's bit for bit; and every table's fingerprint must be the library's
(`PROVEN`, `PROVEN64`), so the library knows at run time that its platform gives these tables.
Assumptions: pocketfft's arithmetic as transcribed (pocketfft_hdronly.h ``sincos_2pibyn``,
``calc``, ``operator[]``, ``cfftp::comp_twiddle``), with round-to-nearest, in x87 extended
precision for T = long double and in double (Thigh = double: ang = fl(0.25·π_L/n) rounded to
double) for T = double; elsewhere than Linux, that the library's cos/sin are the libm functions
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
# (format, its name, log2(1/u), libm's function, its ctypes type)
PRECISIONS = (
    (twiddles.LONG, "long double", 64, "sincosl", ctypes.c_longdouble),
    (twiddles.DOUBLE, "double", 53, "sincos", ctypes.c_double),
)


@functools.lru_cache(maxsize=2)
def _worst_tau(precision: twiddles.Precision) -> float:
    """max over m <= 30 of τ(2^m)/u (exhaustive; cached: the wrong variant reuses it)."""
    return max(twiddles.table_error(1 << m, precision) for m in LOGS)


def _libm(name: str, ctype: Any) -> twiddles.CosSin:
    """glibc's ``sincos``/``sincosl``, called per argument through ctypes."""
    fn = getattr(ctypes.CDLL("libm.so.6"), name)
    fn.restype = None
    fn.argtypes = [ctype, ctypes.c_void_p, ctypes.c_void_p]

    def cos_sin(arg: twiddles.FloatArray) -> tuple[twiddles.FloatArray, twiddles.FloatArray]:
        values = np.ascontiguousarray(arg).copy()
        s, c = np.empty_like(values), np.empty_like(values)
        step = values.itemsize
        for i in range(values.size):  # the argument passed by value, bit for bit
            fn(
                ctype.from_buffer(values.data, i * step),
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
        symbols = f.read()
    steps = []
    for precision, label, _, name, ctype in PRECISIONS:
        cos_sin = _libm(name, ctype)
        same = True
        for m in LOGS:
            _, re, im = twiddles.tables(1 << m, precision)
            _, re2, im2 = twiddles.build_tables(1 << m, cos_sin, precision)
            same = same and bool(np.array_equal(re, re2) and np.array_equal(im, im2))
            same = same and bool(np.array_equal(np.signbit(re), np.signbit(re2)))
        steps += [
            Step(
                f"scipy's pocketfft extension imports libm's {name}",
                b"\x00" + name.encode() + b"\x00" in symbols,  # the whole symbol name
            ),
            Step(
                f"glibc's {name} and the library's {label} cos/sin give the same tables, bit for "
                "bit, for every n = 2^m, m <= 30",
                same,
            ),
        ]
    return tuple(steps)


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


def _mu_steps(precision: twiddles.Precision, label: str, bits: int, claim: Fraction) -> list[Step]:
    """Fingerprints, τ by exhaustion, μ = 2τ + τ² + √2γ_2(1+τ)² <= claim·u (exact)."""
    proven = twiddles.PROVEN if precision == twiddles.LONG else twiddles.PROVEN64
    fingerprints = all(twiddles.fingerprint(1 << m, precision) == proven[m] for m in LOGS)
    tau_units = _worst_tau(precision)
    u = Fraction(1, 2**bits)
    tau = Fraction(tau_units) * u
    g2 = 2 * u / (1 - 2 * u)
    t, gamma = sp.symbols("tau gamma_2", nonnegative=True)
    mu_bound = sp.Rational(2) * t + t**2 + sp.sqrt(2) * gamma * (1 + t) ** 2
    value = mu_bound.subs({t: sp.Rational(tau.numerator, tau.denominator)})
    value = value.subs({gamma: sp.Rational(g2.numerator, g2.denominator)})
    mu_units = value / sp.Rational(u.numerator, u.denominator)
    constant = twiddles.TWIDDLE_ERROR if precision == twiddles.LONG else twiddles.TWIDDLE_ERROR64
    return [
        Step(f"every {label} table's fingerprint is the library's proven one", fingerprints),
        Step(
            f"{label}: τ = max |v̂ − e^(2πix/n)| over every table, n <= 2^30, exhaustive against "
            f"mpmath: {tau_units:.4f}u (u = 2^-{bits})",
            tau_units < 2.0,
        ),
        Step(
            f"{label}: μ/u = (2τ + τ² + √2γ_2(1+τ)²)/u = {float(mu_units):.4f} <= "
            f"{float(claim)} (exact)",
            bool(sp.Le(mu_units, sp.Rational(claim.numerator, claim.denominator))),
        ),
        Step(f"the library's {label} twiddle error is the claim", Fraction(constant) == claim),
    ]


def check(form: Any) -> tuple[Step, ...]:
    """The tables (fingerprints, glibc), τ by exhaustion, the product lemma, μ <= claim·u, for
    long double (the form's first entry) and double (its second)."""
    claims = [Fraction(str(sp.nsimplify(x))) for x in form]
    t = sp.symbols("tau", nonnegative=True)
    steps = [
        Step("long double is x87 extended (u = 2^-64)", np.finfo(np.longdouble).nmant == 63),
        Step(
            "cfftp's twiddle indices j·l1·i are below n for every n = 2^m, m <= 30",
            _indices_below_n(),
        ),
        *_glibc_steps(),
        identity("|v̂1v̂2 − v1v2| <= (1+τ)τ + τ = 2τ + τ²", (1 + t) * t + t, 2 * t + t**2),
    ]
    for (precision, label, bits, *_), claim in zip(PRECISIONS, claims, strict=True):
        steps += _mu_steps(precision, label, bits, claim)
    return tuple(steps)


PROOF = Proof(
    name="fft-twiddle-error",
    source="docs/theory/fft-error.md §4 (Higham 2002 Lemma 3.5; exhaustion)",
    statement=(
        "Every twiddle of pocketfft's complex transform of length n = 2^m, m <= 30, is within "
        "μ of e^(−2πik/n): μ = 5.5u in long double (u = 2^-64), μ = 5.75u in double (u = 2^-53)."
    ),
    assumptions=(
        "pocketfft's sincos_2pibyn arithmetic as transcribed, in x87 extended precision",
        "for T = double: the same arithmetic in double (Thigh = double, libm's sincos)",
        "off Linux: the library's cos/sin are the libm functions pocketfft calls",
    ),
    claim=sp.Tuple(sp.Rational(11, 2), sp.Rational(23, 4)),
    wrong_claim=sp.Tuple(sp.Rational(1, 2), sp.Rational(1, 2)),
    check=check,
)
