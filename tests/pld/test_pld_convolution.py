"""The convolution's error promise, and the discretised masses, against exact references
(THEORY §12 (d), (e); `expost.pld.convolution`, `expost.pld.discretise`).

- The FFT's result, in long double and in float64, is within its stated ℓ1 bound of the exact
  convolution (computed in `Fraction`s); the twins, a transform too short for the linear
  convolution (wrap-around), and (float64) the bound at the long double's u, exceed it.
- The direct sum's outputs are each >= the exact value; the twin without the up-rounding is not.
- Connect-the-dots masses of a Gaussian round are >= their 50-digit values (quadrature of the
  density times the split weight over each cell); the twin without the margin is not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import partial

import mpmath as mp
import numpy as np
import numpy.typing as npt
import pytest
import scipy.fft

from expost.pld import PrivacyLossDistribution
from expost.pld.convolution import DIRECT_MAX, convolve, fft_error
from expost.pld.pairs import MASS_MARGIN
from expost.pld.twiddles import DOUBLE, LONG, Precision, unit_roundoff

FloatArray = npt.NDArray[np.float64]


def _exact(a: FloatArray, b: FloatArray) -> list[Fraction]:
    fa, fb = [Fraction(x) for x in a], [Fraction(x) for x in b]
    out = [Fraction(0)] * (len(fa) + len(fb) - 1)
    for i, x in enumerate(fa):
        if x:
            for j, y in enumerate(fb):
                out[i + j] += x * y
    return out


def _l1(c: FloatArray, exact: list[Fraction]) -> Fraction:
    return sum((abs(Fraction(x) - e) for x, e in zip(c, exact, strict=True)), Fraction(0))


def _laws(rng: np.random.Generator, n: int) -> tuple[FloatArray, FloatArray]:
    a = rng.exponential(size=n) * np.exp(-rng.uniform(0, 40, n))
    b = rng.exponential(size=n + 17)
    return a / a.sum(), b / b.sum()


@pytest.mark.parametrize("precision", [LONG, DOUBLE], ids=["long double", "float64"])
def test_fft_result_is_within_its_bound(precision: Precision) -> None:
    rng = np.random.default_rng(12)
    worst = 0.0
    too_small = []
    for n in (DIRECT_MAX + 1, 150, 300):
        a, b = _laws(rng, n)
        exact = _exact(a, b)
        c, err = convolve(a, b, precision=precision)
        size = a.size + b.size - 1
        length = 1 << (size - 1).bit_length()
        assert err == fft_error(a, b, length, unit_roundoff(precision))
        assert all(Fraction(x) >= 0 for x in c)
        # c is rounded up from a vector within err of the exact result: below the exact value
        # by at most err in total
        below = sum((max(e - Fraction(x), Fraction(0)) for x, e in zip(c, exact, strict=True)))
        assert below <= Fraction(err)
        worst = max(worst, float(below) / err)
        # float64 twin: the bound at the long double's u, about 2,000 times too small
        too_small.append(_l1(c, exact) > Fraction(fft_error(a, b, length, unit_roundoff(LONG))))
        # planted twin: a transform one power of two too short (cyclic wrap-around)
        m = 1 << ((size - 1).bit_length() - 1)
        la, lb = a.astype(np.longdouble), b.astype(np.longdouble)
        short = scipy.fft.irfft(scipy.fft.rfft(la, m) * scipy.fft.rfft(lb, m), m)
        twin = np.concatenate([short, np.zeros(size - m)]).astype(np.float64)
        assert _l1(twin, exact) > Fraction(err)
    assert worst < 1.0
    assert precision == LONG or any(too_small)


def test_fft_bound_grows_with_the_unit_roundoff() -> None:
    """The bound is linear in u to first order (a wrong constant would show here)."""
    a = np.full(100, 0.01)
    small, large = fft_error(a, a, 256, 2.0**-64), fft_error(a, a, 256, 2.0**-53)
    assert 2000 < large / small < 2100


def test_direct_sum_is_entrywise_above_the_exact_value() -> None:
    rng = np.random.default_rng(13)
    a, b = _laws(rng, DIRECT_MAX)
    exact = _exact(a, b)
    c, err = convolve(a, b)
    assert err == 0.0
    assert all(Fraction(x) >= e for x, e in zip(c, exact, strict=True))
    twin = np.convolve(a, b)  # rounded to nearest: some entries fall below
    assert any(Fraction(x) < e for x, e in zip(twin, exact, strict=True))


def _at(f: Callable[[mp.mpf, mp.mpf], mp.mpf], lo: mp.mpf, t: mp.mpf) -> mp.mpf:
    return f(t, lo)


def _ctd_masses(mu: mp.mpf, h: float, cells: range) -> dict[int, mp.mpf]:
    """Exact connect-the-dots masses at grid points from the cells ``cells`` (L ~ N(μ²/2, μ²))."""
    out: dict[int, mp.mpf] = {}
    scale = mp.expm1(h)

    def dens(t: mp.mpf) -> mp.mpf:
        return mp.npdf(t, mu * mu / 2, mu)

    def left_weight(t: mp.mpf, lo: mp.mpf) -> mp.mpf:
        return dens(t) * mp.expm1(h - (t - lo)) / scale

    def right_weight(t: mp.mpf, lo: mp.mpf) -> mp.mpf:
        return dens(t) * mp.exp(h - (t - lo)) * mp.expm1(t - lo) / scale

    for j in cells:
        lo, hi = j * mp.mpf(h), (j + 1) * mp.mpf(h)
        left = mp.quad(partial(_at, left_weight, lo), [lo, hi])
        right = mp.quad(partial(_at, right_weight, lo), [lo, hi])
        out[j] = out.get(j, mp.mpf(0)) + left
        out[j + 1] = out.get(j + 1, mp.mpf(0)) + right
    return out


def test_gaussian_cell_masses_are_above_their_50_digit_values() -> None:
    sigma, h = 2.0, 5e-4
    d = PrivacyLossDistribution.gaussian(sigma, value_discretization=h).remove
    with mp.workdps(50):
        mu = mp.mpf(1) / mp.mpf(sigma)
        centre = round(float(mu * mu / 2) / h)
        cells = range(centre - 3, centre + 4)
        exact = _ctd_masses(mu, h, range(cells.start - 1, cells.stop))
        worst = mp.mpf(0)
        unsafe_twin = 0
        for j in cells:
            got = d.masses[j - d.offset]
            assert mp.mpf(got) >= exact[j]
            worst = max(worst, mp.mpf(got) / exact[j] - 1)
            unsafe_twin += mp.mpf(got) / (1 + MASS_MARGIN) ** 2 < exact[j]
        assert worst <= 2 * MASS_MARGIN
        assert unsafe_twin > 0  # without the margin some masses fall below the exact value
    assert math.isclose(float(sum(d.masses)), 1.0, rel_tol=1e-8)


def test_transform_of_a_unit_vector_is_within_kappa() -> None:
    """F e_1 is the vector of twiddles e^{−2πij/n}: pocketfft's long-double transform of it
    lies within κ·||F e_1||_2 = κ√n of the 50-digit values (κ from `kappa`, with the twiddles'
    error μ proven in `expost.pld.twiddles`: an end-to-end check); twin: κ/100 fails."""
    import scipy.fft

    from expost.pld.convolution import kappa

    u = float(np.finfo(np.longdouble).eps) / 2.0
    for n in (64, 512, 4096):
        e1 = np.zeros(n, dtype=np.clongdouble)
        e1[1] = 1
        got = scipy.fft.fft(e1)
        with mp.workdps(50):
            digits = partial(np.format_float_scientific, precision=30, unique=False)
            err = mp.sqrt(
                mp.fsum(
                    abs(
                        mp.mpc(mp.mpf(digits(got[j].real)), mp.mpf(digits(got[j].imag)))
                        - mp.expjpi(-2 * mp.mpf(j) / n)
                    )
                    ** 2
                    for j in range(n)
                )
            )
        bound = kappa(n, u) * math.sqrt(n)
        assert err <= bound
    assert err > bound / 100 or u < 2.0**-60  # the twin: a bound 100 times smaller fails
