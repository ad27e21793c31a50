"""`DiscreteGaussianCost`: the secure-mode Gaussian priced at its own pair (issue 40 item 3).

References are computed here, independently of the library: the pmf of N_Z(0, σ²) in 40-digit
mpmath, its k-fold convolution in floats (positive terms: relative error below k·n·2^-53), and
the hockey-stick divergence of the k-fold pair, whose loss depends only on the sum S of the k
draws: L = (2ΔS − kΔ²)/(2σ²) (THEORY §12).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import numpy.typing as npt
import pytest

from expost.errors import InvalidParameter
from expost.filters import PLDFilter, ZCDPFilter
from expost.filters.costs import DiscreteGaussianCost
from expost.filters.kinds import KINDS, decode_cost, encode_cost

FloatArray = npt.NDArray[np.float64]


def discrete_gaussian_pmf(sigma2: Fraction, width: int) -> FloatArray:
    """P(Y = y) for y = −width..width, Y ~ N_Z(0, σ²), 40 digits (the tail beyond is below
    e^{−width²/(2σ²)}·σ·3, far below every δ compared here)."""
    with mp.workdps(40):
        s2 = mp.mpf(sigma2.numerator) / sigma2.denominator
        terms = [mp.exp(-mp.mpf(y * y) / (2 * s2)) for y in range(-width, width + 1)]
        total = mp.fsum(terms)
        return np.array([float(t / total) for t in terms])


def exact_delta(sigma2: Fraction, sensitivity: int, k: int, eps: float) -> float:
    """δ_k(eps) of k discrete Gaussian rounds, the larger of the two directions."""
    width = math.ceil(14 * math.sqrt(float(sigma2))) + 2
    one = discrete_gaussian_pmf(sigma2, width)
    law = one
    for _ in range(k - 1):
        law = np.convolve(law, one)
    # S (Q: sum of k draws of N_Z(0)) on −k·width..k·width; under P it is shifted by kΔ
    s = np.arange(-k * width, k * width + 1)
    q = law
    p = np.zeros_like(q)
    shift = k * sensitivity
    p[shift:] = q[: q.size - shift]
    remove = math.fsum(np.maximum(p - math.exp(eps) * q, 0.0).tolist())
    add = math.fsum(np.maximum(q - math.exp(eps) * p, 0.0).tolist())
    assert s.size == q.size
    return max(remove, add)


def exact_count(sigma2: Fraction, sensitivity: int, eps: float, delta: float) -> int:
    k = 0
    while exact_delta(sigma2, sensitivity, k + 1, eps) <= delta:
        k += 1
    return k


def test_rho_is_rounded_up_and_a_smaller_rho_is_refused() -> None:
    for sigma, d in ((3.0, 1), (0.7, 2), (1.1, 5), (1e-3, 1)):
        c = DiscreteGaussianCost(sigma, d)
        least = Fraction(d * d) / (2 * Fraction(sigma) ** 2)
        assert Fraction(c.rho) >= least
        assert Fraction(math.nextafter(c.rho, 0.0)) < least  # the least such float
        assert c.zcdp() == (c.rho, 0.0)
        assert c.rdp(4.0) == 4 * c.rho  # α·rho, exact here
        assert c.gdp() is None  # not claimed mu-GDP
        assert c.dp() is None
    with pytest.raises(InvalidParameter, match=r"rho.*Δ²/\(2σ²\)"):
        DiscreteGaussianCost(3.0, 1, rho=0.05)  # below 1/18
    assert DiscreteGaussianCost(3.0, 1, rho=0.5).rho == 0.5  # a larger rho is safe
    for bad in ({"sigma": 0.0}, {"sigma": -1.0}, {"sigma": 1.0, "sensitivity": 0}):
        with pytest.raises(InvalidParameter):
            DiscreteGaussianCost(**bad)  # type: ignore[arg-type]


def test_the_record_round_trips_and_the_server_prices_it_as_zcdp() -> None:
    c = DiscreteGaussianCost(2.5, 3, rho=0.75)
    record = encode_cost(c)
    assert record == {"type": "DiscreteGaussianCost", "rho": 0.75, "sigma": 2.5, "sensitivity": 3}
    assert decode_cost(record) == c
    assert KINDS["DiscreteGaussianCost"].server == "ZCDPCost"  # as the rho it carries
    assert ZCDPFilter(1.0).price(c) == (0.75, 0.0)


@pytest.mark.parametrize(
    ("sigma2", "sensitivity", "eps", "delta"),
    [(Fraction(16), 1, 5.0, 1e-5), (Fraction(1), 1, 20.0, 1e-6), (Fraction(9, 4), 2, 20.0, 1e-5)],
)
def test_the_count_is_the_exact_count_never_above(
    sigma2: Fraction, sensitivity: int, eps: float, delta: float
) -> None:
    sigma = float(sigma2) ** 0.5
    assert Fraction(sigma) ** 2 == sigma2  # these σ² are squares of floats: one law
    c = DiscreteGaussianCost(sigma, sensitivity)
    exact = exact_count(sigma2, sensitivity, eps, delta)
    count = int(PLDFilter(eps, delta, c).budget)
    assert 5 <= exact <= 30
    assert count == exact  # never above it; at these sizes not below it either


def test_a_count_one_above_the_exact_count_is_caught() -> None:
    """The planted twin: the reference rejects a count one round too many."""
    sigma2, eps, delta = Fraction(1), 20.0, 1e-6
    exact = exact_count(sigma2, 1, eps, delta)
    assert exact_delta(sigma2, 1, exact, eps) <= delta < exact_delta(sigma2, 1, exact + 1, eps)
    assert PLDFilter(eps, delta, DiscreteGaussianCost(1.0)).budget != exact + 1


def shift_delta(law: FloatArray, k: int, eps: float) -> float:
    """δ(eps) of (Y + k, Y) for the pmf ``law`` of Y on consecutive integers, both directions."""
    q = np.concatenate([law, np.zeros(k)])
    p = np.concatenate([np.zeros(k), law])
    remove = math.fsum(np.maximum(p - math.exp(eps) * q, 0.0).tolist())
    add = math.fsum(np.maximum(q - math.exp(eps) * p, 0.0).tolist())
    return max(remove, add)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(1), Fraction(9, 4)])
def test_the_pair_at_shift_delta_dominates_every_smaller_shift(sigma2: Fraction) -> None:
    """THEORY §12 (log-concave noise): the pair at Δ dominates shifts 1..Δ; the twin, shift
    Δ + 1, is not dominated (the profile at some ε is above)."""
    law = discrete_gaussian_pmf(sigma2, math.ceil(14 * math.sqrt(float(sigma2))) + 2)
    d = 3
    xs = np.linspace(0.0, 8.0, 33)
    top = [shift_delta(law, d, float(x)) for x in xs]
    for k in range(1, d):
        assert all(shift_delta(law, k, float(x)) <= t for x, t in zip(xs, top, strict=True))
    assert any(shift_delta(law, d + 1, float(x)) > t for x, t in zip(xs, top, strict=True))
