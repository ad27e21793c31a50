"""The safe-side check of the rounding audit (issues 21, 28), shared by tests/test_rounding_*.py.

Every audit test is parametrised by the registry entries it checks (`audits`), so the direction
it checks is the registered one, and tests/rounding/test_rounding_registry.py can see which entries have
an audit.

A value is checked against a 50-digit mpmath reference computed in the test: none may lie on
the unsafe side, none more than a stated number of ulps beyond the exact value, and a planted
round-to-nearest twin must show at least one unsafe result (so the check can fail).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import mpmath as mp
import numpy as np
import numpy.typing as npt
import pytest

from expost.rounding_registry import Rounded, entry

FloatArray = npt.NDArray[np.float64]
Mp = Any  # an mpmath number
DIGITS = 50
N = 2000  # inputs per function
T = TypeVar("T", bound=Callable[..., None])
AUDITED: dict[str, str] = {}  # registry name -> the audit test that checks it


def audits(*names: str) -> Callable[[T], T]:
    """Parametrise an audit test by the registry entries it checks (argument ``rounded``: the
    safe direction comes from the registry, `expost.rounding_registry`), and record it."""
    entries: list[Rounded] = [entry(n) for n in names]

    def mark(test: T) -> T:
        for n in names:
            assert n not in AUDITED, f"{n} is audited twice"
            AUDITED[n] = f"{test.__module__}::{test.__name__}"
        marked: T = pytest.mark.parametrize("rounded", entries, ids=list(names))(test)
        return marked

    return mark


EXTREMES = (
    5e-324,
    1e-320,
    2.0**-1022,
    1e-300,
    1e-200,
    1.5e-154,
    1e-100,
    1e-20,
    1e20,
    1e100,
    1e154,
    1e200,
    1e300,
    1.7e308,
)
"""Subnormal to the largest float: the price audits run there too (issue 37)."""


def representable(want: Sequence[Mp]) -> list[bool]:
    """Which exact values lie within the floats (beyond them the only safe float is +inf)."""
    with mp.workdps(DIGITS):
        return [bool(abs(w) <= mp.mpf(sys.float_info.max)) for w in want]


def log_uniform(rng: np.random.Generator, lo: float, hi: float, size: int) -> FloatArray:
    """``size`` draws log-uniform on [lo, hi]."""
    return np.exp(rng.uniform(math.log(lo), math.log(hi), size))


def _ulps_above(
    got: Sequence[float], want: Sequence[Mp], scale: Sequence[float] | None
) -> FloatArray:
    """(got − want)/ulp(want)/scale for each pair, in 50-digit arithmetic: < 0 is unsafe (UP)."""
    out = []
    with mp.workdps(DIGITS):
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            unit = math.ulp(float(w)) * (1.0 if scale is None else scale[k])
            out.append(float((mp.mpf(g) - w) / unit))
    return np.array(out)


def audit(
    got: Sequence[float],
    want: Sequence[Mp],
    up: bool,
    *,
    ulps: float,
    twin: Sequence[float],
    twin_want: Sequence[Mp] | None = None,
    scale: Sequence[float] | None = None,
    n: int = N,
) -> None:
    """No result on the unsafe side, none more than ``ulps`` (times ``scale``) beyond; the
    twin (round-to-nearest) must show at least one unsafe result. ``n``: the inputs required."""
    sign = 1.0 if up else -1.0
    gap = sign * _ulps_above(got, want, scale)
    assert len(gap) >= n
    assert np.sum(gap < 0.0) == 0, f"{np.sum(gap < 0.0)} unsafe, worst {gap.min()} ulps"
    assert gap.max() <= ulps, f"up to {gap.max()} ulps from the exact value"
    twin_gap = sign * _ulps_above(twin, want if twin_want is None else twin_want, None)
    assert np.sum(twin_gap < 0.0) > 0, "the check did not catch the round-to-nearest twin"
