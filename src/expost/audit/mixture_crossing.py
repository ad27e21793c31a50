"""Audit of BNR Lemma A.3's normal-mixture crossing, one-sided (an erratum, THEORY §3).

BNR prints ``P(∃t: B_t >= g(t)) = delta`` for g(t) = sqrt(2(t + r)·log((1/delta)·sqrt((t + r)/r))).
That g comes from a Gaussian mixture of exponential martingales, which is symmetric: Ville's
inequality gives ``P(∃t: |B_t| >= g(t)) <= delta`` (with equality for continuous paths), so
the one-sided crossing probability p is (delta + q)/2 with q = P(both sides crossed): between
delta/2 and delta, not delta. The audit walks B on a geometric grid of times up to 1e5 (which
can only miss crossings) and tests the corrected "<= delta"; its observed rate shows p ≈ delta/2.
Twin: the claim at delta/4, below delta/2 <= p.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from expost.audit._paper import runs
from expost.audit.claims import ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.boundaries import NormalMixture

__all__ = ["mixture_crossing_audits", "one_sided_crossed"]

_R, _DELTA = 1.0, 0.1
_TIMES = np.geomspace(1e-3, 1e5, 1000)


def one_sided_crossed(n: int, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
    """Does a standard BM reach the two-sided mixture boundary g from below, on the grid?"""
    g = NormalMixture(_R, _DELTA)(_TIMES)
    steps = rng.normal(size=(n, _TIMES.size)) * np.sqrt(np.diff(_TIMES, prepend=0.0))
    return np.asarray((np.cumsum(steps, axis=1) >= g).any(axis=1))


@register(QUICK, PAPER)
def mixture_crossing_audits(suite: str) -> list[Audit]:
    """P(one-sided crossing) <= delta (corrected "<="); observed about delta/2."""
    return [
        Audit(
            name="bnr-lemma-a.3/one-sided-crossing",
            source="BNR Lemma A.3 (corrected: <=)",
            statement=(
                f"standard BM on 1000 geometric times in [1e-3, 1e5], two-sided normal-mixture "
                f"boundary g (r={_R:g}): P(exists t: B_t >= g(t)) <= {_DELTA:g} (printed: = {_DELTA:g})"
            ),
            claim=ProbabilityClaim(_DELTA),
            simulate=one_sided_crossed,
            n=runs(suite, 4_000, 100_000),
            twin=Twin("bnr-lemma-a.3/claimed-at-delta-over-4", ProbabilityClaim(_DELTA / 4.0)),
            chunk_size=4_000,
        )
    ]
