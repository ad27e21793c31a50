"""The optimistic side's merged cells against 50-digit quadrature (issue 40 item 4).

`expost.pld.optimistic` takes a merged cell's P_j and Q_j to be within a relative
`MERGE_ERROR` = 2^-40 of their exact values; here they are computed by the library's quadrature
for a Gaussian round and compared with mpmath's 50-digit integrals of the density (P) and of the
density times e^{−L} (Q) over the cell. Twin: the same cells compared with integrals over cells
shifted by a thousandth of their width must fail the tolerance.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

from expost.pld.discretise import _cells, quadrature
from expost.pld.optimistic import MERGE_ERROR
from expost.pld.pairs import gaussian_laws


def _exact(mu: float, lo: float, hi: float) -> tuple[object, object]:
    """P and Q masses of x in [lo, hi] for the pair N(μ, 1) vs N(0, 1) (x the noise variable)."""
    with mp.workdps(50):
        m = mp.mpf(mu)
        p = mp.ncdf(hi - m) - mp.ncdf(lo - m)
        q = mp.ncdf(hi) - mp.ncdf(lo)
        return p, q


def test_merged_cells_are_within_merge_error() -> None:
    mu, h = 0.7, 5e-4
    part = gaussian_laws(mu, 1.0, 1e-16)[0].parts[0]
    idx, ends = _cells(part, h)
    j, x, dens = quadrature(part, h)[:3]
    first = int(idx[0])
    pm = np.bincount(j - first, weights=dens)
    qm = np.bincount(j - first, weights=dens * np.exp(-part.loss(x)))
    worst = 0.0
    shifted_fails = 0
    for c in range(200, pm.size - 200, 997):  # cells across the bulk
        p, q = _exact(mu, float(ends[c]), float(ends[c + 1]))
        with mp.workdps(50):
            worst = max(worst, float(abs(mp.mpf(pm[c]) / p - 1)), float(abs(mp.mpf(qm[c]) / q - 1)))
            w = float(ends[c + 1] - ends[c])
            ps, _ = _exact(mu, float(ends[c]) + w / 1000, float(ends[c + 1]) + w / 1000)
            shifted_fails += float(abs(mp.mpf(pm[c]) / ps - 1)) > MERGE_ERROR
    assert worst <= MERGE_ERROR, worst
    assert shifted_fails > 0
