"""Convolution of nonnegative mass arrays with a bounded error (THEORY §12 (e)).

Two ways, each with what it promises about the exact convolution ``a * b`` of its float inputs:

- **Direct** (`numpy.convolve`, when the shorter input has at most `DIRECT_MAX` entries): every
  output is a sum of at most m nonnegative products, so its relative error is at most
  γ_{m+1} = (m+1)u/(1 − (m+1)u) (Higham 2002, Lemma 3.1 and §3.1); each output is multiplied by
  1 + 2γ_{m+1}, raised by m·2^-1074 (products that underflow) and moved up one float, so it is >= the exact value. No error term.
- **FFT in extended precision** (`scipy.fft` on `numpy.longdouble`, unit roundoff u): returns
  the computed convolution (negatives clipped to 0, which moves every entry towards the exact,
  nonnegative value; each entry rounded *up* to float64) and an ℓ1 bound on its distance from
  ``a * b`` before that up-rounding. The bound is Higham's radix-2 FFT bound (Higham 2002,
  Thm 24.2: ||fl(F x) − F x||_2 <= κ ||F x||_2, κ = Lη/(1 − Lη), L = log2 N,
  η = μ + γ_4(√2 + μ), μ the twiddle factors' error) carried through the forward transforms, the
  pointwise product (Lemma 3.5: complex product error <= √2 γ_2) and the inverse transform, see
  `fft_error`; the ℓ1 bound is √N times the ℓ2 bound. pocketfft's real transforms are not the
  radix-2 algorithm of the theorem: η is taken `SAFETY` times larger (and μ = 4u), an assumption
  the tests check against exact rational convolutions.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import scipy.fft

__all__ = ["DIRECT_MAX", "SAFETY", "convolve", "fft_error"]

FloatArray = npt.NDArray[np.float64]
DIRECT_MAX = 64  # the shorter input's length up to which the direct sum is used
SAFETY = 4.0  # factor on Higham's η for pocketfft's real (not radix-2 complex) transforms
_U64 = 2.0**-53
_TINY = math.ulp(0.0)


def _gamma(k: float, u: float) -> float:
    return k * u / (1.0 - k * u)


def fft_error(a: FloatArray, b: FloatArray, n: int, u: float) -> float:
    """An ℓ1 bound on ``fl(ifft(fft(a)·fft(b))) − a * b`` for an FFT of length ``n`` (a power
    of two >= len(a) + len(b) − 1) in arithmetic with unit roundoff ``u`` (module docstring).

    With A_p = ||a||_p, B_p = ||b||_p and ||F x||_∞ <= ||x||_1, ||F x||_2 = √n ||x||_2:
    the transforms' errors e_a, e_b have ||e_a||_2 <= κ√n A_2; the product's error is
    ||e_a⊙Fb + Fa⊙e_b + e_a⊙e_b||_2 + √2γ_2 ||Â⊙B̂||_2 <= √n E_1 with
    E_1 = κ(A_2 B_1 + A_1 B_2) + κ²√n A_2 B_2 + √2γ_2 (1+κ)(A_2 B_1 + κ√n A_2 B_2); the inverse
    transform divides by √n and adds κ(||Fa⊙Fb||_2 + √n E_1)/√n, so
    ||error||_2 <= (1+κ)E_1 + κ A_2 B_1 and the ℓ1 bound is √n times that. Every term is
    evaluated in float64 and enlarged by a relative 2^-40 (norms and products of a few floats).
    """
    levels = max(1.0, math.log2(n))
    mu = 4.0 * u
    eta = SAFETY * (mu + _gamma(4.0, u) * (math.sqrt(2.0) + mu))
    kappa = levels * eta / (1.0 - levels * eta)
    a1, b1 = float(np.sum(a)), float(np.sum(b))
    a2, b2 = float(np.sqrt(np.dot(a, a))), float(np.sqrt(np.dot(b, b)))
    root = math.sqrt(n)
    e1 = (
        kappa * (a2 * b1 + a1 * b2)
        + kappa**2 * root * a2 * b2
        + math.sqrt(2.0) * _gamma(2.0, u) * (1.0 + kappa) * (a2 * b1 + kappa * root * a2 * b2)
    )
    l2 = (1.0 + kappa) * e1 + kappa * a2 * b1
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


def convolve(a: FloatArray, b: FloatArray) -> tuple[FloatArray, float]:
    """(c, err): c >= 0 with ||c' − a * b||_1 <= err for some c' <= c entrywise (c is the
    computed convolution, clipped at 0 and rounded up); err = 0 for the direct sum."""
    if min(a.size, b.size) <= DIRECT_MAX:
        return _direct(a, b), 0.0
    size = a.size + b.size - 1
    n = 1 << (size - 1).bit_length()
    la, lb = a.astype(np.longdouble), b.astype(np.longdouble)
    spectrum = scipy.fft.rfft(la, n) * scipy.fft.rfft(lb, n)
    c = scipy.fft.irfft(spectrum, n)[:size]
    u = float(np.finfo(np.longdouble).eps) / 2.0
    err = fft_error(a, b, n, u)
    return _up64(np.maximum(c, 0.0)), err
