"""Audits of `expost.pld` against exact profiles in 50-digit arithmetic (THEORY §12; issue 35).

Each check says: the reported δ is never below the exact profile, and within a stated tolerance
of it; each has a planted-bug twin (a grid rounded down or to nearest, a dropped tail, one
direction composed for both) that the same check must reject.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from expost.errors import InvalidParameter
from expost.pld import PrivacyLossDistribution, max_rounds
from expost.pld.discrete import DiscreteLoss
from expost.testing.pld_reference import (
    Mp,
    gaussian_delta,
    laplace_delta,
    randomised_response_delta,
    ratio,
    subsampled_gaussian_delta,
    subsampled_laplace_delta,
)

PLD = PrivacyLossDistribution


def _check(got: list[float], want: list[Mp], tolerance: float) -> None:
    """Never below the exact value; at most ``tolerance`` relatively above it."""
    for g, w in zip(got, want, strict=True):
        assert g >= w, f"unsafe: {g} < exact {w}"
        assert g <= w * (1 + tolerance), f"loose: {g} > exact {w} by more than {tolerance}"


def _rejects(got: list[float], want: list[Mp], tolerance: float) -> bool:
    try:
        _check(got, want, tolerance)
    except AssertionError:
        return True
    return False


def _shifted(d: DiscreteLoss, by: int) -> DiscreteLoss:
    """Planted twin: the grid moved by ``by`` steps (−1: every loss rounded down a step)."""
    return DiscreteLoss(d.h, d.offset + by, d.masses, d.inf_mass, d.error, d.tail_mass)


@pytest.mark.parametrize("mu", [1.0, 2.0])
def test_gaussian_1000_rounds_within_one_percent(mu: float) -> None:
    """k Gaussian rounds = one with μ√k (closed form): 1,000 rounds, δ from 0.3 to 1e-10."""
    sigma = math.sqrt(1000) / mu
    pld = PLD.gaussian(sigma).self_compose(1000)
    eps = [1.0, 2.0, 4.0, 6.0, 6.5] if mu == 1.0 else [2.0, 6.0, 10.0, 13.0, 14.0]
    want = [gaussian_delta(ratio(1.0, sigma), e, 1000) for e in eps]
    assert float(min(want)) >= 1e-10
    _check([pld.delta(e) for e in eps], want, 0.01)
    # planted twin: the same composition with the losses one grid step lower
    twin = _shifted(pld.remove, -1)
    assert _rejects([twin.delta(e) for e in eps], want, 0.01)


def test_gaussian_eps_is_above_the_exact_eps() -> None:
    """ε(δ) rounded up: the exact profile at the reported ε is within δ, and not far above."""
    sigma = math.sqrt(1000) / 1.5
    pld = PLD.gaussian(sigma).self_compose(1000)
    for delta in (1e-3, 1e-6, 1e-9):
        e = pld.eps(delta)
        assert gaussian_delta(ratio(1.0, sigma), e, 1000) <= delta
        assert gaussian_delta(ratio(1.0, sigma), e * 0.99, 1000) > delta  # within 1% in eps


def _nearest_twin(eps0: float, h: float) -> PrivacyLossDistribution:
    """Planted twin: randomised response with its two losses rounded to the nearest grid point."""
    top = round(eps0 / h)
    lower = 1.0 / (1.0 + math.exp(eps0))
    masses = np.zeros(2 * top + 1)
    masses[0], masses[-1] = lower, 1.0 - lower
    d = DiscreteLoss(h, -top, masses, 0.0, 0.0, 1e-16)
    return PrivacyLossDistribution(d, d)


def test_nearest_rounding_twin_is_rejected() -> None:
    """On a coarse grid (h = 0.03, ε0 = 0.1 between 0.09 and 0.12) connect-the-dots stays above
    the exact 30-fold profile; rounding to the nearest point (0.09) falls below it."""
    eps0, k, h = 0.1, 30, 0.03
    eps = [0.2, 0.5, 1.0, 1.5]
    want = [randomised_response_delta(eps0, e, k) for e in eps]
    ours = PLD.pure_dp(eps0, value_discretization=h).self_compose(k)
    _check([ours.delta(e) for e in eps], want, 0.2)
    twin = _nearest_twin(eps0, h).self_compose(k)
    assert _rejects([twin.delta(e) for e in eps], want, 0.2)


@pytest.mark.parametrize(("eps0", "k"), [(0.5, 1), (0.5, 7), (1.0, 20), (0.1, 50)])
def test_randomised_response_k_fold_is_exact_up_to_margins(eps0: float, k: int) -> None:
    """RR's losses are atoms; k-fold is a binomial sum (50 digits)."""
    pld = PLD.pure_dp(eps0).self_compose(k)
    eps = [0.0, eps0 / 2, eps0, 2.5 * eps0]
    want = [randomised_response_delta(eps0, e, k) for e in eps]
    got = [pld.delta(e) for e in eps]
    _check([g for g, w in zip(got, want, strict=True) if w > 0], [w for w in want if w > 0], 2e-3)
    twin = _shifted(pld.remove, -1)
    assert _rejects([twin.delta(e) for e in eps if e > 0], [w for w in want[1:]], 2e-3)


@pytest.mark.parametrize("k", [1, 2])
def test_laplace_small_k_against_50_digits(k: int) -> None:
    eps0 = 1.0
    pld = PLD.laplace(1.0 / eps0).self_compose(k)
    eps = [0.0, 0.3, 0.7, 1.2] if k == 2 else [0.0, 0.3, 0.7, 0.95]
    want = [laplace_delta(ratio(1.0, 1.0 / eps0), e, k) for e in eps]
    _check([pld.delta(e) for e in eps], want, 1e-3)
    twin = _shifted(pld.remove, -1)
    assert _rejects([twin.delta(e) for e in eps], want, 1e-3)


@pytest.mark.parametrize(("mu", "q"), [(1.0, 0.01), (2.0, 0.1), (0.5, 0.5)])
def test_subsampled_gaussian_one_round_both_directions(mu: float, q: float) -> None:
    """One Poisson-subsampled Gaussian round against its closed form, in each direction."""
    pld = PLD.gaussian(1.0 / mu, sampling_prob=q)
    for direction, d in (("remove", pld.remove), ("add", pld.add)):
        eps = [0.0, 0.01, 0.05, 0.2] if q < 0.1 else [0.0, 0.1, 0.5, 1.0]
        want = [subsampled_gaussian_delta(ratio(1.0, 1 / mu), q, e, direction) for e in eps]
        keep = [i for i, w in enumerate(want) if w > 1e-12]
        _check([d.delta(eps[i]) for i in keep], [want[i] for i in keep], 1e-3)
        assert _rejects(
            [_shifted(d, -1).delta(eps[i]) for i in keep], [want[i] for i in keep], 1e-3
        )


@pytest.mark.parametrize(("eps0", "q"), [(1.0, 0.01), (0.5, 0.3), (2.0, 0.5)])
def test_subsampled_laplace_one_round_both_directions(eps0: float, q: float) -> None:
    """One Poisson-subsampled Laplace round against its closed form, in each direction."""
    pld = PLD.laplace(1.0 / eps0, sampling_prob=q)
    exact_eps0 = ratio(1.0, 1.0 / eps0)
    for direction, d in (("remove", pld.remove), ("add", pld.add)):
        eps = [0.0, 0.2 * q * eps0, 0.5 * q * eps0, q * eps0]
        want = [subsampled_laplace_delta(exact_eps0, q, e, direction) for e in eps]
        keep = [i for i, w in enumerate(want) if w > 1e-12]
        assert len(keep) >= 2
        _check([d.delta(eps[i]) for i in keep], [want[i] for i in keep], 1e-3)
        twin = [_shifted(d, -1).delta(eps[i]) for i in keep]
        assert _rejects(twin, [want[i] for i in keep], 1e-3)


def test_dropped_tail_twin_is_rejected() -> None:
    """A cut upper tail must go to +∞: dropping it (here a coarse cut) falls below exact."""
    sigma = 2.0
    pld = PLD.gaussian(sigma)
    eps = [1.5, 2.0]
    want = [gaussian_delta(ratio(1.0, sigma), e) for e in eps]
    d = pld.remove
    cut = d.losses < 1.0  # drop every loss above 1
    twin = DiscreteLoss(d.h, d.offset, d.masses[cut], 0.0, 0.0, d.tail_mass)
    _check([pld.delta(e) for e in eps], want, 1e-3)
    assert _rejects([twin.delta(e) for e in eps], want, 1e-3)


def test_each_direction_is_composed_on_its_own() -> None:
    """Lebeda et al.: subsampled Laplace, b = 1, q = 0.5. Composing only the direction with the
    larger δ after one round (a per-round maximum) is the twin: after two rounds the other
    direction is larger, and the reported δ covers it."""
    pld = PLD.laplace(1.0, sampling_prob=0.5)
    two = pld.self_compose(2)
    eps = [0.1, 0.3, 0.5]
    first = [pld.remove.delta(e) >= pld.add.delta(e) for e in eps]
    larger = pld.remove if all(first) else pld.add
    twin = larger.compose(larger)
    other = two.add if larger is pld.remove else two.remove
    assert any(twin.delta(e) < other.delta(e) for e in eps)  # the twin misses the other side
    assert all(two.delta(e) >= other.delta(e) for e in eps)


@pytest.mark.parametrize(
    ("pld", "eps", "delta", "low", "exact"),
    [
        (PLD.laplace(10.0), 10.0, 1e-6, 350, 357),
        (PLD.laplace(10.0), 1.0, 1e-6, 9, 10),
        (PLD.gaussian(1.0, sampling_prob=0.01), 2.0, 1e-5, 1150, 1202),
    ],
    ids=["laplace-10", "laplace-1", "dp-sgd"],
)
def test_max_rounds_targets(
    pld: PrivacyLossDistribution, eps: float, delta: float, low: int, exact: int
) -> None:
    """The counts of issue 35 (exact counts certified by dp-accounting and prv-accountant)."""
    k = max_rounds(pld, eps, delta)
    assert low <= k <= exact
    assert pld.self_compose(k).delta(eps) <= delta
    assert pld.self_compose(k + 1).delta(eps) > delta


def test_max_rounds_zero_and_limit() -> None:
    assert max_rounds(PLD.pure_dp(3.0), 1.0, 1e-6) == 0
    assert max_rounds(PLD.pure_dp(0.01), 10.0, 1e-6, limit=5) == 5


def test_constructors_are_cached_and_immutable() -> None:
    a, b = PLD.gaussian(3.0), PLD.gaussian(3.0)
    assert a is b
    assert a.symmetric
    assert a.self_compose(4) is a.self_compose(4)
    with pytest.raises(ValueError, match="read-only"):
        a.remove.masses[0] = 1.0
    sub = PLD.gaussian(3.0, sampling_prob=0.1)
    assert not sub.symmetric


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: PLD.gaussian(0.0), "sigma"),
        (lambda: PLD.gaussian(1.0, sampling_prob=0.0), "sampling_prob"),
        (lambda: PLD.gaussian(1.0, sampling_prob=True), "sampling_prob"),
        (lambda: PLD.laplace(1.0, sampling_prob=1.5), "sampling_prob"),
        (lambda: PLD.laplace(1.0, sensitivity=-1.0), "sensitivity"),
        (lambda: PLD.pure_dp(math.nan), "eps"),
        (lambda: PLD.gaussian(1.0, value_discretization=0.5), "value_discretization"),
        (lambda: PLD.gaussian(1.0).delta(-1.0), "eps"),
        (lambda: PLD.gaussian(1.0).eps(1.0), "delta"),
        (lambda: PLD.gaussian(1.0).self_compose(0), "k"),
        (lambda: PLD.gaussian(1.0).compose(PLD.gaussian(1.0, value_discretization=1e-3)), "other"),
    ],
)
def test_bad_input_names_the_argument(call: object, name: str) -> None:
    with pytest.raises(InvalidParameter, match=name):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(
    "make",
    [
        lambda: PLD.gaussian(4.0).self_compose(20),
        lambda: PLD.laplace(2.0, sampling_prob=0.2).self_compose(30),
        lambda: PLD.pure_dp(0.3).compose(PLD.gaussian(2.0)),
    ],
    ids=["gaussian", "subsampled-laplace", "mixed"],
)
def test_profile_shape_and_inverse(make: Callable[[], PrivacyLossDistribution]) -> None:
    """δ(ε) nonincreasing, ε(δ) nonincreasing, and δ(ε(δ)) <= δ (the inverse is confirmed)."""
    pld = make()
    grid = np.linspace(0.0, 4.0, 41)
    deltas = [pld.delta(float(e)) for e in grid]
    assert all(a >= b for a, b in itertools.pairwise(deltas))
    targets = [1e-2, 1e-4, 1e-6, 1e-8]
    eps = [pld.eps(d) for d in targets]
    assert all(a <= b for a, b in itertools.pairwise(eps))
    for e, d in zip(eps, targets, strict=True):
        assert pld.delta(e) <= d
        assert e == 0.0 or pld.delta(e * (1 - 1e-6)) > d  # not far above the crossing
