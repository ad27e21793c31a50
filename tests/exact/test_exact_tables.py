"""The inversion tables of the discrete Laplace and Gaussian: exact bounds, exact lookups,
the refinement stages forced and checked, the tails, and planted twins of each.

Deterministic checks compare every table entry with the CDF computed by mpmath at 300 bits
(an independent computation: series in floating point, not the library's integer bounds).
Statistical checks are G-tests at ALPHA = 1e-6 (tests/stats.py).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import attrs
import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats as sps

from expost.exact import GeneratorBits, discrete_gaussian, discrete_laplace, samplers, tables
from tests.exact.test_exact_samplers import BiasedBits, Scripted, fits, gaussian_pmf, laplace_pmf
from tests.stats import ALPHA

LAWS = {  # name: (e1, e2) of the tables (ratios exp(-e1)·exp(-e2)**k)
    "gaussian 1": (Fraction(1, 2), Fraction(1)),
    "gaussian 100": (Fraction(1, 200), Fraction(1, 100)),
    "gaussian 7/3": (Fraction(3, 14), Fraction(3, 7)),
    "gaussian 2.3 (float)": (1 / (2 * Fraction(2.3)), 1 / Fraction(2.3)),
    "laplace 1": (Fraction(1), Fraction(0)),
    "laplace 10": (Fraction(1, 10), Fraction(0)),
    "laplace 7/2": (Fraction(2, 7), Fraction(0)),
}


def exact_boundaries(t: tables.Table, prec: int = 62) -> list[mpmath.mpf]:
    """b_i·2**prec, i = 0..2K+1, from mpmath sums at 300 bits (tail summed to 2**-280)."""
    with mpmath.workprec(300):
        e1, e2 = mpmath.mpf(t.e1.numerator) / t.e1.denominator, mpmath.mpf(t.e2.numerator)
        e2 /= t.e2.denominator

        def w(j: int) -> mpmath.mpf:
            return mpmath.exp(-e1 * j - e2 * j * (j - 1) / 2)

        tail, j = mpmath.mpf(0), t.k + 1
        while True:
            term = w(j)
            tail += term
            if term < mpmath.mpf(2) ** -280:
                break
            j += 1
        cum = [tail]
        for x in range(-t.k, t.k + 1):
            cum.append(cum[-1] + w(abs(x)))
        z = cum[-1] + tail
        return [c / z * mpmath.mpf(2) ** prec for c in cum]


def table_is_exact(t: tables.Table, exact: list[mpmath.mpf]) -> bool:
    """Every bound brackets its boundary and every decided first-stage cell is right."""
    with mpmath.workprec(300):
        floor = np.array([int(mpmath.floor(b)) for b in exact], dtype=np.int64)  # b irrational
    if not (np.all(t.lo <= floor) and np.all(floor < t.hi)):
        return False
    step = 1 << (tables.PREC - t.width)
    cells = np.flatnonzero(t.first >= 0)
    j = t.first[cells].astype(np.int64)
    start, stop = cells * step, (cells + 1) * step
    below = np.append(floor, 2**62)  # b_j, with b_{2K+2} = "+infinity"
    above = np.insert(floor, 0, -1)  # b_{j-1}, with b_{-1} = "-infinity"
    # b_{j-1} <= start  and  b_j >= stop   (floors: b non-integer)
    return bool(np.all(above[j] < start) and np.all(below[j] >= stop))


@pytest.mark.parametrize("name", list(LAWS))
def test_table_bounds_and_lookups_are_exact(name: str) -> None:
    t = tables.table(*LAWS[name])
    exact = exact_boundaries(t)
    assert table_is_exact(t, exact)
    assert int((t.hi - t.lo).max()) <= 2  # tight: the 62-bit stage decides all but ~2K/2**62
    # planted twins: an off-by-one lookup entry, an off-by-one bound
    decided = np.flatnonzero(t.first >= 0)
    bulk = decided[np.argmin(np.abs(decided - t.first.size // 2))]
    first = t.first.copy()
    first[bulk] += 1
    assert not table_is_exact(attrs.evolve(t, first=first), exact)
    i = int(np.argmin(np.abs(t.lo - 2**61)))
    lo = t.lo.copy()
    lo[i] += 2
    assert not table_is_exact(attrs.evolve(t, lo=lo, hi=np.maximum(t.hi, lo)), exact)


class ForcedCell(GeneratorBits):
    """First-stage draws (below 2**width) all land in ``cell``; every other draw honest,
    from ``rest`` (a `BiasedBits` plants a biased fallback)."""

    def __init__(self, width: int, cell: int, rest: GeneratorBits) -> None:
        super().__init__(rest.rng)
        self.width, self.cell, self.rest = width, cell, rest

    def below(self, n: int, size: int) -> npt.NDArray[np.int64]:
        if n == 1 << self.width:
            return np.full(size, self.cell, dtype=np.int64)
        return self.rest.below(n, size)


def _split_cell(t: tables.Table, exact: list[mpmath.mpf]) -> tuple[int, dict[int, float]]:
    """An undecided first-stage cell that a boundary splits evenly, and its exact conditional
    law of the index: P(j | R in cell) = |[b_{j-1}, b_j) ∩ cell| / |cell|."""
    step = 1 << (tables.PREC - t.width)
    with mpmath.workprec(300):
        return _first_split(t, exact, step)


def _first_split(
    t: tables.Table, exact: list[mpmath.mpf], step: int
) -> tuple[int, dict[int, float]]:
    best, law = -1, {}
    for cell in np.flatnonzero(t.first < 0):
        a, b = int(cell) * step, (int(cell) + 1) * step
        inside = [i for i, x in enumerate(exact) if a < x < b]
        edges = [mpmath.mpf(a)] + [exact[i] for i in inside] + [mpmath.mpf(b)]
        parts = [float((hi - lo) / step) for lo, hi in itertools.pairwise(edges)]
        if min(parts) > 0.2:
            first = inside[0]
            best, law = int(cell), {first + m: p for m, p in enumerate(parts)}
            break
    assert best >= 0
    return best, law


@pytest.mark.parametrize("name", ["gaussian 100", "laplace 10"])
def test_forced_second_stage_is_exact_and_a_biased_fallback_is_caught(name: str) -> None:
    t = tables.table(*LAWS[name])
    cell, law = _split_cell(t, exact_boundaries(t))
    n = 100_000
    keys = sorted(law)
    expected = np.array([law[k] for k in keys]) * n

    def counts(source: GeneratorBits) -> npt.NDArray[np.int64]:
        idx = tables.invert(t, ForcedCell(t.width, cell, source), n)
        assert set(np.unique(idx).tolist()) <= set(keys)
        return np.array([np.sum(idx == k) for k in keys])

    honest = counts(GeneratorBits(np.random.default_rng(21)))
    assert sps.power_divergence(honest, expected, lambda_="log-likelihood").pvalue > ALPHA
    biased = counts(BiasedBits(np.random.default_rng(22)))  # 1 in 20 refinements forced to 0
    assert sps.power_divergence(biased, expected, lambda_="log-likelihood").pvalue < ALPHA


@pytest.mark.parametrize("name", ["gaussian 100", "laplace 7/2"])
def test_forced_third_stage_refines_the_same_uniform_exactly(name: str) -> None:
    with mpmath.workprec(300):
        _third_stage(name)


def _third_stage(name: str) -> None:
    t = tables.table(*LAWS[name])
    exact = exact_boundaries(t)
    # a boundary strictly inside one 62-bit unit whose cell is undecided at the first stage
    i = next(
        i
        for i in range(len(exact))
        if t.hi[i] - t.lo[i] >= 1
        and t.first[int(exact[i]) >> (62 - t.width)] < 0
        and 2**40 < exact[i] < 2**62 - 2**40
    )
    u = int(mpmath.floor(exact[i]))
    shift = 62 - t.width
    frac = int(mpmath.floor((exact[i] - u) * mpmath.mpf(2) ** 64))  # b_i·2**126 − u·2**64
    assert 3 <= frac < 2**64 - 3
    for extra, want in (
        ([frac - 3], i),
        ([frac + 3], i + 1),
        ([frac, 0], i),
        ([frac, 2**64 - 1], i + 1),
    ):
        stub = Scripted([u >> shift, u & ((1 << shift) - 1), *extra])
        assert tables.invert(t, stub, 1).tolist() == [want]
        assert stub.asked == [1 << t.width, 1 << shift] + [2**64] * len(extra)
    # the stage-3 bounds at 126 bits bracket the exact boundary (independent mpmath value)
    lo, hi = tables.bounds(t.e1, t.e2, t.k, 126)
    exact126 = exact_boundaries(t, 126)[i]
    assert lo[i] <= exact126 <= hi[i]


def test_second_stage_is_exercised_in_ordinary_draws() -> None:
    t = tables.table(Fraction(1, 2 * 10**6), Fraction(1, 10**6))  # σ² = 1e6: ~0.7% of cells open
    assert 0.001 < float(np.mean(t.first < 0)) < 0.5
    x = discrete_gaussian(10**6, GeneratorBits(np.random.default_rng(3)), 200_000)
    mean_sd = 1000 / np.sqrt(x.size)
    assert abs(float(x.mean())) < 5 * mean_sd


@pytest.fixture
def short_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables reaching only to tail mass ~2**-2, so the exact tail samplers run often."""
    monkeypatch.setattr(tables, "TAIL_BITS", 2)
    monkeypatch.setattr(tables, "_TABLES", {})
    tables.bounds.cache_clear()


@pytest.mark.usefixtures("short_tables")
def test_tails_are_exact_and_wrong_tails_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 200_000
    g = discrete_gaussian(10, GeneratorBits(np.random.default_rng(31)), n)
    k = tables.table(Fraction(1, 20), Fraction(1, 10)).k
    assert np.mean(np.abs(g) > k) > 0.05
    assert fits(g, gaussian_pmf(Fraction(10)), -60, 60)
    lap = discrete_laplace(Fraction(7, 2), GeneratorBits(np.random.default_rng(32)), n)
    assert np.mean(np.abs(lap) > tables.table(Fraction(2, 7), Fraction(0)).k) > 0.1
    assert fits(lap, laplace_pmf(Fraction(7, 2)), -120, 120)
    # planted twins: the Gaussian tail without its acceptance step; a Laplace tail at 2x scale
    monkeypatch.setattr(
        samplers, "_gaussian_tail", lambda p, q, k, b, m: samplers._half(p, (k + 1) * q, b, m)
    )
    g = discrete_gaussian(10, GeneratorBits(np.random.default_rng(31)), n)
    assert not fits(g, gaussian_pmf(Fraction(10)), -80, 80)
    half = samplers._half
    monkeypatch.setattr(samplers, "_half", lambda t, s, b, m: half(2 * t, s, b, m))
    lap = discrete_laplace(Fraction(7, 2), GeneratorBits(np.random.default_rng(32)), n)
    assert not fits(lap, laplace_pmf(Fraction(7, 2)), -200, 200)


def test_exp_bounds_bracket_exp() -> None:
    for x in (
        Fraction(0),
        Fraction(1, 3),
        Fraction(1),
        Fraction(23, 7),
        Fraction(2.3),
        Fraction(1000),
    ):
        lo, hi = tables.exp_bounds(x, 100)
        with mpmath.workprec(300):
            e = mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator) * mpmath.mpf(2) ** 100
        assert lo <= e <= hi
        assert hi - lo <= 4
