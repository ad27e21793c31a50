"""pocketfft's twiddles and their proven error μ (docs/theory/fft-error.md §4).

scipy's pocketfft (``sincos_2pibyn<long double>`` in pocketfft_hdronly.h) builds, for a length
n, two tables v1, v2 of about √(n/2) entries each: entry x is e^{2πix/n}, computed as ± cos or
± sin (libm ``sincosl``) of ``Thigh(y)·ang`` (y <= n an integer from an octant reduction of 8x,
ang = fl(0.25·π_L/n), π_L the long double nearest π); every twiddle is then one complex
product v1[k & mask]·v2[k >> shift] in long double (conjugated past n/2: exact). `tables`
repeats that arithmetic operation by operation in numpy long double, whose cos/sin are the same
libm functions (glibc: ``cosl``/``sinl`` share ``sincosl``'s kernels; `expost prove
fft-twiddle-error` checks bit equality on every argument), so it returns the very tables.

τ(n) = max |v̂ − e^{2πix/n}| over both tables is found by exhaustion against mpmath at 158 bits
(`table_error`). A twiddle ŵ = fl(v̂1·v̂2) then has |ŵ − w| <= 2τ + τ² + √2γ_2(1 + τ)²
(Higham 2002, Lemma 3.5 for the product's rounding; |v̂1v̂2 − v1v2| <= |v̂1||v̂2 − v2| +
|v̂1 − v1|), and `twiddle_error` returns that μ in units of u. The proof ran the exhaustion for
every n = 2^m, m <= `PROVEN_LOG2`, and stored each table's fingerprint (`PROVEN`): at first use
of a length the library rebuilds the tables (0.5 ms at n = 2^20), and where the fingerprint matches
the proven μ (`TWIDDLE_ERROR`) applies; otherwise (another libm, a longer transform) the
exhaustion runs on the spot for that length (once per process; about 20 µs per entry).

For float64 transforms (``dtype=DOUBLE``) pocketfft's ``sincos_2pibyn<double>`` takes
Thigh = double: ang = fl(0.25·π_L/n) rounded once to double, arguments and products in double,
libm's ``sincos`` (here CPython's ``math.cos``/``math.sin``, the same libm). Proven the same
way: `TWIDDLE_ERROR64` = 5.75 (u = 2^-53), fingerprints `PROVEN64`.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "DOUBLE",
    "LONG",
    "PROVEN",
    "PROVEN64",
    "PROVEN_LOG2",
    "TWIDDLE_ERROR",
    "TWIDDLE_ERROR64",
    "Precision",
    "build_tables",
    "fingerprint",
    "numpy_cos_sin",
    "product_error",
    "table_error",
    "tables",
    "twiddle_error",
    "unit_roundoff",
]

LongArray = npt.NDArray[np.longdouble]
FloatArray = npt.NDArray[Any]  # long double or float64 entries
Precision = np.dtype[Any]  # LONG (the default) or DOUBLE
LONG: Precision = np.dtype(np.longdouble)
DOUBLE: Precision = np.dtype(np.float64)
TWIDDLE_ERROR = 5.5  # μ/u, proven for every n = 2^m, m <= PROVEN_LOG2 (`expost prove`)
TWIDDLE_ERROR64 = 5.75  # the same for the float64 tables (u = 2^-53)
PROVEN_LOG2 = 30
_PI_BITS = 0xC90FDAA22168C234C4C6628B80DC1CD1  # ⌊π·2^126⌋ (128 bits; tests check it)


def _pi_long() -> np.longdouble:
    """π rounded to nearest in the long double format (pocketfft's literal ``3.14159…L``)."""
    digits = np.finfo(np.longdouble).nmant + 1  # at most 113: the 128 bits decide the rounding
    mant = (_PI_BITS + (1 << (127 - digits))) >> (128 - digits)
    value = np.longdouble(0)
    for shift in range(32 * ((digits - 1) // 32), -1, -32):  # exact: partial sums of mant
        value += np.ldexp(np.longdouble((mant >> shift) & 0xFFFFFFFF), shift)
    return np.longdouble(np.ldexp(value, 2 - digits))


CosSin = Callable[[FloatArray], tuple[FloatArray, FloatArray]]


def unit_roundoff(dtype: Precision) -> float:
    """u of the format: half its machine epsilon."""
    return float(np.finfo(dtype).eps) / 2.0


def numpy_cos_sin(arg: FloatArray) -> tuple[FloatArray, FloatArray]:
    """libm's cosine and sine in the precision of ``arg``: numpy's long double cos/sin (libm's
    ``cosl``/``sinl``); for float64 CPython's ``math.cos``/``math.sin`` (libm's ``cos``/``sin``;
    numpy's own float64 cos/sin may be SIMD code that rounds otherwise)."""
    if arg.dtype == np.longdouble:
        return np.cos(arg), np.sin(arg)
    values = arg.tolist()
    return np.array([math.cos(v) for v in values]), np.array([math.sin(v) for v in values])


def _calc(
    idx: npt.NDArray[np.int64], n: int, ang: np.floating[Any], cos_sin: CosSin
) -> tuple[FloatArray, FloatArray]:
    """pocketfft's ``calc(x, n, ang)`` for every x in ``idx`` (x >= 1): (real, imaginary)."""
    x = idx << 3
    upper = x >= 4 * n  # the second half: x = 8n − x, imaginary part negated
    x = np.where(upper, 8 * n - x, x)
    second = x >= 2 * n  # the second quadrant (of the reflected angle): x −= 2n
    x = np.where(second, x - 2 * n, x)
    swap = x >= n  # y = 2n − x: sine and cosine trade places
    y = np.where(swap, 2 * n - x, x)
    arg = y.astype(ang.dtype) * ang
    c, s = cos_sin(arg)
    # quadrant 1: (c, s) or swapped (s, c); quadrant 2: (−s, c) or swapped (−c, s)
    re = np.where(second, np.where(swap, -c, -s), np.where(swap, s, c))
    im = np.where(second, np.where(swap, s, c), np.where(swap, c, s))
    return re, np.where(upper, -im, im)


Tables = tuple[npt.NDArray[np.int64], FloatArray, FloatArray]


@functools.lru_cache(maxsize=8)
def tables(n: int, dtype: Precision = LONG) -> Tables:
    """(x, real, imaginary) of pocketfft's tables v1 then v2 for length ``n`` and transforms in
    ``dtype``: entry x is pocketfft's value of e^{2πix/n}, bit for bit (module doc). Read-only."""
    return build_tables(n, numpy_cos_sin, dtype)


def build_tables(n: int, cos_sin: CosSin, dtype: Precision = LONG) -> Tables:
    """`tables` with the cosine and sine of the reduced arguments taken from ``cos_sin``."""
    # Thigh(0.25L·π_L/n): long double, then (for T = double) rounded to double
    ang = dtype.type((_pi_long() * np.longdouble(0.25)) / np.longdouble(n))
    nval = (n + 2) // 2
    shift = 1
    while (1 << shift) * (1 << shift) < nval:
        shift += 1
    size1, size2 = 1 << shift, (nval + (1 << shift) - 1) >> shift
    idx = np.concatenate([np.arange(1, size1), np.arange(1, size2) << shift]).astype(np.int64)
    re, im = _calc(idx, n, ang, cos_sin)
    one = np.ones(1, dtype)
    zero = np.zeros(1, dtype)
    x = np.concatenate([[0], idx[: size1 - 1], [0], idx[size1 - 1 :]]).astype(np.int64)
    re = np.concatenate([one, re[: size1 - 1], one, re[size1 - 1 :]])
    im = np.concatenate([zero, im[: size1 - 1], zero, im[size1 - 1 :]])
    for a in (x, re, im):
        a.setflags(write=False)
    return x, re, im


def fingerprint(n: int, dtype: Precision = LONG) -> str:
    """The first 16 hex digits of the SHA-256 of the tables' significant bytes (the 80 bits
    of each x87 long double; all of its bytes in another format)."""
    _, re, im = tables(n, dtype)
    raw = np.stack([re, im]).view(np.uint8).reshape(2, re.size, -1)
    data = raw[:, :, :10] if np.finfo(dtype).nmant == 63 else raw  # x87: 6 bytes pad
    return hashlib.sha256(np.ascontiguousarray(data).tobytes()).hexdigest()[:16]


def _exact(values: FloatArray) -> list[tuple[int, int]]:
    """Each float exactly as (mantissa, exponent): the mantissa, an integer below 2^digits,
    split into exact 32-bit chunks."""
    digits = np.finfo(values.dtype).nmant + 1
    mant, exp = np.frexp(values)
    rest = np.ldexp(mant, digits)
    chunks: list[tuple[int, npt.NDArray[np.float64]]] = []
    for shift in range(32 * ((digits - 1) // 32), -1, -32):
        chunk = np.floor(np.ldexp(rest, -shift))  # |chunk| <= 2^32: exact in float64
        rest = rest - np.ldexp(chunk, shift)
        chunks.append((shift, chunk.astype(np.float64)))
    return [
        (sum(int(c[i]) << shift for shift, c in chunks), int(e) - digits)
        for i, e in enumerate(exp.tolist())
    ]


def table_error(n: int, dtype: Precision = LONG) -> float:
    """τ(n) / u, rounded up: the largest |v̂ − e^{2πix/n}| over pocketfft's tables for length
    ``n``, against mpmath at p >= 128 bits (exhaustive; the reference's own error, below
    2^-(p-8), is added)."""
    from mpmath.libmp import (
        from_man_exp,
        from_rational,
        mpf_add,
        mpf_cos_sin,
        mpf_mul,
        mpf_pi,
        mpf_sub,
        to_float,
    )

    prec = max(128, 2 * np.finfo(dtype).nmant + 32)
    wide = prec + 16
    x, re, im = tables(n, dtype)
    two_pi = mpf_mul(from_man_exp(2, 0), mpf_pi(wide), wide)
    worst = from_man_exp(0, 0)
    for k, (ma, ea), (mb, eb) in zip(x.tolist(), _exact(re), _exact(im), strict=True):
        c, s = mpf_cos_sin(mpf_mul(two_pi, from_rational(k, n, wide), wide), prec)
        dr = mpf_sub(from_man_exp(ma, ea), c, prec)
        di = mpf_sub(from_man_exp(mb, eb), s, prec)
        sq = mpf_add(mpf_mul(dr, dr, prec), mpf_mul(di, di, prec), prec)
        worst = max(worst, sq, key=to_float)
    u = unit_roundoff(dtype)
    tau = math.sqrt(to_float(worst)) * (1.0 + 2.0**-40) + 2.0 ** -(prec - 8)
    return math.nextafter(tau / u, math.inf)


def product_error(tau: float, dtype: Precision = LONG) -> float:
    """μ/u of a twiddle fl(v̂1·v̂2) from τ/u of the tables: 2τ + τ² + √2γ_2(1 + τ)² (module
    doc), rounded up (float64 evaluation of a few positive terms, enlarged by 2^-40)."""
    u = unit_roundoff(dtype)
    g2 = 2.0 * u / (1.0 - 2.0 * u)
    t = tau * u
    mu = 2.0 * t + t * t + math.sqrt(2.0) * g2 * (1.0 + t) ** 2
    return mu / u * (1.0 + 2.0**-40)


@functools.lru_cache(maxsize=128)
def twiddle_error(n: int, dtype: Precision = LONG) -> float:
    """μ/u for pocketfft's length-``n`` twiddles in ``dtype`` on this platform: the proven
    constant (`TWIDDLE_ERROR`, `TWIDDLE_ERROR64`) where the tables are the proven ones
    (fingerprint), else computed now by exhaustion (module doc)."""
    m = n.bit_length() - 1
    double = np.finfo(dtype).nmant == 52
    proven, constant = (PROVEN64, TWIDDLE_ERROR64) if double else (PROVEN, TWIDDLE_ERROR)
    if proven.get(m) == fingerprint(n, dtype):
        return constant
    return product_error(table_error(n, dtype), dtype)


PROVEN: dict[int, str] = {  # log2 n -> fingerprint of the proven tables (x86-64, glibc 2.36)
    1: "d104c8b2095fed01",
    2: "634edd7e73e280d3",
    3: "c1bff9eb9b086ebc",
    4: "5db3b795c09b8783",
    5: "6fc2723071846a7b",
    6: "47d40a38cb711ffa",
    7: "e7eb963d9cb95da3",
    8: "0d67af1f3bfaf092",
    9: "58d8db4aee70df4c",
    10: "29d5d97f6b11d90c",
    11: "6f3c5870b53bfc17",
    12: "d860f898d0ffa2c3",
    13: "53aefb62a48ab351",
    14: "aa7dbf844cafa0ed",
    15: "1919b7a1716def7e",
    16: "c7856ac52b8e9266",
    17: "d3ee98c6d4ee2252",
    18: "171b69fde9b4bf0c",
    19: "de474a6f582b5df2",
    20: "e7feba40b2d04732",
    21: "da6bfc714207a9d7",
    22: "0c510af7bcf76aee",
    23: "69202d763182c68c",
    24: "f791b72955639aa7",
    25: "f897d3aaee44231b",
    26: "49d6dc660846af57",
    27: "d5ddaf3d2f53d022",
    28: "a80cd6f977cb4762",
    29: "57b9ef2681abf309",
    30: "303b403b07850c8a",
}

PROVEN64: dict[int, str] = {  # the same for the float64 tables (libm's sincos, glibc 2.36)
    1: "0d8660267a644a1d",
    2: "2f96d83e8de3363f",
    3: "29d8df83ef28127b",
    4: "165e3f2b32b82682",
    5: "61e107a761c8a31f",
    6: "556a074b4d0743bc",
    7: "33c7c52220985054",
    8: "eb3839ffd539cd51",
    9: "7592312faa436d95",
    10: "40e533cac8956ced",
    11: "a466888fe1fb3103",
    12: "f5edc54d56232837",
    13: "36f44b5a1e50c17d",
    14: "a2ed96972cf04e49",
    15: "69ced01feb611e8f",
    16: "0bae0d4aab339814",
    17: "4d68dbe3a9cb2b70",
    18: "b292d8c471369566",
    19: "358a3d6cfe93da1a",
    20: "e034648c873c6261",
    21: "efd9e17e3b08f6db",
    22: "043527aa7aa85907",
    23: "c08061cb65d49b22",
    24: "56d3489872b80fd4",
    25: "29fa9deb3c0c5207",
    26: "5718b69ee77cc28f",
    27: "0fd7c70d16748253",
    28: "1a84ff4f9763f521",
    29: "f4bbe0034b67be48",
    30: "f36b9db45c526352",
}
