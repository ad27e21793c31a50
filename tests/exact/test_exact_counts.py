"""Poisson and binomial at large means (`expost.exact.counts`): exact pmf fits, forced tails,
and planted twins (a wrong tail factor, an off-by-one mode, a biased factor coin).

G-tests at ALPHA = 1e-6 (tests/test_exact_samplers.fits) against scipy's pmfs.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from expost.exact import GeneratorBits, binomial, counts, poisson, samplers
from tests.exact.test_exact_samplers import BiasedBits, fits
from tests.stats import mean_is_consistent

N = 30_000


def bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.default_rng(seed))


def poisson_pmf(lam: float) -> Any:
    return lambda k: float(sps.poisson.pmf(k, lam))


def binom_pmf(n: int, p: float) -> Any:
    return lambda k: float(sps.binom.pmf(k, n, p))


@pytest.mark.parametrize("lam", [Fraction(64), Fraction(2001, 2), Fraction(10**4)])
def test_poisson_window_fits_its_pmf(lam: Fraction) -> None:
    x = poisson(lam, bits(41), N)
    sd = float(lam) ** 0.5
    lo, hi = int(float(lam) - 12 * sd), int(float(lam) + 12 * sd)
    assert fits(x, poisson_pmf(float(lam)), max(lo, 0), hi)
    # twin: mean 0.1 sd off, about 30 standard errors of the mean at N
    assert not fits(x, poisson_pmf(float(lam) + sd / 10), max(lo, 0), hi)
    if lam > 5000:
        return  # a coin biased 1 in 20 shifts large-mean draws too little for N draws
    assert not fits(
        poisson(lam, BiasedBits(np.random.default_rng(42)), N),
        poisson_pmf(float(lam)),
        max(lo, 0),
        hi,
    )


@pytest.mark.parametrize(
    ("n", "p"),
    [
        (64, Fraction(1, 3)),
        (10**4, Fraction(1, 3)),
        (5000, Fraction(9, 10)),
        (10**6, Fraction(1, 1000)),
        (2000, 0.3),
    ],
)
def test_binomial_window_fits_its_pmf(n: int, p: Fraction | float) -> None:
    q = float(p)
    x = binomial(n, p, bits(43), N)
    sd = (n * q * (1 - q)) ** 0.5
    lo, hi = max(0, int(n * q - 12 * sd)), min(n, int(n * q + 12 * sd) + 1)
    assert fits(x, binom_pmf(n, q), lo, hi)
    assert not fits(x, binom_pmf(n, q * 1.01 if q < 0.5 else q * 0.995), lo, hi)


def test_binomial_per_sample_counts_mix_small_and_large() -> None:
    c = np.tile(np.array([0, 5, 100, 3000]), N // 4)
    x = binomial(c, Fraction(2, 5), bits(44), c.size)
    assert np.all(x[c == 0] == 0)
    for m in (5, 100, 3000):
        assert fits(x[c == m], binom_pmf(m, 0.4), 0, m)
    assert not fits(x[c == 3000], binom_pmf(3000, 0.404), 0, 3000)


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window of half-width 2: most proposals come from the geometric tails."""
    monkeypatch.setattr(counts, "half_width", lambda variance: 2)
    monkeypatch.setattr(counts, "half_widths", lambda variance: np.full(variance.size, 2))


@pytest.mark.usefixtures("narrow")
def test_tails_are_exact_and_a_wrong_tail_factor_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    x = poisson(200, bits(45), N)
    assert np.mean(np.abs(x - 200) > 2) > 0.5
    assert fits(x, poisson_pmf(200), 120, 300)
    y = binomial(400, Fraction(1, 4), bits(46), N)
    assert fits(y, binom_pmf(400, 0.25), 40, 170)
    # planted twin: beyond the window, the factors r_j/ρ left out (tails accepted too often)
    right = counts.poisson_factor

    def wrong(a: int, b: int) -> counts.Factor:
        f = right(a, b)

        def factor(j: Any, s: Any, up: Any, ref: Any) -> tuple[Any, Any]:
            return f(j, s, up, None) if ref is None else (np.ones_like(j), np.ones_like(j))

        return factor

    monkeypatch.setattr(counts, "poisson_factor", wrong)
    assert not fits(poisson(200, bits(45), N), poisson_pmf(200), 100, 320)


def test_wrong_factor_twin_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Factors of λ + 2 around the mode of λ: mean about 2 off (11 standard errors at N)."""
    right = counts.poisson_factor
    monkeypatch.setattr(counts, "poisson_factor", lambda a, b: right(a + 2 * b, b))
    assert not mean_is_consistent(poisson(1000, bits(47), N), 1000, 1000**0.5)


def test_large_mean_scalar_draws_are_quick_and_plausible() -> None:
    x = poisson(10**9, bits(48), 20)
    assert np.all(np.abs(x - 10**9) < 10 * 10**4.5)
    y = binomial(10**9, Fraction(1, 2), bits(49), 20)
    assert np.all(np.abs(y - 5 * 10**8) < 10 * (2.5e8) ** 0.5)
    assert samplers.LARGE == 64
