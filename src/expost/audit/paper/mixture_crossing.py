"""Audits of BNR Lemma A.3's normal-mixture crossing, one-sided (an erratum, THEORY §3).

BNR prints ``P(∃t: B_t >= g(t)) = delta`` for g(t) = sqrt(2(t + r)·log((1/delta)·sqrt((t + r)/r))).
That g comes from a Gaussian mixture of exponential martingales, which is symmetric: Ville's
inequality gives ``P(∃t: |B_t| >= g(t)) <= delta`` (with equality for continuous paths), so
the one-sided crossing probability p is (delta + q)/2 with q = P(both sides crossed): between
delta/2 and delta, not delta. Two audits, from standard BM paths on 1000 geometric times in
[1e-3, 1e5] (and t = 0):

- the corrected "p <= delta" from the crossings seen on the grid, a lower estimate of the
  continuous crossing (twin: the claim at delta/4, below delta/2 <= p);
- the printed "p = delta", which implies P(B never reaches g) <= 1 − delta, refuted from an upper
  estimate of p (`crossing_bound`): E[1 − crossing_bound] <= 1 − p, so a lower confidence bound
  on its mean above 1 − delta refutes the equality (twin: the same at 2·delta).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from expost.audit._shared import runs
from expost.audit.claims import ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import PAPER, QUICK, register
from expost.boundaries import NormalMixture

__all__ = [
    "crossing_bound",
    "mixture_crossing_audits",
    "never_crossed_lower",
    "one_sided_crossed",
]

FloatArray = npt.NDArray[np.float64]

_R, _DELTA = 1.0, 0.1
_TIMES = np.concatenate(([0.0], np.geomspace(1e-3, 1e5, 1000)))
_BOUNDARY = NormalMixture(_R, _DELTA)
_STATEMENT = (
    "standard BM on 1000 geometric times in [1e-3, 1e5], two-sided normal-mixture boundary g "
    f"(r={_R:g}, delta={_DELTA:g})"
)


def brownian_paths(times: FloatArray, n: int, rng: np.random.Generator) -> FloatArray:
    """n standard BM paths at ``times`` (increasing, starting at 0 where B = 0)."""
    steps = rng.normal(size=(n, times.size - 1)) * np.sqrt(np.diff(times))
    return np.concatenate((np.zeros((n, 1)), np.cumsum(steps, axis=1)), axis=1)


def crossing_bound(
    times: FloatArray,
    level: FloatArray,
    paths: FloatArray,
    tail: Callable[[FloatArray], FloatArray],
) -> FloatArray:
    """Per path, an upper bound on P(B reaches ``level`` at some t >= 0 | B at ``times``).

    1 where the path reaches the level on the grid. Otherwise, between grid points the level, if
    concave, lies above its chord, which the Brownian bridge crosses with probability
    ``exp(−2·gap₀·gap₁/Δt)`` (the line crossing of BNR App. A; exact for a linear level);
    segments are independent given the grid (Markov), and after the last time ``tail(B_T)``
    bounds the crossing. So E[crossing_bound] >= P(crossing).
    """
    gaps = level - paths
    crossed = (gaps <= 0.0).any(axis=1)
    gap = np.maximum(gaps, 0.0)
    with np.errstate(divide="ignore"):  # a zero gap is a crossing, set to 1 below
        log_stays = np.log1p(-np.exp(-2.0 * gap[:, :-1] * gap[:, 1:] / np.diff(times)))
    between = -np.expm1(log_stays.sum(axis=1))
    bound: FloatArray = np.where(crossed, 1.0, np.minimum(1.0, between + tail(paths[:, -1])))
    return bound


def _mixture_tail(b: FloatArray) -> FloatArray:
    """After T: |B_t| >= g(t) iff M(t) = sqrt(r/(t + r))·exp(B_t²/(2(t + r))) >= 1/delta, and M is
    a martingale, so by Ville's inequality from T the crossing has probability <= delta·M(T)."""
    t = _TIMES[-1]
    tail: FloatArray = _DELTA * np.sqrt(_R / (t + _R)) * np.exp(b * b / (2.0 * (t + _R)))
    return tail


def one_sided_crossed(n: int, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
    """Does a standard BM reach the two-sided mixture boundary g from below, on the grid?"""
    paths = brownian_paths(_TIMES, n, rng)
    return np.asarray((paths >= _BOUNDARY(_TIMES)).any(axis=1))


def never_crossed_lower(n: int, rng: np.random.Generator) -> FloatArray:
    """1 − `crossing_bound` for g (concave: with u = t + r, g² = 2u(ℓ + ½log(u/r)), ℓ = log(1/delta),
    and 2g²·(g²)'' = 4ℓ + 2log(u/r) < (2ℓ + log(u/r) + 1)² = ((g²)')²); mean <= P(never)."""
    paths = brownian_paths(_TIMES, n, rng)
    lower: FloatArray = 1.0 - crossing_bound(_TIMES, _BOUNDARY(_TIMES), paths, _mixture_tail)
    return lower


def _never(delta: float) -> ImportanceClaim:
    return ImportanceClaim(
        1.0 - delta,
        1.0,
        "plain law (w = 1); h = 1 − (grid crossing, else bridge crossings + delta·M(T))",
        quantity="P(B never reaches g)",
    )


@register(QUICK, PAPER)
def mixture_crossing_audits(suite: str) -> list[Audit]:
    """P(one-sided crossing) <= delta holds (corrected "<="); the printed "= delta" is refuted."""
    return [
        Audit(
            name="bnr-lemma-a.3/one-sided-crossing",
            source="BNR Lemma A.3 (corrected: <=)",
            statement=(
                f"{_STATEMENT}: P(exists t: B_t >= g(t)) <= {_DELTA:g} (printed: = {_DELTA:g})"
            ),
            claim=ProbabilityClaim(_DELTA),
            simulate=one_sided_crossed,
            n=runs(suite, 4_000, 100_000),
            twin=Twin("bnr-lemma-a.3/claimed-at-delta-over-4", ProbabilityClaim(_DELTA / 4.0)),
            chunk_size=4_000,
        ),
        Audit(
            name="bnr-lemma-a.3/printed-equality",
            source="BNR Lemma A.3 (as printed)",
            statement=(
                f"{_STATEMENT}: printed P(exists t: B_t >= g(t)) = {_DELTA:g}, so "
                f"P(B never reaches g) <= {1.0 - _DELTA:g}; estimated from below with Brownian-bridge "
                "crossings between grid times and Ville's inequality after the last"
            ),
            claim=_never(_DELTA),
            simulate=never_crossed_lower,
            n=runs(suite, 4_000, 100_000),
            expected="refuted",
            twin=Twin("bnr-lemma-a.3/printed-equality/claimed-at-2-delta", _never(2.0 * _DELTA)),
            chunk_size=4_000,
        ),
    ]
