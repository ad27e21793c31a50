"""BNR Cor 5.2 (ReducedAboveThreshold on a BM) audited at deployment deltas (issue 13).

The paper audit ``bnr-cor5.2-reduced-above-threshold`` (`expost.audit.paper.threshold`) at
delta ∈ {1e-6, 1e-9, 1e-12} by importance sampling (`expost.audit.rare_event`).

Event: E = {the check halts at N and ``L^BM(T_N) > ψ(T_N)``}, ψ the linear boundary (BNR
Thm 3.6) at delta. E implies the crossing event C = {∃n: L^BM(T_n) > ψ(T_n)}, whose probability
is <= delta; the claim is P(E) <= delta.

Proposal Q: the BM path gets the Girsanov drift θ = 2a of the linear boundary, stopped at τ, the
smallest grid time where the loss crosses ψ (`expost.audit.deploy.brownian.tilted_paths`):
``W(t) = 2a·min(t, τ) + W̃(t)``. The drift must stop at τ because E depends on the path above τ
(the check may halt at any T_N >= τ): then dP/dQ of the whole path is the weight at τ,
``exp(−2aW(τ) + 2a²τ)``. The check's own noise (the Laplace process ζ and the query noises ξ)
is drawn under its plain law: under P it is independent of the BM, and Q keeps that law and that
independence, so the density of (path, noise) factorises and the noise's factor of dP/dQ is 1 —
the likelihood ratio involves the BM path only, and ``E_Q[w(path)·1_E] = P(E)``.

Weight bound: E ⊂ C, and on C ``W(τ) > h(τ) = aτ + b`` (the loss's crossing of ψ), so
``w·1_E <= exp(−2a(aτ + b) + 2a²τ) = exp(−2ab) = delta`` = B (`weight_bound`, with the
1e-6 rounding margin).

Twin: the boundary built for delta^(1/4) (log(1/delta) quartered, as for the time map and
the odometer), with its own grid and drift, claimed at delta; B = delta^(1/4). The paper suite's
twin (a BM adding a quarter of the noise variance it claims) is not refuted here: under the path
tilt its check rarely passes (24 events in 40,000 runs at 1e-9, 1 at 1e-12), and its bound
``delta^(1/4)·e^(3aΔ/4)`` is too loose for the betting bound to clear delta. The boundary for
10·delta is not refuted either: the claim uses only ~8% of delta, so that boundary's event has
probability ~0.8·delta.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.audit._shared import TUNED_AT, neighbours
from expost.audit.core import Audit, Twin
from expost.audit.deploy.brownian import Drift, tilted_paths, weight_bound
from expost.audit.paper.threshold import released_loss_above, threshold_times
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, delta_tag, register_at_deltas
from expost.boundaries import LinearPrivacyBoundary

__all__ = ["NominalLevel", "threshold_claim", "threshold_weights"]

FloatArray = npt.NDArray[np.float64]

_D = 3


@frozen
class NominalLevel:
    """ψ read at nominal time: the level of the loss at variance s is ψ(s/variance)."""

    boundary: LinearPrivacyBoundary
    variance: float

    def __call__(self, times: FloatArray) -> FloatArray:
        out: FloatArray = self.boundary(times / self.variance)
        return out


def threshold_weights(
    boundary: LinearPrivacyBoundary,
    d: int,
    variance: float,
    proposal: Drift,
    n: int,
    rng: np.random.Generator,
) -> FloatArray:
    """``w·1_E`` for BNR Cor 5.2's runs (`released_loss_above`), BM path drawn under Q.

    The BM's variance at nominal time T is ``variance``·T; Q is ``proposal``'s drift stopped at
    the first crossing of ψ by the loss (module docstring); the check's noise is plain.
    """
    fx, fxp = neighbours(boundary.sensitivity, d)
    actual = variance * threshold_times(boundary)
    level = NominalLevel(boundary, variance)
    paths, weights = tilted_paths(
        proposal, tuple(float(s) for s in actual), tuple(fx), tuple(fxp), level, n, rng
    )
    event = released_loss_above(boundary, actual, fx + paths, fx, fxp, rng)
    out: FloatArray = np.where(event, weights, 0.0)
    return out


def threshold_claim(
    boundary: LinearPrivacyBoundary, variance: float, delta: float
) -> tuple[ImportanceClaim, partial[FloatArray]]:
    """The claim P(E) <= delta under the drift 2a, with B from the loss's level on the grid."""
    proposal = Drift(2.0 * boundary.a)
    actual = variance * threshold_times(boundary)
    level = NominalLevel(boundary, variance)
    bound = weight_bound(proposal, actual, level, boundary.sensitivity)
    claim = ImportanceClaim(delta, bound, f"{proposal.name}, stopped at the first crossing")
    return claim, partial(threshold_weights, boundary, _D, variance, proposal)


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def reduced_above_threshold_deploy(suite: str, delta: float) -> Audit:
    """BNR Cor 5.2 at delta: P(L^BM(T_N) + ψ(T_N) > 2ψ(T_N)) <= delta.

    Twin: the boundary (and its grid) built for delta^(1/4), claimed at delta (module docstring).
    """
    psi = LinearPrivacyBoundary.tuned_for(TUNED_AT, delta, 1.0)
    claim, simulate = threshold_claim(psi, 1.0, delta)
    wrong = LinearPrivacyBoundary.tuned_for(TUNED_AT, delta**0.25, 1.0)
    twin_claim, twin_simulate = threshold_claim(wrong, 1.0, delta)
    name = f"bnr-cor5.2-reduced-above-threshold/{delta_tag(delta)}"
    return Audit(
        name=name,
        source="BNR Cor 5.2, Thm 5.1",
        statement=(
            f"ReducedAboveThreshold on BM iterates (d={_D}, {threshold_times(psi).size} times), "
            f"levels psi(T_n) of the linear boundary at delta, adversarial check 'is the BM loss "
            f"above psi': P(L_BM(T_N) + psi(T_N) > 2 psi(T_N)) <= {delta:g}"
        ),
        claim=claim,
        simulate=simulate,
        n=20_000 if suite == DEPLOY_QUICK else 40_000,
        twin=Twin(f"{name}/log-1-over-delta-quartered", twin_claim, twin_simulate),
        chunk_size=20_000,
    )
