"""How many rounds of one PLD a budget admits (THEORY §12, "Filters that count").

The exact δ of k rounds is nondecreasing in k (data processing), so the count is found by
doubling then bisection, reusing the squarings: P^(2^j) is cached, and a candidate count
k + 2^i is tested as the PLD of k rounds composed with P^(2^i). Every count returned has its own
δ upper bound within the target, so it is never above the exact count.

The grid is chosen from the pair and the composition (docs/pld.md, "Counting many rounds").
Connect-the-dots adds at most h²/4 of variance to a loss split on a grid of spacing h, so

- one round is rebuilt on h·2^-j <= s/`SPREAD_STEPS` (s the per-round loss's standard deviation,
  not below `FINEST`): at q = 1e-4 and σ = 1, s ≈ 2e-4, and the fixed grid h = 5e-4 undercounts
  (130,613 rounds at q = 1e-3 on h = 1e-3 against 143,818 here, the exact count at most
  0.4% above);
- and on at least `SUPPORT_POINTS` points over its loss range: a pair with atoms (Laplace,
  subsampled) has an optimistic side that needs them (q = 0.01, ε0 = 1: δ's lower bound 20%
  low after 16 rounds on 96 points, 0.3% on 385);
- with a step dividing the distance between the two heaviest atoms, if there are two: the
  optimistic side aligns its grid with the heaviest and rounds every other loss down, so an
  atom off the grid costs up to a step per round (the subsampled Laplace at q = 1e-3: its
  atom of mass 0.18 sat 1.4e-6 low, 2.7e-7 per round on the mean loss, and the lower bound on
  ε 1.1% low after 2^14 rounds; any step is sound on both sides, this one is tighter);
- each power P^(2^j) is squared on a grid coarsened (`PrivacyLossDistribution.coarsened`) to
  at most its own spread S_j/`POINTS`: each coarsening adds at most 1/(4·POINTS²) of relative
  variance to the final composition, so its grid stays a few thousand points wide whatever k
  is;
- every cut tail holds at most `COUNT_TAIL`: the mass sent to +∞ grows as about 3·k·`COUNT_TAIL`
  (at 1e-16 it was 8.7e-9 of the 1.03e-8 reported at 4.5·10⁷ rounds of σ = 2, q = 1e-4, and the
  count 50% low); cuts this small are possible because the heavy bulk of each law is convolved
  by direct sums, without the transform's noise floor (`expost.pld.splitting`), which also
  keeps the ℓ1 error bound, doubled by each squaring, near 1e-11 after 2^25 rounds (it was
  1e-8 after 2^22 rounds at q = 1e-4), inside the reported δ.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from expost._validation import (
    nonnegative,
    open_probability,
    positive,
    positive_int,
    probability,
)
from expost.pld.distribution import PrivacyLossDistribution
from expost.pld.distribution import clear_caches as clear_distribution_caches

__all__ = ["DEFAULT_LIMIT", "clear_caches", "compose_rounds", "max_rounds"]

DEFAULT_LIMIT = 1 << 30  # at most this many rounds are counted (about 60 compositions)
SPREAD_STEPS = 32.0  # grid points per standard deviation of one round's loss, at least
SUPPORT_POINTS = 1024.0  # grid points over one round's loss range, at least (atoms: module doc)
POINTS = 256.0  # grid points per standard deviation of a power P^(2^j), at least
FINEST = 2.0**-20  # the finest grid a count refines to
COUNT_TAIL = 1e-20  # the tail mass each cut may hold when counting (module doc)
_CHAIN = 64  # cached powers


def _spread(pld: PrivacyLossDistribution) -> float:
    """The larger standard deviation of the (finite) loss over both directions."""
    out = 0.0
    for d in (pld.remove, pld.add):
        m, lv = d.masses, d.losses
        total = float(np.sum(m))
        if total <= 0:
            continue
        mean = float(np.dot(m, lv)) / total
        out = max(out, math.sqrt(max(0.0, float(np.dot(m, (lv - mean) ** 2)) / total)))
    return out


@functools.lru_cache(maxsize=_CHAIN)
def refined(
    pld: PrivacyLossDistribution, resolution: float, tail_mass: float = COUNT_TAIL
) -> PrivacyLossDistribution:
    """``pld`` rebuilt on a grid fine against its loss spread (``resolution`` × `SPREAD_STEPS`
    points per standard deviation, ``resolution`` × `SUPPORT_POINTS` over its range), tails of
    at most ``tail_mass`` cut (module doc), where it can be (a PLD made by a constructor)."""
    regrid = pld.origin.regrid
    h, s = pld.remove.h, _spread(pld)
    if regrid is None:
        return pld
    width = h * max(pld.remove.masses.size, pld.add.masses.size)
    steps = SPREAD_STEPS * resolution
    step = h
    while (step > s / steps or step > width / (SUPPORT_POINTS * resolution)) and step / 2 >= FINEST:
        step /= 2
    fine = regrid(_on_atoms(pld, step), tail_mass)
    remove = fine.remove.trimmed()
    add = remove if fine.symmetric else fine.add.trimmed()
    return PrivacyLossDistribution(remove, add, fine.origin)


def _on_atoms(pld: PrivacyLossDistribution, step: float) -> float:
    """``step``, or the largest step below it that divides the distance between the two
    heaviest finite atoms of the optimistic remove law (module doc), when it has two: the
    optimistic grid is aligned with the heaviest atom, and the other then sits on it too."""
    laws = pld.origin.lower
    if laws is None:
        return step
    atoms = np.array(laws[0].atoms, dtype=np.float64).reshape(-1, 2)
    atoms = atoms[np.isfinite(atoms[:, 0]) & (atoms[:, 1] > 0)]
    if atoms.shape[0] < 2:
        return step
    heavy = atoms[np.argsort(atoms[:, 1])[-2:], 0]
    d = abs(float(heavy[1] - heavy[0]))
    return d / math.ceil(d / step) if d > 0 else step


def _coarse(pld: PrivacyLossDistribution, points: float) -> PrivacyLossDistribution:
    """``pld`` on the coarsest grid h·2^j <= its spread/``points``."""
    target = _spread(pld) / points
    factor = 1
    while pld.remove.h * factor * 2 <= target:
        factor *= 2
    return pld.coarsened(factor)


def _onto(pld: PrivacyLossDistribution, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
    """``pld`` on the (coarser or equal) grid of ``other``."""
    return pld.coarsened(round(other.remove.h / pld.remove.h))


@functools.lru_cache(maxsize=_CHAIN)
def _power(pld: PrivacyLossDistribution, j: int, points: float) -> PrivacyLossDistribution:
    """P^(2^j): P^(2^(j−1)) coarsened to its spread/``points``, squared."""
    if j == 0:
        return pld
    half = _coarse(_power(pld, j - 1, points), points)
    return half.compose(half)


def compose_rounds(
    pld: PrivacyLossDistribution,
    k: int,
    *,
    resolution: float = 1.0,
    round_resolution: float | None = None,
    tail_mass: float = COUNT_TAIL,
) -> PrivacyLossDistribution:
    """``k`` rounds of ``pld`` composed on the grids `max_rounds` counts on (module doc): the
    powers of k's binary digits, each coarsened to the largest one's grid. ``resolution``
    scales the points per standard deviation of the powers (`POINTS`), ``round_resolution``
    (default ``resolution``) those of one round (`SPREAD_STEPS`, `SUPPORT_POINTS`); 1 is what
    counts use, smaller is faster and wider. Tails of at most ``tail_mass`` are cut (at 1e-16 and above the transforms' tails may run in float64 where their
    bound allows, `expost.pld.splitting`). Its `delta` is an upper bound and its `delta_bracket`
    a certified bracket of the exact k-fold δ, as for any composition; about 2·log2 k
    convolutions, of at most a few thousand points each once k is large. The one-round grid is
    rebuilt from the pair, so the grid ``pld`` was made on does not matter."""
    k = positive_int("k", k)
    r = positive("resolution", resolution)
    r1 = r if round_resolution is None else positive("round_resolution", round_resolution)
    tail = open_probability("tail_mass", tail_mass)
    base = refined(pld, r1, tail)
    points = POINTS * r
    bits = [i for i in range(k.bit_length()) if k >> i & 1]
    result = _power(base, bits[-1], points)
    for i in reversed(bits[:-1]):
        result = result.compose(_onto(_power(base, i, points), result))
    return result


def max_rounds(
    pld: PrivacyLossDistribution, eps: float, delta: float, *, limit: int = DEFAULT_LIMIT
) -> int:
    """The largest k <= ``limit`` with ``compose_rounds(pld, k).delta(eps) <= delta`` found by
    doubling and bisection (0 if one round does not fit) on the grids chosen from the pair
    (module doc); at most about 2·log2(limit) compositions."""
    e = nonnegative("eps", eps)
    d = probability("delta", delta)
    cap = positive_int("limit", limit)
    base = refined(pld, 1.0)
    if base.delta(e) > d:
        return 0
    top = 0
    while (2 << top) <= cap and _power(base, top + 1, POINTS).delta(e) <= d:
        top += 1
    count, current = 1 << top, _power(base, top, POINTS)
    for i in range(top - 1, -1, -1):
        if count + (1 << i) > cap:
            continue
        candidate = current.compose(_onto(_power(base, i, POINTS), current))
        if candidate.delta(e) <= d:
            count, current = count + (1 << i), candidate
    return count


def clear_caches() -> None:
    """Forget every cached grid, power and composition (the distribution's caches too)."""
    clear_distribution_caches()
    refined.cache_clear()
    _power.cache_clear()
