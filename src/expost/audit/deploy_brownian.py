"""Brownian claims audited at deployment deltas (1e-6 … 1e-12) by importance sampling (issue 13).

Every simulator returns ``w·1{event}`` with ``w = dP/dQ`` of the run drawn under a proposal Q,
and states the bound B on it that `ImportanceClaim` checks on the samples. Proposals:

- Change of drift (Girsanov), `Drift`: the released iterates ``y(t) = f(x) + B(t)`` of a Brownian
  mechanism (variance t per coordinate) lose ``L(t) = Δ²/(2t) + Δ·W(t)/t`` with
  ``W = ⟨B, u⟩``, u = (f(x) − f(x'))/Δ, a standard BM in t. Under Q, W gets drift θ:
  ``W(t) = θt + W̃(t)``; on the forward filtration ``dP/dQ = exp(−θW(t) + θ²t/2)``, evaluated at
  τ, the smallest grid time where the loss exceeds its level (a stopping time; the event is
  {τ exists}). If the level forces ``W(τ) >= h(τ)``, ``w <= exp(−θh(τ) + θ²τ/2)``; B is the
  largest value of that over the grid. For the linear boundary ψ(t) = (Δ/t)(Δ/2 + b) + Δa
  (BNR Thm 3.6) h(t) = at + b, and θ = 2a gives ``w <= exp(−2ab) = delta`` at every t.
- Normal mixture, `HalfNormalMixture`: for ψ from the two-sided mixture g₂ (BNR Thm 3.6) the
  crossing W >= g₂ >= 0 is the event ``M₂ >= 1/delta`` of ``M₂ = ∫ exp(λW − λ²t/2) N(0, 1/r)(dλ)``
  (Ville). Q draws λ from the half-normal |N(0, 1/r)| first, then W with drift λ: dQ/dP = M₁ =
  ``2·sqrt(r/(t + r))·exp(W²/(2(t + r)))·Φ(W/sqrt(t + r))`` >= M₂ for W >= 0, so
  ``w = 1/M₁(τ) <= delta`` on the crossing (at grid times only: still an event where M₂ >= 1/delta).
- Sequences of Brownian mechanisms (APC eq. 1): tilting BM i by λ given the past,
  ``B_i(t) = λ + B̃_i(t)``, has ``dQ/dP = M_i(t) = exp(λB_i(t)/t − λ²/(2t))`` on the reversed
  filtration (time inversion of Girsanov), so the weight of a whole run is 1/∏M_i.

B carries a relative margin of 1e-6 for float rounding. Every audit has a planted twin refuted at
the same delta. Twins that are far above delta (printed statements) use the plain law (θ = 0,
weight 1, B = 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.audit._paper import gaussian_loss, neighbours
from expost.audit.brownian import (
    _MENU,
    _ROUNDS,
    _choice,
)
from expost.audit.core import Audit, Twin
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import DEPLOY_QUICK, delta_tag, register_at_deltas
from expost.boundaries import LinearPrivacyBoundary, MixturePrivacyBoundary
from expost.odometers import BrownianOdometer
from expost.processes import sample_brownian_grid

__all__ = [
    "Drift",
    "HalfNormalMixture",
    "crossing_weights",
    "ville_weights",
    "odometer_weights",
    "weight_bound",
]

FloatArray = npt.NDArray[np.float64]
Level = Callable[[FloatArray], FloatArray]
_MARGIN = 1.0 + 1e-6  # float rounding between the loss, the level and the weight
_TUNED_AT, _SPAN, _POINTS = 1.0, 100.0, 120  # as the paper suite (audit/brownian.py)


@frozen
class Drift:
    """Q: W(t) = θt + W̃(t) (Girsanov); ``log dP/dQ = −θW(t) + θ²t/2``. θ = 0: the plain law."""

    theta: float

    @property
    def name(self) -> str:
        return "plain Monte Carlo" if self.theta == 0.0 else f"drift {self.theta:.4g} (Girsanov)"

    def drifts(self, n: int, rng: np.random.Generator) -> FloatArray:
        return np.full(n, self.theta)

    def log_weight(self, t: FloatArray, w: FloatArray) -> FloatArray:
        out: FloatArray = -self.theta * w + 0.5 * self.theta**2 * t
        return out


@frozen
class HalfNormalMixture:
    """Q: λ ~ |N(0, 1/r)|, then W(t) = λt + W̃(t); ``dP/dQ = 1/M₁(t, W)`` (module docstring)."""

    r: float

    @property
    def name(self) -> str:
        return f"half-normal mixture of drifts, precision {self.r:.4g}"

    def drifts(self, n: int, rng: np.random.Generator) -> FloatArray:
        out: FloatArray = np.abs(rng.standard_normal(n)) / math.sqrt(self.r)
        return out

    def log_weight(self, t: FloatArray, w: FloatArray) -> FloatArray:
        from scipy.special import log_ndtr  # lazy: keeps `import expost` fast

        s = t + self.r
        log_m = (
            math.log(2.0) + 0.5 * np.log(self.r / s) + w * w / (2.0 * s) + log_ndtr(w / np.sqrt(s))
        )
        out: FloatArray = -log_m
        return out


Proposal = Drift | HalfNormalMixture


def weight_bound(proposal: Proposal, times: FloatArray, level: Level, sensitivity: float) -> float:
    """B = max over the grid of the weight at the least W that crosses: ``W = h(t)``.

    ``L(t) > level(t)`` ⟺ ``W(t) > h(t) = (level(t)·t − Δ²/2)/Δ``; both weights decrease in W
    (θ >= 0; M₁ increases in W), so the weight on the event is at most its value at h(τ).
    """
    t = np.asarray(times, dtype=np.float64)
    h = (level(t) * t - 0.5 * sensitivity**2) / sensitivity
    return float(np.exp(np.max(proposal.log_weight(t, h)))) * _MARGIN


def crossing_weights(
    proposal: Proposal,
    times: tuple[float, ...],
    fx: tuple[float, ...],
    fxp: tuple[float, ...],
    level: Level,
    n: int,
    rng: np.random.Generator,
) -> FloatArray:
    """``w·1{∃ grid t: L(t) > level(t)}`` for a Brownian mechanism on f(x), drawn under Q.

    ``times`` decreasing (the mechanism's order); the uniform adversary that stops once the loss
    exceeds the level stops exactly on this event. The loss is computed from the released
    values (`gaussian_loss`); the weight at τ, the smallest crossing time (module docstring).
    """
    t = np.asarray(times)
    a, b = np.asarray(fx), np.asarray(fxp)
    u = (a - b) / np.linalg.norm(a - b)
    paths = sample_brownian_grid(t, n, a.size, rng)
    paths += proposal.drifts(n, rng)[:, None, None] * t[None, :, None] * u
    crossed = gaussian_loss(a + paths, t, a, b) > level(t)
    any_cross = crossed.any(axis=1)
    last = t.size - 1 - np.argmax(crossed[:, ::-1], axis=1)  # smallest t that crosses
    rows = np.arange(n)
    w = paths[rows, last] @ u
    log_w = proposal.log_weight(t[last], w)
    out: FloatArray = np.where(any_cross, np.exp(np.minimum(log_w, 700.0)), 0.0)
    return out


# --- the ex-post privacy boundaries (BNR Thm 3.6), uniform adversary ------------------------


def _boundary(
    kind: str, sensitivity: float, delta: float
) -> LinearPrivacyBoundary | MixturePrivacyBoundary:
    if kind == "mixture":
        return MixturePrivacyBoundary.tuned_for(_TUNED_AT, delta, sensitivity)
    return LinearPrivacyBoundary.tuned_for(_TUNED_AT, delta, sensitivity)


def _proposal_for(psi: LinearPrivacyBoundary | MixturePrivacyBoundary) -> Proposal:
    if isinstance(psi, MixturePrivacyBoundary):
        return HalfNormalMixture(psi.r)
    return Drift(2.0 * psi.a)


def _grid(psi: LinearPrivacyBoundary | MixturePrivacyBoundary) -> tuple[float, ...]:
    centre = psi.time_for(_TUNED_AT)
    return tuple(np.geomspace(centre * _SPAN, centre / _SPAN, _POINTS))


def _crossing(
    psi: LinearPrivacyBoundary | MixturePrivacyBoundary,
    level: Level,
    times: tuple[float, ...],
    fx: FloatArray,
    fxp: FloatArray,
    delta: float,
) -> tuple[ImportanceClaim, partial[FloatArray]]:
    proposal = _proposal_for(psi)
    bound = weight_bound(proposal, np.asarray(times), level, psi.sensitivity)
    claim = ImportanceClaim(delta, bound, proposal.name)
    return claim, partial(crossing_weights, proposal, times, tuple(fx), tuple(fxp), level)


def _n(suite: str, quick: int, full: int) -> int:
    return quick if suite == DEPLOY_QUICK else full


_CONFIGS = ((0.5, 1), (1.0, 3), (3.0, 1), (0.5, 3), (1.0, 1), (3.0, 3))


def _ex_post(suite: str, delta: float, kind: str, sensitivity: float, d: int) -> Audit:
    psi = _boundary(kind, sensitivity, delta)
    wrong = _boundary(kind, sensitivity, 10.0 * delta)
    fx, fxp = neighbours(sensitivity, d)
    times = _grid(psi)
    claim, simulate = _crossing(psi, psi, times, fx, fxp, delta)
    twin_claim, twin_simulate = _crossing(wrong, wrong, times, fx, fxp, delta)
    name = f"bm-ex-post/{kind}/uniform/sens-{sensitivity:g}/d-{d}/{delta_tag(delta)}"
    return Audit(
        name=name,
        source="BNR Thm 3.6",
        statement=(
            f"BM, {kind} boundary tuned at E={_TUNED_AT:g}, sensitivity {sensitivity:g}, d={d}, "
            f"{_POINTS} log-spaced times, adversary stops when L > psi: "
            f"P(exists t: L > psi(t)) <= {delta:g}"
        ),
        claim=claim,
        simulate=simulate,
        n=_n(suite, 20_000, 40_000),
        twin=Twin(f"{name}/boundary-for-10-delta", twin_claim, twin_simulate),
        chunk_size=20_000,
    )


@register_at_deltas("deploy", "deploy-quick")
def bm_ex_post_deploy(suite: str, delta: float) -> list[Audit]:
    """Ex-post privacy of the BM, uniform adversary, at deployment deltas (BNR Thm 3.6)."""
    configs = ((1.0, 3),) if suite == DEPLOY_QUICK else _CONFIGS
    return [_ex_post(suite, delta, k, s, d) for k in ("linear", "mixture") for s, d in configs]


# --- BNR Cor 3.7: the time map ---------------------------------------------------------------


@frozen
class _Constant:
    """The constant level E as a function of time (picklable)."""

    value: float

    def __call__(self, times: FloatArray) -> FloatArray:
        return np.full_like(times, self.value)


def _time_map(
    psi: LinearPrivacyBoundary, t_stop: float, proposal: Proposal, delta: float
) -> tuple[ImportanceClaim, partial[FloatArray]]:
    """The run walks the grid down to ``t_stop``; the adversary stops once L > E (d = 1)."""
    fx, fxp = neighbours(psi.sensitivity, 1)
    full = np.asarray(_grid(psi))
    times = tuple(full[full >= t_stop])
    level = _Constant(_TUNED_AT)
    bound = weight_bound(proposal, np.asarray(times), level, psi.sensitivity)
    claim = ImportanceClaim(delta, bound, proposal.name)
    return claim, partial(crossing_weights, proposal, times, tuple(fx), tuple(fxp), level)


@register_at_deltas("deploy", "deploy-quick")
def bnr_cor37_time_map_deploy(suite: str, delta: float) -> list[Audit]:
    """BNR Cor 3.7 corrected (holds) and as printed (refuted), linear boundary, sensitivity 1."""
    psi = _boundary("linear", 1.0, delta)
    assert isinstance(psi, LinearPrivacyBoundary)  # _boundary("linear", …) is linear
    wrong = LinearPrivacyBoundary.from_delta(psi.a, delta**0.25, psi.sensitivity)
    grid = np.asarray(_grid(psi))
    corrected = psi.time_for(_TUNED_AT)
    printed = float(grid[psi(grid) >= _TUNED_AT].min())
    tag = delta_tag(delta)
    claim, simulate = _time_map(psi, corrected, Drift(2.0 * psi.a), delta)
    twin_claim, twin_simulate = _time_map(psi, wrong.time_for(_TUNED_AT), Drift(2.0 * psi.a), delta)
    common = (
        f"BM, linear boundary (delta={delta:g}), target E={_TUNED_AT:g}: the run walks the grid "
        "down to the map's time; the adversary stops once L > E. "
    )
    audits = [
        Audit(
            name=f"bnr-cor3.7-time-map/corrected/{tag}",
            source="BNR Cor 3.7 (corrected, THEORY §3)",
            statement=common + f"Map: smallest t with psi(t) <= E. P(L > E) <= {delta:g}",
            claim=claim,
            simulate=simulate,
            n=_n(suite, 20_000, 40_000),
            twin=Twin(
                f"bnr-cor3.7-time-map/corrected/{tag}/log-1-over-delta-quartered",
                twin_claim,
                twin_simulate,
            ),
            chunk_size=20_000,
        )
    ]
    if suite != DEPLOY_QUICK:
        plain_claim, plain = _time_map(psi, printed, Drift(0.0), delta)
        audits.append(
            Audit(
                name=f"bnr-cor3.7-time-map/printed/{tag}",
                source="BNR Cor 3.7 (as printed)",
                statement=common + f"Map as printed: inf{{t : psi(t) >= E}}. P(L > E) <= {delta:g}",
                claim=plain_claim,
                simulate=plain,
                n=20_000,
                twin=Twin(
                    f"bnr-cor3.7-time-map/printed/{tag}/claimed-at-0.5",
                    ImportanceClaim(0.5, plain_claim.weight_bound, plain_claim.proposal),
                ),
                expected="refuted",
            )
        )
    return audits
