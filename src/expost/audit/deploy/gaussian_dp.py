"""The Gaussian-DP filter's (eps, delta) claim at deployment deltas (issue 16; THEORY §9).

Interaction: as the rho filters' deploy audits (`expost.audit.deploy.filters`) — up to 8
rounds, sizes (and, for the mixed analyst, kinds: Gaussian, Brownian, or the exponential
mechanism on two candidates with monotone scores) chosen from the previous released value, a round runs only if the library's `GaussianDPFilter` admits it, and a
Brownian mechanism stops as soon as the total loss exceeds eps + 1 (after which the run plays
no more rounds). The filter is `GaussianDPFilter.from_dp(eps, delta)` at the deploy delta.

Claim: the filter's (eps, delta)-DP, tested as the hockey-stick mean
``E[(1 − e^(eps − L))⁺] <= delta`` of the total loss L (as the paper audit,
`expost.audit.paper.gaussian_dp`: mu-GDP does not bound ``P(L > eps)`` by delta).

Proposal and weight bound: every round's loss tilted given the past by one θ
(`expost.audit.tilting`). A mu_n-GDP round has ``log E[e^(θL_n)] <= θ(θ+1)·mu_n²/2``: a Gaussian
round's loss is N(mu_n²/2, mu_n²), and a Brownian round priced Δ²/T is the Gaussian shift
experiment with mu_n² = Δ²/T observed up to a stopping time (its likelihood ratio is the last
iterate's). So rho_n = mu_n²/2, and the filter's Σ mu_n² <= mu² on every path gives
Σ rho_n <= rho = mu²/2; the sample ``w·(1 − e^(eps − L))⁺`` is then at most
`hockey_stick_bound` (eps, rho, θ), with θ from `hockey_stick_tilt` (B: times `ROUNDING_MARGIN`,
as runs that spend the whole budget reach it). An exponential-mechanism
round of range e, priced mu_n = mu(e/2), is mu_n-GDP; a mu_n-GDP pair is a garbling of
(N(0, 1), N(mu_n, 1)) (Blackwell; THEORY §9), so by data processing its Rényi
divergence D_(1+θ) is at most (1 + θ)·mu_n²/2, i.e. again log M_n(θ) <= θ(θ+1)·mu_n²/2; its tilt
is exact (two points).

Twins (each refuted at the same delta, its own bound from its true spend):

- ``bm-charged-rho``: Brownian rounds recorded at Δ²/(2T) (the zCDP rho) instead of Δ²/T, so
  the true Σ mu_n² reaches 2·mu² (rho = mu²); its analyst plays Brownian rounds only.
- ``budget-mu``: a filter whose budget is mu instead of mu² (for mu < 1 an overspend:
  rho = mu/2).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit.core import Audit
from expost.audit.deploy.filters import AnyFilter, Kind, budget_of, tilted_losses
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, register_at_deltas
from expost.audit.tilting import (
    ROUNDING_MARGIN,
    ImportanceCase,
    hockey_stick_bound,
    hockey_stick_tilt,
    in_suite,
)
from expost.filters import GaussianDPFilter

__all__ = ["cases", "deploy_gdp_filter_audits", "hockey_stick_run", "hockey_stick_tilting"]

FloatArray = npt.NDArray[np.float64]

EPS = 2.0
_BANK = 1.0  # a BM stops once L > eps + _BANK (as the paper audit)
_QUANTITY = "E[(1 - e^(eps - L))+]"


def hockey_stick_run(
    filt: AnyFilter,
    kind: Kind,
    eps: float,
    tilt: tuple[float, float],
    n: int,
    rng: np.random.Generator,
) -> FloatArray:
    """``w·(1 − e^(eps − L))⁺`` for n interactions (`tilted_losses`, BMs stopped at eps + 1).

    ``tilt = (theta, charge)`` as for `tilted_losses` (θ = 0: plain Monte Carlo).
    """
    loss, log_weight = tilted_losses(filt, kind, eps + _BANK, tilt, n, rng)
    with np.errstate(over="ignore", invalid="ignore"):  # masked where L <= eps
        value = np.exp(log_weight) * -np.expm1(eps - loss)
    out: FloatArray = np.where(loss > eps, value, 0.0)
    return out


def hockey_stick_tilting(eps: float, filt: AnyFilter, charge: float) -> tuple[float, float]:
    """θ for the true budget rho = budget_of(filt)/charge and the weight bound it gives
    (`hockey_stick_bound` times `ROUNDING_MARGIN`)."""
    rho = budget_of(filt) / charge
    theta = hockey_stick_tilt(eps, rho)
    return theta, hockey_stick_bound(eps, rho, theta) * ROUNDING_MARGIN


def _proposal(theta: float, rho: str) -> str:
    return (
        f"every round's loss tilted given the past, theta={theta:.4g}; w(1 - e^(eps-L))+ <= "
        f"exp(-theta eps + theta(theta+1) rho) theta^theta/(1+theta)^(1+theta), rho = {rho}"
    )


def _case(
    delta: float, kind: Kind, twin: str, twin_filter: GaussianDPFilter, twin_charge: float
) -> ImportanceCase:
    filt = GaussianDPFilter.from_dp(EPS, delta)
    theta, bound = hockey_stick_tilting(EPS, filt, 1.0)
    twin_theta, twin_bound = hockey_stick_tilting(EPS, twin_filter, twin_charge)
    mixed = kind == "gdp"
    rounds = (
        "Gaussian / Brownian / exponential-mechanism rounds" if mixed else "Brownian mechanisms"
    )
    name = f"gdp-filter-deploy-{'mixed' if mixed else kind}"
    return ImportanceCase(
        delta=delta,
        name=name,
        source="Smith–Thakurta 2022 + Dong–Roth–Su Cor 2.13 (THEORY §9)",
        statement=(
            f"GaussianDPFilter mu={filt.mu:.4g} (from (eps, delta) = ({EPS:g}, {delta:g})), 8 "
            f"{rounds} sized from past outputs, adversarial stop: hockey-stick "
            f"E[(1 − e^(eps − L))+] <= {delta:g}"
        ),
        proposal=_proposal(theta, "mu^2/2"),
        weight_bound=bound,
        simulate=partial(hockey_stick_run, filt, kind, EPS, (theta, 1.0)),
        twin_name=f"{name}/{twin}",
        twin_proposal=_proposal(twin_theta, "mu^2" if twin_charge < 1.0 else "mu/2"),
        twin_bound=twin_bound,
        twin_simulate=partial(hockey_stick_run, twin_filter, kind, EPS, (twin_theta, twin_charge)),
        quantity=_QUANTITY,
    )


def cases(delta: float) -> list[ImportanceCase]:
    """Mixed rounds (Gaussian, Brownian, EM) with the budget-mu twin; Brownian rounds with the
    bm-charged-rho twin."""
    honest = GaussianDPFilter.from_dp(EPS, delta)
    return [
        _case(delta, "gdp", "budget-mu", GaussianDPFilter(math.sqrt(honest.mu)), 1.0),
        _case(delta, "brownian", "bm-charged-rho", honest, 0.5),
    ]


_QUICK = ("gdp-filter-deploy-mixed",)


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def deploy_gdp_filter_audits(suite: str, delta: float) -> list[Audit]:
    """Both cases at ``delta`` (deploy-quick: the mixed one)."""
    return [c.audit(20_000, 5_000) for c in in_suite(cases(delta), suite, _QUICK)]
