"""The Skellam idea in one home (THEORY §10; BNR App. E), used by mechanisms and audits alike.

- `expost.skellam.pmf`: the Skellam pmf, floats and mpmath (the one implementation), and
  Chernoff bounds on its tails;
- `expost.skellam.loss`: `SkellamLoss`, the mechanism's privacy loss with safe-sided
  divergences, and Agarwal–Kairouz–Liu's Rényi bound;
- `expost.skellam.boundary`: `SkellamPrivacyBoundary`, a time-uniform privacy boundary ψ;
- `expost.skellam.crossing`: the exact probability that ψ is crossed on a fixed grid.

A lower layer: it imports no mechanism, filter, session, audit or application.
"""

from __future__ import annotations

from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.skellam.crossing import (
    SkellamCrossing,
    skellam_boundary_crossing,
    skellam_crossing_probability,
)
from expost.skellam.loss import SkellamLoss, akl_eps_for_delta, akl_renyi

__all__ = [
    "SkellamCrossing",
    "SkellamLoss",
    "SkellamPrivacyBoundary",
    "akl_eps_for_delta",
    "akl_renyi",
    "skellam_boundary_crossing",
    "skellam_crossing_probability",
]
