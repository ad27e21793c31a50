"""A composition carries the transform's error (issue 41, item 7).

`DiscreteLoss.compose` convolves two grid laws by FFT (both longer than `DIRECT_MAX`) and adds
the transform's ℓ1 error bound to the result's ``error``. Two different laws whose masses span
40 orders of magnitude (so the transform's rounding shows), with a ``tail_mass`` below every
mass (so nothing is cut): the composed masses fall below the exact rational convolution by at
most the composed ``error``, and by more than 0. The second guard, beside
tests/house/test_planted_bugs.py and tests/pld/test_pld_convolution.py (which check `convolve`'s
own bound), of the planted bug "the FFT error term removed" — here where the composition uses it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from expost.pld import PrivacyLossDistribution
from expost.pld.convolution import DIRECT_MAX
from expost.pld.discrete import DiscreteLoss


def _law(n: int, seed: int) -> DiscreteLoss:
    rng = np.random.default_rng(seed)
    m = rng.exponential(size=n) * np.exp(-rng.uniform(0, 90, n))
    return DiscreteLoss(0.01, -n // 2, m / m.sum(), 0.0, 0.0, 1e-300)


def test_the_composed_error_covers_the_transform() -> None:
    a, b = _law(90, 1), _law(130, 2)
    assert min(a.masses.size, b.masses.size) > DIRECT_MAX  # the FFT path
    c = a.compose(b)
    assert (c.offset, c.masses.size) == (a.offset + b.offset, a.masses.size + b.masses.size - 1)
    exact = [Fraction(0)] * c.masses.size
    for i, x in enumerate(map(Fraction, a.masses.tolist())):
        for j, y in enumerate(map(Fraction, b.masses.tolist())):
            exact[i + j] += x * y
    below = sum(
        (max(e - Fraction(x), Fraction(0)) for x, e in zip(c.masses.tolist(), exact, strict=True)),
        Fraction(0),
    )
    assert below > 0  # the rounding shows: the error term has work to do
    assert below <= Fraction(c.error)


def _pld(n: int, seed: int) -> PrivacyLossDistribution:
    """A user's pair of n outcomes, losses spread over [−1, 1], masses over 40 orders."""
    rng = np.random.default_rng(seed)
    q = rng.exponential(size=n) * np.exp(-rng.uniform(0, 90, n))
    q /= q.sum()
    p = q * np.exp(rng.uniform(-1.0, 1.0, n))
    p /= p.sum()
    return PrivacyLossDistribution.from_pmfs(p, q, value_discretization=0.01, tail_mass=1e-300)


def test_a_composed_pld_carries_the_transform_error() -> None:
    """The same through the public composition (`PrivacyLossDistribution.compose`), one
    direction: the composed law is below the exact convolution of the two laws by at most its
    error."""
    a, b = _pld(400, 3).remove, _pld(400, 4).remove
    assert min(a.masses.size, b.masses.size) > DIRECT_MAX
    c = _pld(400, 3).compose(_pld(400, 4)).remove
    exact = [Fraction(0)] * (a.masses.size + b.masses.size - 1)
    for i, x in enumerate(map(Fraction, a.masses.tolist())):
        for j, y in enumerate(map(Fraction, b.masses.tolist())):
            exact[i + j] += x * y
    got = dict(enumerate(map(Fraction, c.masses.tolist()), start=c.offset - a.offset - b.offset))
    below = sum(
        (max(e - got.get(k, Fraction(0)), Fraction(0)) for k, e in enumerate(exact)), Fraction(0)
    )
    assert below > 0
    assert below <= Fraction(c.error)
