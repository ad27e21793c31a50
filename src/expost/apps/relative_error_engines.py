"""APC Sec. 7's two float engines: one session per trial, or every trial at once.

`run_interactive` runs the protocol (`expost.apps.relative_error_protocol.walk`) through one
`PrivateSession` per trial, the reference; `run_batch` runs every trial in lock-step rounds
(`BatchBudget`, `ExponentialMechanism.rank_batch`, `brownian_trials`,
`DoublingMethod.run_trials`), the same law. Releases: ``bm``, a Brownian mechanism on the eps²
grid up to the largest level the filter admits (APC Thm 5, condition (3)); ``doubling``, fresh
Gaussian tries at doubling eps² (APC Sec. 7.1, Thm 1).
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from expost._validation import generator
from expost.apps.batch_budget import BatchBudget
from expost.apps.relative_error_protocol import (
    DOUBLING_RATIO,
    METHODS,
    Method,
    Settings,
    TrialResults,
    histograms,
    walk,
    within_alpha,
)
from expost.errors import InvalidParameter
from expost.filters import BrownianCost, GaussianCost
from expost.mechanisms import DoublingMethod
from expost.mechanisms.trials import brownian_trials
from expost.session import PrivateSession

__all__ = ["run_batch", "run_interactive"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
_CHUNK = 16  # grid points per lazy BM step: most releases stop within the first few levels


def _method(value: object) -> Literal["bm", "doubling"]:
    if value not in METHODS:
        raise InvalidParameter("method", value, "must be 'bm' or 'doubling'")
    return "bm" if value == "bm" else "doubling"


def run_interactive(
    counts: npt.ArrayLike, method: str, settings: Settings, rng: np.random.Generator
) -> TrialResults:
    """The protocol through `PrivateSession`, one trial (row of ``counts``) at a time."""
    data, m, g = histograms(counts), _method(method), generator(rng)
    rows = [_session_trial(row, m, settings, g) for row in data]
    returned, precise, spent = zip(*rows, strict=True)
    return TrialResults(
        np.array(returned, dtype=np.intp), np.array(precise, dtype=np.intp), np.array(spent)
    )


def _session_trial(
    counts: FloatArray, method: Method, settings: Settings, rng: np.random.Generator
) -> tuple[int, int, float]:
    session = PrivateSession(settings.filter(), rng)

    def release(y: float) -> tuple[bool, float]:
        if method == "bm":
            t = session.brownian(y, 1.0, settings.open_grid(), settings.stop)
            return t.stopped, float(t.value[0])
        d = session.doubling(y, 1.0, settings.start_eps2, DOUBLING_RATIO, settings.stop)
        return d.stopped, float(d.value)

    cheapest = (
        BrownianCost.from_eps(math.sqrt(settings.start_eps2))
        if method == "bm"
        else GaussianCost(settings.start_eps2 / 2.0)
    )
    selection = (settings.eps_em, settings.mechanism.cost())
    returned, precise = walk(session, counts, settings.alpha, selection, cheapest, release)
    spent = session.spent
    assert isinstance(spent, float)  # both filters spend one additive unit
    return returned, precise, spent / settings.unit


def run_batch(
    counts: npt.ArrayLike,
    method: str,
    settings: Settings,
    rng: np.random.Generator,
) -> TrialResults:
    """The protocol for every trial (row of ``counts``) at once, in lock-step rounds.

    Same law as `run_interactive`. The exponential mechanism's choices in successive rounds are
    drawn at once (`ExponentialMechanism.rank_batch`, the same law as one draw per round over
    the elements left) and revealed one round at a time; each round is charged ``em_rho``
    (eps_EM²/8 under zcdp, mu(eps_EM/2)²/2 under gdp: 0.0019633 rho units at eps_EM = 0.1).
    """
    data, m, g = histograms(counts), _method(method), generator(rng)
    n = data.shape[0]
    budget = BatchBudget.start(settings.filter(), n)
    em = settings.mechanism
    em_rho = settings.em_rho
    cheapest = (
        float(BatchBudget.bm_cost(settings.start_eps2)) if m == "bm" else settings.start_eps2 / 2.0
    )
    # em + cheapest with room for the roundings of two separate spends (a few ulps of rho)
    entry = em_rho + cheapest + 16.0 * 2.0**-53 * budget.rho
    release = _bm_release if m == "bm" else _doubling_release
    order = em.rank_batch(data, n, g)  # round k's choice over the elements left: order[:, k]
    returned = np.zeros(n, dtype=np.intp)
    precise = np.zeros(n, dtype=np.intp)
    active = np.arange(n)
    for k in range(data.shape[1]):
        active = active[budget.admits(entry, active)]
        if active.size == 0:
            break
        choice = order[active, k]
        budget = budget.spend(em_rho, active)
        y = data[active, choice]
        budget, ok, value = release(budget, active, y, settings, g)
        returned[active] += ok
        precise[active] += ok & within_alpha(value, y, settings.alpha)
    return TrialResults(returned, precise, np.array(budget.spent))


Release = tuple[BatchBudget, npt.NDArray[np.bool_], FloatArray]


def _bm_release(
    budget: BatchBudget,
    active: IntArray,
    y: FloatArray,
    settings: Settings,
    rng: np.random.Generator,
) -> Release:
    grids = settings.open_grid().clip_each(budget.max_bm_eps(active))
    t = brownian_trials(y, grids, settings.stop, rng, chunk=_CHUNK)
    cost = BatchBudget.bm_cost(grids.at(t.end_index))
    return budget.spend(cost, active), t.stopped, t.value[:, 0]


@functools.lru_cache(maxsize=8)
def _schedule(settings: Settings) -> DoublingMethod:
    """The doubling schedule as long as the whole budget could pay for."""
    return settings.doubling(int(math.log2(2.0 * settings.rho / settings.start_eps2)) + 2)


def _doubling_release(
    budget: BatchBudget,
    active: IntArray,
    y: FloatArray,
    settings: Settings,
    rng: np.random.Generator,
) -> Release:
    longest = _schedule(settings)
    # tries are affordable in order: count, per trial, the cumulative costs the budget admits
    caps = budget.admits(longest.cumulative_cost[:, None], active).sum(axis=0)
    assert np.all(caps >= 1)  # the entry check kept room for the first try
    runs = longest.run_trials(y, rng, max_tries=caps)
    return budget.spend(runs.cost, active), runs.stopped, runs.value.reshape(-1)
