"""The doubling method with exact discrete Gaussian tries (issue 22 item 2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from expost.errors import InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.filters.costs import ZCDPCost
from expost.mechanisms.doubling import DoublingMethod
from expost.mechanisms.exact_doubling import ExactDoubling
from expost.stopping import Never, RelativeError
from expost.testing import audit_mechanism


def bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.default_rng(seed))


def test_every_try_is_the_float_methods_level_exactly() -> None:
    method = DoublingMethod(start_eps2=1e-3, ratio=2.0, max_tries=6, stop=Never())
    exact = ExactDoubling(method)
    assert [t.rho for t in exact.tries] == method.grid.rho.tolist()
    assert exact.cost() == ZCDPCost(method.guarantee().rho)


def test_a_run_that_never_stops_makes_and_pays_every_try() -> None:
    method = DoublingMethod(start_eps2=1e-3, max_tries=6, stop=Never())
    run = ExactDoubling(method).run(50, bits(1))
    assert run.released.dtype == np.int64
    assert run.released.shape == (6,)
    assert run.stop_index is None
    assert not run.stopped
    assert run.cost == ZCDPCost(float(method.cumulative_cost[-1]))


def test_a_run_stops_where_the_rule_accepts_and_pays_its_prefix() -> None:
    # 10,000 with 10% relative error: the first try (sd 1/sqrt(eps2) ≈ 32) already qualifies
    # unless the noise is below −9,300 (about 295 sd; probability far below 1e-100)
    method = DoublingMethod(start_eps2=1e-3, max_tries=8, stop=RelativeError(0.1))
    run = ExactDoubling(method).run(10_000, bits(2))
    assert run.stop_index == 0
    assert run.cost == ZCDPCost(float(method.cumulative_cost[0]))
    assert int(run.value) == int(run.released[0])


def test_a_fractional_sensitivity_or_value_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="sensitivity"):
        ExactDoubling(DoublingMethod(sensitivity=1.5, max_tries=3))
    with pytest.raises(InvalidParameter, match="value"):
        ExactDoubling(DoublingMethod(max_tries=3)).run(0.5, bits(0))


def _claim(rho: float, delta: float) -> float:
    """eps = rho + 2·sqrt(rho·log(1/delta)) (Bun–Steinke; APC Lemma 2.1)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


class Tries:
    """Both tries of a two-try run on a count, released (no stopping: the worst case)."""

    def __init__(self, start_eps2: float) -> None:
        self.doubling = ExactDoubling(
            DoublingMethod(start_eps2=start_eps2, max_tries=2, stop=Never())
        )

    def __call__(self, data: Sequence[Any], rng: np.random.Generator) -> npt.NDArray[np.int64]:
        return self.doubling.run(len(data), GeneratorBits(rng)).released

    def batch(self, data: Sequence[Any], n: int, rng: np.random.Generator) -> npt.NDArray[Any]:
        """n runs at once: with a rule that never stops, a run is its tries drawn independently."""
        b = GeneratorBits(rng)
        return np.stack([t.run_batch(len(data), n, b) for t in self.doubling.tries], axis=1)


def _refuted(mechanism: Tries) -> bool:
    rho = float(DoublingMethod(start_eps2=0.25, max_tries=2).cumulative_cost[-1])  # 0.375
    result = audit_mechanism(
        mechanism, eps=_claim(rho, 1e-3), delta=1e-3, datasets=[[1, 2]], samples=20_000, seed=4
    )
    return result.refuted


def test_exact_doubling_is_not_refuted_at_its_claim() -> None:
    assert not _refuted(Tries(0.25))


def test_exact_doubling_twin_is_refuted() -> None:
    # planted bug: tries at 16 times the eps² the run is charged for
    assert _refuted(Tries(4.0))
