"""Ex-post RDP (THEORY §11): the guarantee, its rounding, the transcripts that carry it, immunity
to post-processing (exact), and the failure of probabilistic ex-post bounds under coarsening."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product
from typing import Any

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, special, stats

from expost import (
    BrownianNoiseReduction,
    DoublingMethod,
    ExPostRDP,
    LaplaceNoiseReduction,
    SkellamNoiseReduction,
)
from expost.audit.paper.ex_post_rdp import bucket_rdp_samples, gaussian_bucket
from expost.errors import InvalidParameter
from expost.ex_post_rdp import DEFAULT_ORDERS, markov_bound
from expost.filters.costs import (
    BoundedRangeCost,
    BrownianCost,
    DPCost,
    ExPostCost,
    GaussianCost,
    ZCDPCost,
)
from expost.filters.rdp import ex_post_rdp_of
from expost.grids import TimeGrid
from expost.guarantees import ExPost
from expost.rounding import down_exact
from expost.stopping import AtIndex, RelativeError
from expost.studies.post_processing import bucket_factor, fixed_time_factor
from tests.safe_side import rounded_up

ALPHAS = (1.5, 2.0, 4.0, 8.0)


# --- transcripts (the done-when) -------------------------------------------------------


@pytest.mark.parametrize("sensitivity", [1.0, 0.3, 7.0])
def test_brownian_transcript_eps_is_alpha_rho_rounded_up(sensitivity: float) -> None:
    times = [4.0, 1.7, 0.9, 0.31]
    bm = BrownianNoiseReduction(TimeGrid(times), sensitivity, RelativeError(0.2))
    for seed in range(5):
        run = bm.run(np.array([2.5]), np.random.default_rng(seed))
        assert run.ex_post_rdp is not None
        t = run.time
        rho = Fraction(sensitivity) ** 2 / (2 * Fraction(t))
        assert rounded_up(run.ex_post_rdp.rho or 0.0, rho)
        for a in ALPHAS:
            got = run.ex_post_rdp.eps(a)
            assert rounded_up(got, Fraction(a) * Fraction(run.ex_post_rdp.rho or 0.0))
            assert Fraction(got) >= Fraction(a) * rho
            assert got <= math.nextafter(math.nextafter(a * sensitivity**2 / (2 * t), 9e9), 9e9)


def test_laplace_noise_reduction_transcript_is_pure_at_every_order() -> None:
    lnr = LaplaceNoiseReduction((3.0, 1.1, 0.7, 0.3), 2.0, AtIndex(2))
    run = lnr.run(np.array([1.0]), np.random.default_rng(1))
    g = run.ex_post_rdp
    assert g is not None
    assert g.pure is not None
    assert Fraction(g.pure) >= Fraction(2.0) / Fraction(0.7)
    assert all(g.eps(a) == g.pure for a in (*ALPHAS, 1000.0))
    assert g.pure_ex_post() == ExPost(g.pure)
    assert run.ex_post is not None
    assert g.pure == run.ex_post.bound


def test_skellam_transcript_has_no_ex_post_rdp() -> None:
    run = SkellamNoiseReduction((50.0, 10.0, 2.0), stop=AtIndex(1)).run(
        np.array([3]), np.random.default_rng(0)
    )
    assert run.ex_post_rdp is None
    assert ex_post_rdp_of(ExPostCost(2.0, 1e-6)) is None  # a boundary with delta > 0: not immune


def test_doubling_transcript_carries_the_sum_of_its_tries() -> None:
    method = DoublingMethod(start_eps2=0.01, max_tries=6, stop=RelativeError(0.2))
    run = method.run(np.array([1.0]), np.random.default_rng(3))
    assert run.ex_post_rdp.rho == run.cost.rho
    assert Fraction(run.cost.rho) >= sum(Fraction(float(e)) for e in run.eps2) / 2


def test_ex_post_rdp_of_each_cost() -> None:
    assert ex_post_rdp_of(BrownianCost(2.0, 3.0)) == ExPostRDP.of_rho(2.25)
    assert ex_post_rdp_of(GaussianCost(0.4)) == ExPostRDP.of_rho(0.4)
    assert ex_post_rdp_of(ZCDPCost(0.4, 1e-6)) is None
    assert ex_post_rdp_of(DPCost(1.5)) == ExPostRDP.of_pure(1.5)
    assert ex_post_rdp_of(DPCost(1.5, 1e-6)) is None
    assert ex_post_rdp_of(BoundedRangeCost(0.8)) == ExPostRDP.of_pure(0.8)
    assert ex_post_rdp_of(ExPostCost(1.2, 0.0, eps_max=3.0)) == ExPostRDP.of_pure(1.2)
    assert ex_post_rdp_of(None) is None


# --- the value and its conversions ----------------------------------------------------------


def test_one_shape_only_and_validation() -> None:
    with pytest.raises(InvalidParameter):
        ExPostRDP()
    with pytest.raises(InvalidParameter):
        ExPostRDP(rho=1.0, pure=1.0)
    with pytest.raises(InvalidParameter):
        ExPostRDP.of_rho(-1.0)
    with pytest.raises(InvalidParameter):
        ExPostRDP.of_orders({1.0: 2.0})
    with pytest.raises(InvalidParameter):
        ExPostRDP.of_rho(1.0).eps(1.0)
    with pytest.raises(InvalidParameter):
        ExPostRDP.of_orders({2.0: 1.0}).eps(3.0)


def test_a_table_answers_with_the_next_order_up() -> None:
    g = ExPostRDP.of_orders({4.0: 3.0, 2.0: 1.0})
    assert g.orders == ((2.0, 1.0), (4.0, 3.0))
    assert (g.eps(1.5), g.eps(2.0), g.eps(3.0), g.eps(4.0)) == (1.0, 1.0, 3.0, 3.0)


def test_probabilistic_splits_delta_and_takes_the_best_order() -> None:
    g = ExPostRDP.of_rho(0.5)
    delta = 1e-6
    out = g.probabilistic(delta)
    share = down_exact(Fraction(delta) / len(DEFAULT_ORDERS))
    assert out.delta == delta
    assert out.bound == min(markov_bound(g.eps(a), a, share) for a in DEFAULT_ORDERS)
    # a Gaussian release with rho = 1/2 (Δ = σ): L ~ N(1/2, 1); the bound's exact tail is <= delta
    assert stats.norm.sf(out.bound - 0.5) <= delta
    # planted twin: rho halved claims a bound the loss exceeds far more often than delta
    half = ExPostRDP.of_rho(0.25).probabilistic(delta)
    assert stats.norm.sf(half.bound - 0.5) > 10 * delta
    # one fixed order: no split, log(1/delta) alone
    one = g.probabilistic(delta, orders=[4.0])
    assert one.bound == markov_bound(2.0, 4.0, delta)
    assert ExPostRDP.of_pure(2.0).probabilistic(delta) == ExPost(2.0)


def test_sup_over_a_preimage() -> None:
    a, b = ExPostRDP.of_rho(0.2), ExPostRDP.of_rho(0.7)
    assert ExPostRDP.sup([a, b]) == b
    assert ExPostRDP.sup([ExPostRDP.of_pure(1.0), ExPostRDP.of_pure(0.5)]).pure == 1.0
    mixed = ExPostRDP.sup([a, ExPostRDP.of_pure(1.0)], orders=[2.0, 8.0])
    assert mixed.orders == ((2.0, 1.0), (8.0, a.eps(8.0)))
    assert ExPostRDP.of_pure(1.0).pure_ex_post() == ExPost(1.0)
    assert a.pure_ex_post() is None
    with pytest.raises(InvalidParameter):
        ExPostRDP.sup([])


# --- immunity, exactly (THEORY §11) ---------------------------------------------------------


def _renyi_mean(
    p: list[Fraction], q: list[Fraction], ratio_bound: list[Fraction], k: int
) -> Fraction:
    """Σ p·(p/q)^k / R^k = E_x[exp(k(L − ε))] with e^ε = R (order α = k + 1), exactly."""
    return sum(
        (pi * (pi / qi) ** k / r**k for pi, qi, r in zip(p, q, ratio_bound, strict=True)),
        Fraction(0),
    )


@pytest.mark.parametrize("k", [1, 2, 3])
def test_post_processing_carries_the_sup_and_not_less(k: int) -> None:
    """ε(y) = L(y) is a tight ex-post RDP bound (mean exactly 1). Merging outputs and carrying
    the sup keeps the mean <= 1 (joint convexity); carrying the min (planted twin) breaks it."""
    rng = np.random.default_rng(k)
    broken = 0
    for _ in range(200):
        m = int(rng.integers(3, 8))
        p = [Fraction(int(v)) for v in rng.integers(1, 50, m)]
        q = [Fraction(int(v)) for v in rng.integers(1, 50, m)]
        p = [x / sum(p) for x in p]
        q = [x / sum(q) for x in q]
        ratio = [pi / qi for pi, qi in zip(p, q, strict=True)]
        assert _renyi_mean(p, q, ratio, k) == 1
        g = rng.integers(0, 3, m)  # a random coarsening y -> g(y)
        zs = [z for z in range(3) if np.any(g == z)]
        pz = [sum((p[i] for i in range(m) if g[i] == z), Fraction(0)) for z in zs]
        qz = [sum((q[i] for i in range(m) if g[i] == z), Fraction(0)) for z in zs]
        sup = [max(ratio[i] for i in range(m) if g[i] == z) for z in zs]
        low = [min(ratio[i] for i in range(m) if g[i] == z) for z in zs]
        assert _renyi_mean(pz, qz, sup, k) <= 1
        broken += _renyi_mean(pz, qz, low, k) > 1
    assert broken > 0


def test_three_point_example_of_theory_11() -> None:
    """p_x = (1/2, δ, 1/2 − δ), p_x' = (e^(−ε0)/2, 0, 1 − e^(−ε0)/2) with e^(−ε0) = 1/2: only b
    exceeds ε0 (probability δ); merging a and b gives loss ε0 + log(1 + 2δ) with probability
    1/2 + δ. No finite ex-post RDP bound exists at b (p_x'(b) = 0), so the merged output carries
    sup = ∞ and stays honest."""
    delta = Fraction(1, 1000)
    e_minus = Fraction(1, 2)  # e^(−ε0), ε0 = log 2
    px = [Fraction(1, 2), delta, Fraction(1, 2) - delta]
    pxp = [e_minus / 2, Fraction(0), 1 - e_minus / 2]
    assert sum(px) == 1
    assert sum(pxp) == 1
    e_eps0 = 1 / e_minus
    exceeds = [qq == 0 or pp / qq > e_eps0 for pp, qq in zip(px, pxp, strict=True)]
    assert exceeds == [False, True, False]
    assert sum(pp for pp, hit in zip(px, exceeds, strict=True) if hit) == delta
    merged_ratio = (px[0] + px[1]) / pxp[0]
    assert merged_ratio == e_eps0 * (1 + 2 * delta)  # loss ε0 + log(1 + 2δ) > ε0
    assert px[0] + px[1] == Fraction(1, 2) + delta  # ... with probability 1/2 + δ
    assert px[1] > 0
    assert pxp[1] == 0  # E[exp((α−1)(L − ε_α))] = ∞ for any finite ε_α(b)


# --- the failure, shown (issue 29 item 3) ----------------------------------------------------


def test_gaussian_bucket_numbers() -> None:
    eps, cut, prob = gaussian_bucket(1e-3, 1.0)
    assert eps == pytest.approx(0.5 + stats.norm.isf(1e-3), rel=1e-12)
    bucket = special.log_ndtr(-cut) - special.log_ndtr(-cut - 1.0)
    assert bucket == pytest.approx(eps, abs=1e-9)
    assert special.log_ndtr(-cut - 1e-6) - special.log_ndtr(-cut - 1e-6 - 1.0) > eps
    assert cut == pytest.approx(2.8276, abs=1e-4)  # the issue's 3.83σ is measured from f(x')
    assert cut + 1.0 == pytest.approx(3.8276, abs=1e-4)
    assert prob / 1e-3 == pytest.approx(2.345, abs=1e-3)


def _bucket_rdp_mean(alpha: float, rho_factor: float) -> float:
    """E_x[exp((α−1)(L_g − α·rho))] on the coarsened outputs, by quadrature (rho = 1/2)."""
    _, cut, _ = gaussian_bucket()
    rho = 0.5 * rho_factor
    below, _ = integrate.quad(
        lambda z: stats.norm.pdf(z) * math.exp((alpha - 1) * (z + 0.5 - alpha * rho)), -40, cut
    )
    bucket_loss = special.log_ndtr(-cut) - special.log_ndtr(-cut - 1.0)
    above = stats.norm.sf(cut) * math.exp((alpha - 1) * (bucket_loss - alpha * rho))
    return float(below + above)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_ex_post_rdp_holds_on_the_bucket_exactly(alpha: float) -> None:
    assert _bucket_rdp_mean(alpha, 1.0) <= 1.0
    assert _bucket_rdp_mean(alpha, 0.5) > 1.0  # planted twin: rho halved


def test_bucket_rdp_sampler_mean_matches_quadrature() -> None:
    x = bucket_rdp_samples(2.0, False, 200_000, np.random.default_rng(5))
    want = _bucket_rdp_mean(2.0, 1.0)
    # sd of exp(L_g − 2·rho) is below e^(1/2)·... : 6 standard errors at n = 200k, false alarm < 1e-8
    assert abs(x.mean() - want) <= 6 * x.std() / math.sqrt(x.size)


def test_brownian_boundary_absorbs_the_coarsening() -> None:
    """(b): at delta = 1e-3 the lattice (no sampling) finds no adversary above delta; at the
    first grid time it agrees with the exact Gaussian bucket."""
    for kind, crossing in (("mixture", 0.2355), ("linear", 0.5524)):
        assert bucket_factor(kind, 1e-3, 0.0) == pytest.approx(crossing, abs=2e-3)
        assert bucket_factor(kind, 1e-3, 0.25) < crossing
        fixed, _ = fixed_time_factor(kind, 1e-3)
        assert fixed < crossing


def test_lattice_matches_the_exact_bucket_at_a_fixed_time() -> None:
    """margin = ∞ stops every run at the first grid time: a single Gaussian release there."""
    from expost.audit._shared import grid_times, tuned_boundary

    psi = tuned_boundary("linear", 1.0, 0.05)
    t = float(grid_times(psi)[0])
    r, level = 1.0 / math.sqrt(t), float(psi(t))

    def q(c: Any) -> Any:
        return mp.erfc(c / mp.sqrt(2)) / 2

    with mp.workdps(30):
        cut = mp.findroot(lambda c: mp.log(q(c) / q(c + r)) - level, (level - r * r / 2) / r)
        exact = float(q(cut)) / 0.05
    assert bucket_factor("linear", 0.05, math.inf) == pytest.approx(exact, rel=0.02)


def test_product_of_orders_is_fixed_in_advance() -> None:
    """The Markov split is over orders fixed before the release: the bound depends on the order
    set, not on y (a reproducibility check of `probabilistic` over shapes)."""
    for rho, d in product((0.01, 0.5, 3.0), (1e-3, 1e-9)):
        a = ExPostRDP.of_rho(rho).probabilistic(d)
        b = ExPostRDP.of_rho(rho).probabilistic(d, orders=DEFAULT_ORDERS)
        assert a == b
