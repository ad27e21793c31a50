"""One neighbour direction's discretised privacy loss distribution (THEORY §12).

A `DiscreteLoss` is a nonnegative measure on the grid l_i = (offset + i)·h plus a mass at +∞,
and an ℓ1 error bound E. Its promise: there is a nonnegative measure m̄ (finite part and
mass at +∞) with ||(masses, inf_mass) − m̄||_1 <= E whose hockey-stick sums
Σ m̄_i (1 − γ e^{−l_i})_+ + m̄_∞ are >= those of the exact PLD of the direction's pair (or of the
pairs' product, after composing), for every γ >= 0. Then

    δ(ε) <= Σ_i masses_i (1 − e^{ε − l_i})_+ + inf_mass + E      (ε >= 0),

since 0 <= (1 − e^{ε−l})_+ <= 1. Composition convolves (`expost.pld.convolution`): the ℓ1 error
of a bilinear map with ||B(x, y)||_1 <= ||x||_1 ||y||_1 propagates as
E = E_fft + E_a ||b||_1 + (||a||_1 + E_a) E_b (Young); how to convolve (the bulk and the light
tails apart, in which precision) is `expost.pld.splitting.convolve_within`'s choice, by the tail
mass cut. Tails are cut after each composition
(THEORY §12 (c)): the top entries whose mass is at most ``tail_mass`` go to +∞ and the bottom
entries whose mass is at most ``tail_mass`` move up to the lowest kept point; both move mass up
(the hockey-stick integrand is nondecreasing in l, and convolution keeps that order), and both
are ℓ1 contractions, so E is unchanged. Every float computed along the way is rounded so the
measure only grows (a larger measure has larger sums).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from attrs import evolve, field, frozen
from attrs.validators import instance_of

from expost._validation import (
    finite,
    nonnegative,
    open_probability,
    positive,
    read_only,
    validator,
)
from expost.errors import InvalidParameter
from expost.pld.splitting import convolve_within
from expost.rounding import down, smallest_where, up

__all__ = ["LOSS_CAP", "DiscreteLoss", "split_weights"]

FloatArray = npt.NDArray[np.float64]
_U = 2.0**-53
LOSS_CAP = 64.0  # losses above go to +∞, below move up to −LOSS_CAP (both safe; bounds the grid)
_EXP_MARGIN = 2.0**-45  # relative lower margin on numpy's exp (documented error < 4 ulps)


def split_weights(u: FloatArray, h: float | FloatArray) -> tuple[FloatArray, FloatArray]:
    """(w, 1 − w) splitting a loss at offset u in a cell [l_j, l_j + h] between its ends with
    w e^{−l_j} + (1 − w) e^{−l_j − h} = e^{−l_j − u} (connect the dots), without cancellation:
    w = expm1(h − u)/expm1(h), 1 − w = e^{h−u}·expm1(u)/expm1(h)."""
    scale = np.expm1(h)
    left = np.maximum(np.expm1(h - u) / scale, 0.0)
    right = np.maximum(np.exp(h - u) * np.expm1(u) / scale, 0.0)
    return left, right


def _masses(values: npt.ArrayLike) -> FloatArray:
    return read_only(values)


def _nonnegative_masses(_instance: object, _attribute: object, value: FloatArray) -> None:
    if value.ndim != 1 or value.size == 0 or not np.all(np.isfinite(value)) or np.any(value < 0):
        raise InvalidParameter(
            "masses", value, "must be a non-empty 1-d array of finite masses >= 0"
        )


@frozen(eq=False)
class DiscreteLoss:
    """Masses on the grid (offset + i)·h, a mass at +∞ and an ℓ1 error bound (module doc)."""

    h: float = field(validator=validator(positive))
    offset: int = field(validator=instance_of(int))
    masses: FloatArray = field(converter=_masses, validator=_nonnegative_masses, repr=False)
    inf_mass: float = field(validator=validator(nonnegative))
    error: float = field(validator=validator(nonnegative))
    tail_mass: float = field(validator=validator(open_probability))
    shift: float = field(default=0.0, validator=validator(finite))
    lower: bool = field(default=False, validator=instance_of(bool))

    @property
    def losses(self) -> FloatArray:
        """The grid's loss values (floats nearest to shift + (offset + i)·h)."""
        return self.shift + (self.offset + np.arange(self.masses.size, dtype=np.float64)) * self.h

    def total(self) -> float:
        """An upper bound on the finite mass Σ masses_i: numpy's sum of n terms >= 0 is within
        a relative (n − 1)·u of the exact sum (Higham 2002, §4.2), raised by (n + 1)·u."""
        return _sum(self.masses, 1)

    def compose(self, other: DiscreteLoss) -> DiscreteLoss:
        """The direction's PLD after both rounds (convolution, tails cut)."""
        if other.h != self.h:
            raise InvalidParameter(
                "other", other.h, f"must use the same value_discretization as this PLD ({self.h})"
            )
        if other.lower != self.lower:
            raise InvalidParameter("other", other.lower, "must be on the same side (lower)")
        tail = min(self.tail_mass, other.tail_mass)
        c, err_fft = convolve_within(self.masses, other.masses, tail, self.lower)
        fa, fb = self.total(), other.total()
        ea, eb = self.error, other.error
        inf = self.inf_mass * fb + fa * other.inf_mass + self.inf_mass * other.inf_mass
        err = err_fft + ea * (fb + other.inf_mass) + (fa + self.inf_mass + ea) * eb
        if self.lower:  # c is below a measure within err_fft of the product
            err += ea * max(0.0, 1.0 - fb - other.inf_mass)  # E_a·||exact||, ||exact|| = 1
            inf = inf * (1.0 - 8.0 * _U)
        return _cut(
            DiscreteLoss(
                self.h,
                self.offset + other.offset,
                c,
                inf if self.lower else up(inf, 8),  # a few float operations: < 8u relative
                up(err, 8),
                tail,
                down(self.shift + other.shift, 1) if self.lower else 0.0,
                self.lower,
            )
        )

    def trimmed(self) -> DiscreteLoss:
        """This law with its tails of at most ``tail_mass`` cut as after a composition (the
        top to +∞, the bottom moved up: safe, module doc)."""
        return _cut(self)

    def coarsened(self, factor: int) -> DiscreteLoss:
        """This (upper) law on the grid of spacing factor·h (``factor`` a power of two, so the
        new grid holds every factor-th point exactly): each mass split between the two ends of
        its coarse cell by `split_weights`. Every hockey-stick sum only grows: with x = e^{−l},
        (1 − γx)_+ is convex in x and the split keeps w·x_j + (1 − w)·x_{j+1} = x (Jensen);
        the map keeps the total, so the ℓ1 error is carried. Weights and sums are raised by a
        relative (64 + 4·factor)·u (a few libm calls, sums of at most 2·factor terms)."""
        n = self.offset + np.arange(self.masses.size, dtype=np.int64)
        j = n // factor
        k = (n - j * factor).astype(np.float64)
        coarse = self.h * factor
        left, right = split_weights(k * self.h, coarse)
        first = int(j[0])
        idx = np.concatenate([j - first, j + 1 - first])
        margin = 1.0 + (64.0 + 4.0 * factor) * _U
        weights = np.concatenate([self.masses * left, self.masses * right])
        masses = np.nextafter(np.bincount(idx, weights=weights) * margin, np.inf)
        err = up(self.error * margin, 1)
        return _cut(
            DiscreteLoss(coarse, first, masses, self.inf_mass, err, self.tail_mass, 0.0, False)
        )

    def delta(self, eps: float) -> float:
        """An upper bound on this direction's H_{e^ε} (ε >= 0), at most 1 (a lower bound,
        at least 0, for a ``lower`` law: `delta_lower`)."""
        if self.lower:
            return self.delta_lower(eps)
        start = max(0, math.floor(eps / self.h) - self.offset - 2)
        m = self.masses[start:]
        if m.size == 0:
            s = 0.0
        else:
            i = (self.offset + start + np.arange(m.size)).astype(np.float64)
            ih = i * self.h
            x = eps - ih
            x_low = x - 4.0 * _U * (abs(eps) + np.abs(ih)) - 1e-300
            e_low = np.exp(x_low) * (1.0 - _EXP_MARGIN)
            f = np.clip(np.nextafter(1.0 - e_low, np.inf), 0.0, 1.0)
            s = float(np.dot(m, f)) * (1.0 + (m.size + 2) * 2.0 * _U)
        return min(1.0, up(s + self.inf_mass + self.error, 4))

    def delta_lower(self, eps: float) -> float:
        """A lower bound on H_{e^ε} (ε >= 0) of a ``lower`` law: Σ m_i (1 − e^{ε − l_i})_+ with
        l_i and every product rounded down, e^x up, plus the mass at +∞, minus the error."""
        start = max(0, math.floor((eps - self.shift) / self.h) - self.offset - 2)
        m = self.masses[start:]
        s = 0.0
        if m.size:
            ih = (self.offset + start + np.arange(m.size)).astype(np.float64) * self.h
            x = eps - (self.shift + ih)
            x_high = x + 4.0 * _U * (abs(eps) + abs(self.shift) + np.abs(ih)) + 1e-300
            e_high = np.exp(x_high) * (1.0 + _EXP_MARGIN)
            f = np.clip(np.nextafter(1.0 - e_high, -np.inf), 0.0, 1.0)
            s = float(np.dot(m, f)) * (1.0 - (m.size + 2) * 2.0 * _U)
        return max(0.0, down(s + self.inf_mass * (1.0 - 4.0 * _U) - self.error, 4))

    def eps_lower(self, delta: float) -> float:
        """A lower bound on the smallest ε >= 0 with H_{e^ε} <= delta (of a ``lower`` law): a
        float at which `delta_lower` is seen above ``delta`` — found below the estimated
        crossing, then moved up by 40 bisections within a grid step (0 if none)."""
        if self.delta_lower(0.0) <= delta:
            return 0.0
        if self.inf_mass * (1.0 - 4.0 * _U) - self.error > delta:
            return math.inf
        low = max(0.0, self._estimate(delta))
        step = self.h
        while low > 0.0 and self.delta_lower(low) <= delta:
            low = max(0.0, low - step)
            step *= 2.0
        high = low + step
        for _ in range(40):
            mid = 0.5 * (low + high)
            if self.delta_lower(mid) > delta:
                low = mid
            else:
                high = mid
        return low

    def eps(self, delta: float) -> float:
        """An ε >= 0 with `delta` (ε) <= delta, rounded up: the float crossing of the profile
        moved up by a relative 2^-40 (or 2^-30, 2^-20) where the rigorous `delta` confirms it,
        else the smallest float it confirms (bounded search); inf if none."""
        if self.inf_mass + self.error > delta:
            return math.inf
        if self.delta(0.0) <= delta:
            return 0.0
        top = up(float(self.losses[-1]) + 1.0, 1) if self.masses.size else 1.0
        if self.delta(top) > delta:  # only the error term's decay is left: none found
            return math.inf
        guess = self._estimate(delta)
        for margin in (2.0**-40, 2.0**-30, 2.0**-20):
            candidate = up(guess * (1.0 + margin) + margin * self.h, 1)
            if 0.0 <= candidate <= top and self.delta(candidate) <= delta:
                return candidate
        found = smallest_where(lambda e: self.delta(e) <= delta, guess, 0.0, top)
        return math.inf if found is None else found

    def _estimate(self, delta: float) -> float:
        """A float near the ε where the float profile crosses ``delta`` (a search start)."""
        m, lv = self.masses, self.losses
        tail = np.cumsum(m[::-1])[::-1]  # Σ_{j>=i} m_j
        with np.errstate(over="ignore"):
            weighted = np.cumsum((m * np.exp(-lv))[::-1])[::-1]
        slack = self.inf_mass + self.error
        at = tail - np.exp(lv) * weighted + slack  # δ at l_i
        idx = int(np.searchsorted(-at, -delta))  # first i with δ(l_i) <= delta
        if idx <= 0 or idx >= m.size or not math.isfinite(float(at[idx])):
            return max(0.0, float(lv[min(max(idx, 0), m.size - 1)]))
        a, b = tail[idx] + slack - delta, weighted[idx]
        guess = float(np.log(a / b)) if a > 0 and b > 0 else float(lv[idx])
        return guess if math.isfinite(guess) else float(lv[idx])


def _sum(x: FloatArray, side: int) -> float:
    """Σ x (entries >= 0) rounded up (``side`` 1) or down (-1): numpy's sum is within a relative
    (n − 1)·u of it (Higham 2002, §4.2), moved by (n + 1)·u and one float."""
    margin = (x.size + 1) * _U
    total = float(np.sum(x))
    return up(total * (1.0 + margin), 1) if side > 0 else down(total * (1.0 - margin), 1)


def _cut(d: DiscreteLoss) -> DiscreteLoss:
    """Tails of at most ``tail_mass`` cut, and losses beyond ±`LOSS_CAP`: the top to +∞, the
    bottom moved up (module doc)."""
    m = d.masses
    top_sums = np.cumsum(m[::-1])
    n_top = int(np.searchsorted(top_sums, d.tail_mass, side="right"))
    bottom_sums = np.cumsum(m)
    n_bottom = int(np.searchsorted(bottom_sums, d.tail_mass, side="right"))
    n_top = max(n_top, m.size - 1 - (math.floor(LOSS_CAP / d.h) - d.offset))
    n_bottom = max(n_bottom, math.ceil(-LOSS_CAP / d.h) - d.offset)
    n_top = min(n_top, m.size - 1)
    n_bottom = min(n_bottom, m.size - 1 - n_top)
    if n_top == 0 and n_bottom == 0:
        return d
    if d.lower:  # dropped, or moved down to the last kept point: only smaller sums
        kept = np.array(m[n_bottom : m.size - n_top], dtype=np.float64)
        kept[-1] = (kept[-1] + _sum(m[m.size - n_top :], -1)) * (1.0 - 2.0 * _U)
        return evolve(d, offset=d.offset + n_bottom, masses=kept)
    moved_up = _sum(m[m.size - n_top :], 1) if n_top else 0.0
    kept = np.array(m[n_bottom : m.size - n_top], dtype=np.float64)
    if n_bottom:
        kept[0] = _sum(m[: n_bottom + 1], 1)
    return DiscreteLoss(
        d.h, d.offset + n_bottom, kept, up(d.inf_mass + moved_up, 1), d.error, d.tail_mass
    )
