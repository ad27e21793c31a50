"""APC Sec. 7 with exact samplers: every release an integer drawn from a bit source.

The protocol of `expost.apps.relative_error` (pick the top count left, release it until the APC
stopping condition holds, until the budget is spent), run through `PrivateSession` in secure mode,
one session per trial. Bits come from a `GeneratorBits` over the trial's seeded stream, so a
reproduction is repeatable; a release would use ``exact=True`` (`SecureBits`), same code.

- ``doubling-exact``: the float table's `UnifiedFilter`. Selection by the exponential mechanism
  at eps_EM drawn exactly (`ExponentialMechanism` with ``exact=True``: the float table's law and
  price, eps_EM²/8 rho); counts by the session's `doubling`, a `DoublingMethod` with
  ``exact=True`` (discrete Gaussian tries on the float method's levels, cap and rho; CKS Thm 4).
- ``skellam``: an `ExPostFilter` with the same (eps, delta) (APC Lemma B.2), which composes ex-post
  eps additively. Selection by the exact exponential mechanism at eps_EM/2, charged its eps
  (eps_EM/2 per round: an ex-post filter charges a bounded-range round its eps). Counts by Skellam
  noise reduction (THEORY §10) at rate 1 on the times t = 1/(2·eps²) of the float BM's eps² grid
  (noise variance 1/eps², the Brownian mechanism's at eps), with the `SkellamPrivacyBoundary`
  tuned for ``skellam_level`` at delta/R, R = the most rounds the budget could hold (each pays at
  least the selection), so Σ delta_i <= delta. Each release walks the grid as far as ψ stays
  within the eps left; it is charged ψ(t_stop).

"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from expost._validation import generator, read_only
from expost.apps.relative_error_protocol import EXACT_METHODS, Settings, TrialResults, walk
from expost.errors import InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.filters import BoundedRangeCost, ExPostCost, ExPostFilter, ZCDPCost
from expost.mechanisms.exponential import ExponentialMechanism
from expost.session import PrivateSession
from expost.skellam.boundary import SkellamPrivacyBoundary

__all__ = ["run_exact", "skellam_boundary", "skellam_times"]

FloatArray = npt.NDArray[np.float64]
_RATE = 1.0


def _selection(settings: Settings, share: float = 1.0) -> tuple[float, BoundedRangeCost]:
    """The selection's eps = eps_EM·share and its cost (module docstring): in secure mode the
    session's `exponential_mechanism` draws the exponential mechanism's law exactly."""
    eps = settings.eps_em * share
    return eps, ExponentialMechanism(eps, monotone=True, exact=True).cost()


@functools.lru_cache(maxsize=8)
def skellam_times(settings: Settings) -> FloatArray:
    """The Skellam times t = 1/(2·eps²) of the float BM's whole eps² grid (decreasing)."""
    eps2 = settings.open_grid().clip(math.sqrt(2.0 * settings.rho)).eps2
    return read_only(1.0 / (2.0 * _RATE * eps2))


def _rounds(settings: Settings) -> int:
    """The most rounds an ex-post budget eps can hold: each pays at least the selection."""
    return max(1, math.floor(settings.eps / _selection(settings, 0.5)[1].eps))


@functools.lru_cache(maxsize=8)
def skellam_boundary(settings: Settings) -> SkellamPrivacyBoundary:
    """ψ tuned for ``skellam_level`` at delta/R (R: `_rounds`), sensitivity 1, rate 1."""
    delta = settings.delta / _rounds(settings)
    return SkellamPrivacyBoundary.tuned_for(settings.skellam_level, delta, 1, _RATE)


def run_exact(
    counts: npt.ArrayLike, method: str, settings: Settings, rng: np.random.Generator
) -> TrialResults:
    """The protocol with exact samplers, one secure `PrivateSession` per trial (row of ``counts``).

    ``spent`` is in rho for ``doubling-exact`` and in ex-post eps for ``skellam``.
    """
    data = np.asarray(counts, dtype=np.float64)
    if data.ndim != 2 or not np.all(data == np.rint(data)) or np.any(data < 0):
        raise InvalidParameter("counts", data.shape, "must be (trials, m) integer counts >= 0")
    if method not in EXACT_METHODS:
        raise InvalidParameter("method", method, f"must be one of {EXACT_METHODS}")
    g = generator(rng)
    trial = _doubling_trial if method == "doubling-exact" else _skellam_trial
    rows = [trial(row.astype(np.int64), settings, g) for row in data]
    returned, hits, spent = zip(*rows, strict=True)
    return TrialResults(
        np.array(returned, dtype=np.intp), np.array(hits, dtype=np.intp), np.array(spent)
    )


def _doubling_trial(
    counts: npt.NDArray[np.int64], settings: Settings, rng: np.random.Generator
) -> tuple[int, int, float]:
    session = PrivateSession(settings.filter(), rng, bits=GeneratorBits(rng))
    cheapest = ZCDPCost(settings.start_eps2 / 2.0)

    def release(y: float) -> tuple[bool, float]:
        d = session.doubling(int(y), 1, settings.start_eps2, 2.0, settings.stop)
        return d.stopped, float(d.value.reshape(-1)[0])

    returned, hits = walk(session, counts, settings.alpha, _selection(settings), cheapest, release)
    spent = session.spent
    assert isinstance(spent, float)  # a UnifiedFilter spends one additive unit
    return returned, hits, spent


def _skellam_trial(
    counts: npt.NDArray[np.int64], settings: Settings, rng: np.random.Generator
) -> tuple[int, int, float]:
    f = ExPostFilter(settings.eps, settings.delta)
    session = PrivateSession(f, rng, bits=GeneratorBits(rng))
    psi = skellam_boundary(settings)
    times = skellam_times(settings)
    reach = np.maximum.accumulate(psi.boundary(times))  # max ψ over each prefix of the grid

    def affordable(left: float) -> int:
        """How many grid points a release may walk: ψ stays within the eps left."""
        return int(np.searchsorted(reach, left, side="right"))

    def release(y: float) -> tuple[bool, float]:
        f = session.filter
        assert isinstance(f.remaining, float)
        k = affordable(f.remaining)
        while k > 0 and not f.admits(ExPostCost(float(reach[k - 1]), psi.delta)):
            k -= 1  # the filter's exact sums decide; the float comparison only proposes
        t = session.skellam(int(y), 1, times[:k], _RATE, settings.stop, psi)
        return t.stopped, float(t.value.reshape(-1)[0])

    first = ExPostCost(float(reach[0]), psi.delta)
    returned, hits = walk(
        session, counts, settings.alpha, _selection(settings, 0.5), first, release
    )
    spent = session.spent
    assert isinstance(spent, float)  # ex-post eps (the deltas are fixed: delta/R a round)
    return returned, hits, spent
