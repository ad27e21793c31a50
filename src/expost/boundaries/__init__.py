"""Time-uniform martingale boundaries and the privacy boundaries built on them.

Martingale boundaries g(v) on intrinsic time v >= 0 bound a standard Brownian motion (or a
sub-Gaussian martingale with variance process v) at all times at once:
``P(∃v: S_v >= g(v)) <= delta`` (THEORY §3, BNR App. A; THEORY §5, Howard et al. 2020/2021).
Privacy boundaries ψ(t) on Brownian time t > 0 bound the privacy loss of a stopped Brownian
mechanism (BNR Def 3.5, Thm 3.6). Every boundary is vectorised: a float in gives a float
out, an array in gives an array out.
"""

from expost.boundaries.martingale import (
    Boundary,
    FACStitched,
    LineCrossing,
    NormalMixture,
    PolynomialStitching,
    apc_psi,
)
from expost.boundaries.privacy import (
    LinearPrivacyBoundary,
    MixturePrivacyBoundary,
    PrivacyBoundary,
)

__all__ = [
    "Boundary",
    "FACStitched",
    "LineCrossing",
    "LinearPrivacyBoundary",
    "MixturePrivacyBoundary",
    "NormalMixture",
    "PolynomialStitching",
    "PrivacyBoundary",
    "apc_psi",
]
