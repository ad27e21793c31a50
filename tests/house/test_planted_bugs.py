"""Tests that catch the bugs planted by hand in issue 41 (item 7), each by a property checked
against an exact reference (rationals or mpmath), not against the code under test.

- The DP-SGD step's safe-side roundings, in exact rationals: the noise sd σ·Δ rounded up and
  used as the draw's scale; a row kept iff its 53-bit integer is *below* ⌊q·2⁵³⌋ (P(keep) <= q);
  `SubsampledGaussianCost.sigma` rounded down and `from_sigma`'s rho rounded up; clipped rows
  within Δ.
- The PLD at a non-default ``tail_mass``: total mass and δ(ε) against the exact Gaussian
  composition (a dropped bottom tail fails both).
- `PLDFilter`: domination is exact (a round one ulp noisier than the fixed mechanism is
  refused), and a filter rebuilt from its ledger is fixed by its first round.
- The privacy-critical constants each get a second guard: the 2⁻³⁰ mass raise (subsampled
  Gaussian masses against 40-digit quadrature) and the FFT error term (a self-convolution,
  the one-transform path, against the exact rational convolution).

Which planted bug each test catches is said in its docstring; each was applied by hand and
seen to fail the test (docs/changelog.md, issue 41).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from expost import PrivateSession
from expost.costs.pairs import ClosedPair
from expost.errors import InvalidParameter
from expost.filters import GaussianCost, PLDFilter, SubsampledGaussianCost
from expost.filters.pld import dominates
from expost.mechanisms import SubsampledGaussianMechanism
from expost.pld import PrivacyLossDistribution
from expost.pld.convolution import convolve

# ----------------------------------------------------------------------------- DP-SGD roundings


def _up(x: Fraction) -> float:
    """The smallest float >= x (computed here, not by the library)."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _down(x: Fraction) -> float:
    """The largest float <= x."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


_RNG = np.random.default_rng(20260411)
SIGMAS = [0.1, 0.7, 1.1, 1.3, 3.0, 1e-3, 123.456, *_RNG.uniform(0.3, 8.0, 40).tolist()]
DELTAS = [0.1, 0.3, 1.7, 3.0, 1e-2, *_RNG.uniform(0.05, 5.0, 40).tolist()]


def _rounds_down_to_nearest() -> list[tuple[float, float]]:
    """(σ, Δ) whose nearest-rounded product is below the exact one: a planted nearest or
    rounded-down sd shows on these."""
    pairs = [(s, d) for s in SIGMAS for d in DELTAS if Fraction(s * d) < Fraction(s) * Fraction(d)]
    assert len(pairs) > 20
    return pairs


def test_the_noise_sd_is_sigma_times_delta_rounded_up() -> None:
    """Catches: the noise sd rounded down (or to nearest) in `subsampled_gaussian`."""
    for sigma, delta in _rounds_down_to_nearest():
        m = SubsampledGaussianMechanism(delta, sigma, 0.5)
        assert m.noise_std == _up(Fraction(sigma) * Fraction(delta)), (sigma, delta)


class _Rigged(np.random.Generator):
    """A Generator whose uniform integers are all ``value`` (normals as a seeded one's)."""

    def __init__(self, value: int, seed: int = 0) -> None:
        super().__init__(np.random.PCG64(seed))
        self.value = value

    def integers(  # type: ignore[override]  # a stub: only the call the mechanism makes
        self, low: Any, high: Any = None, size: Any = None, **_: Any
    ) -> Any:
        return np.full(size, self.value, dtype=np.int64)


@pytest.mark.parametrize(("sigma", "delta"), _rounds_down_to_nearest()[:6])
def test_the_release_draws_its_noise_at_the_rounded_up_sd(sigma: float, delta: float) -> None:
    """Catches: a rounded-down sd used for the draw. With every row kept and rows inside the
    clip, the release is Σ rows + N(0, sd²) from the same seed, sd computed here in rationals."""
    rows = np.array([[0.25 * delta, -0.125 * delta], [0.5 * delta, 0.0]])
    m = SubsampledGaussianMechanism(delta, sigma, 0.5)
    got = m.run(rows, _Rigged(0, seed=7))
    reference = _Rigged(0, seed=7)
    reference.integers(0, 2**53, size=(1, 2))  # the keep draws (no generator state consumed)
    want = rows.sum(axis=0) + reference.normal(0.0, _up(Fraction(sigma) * Fraction(delta)), 2)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("q", [0.5, 0.25, 2.0**-20, 0.1, 0.3, 1.0 - 2.0**-53, 1.0])
def test_a_row_is_kept_only_below_floor_q_two_53(q: float) -> None:
    """Catches: a row kept when the 53-bit integer equals ⌊q·2⁵³⌋ (then P(keep) > q exactly
    whenever q·2⁵³ is an integer, as for q = 1/2)."""
    m = SubsampledGaussianMechanism(1.0, 1.0, q)
    threshold = math.floor(Fraction(q) * 2**53)  # computed here
    assert m.threshold == threshold
    assert Fraction(threshold, 2**53) <= Fraction(q)  # P(keep) <= q exactly
    assert Fraction(q) - Fraction(threshold, 2**53) < Fraction(1, 2**53)
    row = np.array([[0.5]])
    at, below = _Rigged(threshold), _Rigged(threshold - 1)
    noise = _Rigged(0).normal(0.0, m.noise_std, (1, 1))[0]
    np.testing.assert_array_equal(m.run(row, at), noise)  # equal to the threshold: dropped
    np.testing.assert_array_equal(m.run(row, below), 0.5 + noise)  # below it: kept


def _rhos() -> list[float]:
    rhos = [1e-300, 1e-20, 1e-6, 0.01, 0.5, 1.0, 2.0, 1e6, 1e300]
    rhos += _RNG.uniform(1e-4, 10.0, 60).tolist()
    rhos += [SubsampledGaussianCost.from_sigma(s, 0.5).of.rho for s in SIGMAS]
    return rhos


def test_the_cost_sigma_is_the_largest_float_within_rho() -> None:
    """Catches: `SubsampledGaussianCost.sigma` rounded to nearest (for some rho that σ is above
    the truth, 1/(2σ²) < rho: a filter pricing the step by σ, the PLD, would assume more noise
    than the step had). Also checks the docstring's "largest": one ulp more is too much."""
    for rho in _rhos():
        s = SubsampledGaussianCost(rho, sampling_prob=0.5).of.noise_multiplier
        assert 1 / (2 * Fraction(s) ** 2) >= Fraction(rho), rho  # σ not above the truth
        bigger = math.nextafter(s, math.inf)
        assert 1 / (2 * Fraction(bigger) ** 2) < Fraction(rho), rho  # the largest such float


def test_from_sigma_rounds_rho_up() -> None:
    """rho = 1/(2σ²) rounded up, exactly the smallest float above (rationals)."""
    for sigma in SIGMAS:
        cost = SubsampledGaussianCost.from_sigma(sigma, 0.25)
        assert cost.of.rho == _up(1 / (2 * Fraction(sigma) ** 2)), sigma


@pytest.mark.parametrize("delta", [1.0, 0.3, 1e-3, 1e6])
def test_clipped_rows_are_within_delta_exactly(delta: float) -> None:
    """Every clipped row's squared norm, summed in rationals, is at most Δ² (the clip's
    1 − 2⁻³⁰ margin covers the float norm's error), for rows from tiny to huge."""
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(200, 7)) * np.exp(rng.uniform(-30, 30, size=(200, 1)))
    rows[0] = delta / math.sqrt(7)  # on the boundary
    clipped = SubsampledGaussianMechanism(delta, 1.0, 0.5).clipped(rows)
    bound = Fraction(delta) ** 2
    for row in clipped:
        assert sum(Fraction(x) ** 2 for x in row.tolist()) <= bound


# ----------------------------------------------------------------------------- PLD tails


def _gaussian_delta(mu: float, eps: float) -> mp.mpf:
    """δ(ε) of the μ-GDP Gaussian pair (Dong, Roth & Su 2022, Cor 2.13), in 30 digits."""
    with mp.workdps(30):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)


@pytest.mark.parametrize("tail_mass", [1e-2, 1e-3, 1e-6])
@pytest.mark.parametrize(("sigma", "k"), [(1.0, 16), (2.0, 64), (0.5, 4)])
def test_composed_gaussian_delta_is_above_the_exact_one(
    tail_mass: float, sigma: float, k: int
) -> None:
    """The Gaussian at non-default tail_mass is above the exact δ. A Gaussian composes in
    closed form (μ·sqrt(k), no convolution, no cut), so the bottom tail dropped when cut is
    caught by `test_cut_tails_keep_the_total_mass` and tests/pld/test_pld_tail_mass.py."""
    pld = PrivacyLossDistribution.gaussian(
        sigma, value_discretization=1e-3, tail_mass=tail_mass
    ).self_compose(k)
    mu = math.sqrt(k) / sigma
    for eps in np.linspace(0.0, 1.5 * mu * mu + 3.0, 25).tolist():
        assert pld.delta(eps) >= _gaussian_delta(mu, eps), eps


@pytest.mark.parametrize("tail_mass", [1e-3, 1e-6])
def test_cut_tails_keep_the_total_mass(tail_mass: float) -> None:
    """Catches the same bug independently: cutting moves mass up, never away, so a composed
    law's finite masses, mass at +∞ and ℓ1 error add up to at least 1 (in rationals)."""
    plds = [
        PrivacyLossDistribution.gaussian(2.0, 1.0, 0.1, value_discretization=1e-2, tail_mass=t)
        for t in (tail_mass,)
    ] + [PrivacyLossDistribution.laplace(1.0, 0.5, value_discretization=1e-2, tail_mass=tail_mass)]
    for pld in plds:
        composed = pld.self_compose(20)
        for d in (composed.remove, composed.add):
            total = sum(map(Fraction, d.masses.tolist()), Fraction(d.inf_mass) + Fraction(d.error))
            assert total >= 1, (pld, float(total))


# ----------------------------------------------------------------------------- PLD filter


@pytest.mark.parametrize(
    ("fixed", "other"),
    [  # a Gaussian pair's level is σ/Δ (smaller: less private), the others' eps0
        (ClosedPair("gaussian", 7.0, 0.1), ClosedPair("gaussian", math.nextafter(7.0, 0.0), 0.1)),
        (ClosedPair("gaussian", 7.0, 0.1), ClosedPair("gaussian", 7.0, math.nextafter(0.1, 1.0))),
        (ClosedPair("gaussian", 0.5), ClosedPair("gaussian", 0.5 * (1 - 1e-12))),
        (ClosedPair("laplace", 0.3), ClosedPair("laplace", math.nextafter(0.3, 1.0))),
        (ClosedPair("rr", 0.3), ClosedPair("rr", math.nextafter(0.3, 1.0))),
    ],
)
def test_domination_is_exact(fixed: ClosedPair, other: ClosedPair) -> None:
    """Catches: a domination tolerance (1e-9 relative): a round one ulp less private than the
    fixed mechanism is not dominated by it; the fixed one itself is."""
    assert not dominates(fixed, other)
    assert dominates(fixed, fixed)
    sigma = 7.0
    f = PLDFilter(1.0, 1e-6, mechanism=GaussianCost.from_sigma(sigma))
    hairs = (GaussianCost.from_sigma(math.nextafter(sigma, 0.0)), GaussianCost(1.000000001 / 98))
    for hair in hairs:  # one ulp of σ less; rho 1e-9 (relative) above 1/(2σ²) = 1/98
        with pytest.raises(InvalidParameter, match="dominates"):
            f.admits(hair)  # never admitted: refused naming the reason
    assert f.admits(GaussianCost.from_sigma(sigma))


def test_a_session_refuses_a_round_a_hair_less_private_and_spends_nothing() -> None:
    s = PrivateSession(PLDFilter(1.0, 1e-6), np.random.default_rng(0))
    s.gaussian(1.0, 1.0, 0.01)  # fixes the mechanism: GaussianCost(0.01)
    spent = s.spent
    with pytest.raises(InvalidParameter, match="dominates"):
        s.gaussian(1.0, 1.0, 0.01 * (1 + 1e-9))
    assert s.spent == spent


@pytest.mark.parametrize("rounds", [(0.002, 0.0005), (0.002, 0.0005, 0.001), (0.001, 0.001)])
def test_a_filter_rebuilt_from_its_rounds_is_fixed_by_the_first(rounds: tuple[float, ...]) -> None:
    """Catches: a filter rebuilt from its rounds (``realised=``, as a replay may) fixed by the
    last round. The rebuilt filter equals the one the rounds were spent on, one by one."""
    costs = [GaussianCost(rho) for rho in rounds]
    rebuilt = PLDFilter(1.0, 1e-6, realised=tuple(costs))
    spent = PLDFilter(1.0, 1e-6)
    for cost in costs:
        spent = spent.spend(cost)
    assert rebuilt.mechanism == spent.mechanism == costs[0]
    assert rebuilt.remaining == spent.remaining
    assert rebuilt.admits(costs[0])  # the first round's kind: dominated by itself


def test_a_filter_rebuilt_from_its_ledger_is_fixed_by_its_first_round(tmp_path: Path) -> None:
    """Catches: a filter rebuilt from its rounds fixed by the last round. A noisier second round
    is admitted (dominated); reopened, the filter is still fixed by the first round, so a
    third round like the first is admitted (fixed by the last, it would be refused)."""
    ledger = tmp_path / "pld.db"
    first, second = 0.002, 0.0005
    s = PrivateSession(PLDFilter(1.0, 1e-6), np.random.default_rng(0), ledger, create=True)
    s.gaussian(1.0, 1.0, first)
    s.gaussian(1.0, 1.0, second)
    live = s.filter
    s.close()
    again = PrivateSession(PLDFilter(1.0, 1e-6), np.random.default_rng(1), ledger)
    try:
        rebuilt = again.filter
        assert isinstance(rebuilt, PLDFilter)
        assert isinstance(live, PLDFilter)
        assert rebuilt.mechanism == live.mechanism == GaussianCost(first)
        again.gaussian(1.0, 1.0, first)
        assert len(again.history) == 1
    finally:
        again.close()


# ----------------------------------------------------------------------------- constants


def _subsampled_ctd_masses(sigma: float, q: float, h: float, cells: range) -> dict[int, mp.mpf]:
    """Exact connect-the-dots masses of the remove direction of the subsampled Gaussian pair
    (P = (1 − q)N(0, σ²) + qN(1, σ²) against N(0, σ²), in units of σ), by mpmath quadrature
    over the noise variable x of the density times the split weights."""
    out: dict[int, mp.mpf] = {}
    mu, qq, step = mp.mpf(1) / mp.mpf(sigma), mp.mpf(q), mp.mpf(h)
    scale = mp.expm1(step)

    def loss(x: mp.mpf) -> mp.mpf:
        return mp.log((1 - qq) + qq * mp.exp(mu * x - mu * mu / 2))

    def x_at(level: mp.mpf) -> mp.mpf:
        return (mp.log((mp.exp(level) - (1 - qq)) / qq) + mu * mu / 2) / mu

    def density(x: mp.mpf) -> mp.mpf:
        return (1 - qq) * mp.npdf(x) + qq * mp.npdf(x, mu)

    for j in cells:
        lo = j * step
        a, b = x_at(lo), x_at(lo + step)
        left = mp.quad(
            lambda x, lo=lo: density(x) * mp.expm1(step - (loss(x) - lo)) / scale, [a, b]
        )
        right = mp.quad(
            lambda x, lo=lo: (
                density(x) * mp.exp(step - (loss(x) - lo)) * mp.expm1(loss(x) - lo) / scale
            ),
            [a, b],
        )
        out[j] = out.get(j, mp.mpf(0)) + left
        out[j + 1] = out.get(j + 1, mp.mpf(0)) + right
    return out


@pytest.mark.parametrize(("sigma", "q", "h"), [(1.0, 0.3, 1e-3), (2.0, 0.5, 5e-4)])
def test_subsampled_masses_are_raised_by_the_documented_margin(
    sigma: float, q: float, h: float
) -> None:
    """Second guard of the 2⁻³⁰ mass raise (the first: tests/pld/test_pld_convolution.py on the
    Gaussian pair without subsampling): each mass of the mixture pair is at least 1 + 2⁻³⁰ times
    its 40-digit value, less the quadrature's error (far below 2⁻⁴⁰). The literal 2⁻³⁰ is the
    documented margin (docs/pld.md): removing or lowering it fails here."""
    d = PrivacyLossDistribution.gaussian(sigma, 1.0, q, value_discretization=h).remove
    with mp.workdps(40):
        mu, qq = 1 / mp.mpf(sigma), mp.mpf(q)
        centre = int(float(mp.log((1 - qq) + qq * mp.exp(mu * qq * mu - mu * mu / 2))) / h)
        exact = _subsampled_ctd_masses(sigma, q, h, range(centre - 4, centre + 5))
        for j in range(centre - 3, centre + 5):
            got = mp.mpf(d.masses[j - d.offset])
            assert got >= exact[j] * (1 + mp.mpf(2) ** -30 - mp.mpf(2) ** -40), j


def test_a_self_convolution_is_within_the_fft_error_bound() -> None:
    """Second guard of the FFT error term (the first: tests/pld/test_pld_convolution.py on two
    different laws): a law convolved with itself — one transform, squared — is below the exact
    rational convolution by at most the stated ℓ1 bound; entries spanning 40 orders of
    magnitude make the transform's rounding show (without the term the bound is 0 and fails)."""
    rng = np.random.default_rng(41)
    for n in (80, 200):
        a = rng.exponential(size=n) * np.exp(-rng.uniform(0, 90, n))
        a /= a.sum()
        c, err = convolve(a, a)
        exact = [Fraction(0)] * (2 * n - 1)
        fa = [Fraction(x) for x in a.tolist()]
        for i, x in enumerate(fa):
            for j, y in enumerate(fa):
                exact[i + j] += x * y
        below = sum(
            (max(e - Fraction(x), Fraction(0)) for x, e in zip(c.tolist(), exact, strict=True)),
            Fraction(0),
        )
        assert below > 0  # the transform's rounding shows: the bound has work to do
        assert below <= Fraction(err)
