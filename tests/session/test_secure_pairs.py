"""Secure-mode scalar rounds priced by `PLDFilter` at their own pairs, through a session with a
SQLite ledger that replays (issue 40 item 3).

A scalar discrete Gaussian round costs `DiscreteGaussianCost`, a scalar discrete Laplace round
`DiscreteLaplaceCost`; a vector round keeps the zCDP / pure-DP cost (the one-coordinate pair is
not claimed for ℓ2 / ℓ1 vector sensitivities). Counts are checked against exact references
computed here: the discrete Gaussian's in tests/costs/test_discrete_gaussian_cost.py, the
discrete Laplace's below (its loss m/t, m = |x| − |x − Δ|, summed over x in 40-digit mpmath at
the exact rational scale, the k-fold law convolved in floats).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import mpmath as mp
import numpy as np
import numpy.typing as npt
import pytest

from expost.cli import main
from expost.errors import BudgetExceeded, InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.filters import DPCost, PLDFilter, ZCDPCost
from expost.filters.costs import DiscreteGaussianCost, DiscreteLaplaceCost
from expost.mechanisms import GaussianMechanism, LaplaceMechanism
from expost.session import PrivateSession
from tests.costs.test_discrete_gaussian_cost import discrete_gaussian_pmf, exact_count

FloatArray = npt.NDArray[np.float64]


def _secure(budget: PLDFilter, path: Path, seed: int = 0) -> PrivateSession:
    bits = GeneratorBits(np.random.default_rng(seed))
    return PrivateSession(budget, bits=bits, ledger=str(path), create=not path.exists())


def budget_left(s: PrivateSession) -> float:
    left = s.remaining
    assert isinstance(left, float)  # a PLDFilter: rounds
    return left


def discrete_laplace_loss(scale: Fraction, d: int) -> FloatArray:
    """P(m) for m = −Δ..Δ: the law of the loss m/t of one discrete Laplace round under P (the
    outputs x with P(x) ∝ e^{−|x−Δ|/t}; m = |x| − |x − Δ|), summed until e^{−|x|/t} < 1e-45."""
    with mp.workdps(40):
        t = mp.mpf(scale.numerator) / scale.denominator
        width = math.ceil(float(scale) * 105) + d
        weights = {x: mp.exp(-abs(x - d) / t) for x in range(-width, width + d + 1)}
        total = mp.fsum(weights.values())
        law = [mp.mpf(0)] * (2 * d + 1)
        for x, w in weights.items():
            law[abs(x) - abs(x - d) + d] += w / total
        return np.array([float(m) for m in law])


def laplace_delta(scale: Fraction, d: int, k: int, eps: float) -> float:
    """δ_k(eps) of k discrete Laplace rounds, the larger of the two directions."""
    one = discrete_laplace_loss(scale, d)
    law = one
    for _ in range(k - 1):
        law = np.convolve(law, one)
    m = np.arange(law.size) - k * d  # the summed m, loss m/t
    t = float(scale)
    remove = math.fsum((law * np.maximum(0.0, 1.0 - np.exp(eps - m / t))).tolist())
    q = law * np.exp(-m / t)  # the same sums under Q
    add = math.fsum((q * np.maximum(0.0, 1.0 - np.exp(eps + m / t))).tolist())
    return max(remove, add)


def laplace_count(scale: Fraction, d: int, eps: float, delta: float) -> int:
    k = 0
    while laplace_delta(scale, d, k + 1, eps) <= delta:
        k += 1
    return k


def test_scalar_secure_gaussian_rounds_are_counted_at_the_discrete_gaussian_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "g.sqlite"
    budget = PLDFilter(5.0, 1e-5)
    s = _secure(budget, path)
    rounds = 0
    while budget_left(s) > 0:
        s.gaussian(7, sensitivity=1, rho=Fraction(1, 32))  # σ² = 16 exactly
        rounds += 1
    with pytest.raises(BudgetExceeded):
        s.gaussian(7, sensitivity=1, rho=Fraction(1, 32))
    assert rounds == exact_count(Fraction(16), 1, 5.0, 1e-5) == 20
    assert s.history[0].request == DiscreteGaussianCost(4.0, 1, rho=1 / 32)
    with pytest.raises(InvalidParameter):  # a vector round: zCDP, no pair: refused, not spent
        s.gaussian([1, 2], sensitivity=1, rho=Fraction(1, 32))
    s.close()
    again = _secure(budget, path, seed=1)
    assert again.filter.rounds == rounds
    assert again.remaining == 0.0
    again.close()
    assert main(["ledger", "show", str(path)]) == 0
    assert "DiscreteGaussianCost" in capsys.readouterr().out


def test_scalar_secure_laplace_rounds_are_counted_at_the_discrete_laplace_pair(
    tmp_path: Path,
) -> None:
    path = tmp_path / "l.sqlite"
    budget = PLDFilter(2.0, 1e-2)
    s = _secure(budget, path)
    rounds = 0
    while budget_left(s) > 0:
        s.laplace(7, sensitivity=4, eps=0.2)  # eps 0.2 as a float, exactly: t = 4/0.2 exactly
        rounds += 1
    scale = Fraction(4) / Fraction(0.2)
    assert scale != Fraction(20)  # a scale no float holds: priced at the least float above
    assert rounds == laplace_count(scale, 4, 2.0, 1e-2) == 22
    assert rounds > PLDFilter(2.0, 1e-2, DPCost(0.2)).budget  # randomised response: 20
    request = s.history[0].request
    assert isinstance(request, DiscreteLaplaceCost)
    assert Fraction(request.scale) >= scale > Fraction(math.nextafter(request.scale, 0.0))
    s.close()
    assert _secure(budget, path).filter.rounds == rounds  # the ledger replays


def test_the_reference_rejects_one_round_more() -> None:
    """The planted twin of the counts above: one round more is over δ by the same reference."""
    scale = Fraction(4) / Fraction(0.2)
    assert laplace_delta(scale, 4, 23, 2.0) > 1e-2 >= laplace_delta(scale, 4, 22, 2.0)


def test_the_pairs_at_rounded_parameters_dominate_the_exact_laws() -> None:
    """An exact σ² or scale rounded to a float (docs: `expost.pld.mechanisms`): the PLD's δ at
    the float parameter is at least the exact law's, one round, both directions."""
    g = GaussianMechanism(1, Fraction(3, 10), exact=True)  # σ² = 5/3: no float
    cost = g.cost_for(1)
    assert isinstance(cost, DiscreteGaussianCost)
    assert Fraction(cost.sigma) ** 2 > g.sigma2
    pld = cost.pair().pld(1e-4)
    width = 40
    q = discrete_gaussian_pmf(g.sigma2, width)
    p = np.concatenate([[0.0], q[:-1]])
    for x in np.linspace(0.0, 3.0, 13):
        exact = math.fsum(np.maximum(p - math.exp(x) * q, 0.0).tolist())
        assert pld.delta(float(x)) >= exact
    lap = LaplaceMechanism(3, Fraction(1, 7), exact=True)  # t = 21 exactly; and 1/0.3:
    other = LaplaceMechanism(1, 0.3, exact=True)
    for m in (lap, other):
        c = m.cost_for(1)
        assert isinstance(c, DiscreteLaplaceCost)
        assert Fraction(c.eps) >= m.eps
        pld = c.pair().pld(1e-4)
        d = int(m.sensitivity)
        for x in np.linspace(0.0, float(c.eps), 9):
            assert pld.delta(float(x)) >= laplace_delta(Fraction(m.scale), d, 1, float(x))


def test_vector_rounds_keep_their_zcdp_and_pure_dp_costs() -> None:
    g = GaussianMechanism(2, Fraction(1, 8), exact=True)
    lap = LaplaceMechanism(2, Fraction(1, 2), exact=True)
    assert g.cost_for(3) == g.cost() == ZCDPCost(0.125)
    assert lap.cost_for(3) == lap.cost() == DPCost(0.5)
    assert g.cost_for(1) == DiscreteGaussianCost(4.0, 2, rho=0.125)
    assert lap.cost_for(1) == DiscreteLaplaceCost(4.0, 2, eps=0.5)


def test_vector_then_scalar_secure_laplace_rounds_share_a_counting_filter(tmp_path: Path) -> None:
    """A vector round fixes randomised response at eps; a scalar round of the same eps (its
    discrete Laplace pair is eps-DP) is dominated by it, as it was when both were `DPCost`."""
    s = _secure(PLDFilter(2.0, 1e-5), tmp_path / "mixed.sqlite")
    s.laplace([1, 2], sensitivity=2, eps=0.5)
    s.laplace(3, sensitivity=2, eps=0.5)
    s.laplace(3, sensitivity=1, eps=0.25)
    kinds = [type(r.request).__name__ for r in s.history]
    assert kinds == ["DPCost", "DiscreteLaplaceCost", "DiscreteLaplaceCost"]
    assert s.spent == 3.0


def test_the_discrete_laplace_pair_at_delta_dominates_every_smaller_shift() -> None:
    """THEORY §12 (log-concave noise): shifts 1..Δ under the pair at Δ; shift Δ + 1 is not."""
    scale, d = Fraction(3, 2), 3
    xs = np.linspace(0.0, 2.5, 26)
    top = [laplace_delta(scale, d, 1, float(x)) for x in xs]
    for k in range(1, d):
        assert all(laplace_delta(scale, k, 1, float(x)) <= t for x, t in zip(xs, top, strict=True))
    assert any(laplace_delta(scale, d + 1, 1, float(x)) > t for x, t in zip(xs, top, strict=True))
