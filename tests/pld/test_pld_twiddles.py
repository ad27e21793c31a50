"""pocketfft's twiddle tables and their proven error μ (docs/theory/fft-error.md §4;
`expost.pld.twiddles`, proof: proofs/fft_twiddle_error.py).

- π_L is the long double nearest π (60-digit reference; twin: the next long double is not).
- The replicated tables, long double and float64, are the ones scipy's binary uses: the
  transforms of unit vectors contain twiddles bit for bit (more than half of them at
  n = 1024); the twin, tables whose arguments are off by 2^-62 (float64: 2^-51) relative (a π
  wrong in its last bits), matches under 1/16 of them.
- `table_error` agrees with an independent 60-digit reference (decimal strings, mpmath's
  expjpi); the twin, 0.99 of it, is exceeded.
- Every twiddle fl(v̂1·v̂2) is within μ = `TWIDDLE_ERROR`·u (float64: `TWIDDLE_ERROR64`·2^-53)
  of e^{2πik/n}; the twin μ = u/2 fails.
- `twiddle_error` takes the proven μ only for the fingerprinted tables: without the fingerprint
  it finds μ by exhaustion (the same or smaller), and for tables built from wrong arguments (the
  planted bug) it finds μ above the proven constant, and κ grows with it.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import numpy.typing as npt
import pytest
import scipy.fft

from expost.pld import twiddles
from expost.pld.convolution import kappa

LongArray = npt.NDArray[np.longdouble]
Tables = tuple[npt.NDArray[np.int64], LongArray, LongArray]
U = float(np.finfo(np.longdouble).eps) / 2.0
# (format, its unit roundoff, the proven μ/u, the planted bug's relative shift of the arguments)
PRECISIONS = [
    (twiddles.LONG, U, twiddles.TWIDDLE_ERROR, 2.0**-62),
    (twiddles.DOUBLE, 2.0**-53, twiddles.TWIDDLE_ERROR64, 2.0**-51),
]
IDS = ["long double", "float64"]

pytestmark = pytest.mark.skipif(
    np.finfo(np.longdouble).nmant != 63, reason="the proven tables are x87 extended precision"
)


def _shifted(n: int, dtype: twiddles.Precision = twiddles.LONG, shift: float = 2.0**-62) -> Tables:
    """The planted bug: every argument off by ``shift`` relative (a wrong π's last bits)."""
    scale = 1 + np.longdouble(shift)
    return twiddles.build_tables(n, lambda a: twiddles.numpy_cos_sin(a * scale), dtype)


def _products(tables: Tables, n: int, k: npt.NDArray[np.int64]) -> tuple[LongArray, LongArray]:
    """pocketfft's ``sincos_2pibyn::operator[]``: v1[k & mask]·v2[k >> shift] in the tables'
    format, imaginary part negated past n/2."""
    x, re, im = tables
    size1 = int(np.flatnonzero(x == 0)[1])  # v2 starts at its entry 0
    shift = size1.bit_length() - 1
    past = 2 * k > n
    k = np.where(past, n - k, k)
    i1, i2 = k & (size1 - 1), size1 + (k >> shift)
    r = re[i1] * re[i2] - im[i1] * im[i2]
    j = re[i1] * im[i2] + im[i1] * re[i2]
    return r, np.where(past, -j, j)


def _mp(x: np.longdouble) -> mp.mpf:
    return mp.mpf(np.format_float_scientific(x, precision=40, unique=False))


def test_pi_is_the_long_double_nearest_pi() -> None:
    """π_L against 60 digits: the nearest long double (within half an ulp); twin: one ulp off."""
    pi_l = twiddles._pi_long()
    ulp = np.spacing(pi_l)
    with mp.workdps(60):
        assert abs(_mp(pi_l) - mp.pi) <= _mp(ulp) / 2
        assert abs(_mp(pi_l + ulp) - mp.pi) > _mp(ulp) / 2


@pytest.mark.parametrize(("dtype", "u", "mu", "shift"), PRECISIONS, ids=IDS)
def test_the_replica_tables_are_scipys(
    dtype: twiddles.Precision, u: float, mu: float, shift: float
) -> None:
    n = 1024
    k = np.arange(1, n, dtype=np.int64)
    eye = np.eye(n, dtype=np.clongdouble if dtype == twiddles.LONG else np.complex128)[1:]
    row = scipy.fft.fft(eye, axis=1)[:, 1]  # F e_k at 1: the forward twiddle e^{−2πik/n}
    counts = []
    for tables in (twiddles.tables(n, dtype), _shifted(n, dtype, shift)):
        r, j = _products(tables, n, k)
        counts.append(int(np.sum((row.real == r) & (row.imag == -j))))
    assert counts[0] > (n - 1) // 2
    assert counts[1] < n // 16  # the twin


@pytest.mark.parametrize(("dtype", "u", "mu", "shift"), PRECISIONS, ids=IDS)
def test_table_error_matches_an_independent_reference(
    dtype: twiddles.Precision, u: float, mu: float, shift: float
) -> None:
    for n in (128, 1024):
        x, re, im = twiddles.tables(n, dtype)
        with mp.workdps(60):
            worst = max(
                abs(mp.mpc(_mp(a), _mp(b)) - mp.expjpi(2 * mp.mpf(int(k)) / n))
                for k, a, b in zip(x, re, im, strict=True)
            )
            reference = float(worst / mp.mpf(u))
        got = twiddles.table_error(n, dtype)
        assert reference <= got <= reference * (1 + 1e-9)
        assert got > 0.99 * reference  # the twin: 0.99·τ is below the true error
        assert 0.5 < got < 2.0


@pytest.mark.parametrize(("dtype", "u", "mu", "shift"), PRECISIONS, ids=IDS)
def test_every_twiddle_is_within_mu(
    dtype: twiddles.Precision, u: float, mu: float, shift: float
) -> None:
    for n in (256, 4096):
        k = np.arange(n, dtype=np.int64)
        r, j = _products(twiddles.tables(n, dtype), n, k)
        with mp.workdps(60):
            worst = max(
                abs(mp.mpc(_mp(a), _mp(b)) - mp.expjpi(2 * mp.mpf(int(kk)) / n))
                for kk, a, b in zip(k, r, j, strict=True)
            )
            ratio = float(worst / mp.mpf(u))
        assert ratio <= mu
        assert ratio > 0.5  # the twin μ = u/2 (the proof's wrong variant) fails


def test_twiddle_error_without_fingerprint_is_found_by_exhaustion(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 256
    assert twiddles.twiddle_error(n) == twiddles.TWIDDLE_ERROR  # the fingerprinted tables
    proven = kappa(n, U)
    twiddles.twiddle_error.cache_clear()
    monkeypatch.setattr(twiddles, "PROVEN", {})
    found = twiddles.twiddle_error(n)
    assert found == twiddles.product_error(twiddles.table_error(n))
    assert 2.0 * 2**0.5 < found <= twiddles.TWIDDLE_ERROR  # at least the product's √2γ_2
    twiddles.twiddle_error.cache_clear()
    monkeypatch.setattr(twiddles, "tables", _shifted)  # the planted bug: other tables
    wrong = twiddles.twiddle_error(n)
    assert wrong > 1.5 * twiddles.TWIDDLE_ERROR  # arguments off by ~3u: τ ≈ 4u
    assert kappa(n, U) > proven  # the transform's bound takes that larger μ
