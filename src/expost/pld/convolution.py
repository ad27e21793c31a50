"""Convolution of nonnegative mass arrays with a bounded error (THEORY §12 (e)).

Two ways, each with what it promises about the exact convolution ``a * b`` of its float inputs:

- **Direct** (`numpy.convolve`, when the shorter input has at most `DIRECT_MAX` entries): every
  output is a sum of at most m nonnegative products, so its relative error is at most
  γ_{m+1} = (m+1)u/(1 − (m+1)u) (Higham 2002, Lemma 3.1 and §3.1); each output is multiplied by
  1 + 2γ_{m+1}, raised by m·2^-1074 (products that underflow) and moved up one float, so it is >= the exact value. No error term.
- **FFT** (pocketfft's complex transform, `scipy.fft.fft`/`ifft` on ``numpy.complex128`` or
  ``numpy.clongdouble``, unit roundoff u = 2^-53 or the long double's): returns the computed
  convolution (negatives clipped to 0, which moves every entry towards the exact, nonnegative
  value; in long double each entry then rounded *up* to float64) and an ℓ1 bound on its distance
  from ``a * b`` before that up-rounding. For a length
  N = 2^m pocketfft runs passes of radix 8 (⌊m/3⌋ of them), then one of radix 4 or 2 for the
  rest; a radix-r pass is A = permutation · blockdiag(DFT_r) · diag(twiddles), ||A||_2 = √r.
  Each output of a pass is a sum of r twiddled inputs computed through at most d_r complex
  additions and m_r multiplications by constants of modulus <= 1 (`PASS_DEPTHS`, from the
  code's data flow; proofs/fft_error.py checks it against the code transcribed), so it is off by
  at most θ_r·Σ|inputs|, θ_r = (1+u)^{d_r}·((1+μ)(1+√2γ_2))^{m_r} − 1 (μ the twiddles' error,
  Higham 2002 Lemma 3.5 for a complex product), and the pass by η_r = √r·θ_r relative in ℓ2
  (|| |A| ||_2 <= r). Over the passes ||fl(Fx) − Fx||_2 <= κ||Fx||_2, κ = Π(1 + η_r) − 1 — the
  form of Higham's Thm 24.2, proven here for pocketfft's passes — carried through the forward
  transforms, the pointwise product and the inverse transform (`fft_error`; derivation in
  docs/theory/fft-error.md). μ is proven for the tables this platform's libm gives, in each
  precision (`expost.pld.twiddles.twiddle_error`: 5.5u in long double, 5.75u in float64, where
  they are the tables proven by exhaustion, `expost prove fft-twiddle-error`; otherwise found by
  exhaustion at first use of the length).

Which precision: float64 (5 to 15 times faster per transform, docs/theory/fft-error.md §6)
when the caller's ``tolerance`` admits its proven bound, else long double.
`expost.pld.splitting.convolve_within` passes `FFT64_SHARE` = 1/4 of the composition's
``tail_mass``: the float64 bound is then at most a quarter of the mass the same step's top tail
cut may already send to +∞ (into δ), and it propagates through later convolutions exactly as
that mass does (Young), so it can at most add a quarter to the truncation's share of δ. Either
way the bound of the transform actually run is returned and added to δ: the result is on the
safe side in every case; the rule only decides how much of δ goes to rounding. (Measured: with
a rule relative to the mass instead, 2^-38·||a||_1||b||_1, the float64 bounds compounded by
repeated squaring widened 1,202 DP-SGD steps' bracket tenfold, and the float64 noise kept tails
the long double result lets the cut remove: arrays 8 times longer, no faster. Whole laws'
bounds rarely fit; the light tails' products, split off by `convolve_within`, do.)
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from expost.errors import InvalidParameter
from expost.pld.twiddles import DOUBLE, LONG, Precision, twiddle_error, unit_roundoff

__all__ = [
    "DIRECT_MAX",
    "FFT64_SHARE",
    "PASS_DEPTHS",
    "convolve",
    "fft_error",
    "fft_error_of_norms",
    "kappa",
    "passes",
]

FloatArray = npt.NDArray[np.float64]
DIRECT_MAX = 64  # the shorter input's length up to which the direct sum is used
PASS_DEPTHS = {2: (1, 1), 4: (2, 1), 8: (4, 2)}  # radix: (additions, multiplications) per path
FFT64_SHARE = 0.25  # compose: float64 where its bound is at most this share of tail_mass
_U64 = 2.0**-53
_TINY = math.ulp(0.0)


def _gamma(k: float, u: float) -> float:
    return k * u / (1.0 - k * u)


def _precision(u: float) -> Precision:
    """The format whose unit roundoff is ``u`` (its twiddles' μ is proven per format)."""
    if u == _U64:
        return DOUBLE
    if u == unit_roundoff(LONG):
        return LONG
    raise InvalidParameter("u", u, "must be the unit roundoff of float64 or long double")


def passes(n: int) -> tuple[int, ...]:
    """The radices of pocketfft's complex passes for a power-of-two length ``n``."""
    m = n.bit_length() - 1
    tail = {0: (), 1: (2,), 2: (4,)}[m % 3]
    return (8,) * (m // 3) + tail


def kappa(n: int, u: float) -> float:
    """κ with ||fl(F x) − F x||_2 <= κ ||F x||_2 for pocketfft's length-``n`` complex transform
    in arithmetic of unit roundoff ``u`` (module doc), rounded up generously (relative 2^-40)."""
    return _kappa(n, u, twiddle_error(n, _precision(u)))


@functools.lru_cache(maxsize=256)
def _kappa(n: int, u: float, mu: float) -> float:
    """`kappa` for twiddles of error ``mu``·u."""
    log_mult = math.log1p(mu * u) + math.log1p(math.sqrt(2.0) * _gamma(2.0, u))
    total = 0.0  # log Π(1 + η_r), by log1p/expm1: no cancellation for u far below 2^-53
    for r in passes(n):
        d, m = PASS_DEPTHS[r]
        theta = math.expm1(d * math.log1p(u) + m * log_mult)
        total += math.log1p(math.sqrt(r) * theta)
    return math.expm1(total) * (1.0 + 2.0**-40)


def fft_error(a: FloatArray, b: FloatArray, n: int, u: float) -> float:
    """An ℓ1 bound on ``fl(ifft(fft(a)·fft(b))) − a * b`` for transforms of length ``n`` (a
    power of two >= len(a) + len(b) − 1) in arithmetic with unit roundoff ``u`` (module doc).

    With A_p = ||a||_p, B_p = ||b||_p and ||F x||_∞ <= ||x||_1, ||F x||_2 = √n ||x||_2:
    the transforms' errors e_a, e_b have ||e_a||_2 <= κ√n A_2; the product's error is
    ||e_a⊙Fb + Fa⊙e_b + e_a⊙e_b||_2 + √2γ_2 ||Â⊙B̂||_2 <= √n E_1 with
    E_1 = κ(A_2 B_1 + A_1 B_2) + κ²√n A_2 B_2 + √2γ_2 (1+κ)(A_2 B_1 + κ√n A_2 B_2); the inverse
    transform divides by n (exactly: a power of two) and adds κ(||Fa⊙Fb||_2 + √n E_1)/√n, so
    ||error||_2 <= (1+κ)E_1 + κ A_2 B_1 and the ℓ1 bound is √n times that. Every term is
    evaluated in float64 and enlarged by a relative 2^-40 (norms and products of a few floats).
    """
    a1, b1 = float(np.sum(a)), float(np.sum(b))
    a2, b2 = float(np.sqrt(np.dot(a, a))), float(np.sqrt(np.dot(b, b)))
    return fft_error_of_norms((a1, a2), (b1, b2), n, u)


def fft_error_of_norms(a: tuple[float, float], b: tuple[float, float], n: int, u: float) -> float:
    """`fft_error` from the inputs' norms (||a||_1, ||a||_2) and (||b||_1, ||b||_2)."""
    (a1, a2), (b1, b2) = a, b
    k = kappa(n, u)
    root = math.sqrt(n)
    e1 = (
        k * (a2 * b1 + a1 * b2)
        + k**2 * root * a2 * b2
        + math.sqrt(2.0) * _gamma(2.0, u) * (1.0 + k) * (a2 * b1 + k * root * a2 * b2)
    )
    l2 = (1.0 + k) * e1 + k * a2 * b1
    return root * l2 * (1.0 + 2.0**-40)


def _up64(x: npt.NDArray[np.longdouble]) -> FloatArray:
    """Each entry rounded up to float64 (entries >= 0)."""
    y = x.astype(np.float64)
    low = y.astype(np.longdouble) < x
    y[low] = np.nextafter(y[low], np.inf)
    return y


def _direct(a: FloatArray, b: FloatArray) -> FloatArray:
    m = min(a.size, b.size)
    c = np.convolve(a, b)
    c = c * (1.0 + 2.0 * _gamma(m + 1.0, _U64)) + m * _TINY  # _TINY: products that underflow
    return np.nextafter(c, np.inf)


def convolve(
    a: FloatArray, b: FloatArray, tolerance: float = 0.0, precision: Precision | None = None
) -> tuple[FloatArray, float]:
    """(c, err): c >= 0 with ||c' − a * b||_1 <= err for some c' <= c entrywise (c is the
    computed convolution, clipped at 0 and rounded up); err = 0 for the direct sum. The FFT
    runs in ``precision`` (`twiddles.DOUBLE` or `twiddles.LONG`); by default in float64 where
    its bound is at most ``tolerance``, else in long double (module doc)."""
    if min(a.size, b.size) <= DIRECT_MAX:
        return _direct(a, b), 0.0
    import scipy.fft  # lazy: importing expost loads no scipy (tests/house/test_import.py)

    size = a.size + b.size - 1
    n = 1 << (size - 1).bit_length()
    wanted = precision == DOUBLE or (precision is None and tolerance > 0.0)
    err64 = fft_error(a, b, n, _U64) if wanted else math.inf
    if precision is None:
        precision = DOUBLE if err64 <= tolerance else LONG
    complex_type = np.complex128 if precision == DOUBLE else np.clongdouble
    fa = scipy.fft.fft(a.astype(complex_type), n)  # complex input: the c2c passes
    fb = fa if b is a else scipy.fft.fft(b.astype(complex_type), n)  # a square: one transform
    c = np.maximum(scipy.fft.ifft(fa * fb, n)[:size].real, 0.0)
    if precision == DOUBLE:
        return c, err64
    return _up64(c), fft_error(a, b, n, unit_roundoff(precision))
