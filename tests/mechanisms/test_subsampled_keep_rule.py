"""The Poisson sample's keep rule, exactly: a row is kept iff its uniform 53-bit integer is below
T = ⌊q·2⁵³⌋ (computed here in rationals), so P(keep) = T/2⁵³ <= q (issue 41, item 7).

A second guard, beside tests/house/test_planted_bugs.py, of the rule "a row kept when the
integer equals T" (then P(keep) = (T + 1)/2⁵³ > q): here through `run_batch` and a session's
`subsampled_gaussian`, each trial's integers scripted to T − 1, T and T + 1 for every row and
the noise scripted to 0, so the release is the sum of exactly the kept rows.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from expost import PrivateSession, ZCDPFilter
from expost.mechanisms import SubsampledGaussianMechanism

ROWS = np.array([[1.0], [2.0], [4.0]])  # each subset of rows has its own sum
QS = [0.5, 0.25, 2.0**-20, 0.1, 0.3, 0.7, 1.0 - 2.0**-53]


class Scripted(np.random.Generator):
    """Uniform integers: trial i's row integers all ``values[i]``; normals all 0."""

    def __init__(self, values: list[int]) -> None:
        super().__init__(np.random.PCG64(0))
        self.values = values

    def integers(self, low: Any, high: Any = None, size: Any = None, **_: Any) -> Any:  # type: ignore[override]  # a stub of the one call made
        trials, rows = size
        return np.repeat(np.array(self.values[:trials], dtype=np.int64)[:, None], rows, axis=1)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        return np.zeros(size)


def _threshold(q: float) -> int:
    return math.floor(Fraction(q) * 2**53)


@pytest.mark.parametrize("q", QS)
def test_rows_are_kept_below_the_threshold_and_dropped_at_it(q: float) -> None:
    t = _threshold(q)
    m = SubsampledGaussianMechanism(8.0, 1.0, q)
    out = m.run_batch(ROWS, 3, Scripted([t - 1, t, t + 1]))
    assert out[:, 0].tolist() == [7.0, 0.0, 0.0]  # all kept below T; none at T or above


@pytest.mark.parametrize("q", [0.5, 0.1])
def test_a_session_step_keeps_rows_by_the_same_rule(q: float) -> None:
    t = _threshold(q)
    for value, kept in ((t - 1, 7.0), (t, 0.0)):
        session = PrivateSession(ZCDPFilter(10.0), Scripted([value]))
        out = session.subsampled_gaussian(ROWS, 8.0, 1.0, q)
        assert float(np.asarray(out).ravel()[0]) == kept, (q, value)
