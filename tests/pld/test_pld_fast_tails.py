"""The fast paths of composition (issue 40 item 7): light tails convolved in float64 and light
tail cells merged (`expost.pld.splitting.convolve_within`, `expost.pld.discretise`).

- `convolve_within` at a tail mass of at least `SPLIT_BELOW` splits a law with a heavy bulk and
  light tails, runs the tails' products in float64 and keeps its promise on both sides against
  the exact rational convolution; the twin, the float64 bound dropped, is caught.
- Light tail cells: a subsampled Gaussian on a fine grid takes fewer than half the quadrature
  nodes, and its δ upper bound stays >= the 50-digit exact δ deep in the tail, where the merged
  cells are; the twin, a merged cell's mass sent to the next grid point instead of its far end,
  falls below the exact δ there.
- `compose_rounds` with ``round_resolution`` and ``tail_mass``: its bracket contains the exact
  δ of 1,000 Gaussian rounds on the float64 path, and bad values are refused by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import scipy.fft

import expost.pld.convolution
import expost.pld.discretise
from expost.errors import InvalidParameter
from expost.pld import PrivacyLossDistribution, compose_rounds, counting
from expost.pld.discrete import split_weights
from expost.pld.splitting import SPLIT_BELOW, convolve_within
from expost.testing.pld_reference import gaussian_delta, ratio, subsampled_gaussian_delta
from tests.pld.rational import exact_convolution, shortfall

FloatArray = npt.NDArray[np.float64]
PLD = PrivacyLossDistribution


def _law(seed: int) -> FloatArray:
    """A heavy bulk of 100 points in a 400-point array, tails falling from 1e-6 to 1e-30."""
    rng = np.random.default_rng(seed)
    a = np.zeros(400)
    a[150:250] = rng.uniform(0.5, 1.0, 100)
    side = np.logspace(-6, -30, 150) * rng.uniform(0.5, 1.0, 150)
    a[:150], a[250:] = side[::-1], side
    out: FloatArray = a / a.sum()
    return out


@pytest.fixture
def dtypes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The dtypes of the inverse transforms run."""
    seen: list[str] = []
    inverse = scipy.fft.ifft

    def recorded(x: Any, *rest: Any, **kw: Any) -> Any:
        seen.append(np.asarray(x).dtype.name)
        return inverse(x, *rest, **kw)

    monkeypatch.setattr(scipy.fft, "ifft", recorded)
    return seen


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("seeds", [(1, 1), (2, 3)])
def test_float64_tails_keep_the_promise(
    seeds: tuple[int, int], lower: bool, dtypes: list[str]
) -> None:
    a = _law(seeds[0])
    b = a if seeds[0] == seeds[1] else _law(seeds[1])
    c, err = convolve_within(a, b, 1e-16, lower)
    assert "complex128" in dtypes  # the tails went through float64
    assert np.all(c >= 0)
    assert 0 < err <= 1e-16  # within the tolerance the tail mass gives
    assert shortfall(c, exact_convolution(a, b), lower) <= Fraction(err)


def test_float64_tails_without_their_bound_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    fft_error = expost.pld.convolution.fft_error

    def dropped(x: FloatArray, y: FloatArray, n: int, u: float) -> float:
        return 0.0 if u == 2.0**-53 else fft_error(x, y, n, u)

    a = _law(1)
    c, err = convolve_within(a, a, 1e-16)
    monkeypatch.setattr(expost.pld.convolution, "fft_error", dropped)
    c_bug, err_bug = convolve_within(a, a, 1e-16)
    exact = exact_convolution(a, a)
    assert shortfall(c, exact, False) <= Fraction(err)
    assert shortfall(c_bug, exact, False) > Fraction(err_bug)  # the twin is caught


def test_tails_lighter_than_split_below_sum_the_bulk_directly(dtypes: list[str]) -> None:
    a = _law(1)
    _, fast = convolve_within(a, a, 1e-16)
    assert "clongdouble" in dtypes or "complex256" in dtypes  # the bulk by transform
    dtypes.clear()
    _, fine = convolve_within(a, a, SPLIT_BELOW / 2)
    assert "clongdouble" not in dtypes  # by direct sums
    assert "complex256" not in dtypes
    assert fine < fast / 100


def _fine() -> PLD:
    return PLD.gaussian(1.0, sampling_prob=0.01, value_discretization=1e-4)


def _deep_tail_checks(pld: PLD) -> list[float]:
    """upper δ / exact δ − 1 of the remove direction at ε deep in the light tails."""
    mu = ratio(1.0, 1.0)
    out = []
    for eps in (2.7, 3.0, 3.3):
        exact = float(subsampled_gaussian_delta(mu, 0.01, eps, "remove"))
        assert exact > 1e-18  # the tails hold mass here
        out.append(pld.remove.delta(eps) / exact - 1.0)
    return out


def test_light_tail_cells_save_nodes_and_stay_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    merged: list[tuple[Any, float, int]] = []
    quadrature = expost.pld.discretise.quadrature

    def counted(part: Any, h: float, light: bool = False) -> Any:
        out = quadrature(part, h, light)
        if light:
            merged.append((part, h, out.x.size))
        return out

    monkeypatch.setattr(expost.pld.discretise, "quadrature", counted)
    counting.clear_caches()  # built afresh here, not taken from another test's cache
    pld = _fine()
    plain = sum(quadrature(part, h).x.size for part, h, _ in merged)
    assert sum(n for _, _, n in merged) < plain / 2
    assert min(_deep_tail_checks(pld)) >= 0.0


def test_a_merged_cell_sent_to_the_wrong_end_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    quadrature = expost.pld.discretise.quadrature

    def wrong_end(part: Any, h: float) -> tuple[Any, Any]:  # the twin: j + 1, not j + span
        nodes = quadrature(part, h, True)
        span = nodes.span.astype(np.float64) * h
        left, right = split_weights(part.loss(nodes.x) - nodes.j * h, span)
        js = np.concatenate([nodes.j, nodes.j + 1, nodes.wide_j + nodes.wide_span])
        ms = np.concatenate([nodes.weight * left, nodes.weight * right, nodes.wide_mass])
        lo = float(part.loss(np.array([part.lo]))[0])
        return np.append(js, math.ceil(lo / h) + 1), np.append(ms, part.below)

    monkeypatch.setattr(expost.pld.discretise, "_part_masses", wrong_end)
    counting.clear_caches()
    try:
        assert min(_deep_tail_checks(_fine())) < 0.0
    finally:
        counting.clear_caches()


def test_compose_rounds_on_the_fast_path_brackets_the_exact_delta(dtypes: list[str]) -> None:
    sigma = math.sqrt(1000.0)
    counting.clear_caches()  # composed afresh here (the transforms' dtypes are checked)
    pld = PLD.gaussian(sigma, value_discretization=1e-2)
    low, high = compose_rounds(
        pld, 1000, resolution=0.5, round_resolution=2.0, tail_mass=1e-14
    ).delta_bracket(4.0)
    exact = float(gaussian_delta(ratio(1.0, sigma), 4.0, 1000))
    assert low <= exact <= high
    assert high / low - 1.0 < 1e-2
    assert "complex128" in dtypes


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("tail_mass", 0.0),
        ("tail_mass", 1.0),
        ("tail_mass", math.nan),
        ("round_resolution", 0.0),
        ("round_resolution", -1.0),
        ("round_resolution", math.inf),
    ],
)
def test_compose_rounds_refuses_bad_settings_by_name(keyword: str, value: float) -> None:
    call: Callable[..., PLD] = compose_rounds
    with pytest.raises(InvalidParameter, match=keyword):
        call(PLD.gaussian(2.0), 4, **{keyword: value})
