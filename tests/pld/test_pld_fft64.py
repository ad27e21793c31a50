"""The float64 transform path: pocketfft's double twiddles and the choice of precision
(docs/theory/fft-error.md §4; `expost.pld.twiddles`, `expost.pld.convolution`; proof:
proofs/fft_twiddle_error.py).

- The float64 tables against scipy's, their error against a 60-digit reference and every
  twiddle within μ = `TWIDDLE_ERROR64`·2^-53: tests/pld/test_pld_twiddles.py, parametrised over
  both formats.
- The fingerprinted float64 tables get the proven μ; other tables (the planted bug) get their
  own, larger μ by exhaustion.
- scipy's float64 transform of a unit vector is within κ√n (κ at u = 2^-53); twin: κ/200.
- `convolve` runs float64 exactly when its bound is within the tolerance, and returns that bound;
  `DiscreteLoss.compose` offers it `FFT64_SHARE`·tail_mass, and the composed error carries the
  float64 bound (twin: at the default tail mass it stays in long double).
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import numpy.typing as npt
import pytest
import scipy.fft

from expost.pld import twiddles
from expost.pld.convolution import FFT64_SHARE, convolve, fft_error, kappa
from expost.pld.discrete import DiscreteLoss

FloatArray = npt.NDArray[np.float64]
U = 2.0**-53


def _shifted(n: int, dtype: twiddles.Precision = twiddles.DOUBLE) -> twiddles.Tables:
    """The planted bug: every argument off by 2^-51 relative (a wrong π's last bits)."""
    return twiddles.build_tables(n, lambda a: twiddles.numpy_cos_sin(a * (1 + 2.0**-51)), dtype)


def test_float64_twiddle_error_needs_the_fingerprint(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 512
    assert twiddles.twiddle_error(n, twiddles.DOUBLE) == twiddles.TWIDDLE_ERROR64
    twiddles.twiddle_error.cache_clear()
    monkeypatch.setattr(twiddles, "tables", _shifted)  # the planted bug: other tables
    wrong = twiddles.twiddle_error(n, twiddles.DOUBLE)
    assert wrong > 1.2 * twiddles.TWIDDLE_ERROR64  # arguments off by up to 3u: μ ≈ 7u


def _laws(n: int) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(7)
    a, b = rng.exponential(size=n), rng.exponential(size=n + 5)
    return a / a.sum(), b / b.sum()


def test_convolve_runs_float64_exactly_within_the_tolerance() -> None:
    a, b = _laws(200)
    length = 512
    bound64 = fft_error(a, b, length, U)
    bound_long = fft_error(a, b, length, float(np.finfo(np.longdouble).eps) / 2)
    c64, e64 = convolve(a, b, precision=twiddles.DOUBLE)
    c_long, e_long = convolve(a, b, precision=twiddles.LONG)
    assert (e64, e_long) == (bound64, bound_long)
    assert not np.array_equal(c64, c_long)  # the two paths differ in their last bits
    c, e = convolve(a, b, tolerance=bound64)
    assert e == bound64
    assert np.array_equal(c, c64)
    c, e = convolve(a, b, tolerance=bound64 * (1 - 2.0**-20))  # twin: just too small
    assert e == bound_long
    assert np.array_equal(c, c_long)
    assert convolve(a, b)[1] == bound_long  # no tolerance: long double


def test_compose_offers_float64_a_share_of_the_tail_mass() -> None:
    a, _ = _laws(200)
    bound64 = fft_error(a, a, 512, U)
    for tail, expected in ((bound64 / FFT64_SHARE, bound64), (1e-16, None)):
        d = DiscreteLoss(0.01, -100, a, 0.0, 0.0, tail)
        composed = d.compose(d)
        if expected is None:  # the twin: the default tail mass keeps the long double bound
            assert composed.error < bound64 / 100
        else:
            assert expected <= composed.error <= expected * (1 + 2.0**-40)


def test_float64_transform_of_a_unit_vector_is_within_kappa() -> None:
    """F e_1 is the vector of twiddles e^{−2πij/n}: scipy's float64 transform of it lies within
    κ√n of the 40-digit values (κ from `kappa` at u = 2^-53 with μ = 5.75u: end to end); the
    twin, κ/200, fails."""
    ratios = []
    for n in (64, 512, 4096):
        e1 = np.zeros(n, dtype=np.complex128)
        e1[1] = 1
        got = scipy.fft.fft(e1)
        with mp.workdps(40):
            err = mp.sqrt(
                mp.fsum(
                    abs(mp.mpc(float(g.real), float(g.imag)) - mp.expjpi(-2 * mp.mpf(j) / n)) ** 2
                    for j, g in enumerate(got)
                )
            )
        bound = kappa(n, U) * n**0.5
        assert float(err) <= bound
        ratios.append(float(err) / bound)
    assert max(ratios) > 1 / 200  # the twin: a bound 200 times smaller fails
