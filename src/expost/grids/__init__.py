"""Noise-reduction grids: the noise levels a noise-reduction run walks, noisiest first.

`TimeGrid` holds Brownian times t1 > t2 > … > 0 (t = noise variance; APC Def 4.4, BNR Def 3.1).
`EpsilonGrid` holds privacy levels eps1 < eps2 < … with t = Δ²/eps² (APC Sec. 7); it stores eps²
exactly, so the paper's shapes (linear or doubling in eps²) end exactly where they are told to.
Stopping a Brownian mechanism at t costs rho = Δ²/(2t) = eps²/2 (APC Thm 3, BNR Thm 3.4), so the
worst case of a grid is its last point, which a filter must afford before the run (APC Lemma 6.2
condition (2), Thm 5 condition (3)). `OpenEpsilonGrid` records a shape whose end the budget sets
later, through `clip`.

Convention: a grid that knows its sensitivity (`EpsilonGrid`) exposes ``eps``, ``rho`` and
``max_rho`` as properties; `TimeGrid` holds times only, so the same values are methods taking the
sensitivity, ``eps_for(Δ)``, ``rho_for(Δ)`` and ``max_rho_for(Δ)``. Closed grids come from
`EpsilonGrid.linear_in_eps2` / `geometric_in_eps2`, open ones from the `OpenEpsilonGrid`
constructors of the same names.
"""

from expost.grids.epsilon_grid import ClippedGrids, EpsilonGrid, OpenEpsilonGrid
from expost.grids.time_grid import HasTimeFor, TimeGrid

__all__ = [
    "ClippedGrids",
    "EpsilonGrid",
    "HasTimeFor",
    "OpenEpsilonGrid",
    "TimeGrid",
]
