"""Empirical privacy lower bounds on neighbouring inputs; each twin adds half the noise.

- ``laplace-l1-eps-dp`` (THEORY §2): the Laplace mechanism on R³ with ℓ1 sensitivity 1 and
  scale 1/eps, neighbours differing in every coordinate, is eps-DP. The scalar output is the
  exact privacy loss of the release (post-processing keeps DP); the distinguishing test's lower
  bound on eps must stay below eps. (The scalar case is the ``laplace-eps-dp`` example audit.)
- ``gaussian-pdp-exact`` (APC Def 2.2, THEORY §2): the Gaussian mechanism is not pure DP, so
  the audited statement is its exact probabilistic DP: ``P(L > eps) <= delta`` with eps solving
  ``P(N(rho, 2rho) > eps) = delta`` (`GaussianLoss.tail`); pDP implies (eps, delta)-DP. The claim
  holds with equality: the tightest audit possible.
- ``exponential-eps-dp`` (THEORY §2, Cesar–Rogers): the exponential mechanism with monotone
  scores is eps-DP. Ten candidates with score 0 under x; under x' all but candidate 0 gain 1.
  The output is the indicator of candidate 0, whose probability ratio (1 + 9e^eps)/10 is close
  to e^eps.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from expost.audit._shared import gaussian_loss, gaussian_loss_on, laplace_loss, neighbours, runs
from expost.audit.claims import DPClaim, ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.loss import GaussianLoss
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.mechanisms.exponential import ExponentialMechanism

if TYPE_CHECKING:
    from expost.backends import Draws

__all__ = [
    "exponential_eps_dp",
    "exponential_pairs",
    "gaussian_loss_exceeds",
    "gaussian_loss_exceeds_on",
    "gaussian_pdp_exact",
    "laplace_l1_eps_dp",
    "laplace_loss_pairs",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_EPS = 1.0
_RHO, _DELTA = 0.5, 0.05
_CANDIDATES = 10
_DIGITS = 12  # the loss's atoms at ±eps are merged across float rounding


def laplace_loss_pairs(eps: float, n: int, rng: np.random.Generator) -> FloatArray:
    """Exact losses of Lap(1/eps) releases in R³ under x (column 0) and x' (column 1)."""
    fx, fxp = neighbours(1.0, 3, norm=1)
    mech = LaplaceMechanism(1.0, eps)
    under_x = laplace_loss(mech.run_batch(fx, n, rng), float(mech.scale), fx, fxp)
    under_xp = laplace_loss(mech.run_batch(fxp, n, rng), float(mech.scale), fx, fxp)
    return np.asarray(np.round(np.column_stack([under_x, under_xp]), _DIGITS), dtype=np.float64)


@register(QUICK, PAPER)
def laplace_l1_eps_dp(suite: str) -> Audit:
    """The ℓ1 Laplace mechanism in R³ is eps-DP."""
    return Audit(
        name="laplace-l1-eps-dp",
        source="THEORY §2 (Laplace)",
        statement=(
            f"Laplace on R^3, l1 sensitivity 1, scale 1/eps, eps={_EPS:g}: eps-DP "
            "(distinguishing test on the exact loss)"
        ),
        claim=DPClaim(_EPS),
        simulate=partial(laplace_loss_pairs, _EPS),
        n=runs(suite, 40_000, 2_000_000),
        twin=Twin(
            "laplace-l1-eps-dp/half-the-noise", DPClaim(_EPS), partial(laplace_loss_pairs, 2 * _EPS)
        ),
        chunk_size=100_000,
    )


def _pdp_eps(rho: float, delta: float) -> float:
    """The eps with P(L > eps) = delta for the loss N(rho, 2rho) (`GaussianLoss.tail`)."""
    from scipy import optimize  # lazy: keeps the `expost` command fast

    loss = GaussianLoss(rho)
    high = rho + 20.0 * np.sqrt(2.0 * rho)
    return float(optimize.brentq(lambda e: loss.tail(e) - delta, rho, high, xtol=1e-14))


def gaussian_loss_exceeds(sigma: float, eps: float, n: int, rng: np.random.Generator) -> BoolArray:
    """Releases N(f(x), σ²I) in R³ (ℓ2 sensitivity 1): is the exact loss above eps?"""
    fx, fxp = neighbours(1.0, 3)
    mech = GaussianMechanism.from_sigma(1.0, sigma)
    y = mech.run_batch(fx, n, rng)
    return np.asarray(gaussian_loss(y, sigma**2, fx, fxp) > eps)


def gaussian_loss_exceeds_on(sigma: float, eps: float, n: int, draws: Draws) -> Any:
    """`gaussian_loss_exceeds` on an array backend: y = f(x) + σ·N(0, I) drawn there."""
    fx, fxp = neighbours(1.0, 3)
    y = draws.asarray(fx) + sigma * draws.normal((n, fx.size))
    return gaussian_loss_on(y, sigma**2, fx, fxp, draws) > eps


@register(QUICK, PAPER)
def gaussian_pdp_exact(suite: str) -> Audit:
    """The Gaussian mechanism is exactly (eps, delta)-pDP with eps from its loss law."""
    sigma = GaussianMechanism(1.0, _RHO).sigma
    eps = _pdp_eps(_RHO, _DELTA)
    return Audit(
        name="gaussian-pdp-exact",
        source="APC Def 2.2, THEORY §2 (Gaussian)",
        statement=(
            f"Gaussian on R^3, l2 sensitivity 1, rho={_RHO:g}: P(L > eps={eps:.4g}) <= "
            f"{_DELTA:g} (eps from the loss law N(rho, 2rho); holds with equality)"
        ),
        claim=ProbabilityClaim(_DELTA),
        simulate=partial(gaussian_loss_exceeds, sigma, eps),
        n=runs(suite, 40_000, 2_000_000),
        twin=Twin(
            "gaussian-pdp-exact/half-the-noise",
            ProbabilityClaim(_DELTA),
            partial(gaussian_loss_exceeds, sigma / 2.0, eps),
            partial(gaussian_loss_exceeds_on, sigma / 2.0, eps),
        ),
        chunk_size=100_000,
        on_backend=partial(gaussian_loss_exceeds_on, sigma, eps),
    )


def exponential_pairs(eps: float, n: int, rng: np.random.Generator) -> FloatArray:
    """Is candidate 0 chosen? Column 0 under x (all scores 0), column 1 under x'."""
    mech = ExponentialMechanism(eps, monotone=True)
    under_x = np.zeros(_CANDIDATES)
    under_xp = np.ones(_CANDIDATES)
    under_xp[0] = 0.0
    return np.column_stack(
        [mech.run_batch(under_x, n, rng) == 0, mech.run_batch(under_xp, n, rng) == 0]
    ).astype(np.float64)


@register(QUICK, PAPER)
def exponential_eps_dp(suite: str) -> Audit:
    """The monotone exponential mechanism is eps-DP."""
    return Audit(
        name="exponential-eps-dp",
        source="THEORY §2 (exponential mechanism), Cesar–Rogers",
        statement=(
            f"Exponential mechanism (Gumbel-max), {_CANDIDATES} candidates, monotone scores, "
            f"eps={_EPS:g}: eps-DP (output: is candidate 0 chosen)"
        ),
        claim=DPClaim(_EPS),
        simulate=partial(exponential_pairs, _EPS),
        n=runs(suite, 40_000, 2_000_000),
        twin=Twin(
            "exponential-eps-dp/half-the-noise", DPClaim(_EPS), partial(exponential_pairs, 2 * _EPS)
        ),
        chunk_size=100_000,
    )
