"""The Poisson-subsampled Gaussian sum: one DP-SGD step, sampled by the mechanism itself.

Each record (a row of ``records``) is kept independently with probability q, every kept row is
clipped to ℓ2 norm Δ, the kept rows are summed and N(0, (σ·Δ)²) is added to each coordinate.
Under add/remove neighbours the step is dominated by the Poisson-subsampled Gaussian pairs of
THEORY §12 (remove: ((1−q)·N(0, σ²) + q·N(1, σ²), N(0, σ²)); add: the reverse pair with the
mixture second; Zhu, Dong & Wang 2022 Thm 11, Mironov, Talwar & Zhang 2019 §3.3), in units of
Δ: its cost is `SubsampledGaussianCost` (σ, q), which every filter can price (as the Gaussian
without subsampling, a valid upper bound) and `PLDFilter` prices by the subsampled pair.

The sampling is the mechanism's, not the caller's (a wrong sample rate is the commonest
accounting error in DP-SGD code), and is on the safe side in floating point: a row is kept when
a uniform 53-bit integer is below floor(q·2⁵³), so it is kept with probability at most q
exactly (a smaller q is dominated, THEORY §12). Rows are clipped to Δ·(1 − 2⁻³⁰), so the
rounding error of the computed norm cannot carry a clipped row past Δ. Float noise only (numpy's
normal sampler): in the secure mode the session refuses it (`expost.rounds.NOT_EXACT`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._faults import first
from expost._validation import (
    FLOAT_LIMIT,
    as_float,
    check_scale,
    finite_array,
    generator,
    positive,
    positive_int,
    sampling_probability,
    validator,
)
from expost.costs import PoissonSampled
from expost.errors import InvalidParameter, refused
from expost.filters.costs import SubsampledGaussianCost
from expost.guarantees import ZCDP
from expost.rounding import up_exact

__all__ = [
    "MAX_ENTRIES",
    "MAX_RECORDS",
    "SubsampledGaussianMechanism",
    "clip_rows",
    "records_array",
]

#: Most rows a release takes: the sum of the clipped rows stays below n·Δ <= 2**1024.
MAX_RECORDS = 2**22
#: Most entries (rows × columns) a release takes (memory and time bound a round's work).
MAX_ENTRIES = 2**26
_SCALE = 1 << 53  # uniform integers in [0, 2⁵³)
_CLIP = 1.0 - 2.0**-30  # rows are clipped to Δ·_CLIP: the float norm's error stays inside Δ


def records_array(name: str, value: object) -> npt.NDArray[np.float64]:
    """The records as an (n, d) float array: an (n, d) array of finite reals, or (n,) for
    n records of one coordinate (d = 1); n >= 1, d >= 1, |x| <= 2**1000, n <= `MAX_RECORDS`
    and n·d <= `MAX_ENTRIES`. Bools, strings, NaN and inf are refused."""
    if isinstance(value, str | bytes):
        raise refused(name, value, "must be an array of real numbers, not a string")
    arr = finite_array(name, cast("npt.ArrayLike", value))  # non-numbers, bools, NaN/inf refused
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.size == 0:
        raise refused(name, value, f"must be a non-empty (n, d) or (n,) array (shape {arr.shape})")
    n, d = arr.shape
    if n > MAX_RECORDS:
        raise refused(name, value, f"n = {n} rows is above the limit {MAX_RECORDS}")
    if n * d > MAX_ENTRIES:
        raise refused(name, value, f"n·d = {n * d} is above the limit {MAX_ENTRIES}")
    if np.any(big := np.abs(arr) > FLOAT_LIMIT):
        raise refused(name, value, f"must have magnitude at most 2**1000: {first(big)} is above")
    return arr


def clip_rows(x: Any, sensitivity: float, xp: Any) -> Any:
    """Each row of the (k, d) float64 array ``x`` (of the array namespace ``xp``: numpy, or
    torch's or cupy's through array-api-compat) scaled to ℓ2 norm at most Δ·(1 − 2⁻³⁰), on
    its device; rows within it are unchanged. The norm is computed as m·sqrt(Σ(x/m)²), m the
    row's largest |x|: no overflow."""
    m = xp.max(xp.abs(x), axis=1)
    ones = xp.ones_like(m)
    norm = m * xp.sqrt(xp.sum((x / xp.where(m > 0.0, m, ones)[:, None]) ** 2, axis=1))
    limit = sensitivity * _CLIP
    scale = xp.where(norm > limit, limit / xp.where(norm > 0.0, norm, ones), ones)
    return x * scale[:, None]


@frozen
class SubsampledGaussianMechanism:
    """Σ over a Poisson sample (rate ``sampling_prob``) of rows clipped to ℓ2 norm
    ``sensitivity``, plus N(0, (``sigma``·``sensitivity``)²) per coordinate (module docstring;
    THEORY §12). ``sigma`` is the noise multiplier."""

    sensitivity: float = field(converter=as_float, validator=validator(positive))
    sigma: float = field(converter=as_float, validator=validator(positive))
    sampling_prob: float = field(converter=as_float, validator=validator(sampling_probability))

    def __attrs_post_init__(self) -> None:
        check_scale("sigma", self.sigma, self.noise_std)
        if self.noise_std > FLOAT_LIMIT:
            raise InvalidParameter(
                "sigma", self.sigma, f"σ·Δ = {self.noise_std} is above the limit 2**1000"
            )
        if self.sensitivity * MAX_RECORDS > FLOAT_LIMIT:
            raise InvalidParameter(
                "sensitivity", self.sensitivity, "must be at most 2**1000 / MAX_RECORDS"
            )

    @property
    def noise_std(self) -> float:
        """σ·Δ rounded up (never less noise than the cost claims)."""
        return up_exact(Fraction(self.sigma) * Fraction(self.sensitivity))

    @property
    def threshold(self) -> int:
        """floor(q·2⁵³): a row is kept when a uniform integer in [0, 2⁵³) is below it."""
        q = Fraction(self.sampling_prob)
        return q.numerator * _SCALE // q.denominator

    def cost(self) -> PoissonSampled:
        """`SubsampledGaussianCost.from_sigma(sigma, sampling_prob)`: `PoissonSampled` of the
        Gaussian at σ (σ carried, rho = 1/(2σ²) rounded up)."""
        return SubsampledGaussianCost.from_sigma(self.sigma, self.sampling_prob)

    def guarantee(self) -> ZCDP:
        """1/(2σ²)-zCDP (rounded up): the Gaussian without subsampling dominates the step (a
        valid bound; `expost.pld` and `PLDFilter` use the subsampled pair, far tighter)."""
        return ZCDP(self.cost().of.rho)

    def clipped(self, records: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Each row scaled to ℓ2 norm at most Δ·(1 − 2⁻³⁰) (rows within it are unchanged).
        The norm is computed as m·sqrt(Σ(x/m)²), m the row's largest |x|: no overflow."""
        return np.asarray(clip_rows(records_array("records", records), self.sensitivity, np))

    def run(self, records: npt.ArrayLike, source: np.random.Generator) -> npt.NDArray[Any]:
        """One release: a float vector of length d (the columns of ``records``)."""
        out: npt.NDArray[np.float64] = self.run_batch(records, 1, source)[0]
        return out

    def run_batch(
        self, records: npt.ArrayLike, trials: int, source: np.random.Generator
    ) -> npt.NDArray[Any]:
        """``trials`` independent releases (fresh samples and noise), shape (trials, d)."""
        rng = generator(source, "source")
        n = positive_int("trials", trials)
        rows = self.clipped(records)
        keep = rng.integers(0, _SCALE, size=(n, rows.shape[0])) < self.threshold
        sums = keep.astype(np.float64) @ rows
        out: npt.NDArray[np.float64] = sums + rng.normal(0.0, self.noise_std, sums.shape)
        return out
