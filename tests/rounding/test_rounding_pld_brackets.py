"""The rounding audit of the PLD brackets, and every PLD constructor at extreme inputs (issue 40).

- `DiscreteLoss.delta_lower` / `eps_lower` and `PrivacyLossDistribution.delta_bracket` /
  `eps_bracket` against 50-digit profiles (Gaussian rounds, randomised response k-fold,
  Poisson-subsampled Gaussian in each direction, Laplace): the lower end is never above the
  exact value, the upper never below, and the width is within 1% where δ >= 1e-10 (the cases of
  docs/pld.md). Twin: the optimistic law with every loss one grid step *higher* must be caught.
- Every constructor, from subnormal to the largest float in each parameter (`EXTREMES`), returns
  a PLD whose brackets are ordered and in [0, 1], or refuses with `InvalidParameter` — never a
  raw error — after bounded work (the issue's σ = 0.05 composed 1,000 times and b = 1e-3 took
  253 s and 44 s). The work is counted, not timed (a timed assert fails on a loaded machine:
  issue 41, item 7): the cells of every discretisation (at most 2·`LOSS_CAP`/h + 2: the loss
  cap's contract), the quadrature nodes, and the convolutions (at most 2·log2 k + 1 for k
  rounds, each of two grids within the cap).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pytest
from attrs import evolve

import expost.pld.discrete
import expost.pld.discretise
import expost.pld.optimistic
from expost.errors import InvalidParameter
from expost.pld import PrivacyLossDistribution
from expost.pld.discrete import LOSS_CAP, DiscreteLoss
from expost.pld.discretise import NODES, _cells, quadrature
from expost.pld.distribution import _lower, clear_caches
from expost.pld.splitting import convolve_within
from expost.rounding_registry import Rounded
from expost.testing.pld_reference import (
    Mp,
    gaussian_delta,
    laplace_delta,
    randomised_response_delta,
    ratio,
    subsampled_gaussian_delta,
)
from tests.rounding_audit import EXTREMES, audits

PLD = PrivacyLossDistribution
Case = tuple[PLD, Callable[[float], Mp]]


def _cases(rng: np.random.Generator) -> list[Case]:
    out: list[Case] = []
    for _ in range(3):
        sigma, k = float(rng.uniform(0.8, 4.0)), int(rng.integers(1, 40))
        out.append((PLD.gaussian(sigma).self_compose(k), partial(_gaussian, ratio(1.0, sigma), k)))
    for _ in range(3):
        eps0, k = float(rng.uniform(0.05, 1.5)), int(rng.integers(1, 30))
        out.append(
            (PLD.pure_dp(eps0).self_compose(k), partial(randomised_response_delta, eps0, k=k))
        )
    for _ in range(2):
        mu, q = float(rng.uniform(0.3, 2.0)), float(rng.uniform(0.01, 0.5))
        out.append(
            (PLD.gaussian(1 / mu, sampling_prob=q), partial(_subsampled, ratio(1.0, 1 / mu), q))
        )
    for k in (1, 2):
        eps0 = float(rng.uniform(0.2, 2.0))
        out.append(
            (PLD.laplace(1 / eps0).self_compose(k), partial(_laplace, ratio(1.0, 1 / eps0), k))
        )
    return out


def _gaussian(mu: Mp, k: int, eps: float) -> Mp:
    return gaussian_delta(mu, eps, k)


def _laplace(eps0: Mp, k: int, eps: float) -> Mp:
    return laplace_delta(eps0, eps, k)


def _subsampled(mu: Mp, q: float, eps: float) -> Mp:
    return max(subsampled_gaussian_delta(mu, q, eps, d) for d in ("remove", "add"))


def _raised(d: DiscreteLoss) -> DiscreteLoss:
    """The twin: the optimistic law with every loss one grid step higher."""
    return evolve(d, offset=d.offset + 1)


@audits("pld.discrete.DiscreteLoss.delta_lower", "PrivacyLossDistribution.delta_bracket")
def test_delta_bracket_contains_the_exact_profile(rounded: Rounded) -> None:
    rng = np.random.default_rng(40)
    caught = checked = 0
    for pld, exact in _cases(rng):
        low = _lower(pld)
        assert low is not None
        for e in rng.uniform(0.0, 3.0, 3):
            want = exact(float(e))
            lo, hi = pld.delta_bracket(float(e))
            assert lo <= want <= hi, (lo, float(want), hi)
            if rounded.name.endswith("delta_lower"):
                assert max(d.delta_lower(float(e)) for d in low) <= want
            if want >= 1e-10:
                assert hi <= lo * 1.01 + 1e-13
            caught += max(_raised(d).delta_lower(float(e)) for d in low) > want
            checked += 1
    assert checked >= 25
    assert caught > 0


@audits("pld.discrete.DiscreteLoss.eps_lower", "PrivacyLossDistribution.eps_bracket")
def test_eps_bracket_contains_the_exact_crossing(rounded: Rounded) -> None:
    """lower <= the exact ε(δ) <= upper: exact(lower) >= δ would be needed for a lower ε to be
    certified at the float level, so: δ(upper) <= δ, and δ(lower) >= δ (a crossing below)."""
    rng = np.random.default_rng(41)
    caught = checked = 0
    for pld, exact in _cases(rng):
        low = _lower(pld)
        assert low is not None
        for delta in (1e-3,):
            lo, hi = pld.eps_bracket(delta)
            if math.isinf(hi) or lo == 0.0:
                continue
            assert lo <= hi
            assert exact(hi) <= delta
            assert exact(lo) >= delta, (lo, float(exact(lo)), delta)
            if rounded.name.endswith("eps_lower"):
                assert max(d.eps_lower(delta) for d in low) == lo
            twin = max(_raised(d).eps_lower(delta) for d in low)
            caught += exact(twin) < delta
            checked += 1
    assert checked >= 7
    assert caught > 0


def _widths_of_the_docs() -> list[tuple[float, float, float]]:
    """(σ, ε, exact δ) of docs/pld.md's table: 1,000 Gaussian rounds at μ_total 1 and 2."""
    out = []
    for mu_total, eps_list in ((1.0, (1.0, 4.0, 6.0, 6.5)), (2.0, (2.0, 8.0, 13.0, 14.0))):
        sigma = math.sqrt(1000) / mu_total
        out += [(sigma, e, float(gaussian_delta(ratio(1.0, sigma), e, 1000))) for e in eps_list]
    return out


def test_brackets_of_the_docs_cases_are_within_one_percent() -> None:
    for sigma, e, exact in _widths_of_the_docs():
        lo, hi = PLD.gaussian(sigma).self_compose(1000).delta_bracket(e)
        assert lo <= exact <= hi
        assert hi <= lo * 1.01, (sigma, e, lo, hi)


# every constructor, one parameter at a time swept over EXTREMES (the others ordinary)
_CONSTRUCTORS: dict[str, Callable[[float], PLD]] = {
    "gaussian.sigma": lambda x: PLD.gaussian(x),
    "gaussian.sensitivity": lambda x: PLD.gaussian(1.0, x),
    "gaussian.sampling_prob": lambda x: PLD.gaussian(1.0, 1.0, min(x, 1.0)),
    "laplace.scale": lambda x: PLD.laplace(x),
    "laplace.scale.sampled": lambda x: PLD.laplace(x, 1.0, 0.1),
    "laplace.sensitivity": lambda x: PLD.laplace(1.0, x),
    "vector_laplace.scale": lambda x: PLD.vector_laplace(x),
    "pure_dp.eps": lambda x: PLD.pure_dp(x),
    "from_eps_delta.eps": lambda x: PLD.from_eps_delta(x, 1e-6),
    "from_eps_delta.delta": lambda x: PLD.from_eps_delta(1.0, min(x, 1.0)),
    "bounded_range.eps": lambda x: PLD.bounded_range(x),
    "bounded_range.sampled": lambda x: PLD.bounded_range(1.0, min(x, 1.0)),
    "discrete_gaussian.sigma": lambda x: PLD.discrete_gaussian(x),
    "discrete_laplace.scale": lambda x: PLD.discrete_laplace(x),
    "from_pmfs.p": lambda x: PLD.from_pmfs([x, 1.0 - x], [0.5, 0.5]),
    "without_replacement.eps": lambda x: PLD.sampled_without_replacement(x, 1e-6, 1, 10),
}


def grid_cells(h: float) -> int:
    """Cells of a grid within the loss cap: losses in [−LOSS_CAP, LOSS_CAP] on multiples of h."""
    return math.floor(2 * LOSS_CAP / h) + 2


NODE_BUDGET = 4 * NODES * grid_cells(5e-4)  # the default h: four 10-node pieces a cell
# (the largest measured: 580,356 nodes, σ = 0.05 composed 1,000 times; pieces are at most
# `PIECE` wide in the noise variable, so a part spanning many noise scales takes more a cell)


class Unbounded(Exception):
    """Raised by the counters past a bound, before the work is done (a twin ends quickly)."""


class PLDWork:
    """What PLD constructors and compositions do: cells, quadrature nodes, convolutions."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.cells = self.nodes = self.convolutions = 0

    def check(self, rounds: int = 1) -> None:
        """Within the budgets of the module docstring, for a PLD of ``rounds`` rounds."""
        assert self.nodes <= NODE_BUDGET, self.nodes
        assert self.convolutions <= 2 * max(rounds - 1, 0).bit_length() + 1, self.convolutions


@pytest.fixture
def pld_work(monkeypatch: pytest.MonkeyPatch) -> Iterator[PLDWork]:
    """Counts the work of the PLD code (caches cleared first, so that it is done here); a
    discretisation over more cells than the loss cap allows raises `Unbounded` before its
    quadrature, a convolution of a grid beyond the cap before its transform."""
    work = PLDWork()

    def counted_cells(part: Any, h: float) -> Any:
        idx, ends = _cells(part, h)
        work.cells = max(work.cells, idx.size)
        if idx.size > grid_cells(h):
            raise Unbounded(f"{idx.size} cells at h = {h}")
        return idx, ends

    def counted_quadrature(part: Any, h: float, *rest: Any) -> Any:
        out = quadrature(part, h, *rest)
        work.nodes += out[1].size
        return out

    def counted(convolution: Any) -> Any:
        def counted_convolve(a: Any, b: Any, *rest: Any) -> Any:
            work.convolutions += 1
            if max(a.size, b.size) > grid_cells(5e-4):
                raise Unbounded(f"a convolution of {a.size} and {b.size} points")
            return convolution(a, b, *rest)

        return counted_convolve

    monkeypatch.setattr(expost.pld.discretise, "_cells", counted_cells)
    monkeypatch.setattr(expost.pld.discretise, "quadrature", counted_quadrature)
    monkeypatch.setattr(expost.pld.optimistic, "quadrature", counted_quadrature)
    monkeypatch.setattr(expost.pld.discrete, "convolve_within", counted(convolve_within))
    clear_caches()
    yield work
    clear_caches()


@pytest.mark.parametrize("name", list(_CONSTRUCTORS))
def test_every_constructor_is_safe_or_refused_at_extremes(name: str, pld_work: PLDWork) -> None:
    build = _CONSTRUCTORS[name]
    for x in EXTREMES:
        pld_work.reset()
        try:
            pld = build(x)
        except InvalidParameter:
            continue
        for e in (0.0, 1.0, 30.0):
            lo, hi = pld.delta_bracket(e)
            assert 0.0 <= lo <= hi <= 1.0, (name, x, e, lo, hi)
        lo_e, hi_e = pld.eps_bracket(1e-6)
        assert 0.0 <= lo_e <= hi_e, (name, x, lo_e, hi_e)
        pld_work.check()


def test_the_issues_slow_cases_do_bounded_work(pld_work: PLDWork) -> None:
    """σ = 0.05 composed 1,000 times (253 s before) and b = 1e-3 (44 s to build) — bounded by
    the loss cap (LOSS_CAP = 64) and the far pair (μ or ε0 >= 1000)."""
    g = PLD.gaussian(0.05).self_compose(1000)
    assert g.delta(1.0) == 1.0  # μ_total = 632: the exact δ(1) is 1 − 1e-4000-ish
    pld_work.check(1000)
    assert pld_work.cells > grid_cells(g.remove.h) // 2  # the cap is what bounds it
    pld_work.reset()
    lap = PLD.laplace(1e-3)
    assert lap.delta(1.0) >= 1.0 - 1e-12
    pld_work.check()
    pld_work.reset()
    PLD.pure_dp(0.3).self_compose(1000)
    pld_work.check(1000)
    assert pld_work.convolutions >= 10


def test_the_work_count_catches_a_loss_cap_raised_and_rounds_one_by_one(
    pld_work: PLDWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted twins: the loss cap 10x higher (the grid then grows with μ, as before the cap),
    and k rounds composed one by one (k − 1 convolutions, not 2·log2 k + 1)."""
    with monkeypatch.context() as planted:
        planted.setattr(expost.pld.discretise, "LOSS_CAP", 10 * LOSS_CAP)
        with pytest.raises(Unbounded, match="cells"):
            PLD.gaussian(0.05).self_compose(1000)
    one = PLD.pure_dp(0.3)
    pld_work.reset()
    slow = one
    for _ in range(99):
        slow = slow.compose(one)
    with pytest.raises(AssertionError):
        pld_work.check(100)
