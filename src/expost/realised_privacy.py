"""Realised privacy at a data-dependent stop: counting filters on a grid fixed in advance.

A run whose stop depends on its outputs (an accuracy check, a loss threshold) cannot report
the ε of the rounds it ran as a fixed composition (`expost.privacy_spent`). It can report ε_J
by a grid of counting filters fixed before the first round (THEORY §12, last item; Lécuyer
2021 builds odometers from filters this way): split the schedule into segments (segment j:
rounds fixed in advance, e.g. m_j DP-SGD steps and a check), give segment j a share δ_j of δ
(Σ δ_j <= δ) and let ε_j be the ε at δ_j of the PLD of segments 1..j, made nondecreasing. The
counting filter (ε_j, δ_j) admits K_j >= j segments, so for a run stopped after τ segments the
first j with τ <= K_j is some J <= τ, and ε_J <= ε_τ: reporting ε_τ is valid. On {J = j} the
transcript is a post-processing of the K_j-segment composition, hence
P_x(S) <= E_x'[e^(ε_J)·1_S] + Σ_j δ_j for every event S. Tight at every segment up to the split
of δ (each ε_j is the PLD's, rounded up by `PrivacyLossDistribution.eps`).

The segments' PLDs are those of the rounds' dominating pairs (`expost.pld`), fixed before the
run; a stop between segments is paid as the end of its segment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attrs import frozen

from expost._validation import open_probability, positive
from expost.errors import InvalidParameter
from expost.pld import PrivacyLossDistribution

__all__ = ["CountingGrid", "counting_grid"]


@frozen
class CountingGrid:
    """Counting filters on a grid of budgets: after segment j the report is ``eps[j − 1]`` at
    the total δ, Σ ``deltas`` (module docstring)."""

    eps: tuple[float, ...]
    deltas: tuple[float, ...]

    def reported(self, segments: int) -> float:
        """ε_τ for a run stopped after ``segments`` segments (valid at any stop)."""
        if isinstance(segments, bool) or not 1 <= segments <= len(self.eps):
            raise InvalidParameter("segments", segments, f"must be in [1, {len(self.eps)}]")
        return self.eps[segments - 1]


def counting_grid(
    segments: Sequence[PrivacyLossDistribution],
    delta: float,
    weights: Sequence[float] | None = None,
) -> CountingGrid:
    """The grid (ε_j, δ_j) for a schedule of segments given by their PLDs: δ_j = δ·w_j/Σw
    rounded down (equal weights by default), ε_j the ε at δ_j of segments 1..j, made
    nondecreasing (module docstring)."""
    d = open_probability("delta", delta)
    if not segments:
        raise InvalidParameter("segments", segments, "must hold at least one segment")
    w = [1.0] * len(segments) if weights is None else [positive("weights", x) for x in weights]
    if len(w) != len(segments):
        raise InvalidParameter("weights", weights, f"must have {len(segments)} entries")
    total = math.fsum(w)
    # δ_j rounded down (a smaller δ_j only raises ε_j): Σ δ_j <= δ
    deltas = tuple(math.nextafter(d * x / total, 0.0) for x in w)
    eps: list[float] = []
    pld: PrivacyLossDistribution | None = None
    for segment, delta_j in zip(segments, deltas, strict=True):
        pld = segment if pld is None else pld.compose(segment)
        eps.append(max(float(pld.eps(delta_j)), eps[-1] if eps else 0.0))
    return CountingGrid(tuple(eps), deltas)
