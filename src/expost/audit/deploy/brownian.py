"""Brownian claims audited at deployment deltas (1e-6 … 1e-12) by importance sampling (issue 13).

Every simulator returns ``w·1{event}`` with ``w = dP/dQ`` of the run drawn under a proposal Q,
and states the bound B on it that `ImportanceClaim` checks on the samples. Proposals:

- Change of drift (Girsanov), `Drift`: the released iterates ``y(t) = f(x) + B(t)`` of a Brownian
  mechanism (variance t per coordinate) lose ``L(t) = Δ²/(2t) + Δ·W(t)/t`` with
  ``W = ⟨B, u⟩``, u = (f(x) − f(x'))/Δ, a standard BM in t. Under Q, W gets drift θ:
  ``W(t) = θt + W̃(t)``; on the forward filtration ``dP/dQ = exp(−θW(t) + θ²t/2)``, evaluated at
  τ, the smallest grid time where the loss exceeds its level (a stopping time; the event is
  {τ exists}; the drift is stopped at τ, `tilted_paths`, so this is dP/dQ of the whole path and
  may weight events that also depend on the path above τ, `expost.audit.deploy.threshold`).
  If the level forces ``W(τ) >= h(τ)``, ``w <= exp(−θh(τ) + θ²τ/2)``; B is the
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

B carries the relative margin `ROUNDING_MARGIN` (1 + 1e-9) for float rounding. Every audit has a
planted twin refuted at the same delta. Twins that are far above delta (printed statements) use
the plain law (θ = 0, weight 1, B = 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.audit._shared import (
    MENU,
    ROUNDS,
    THM4_GAMMA,
    THM4_TIME,
    TUNED_AT,
    VILLE_LAMBDAS,
    Constant,
    choice,
    gaussian_loss,
    grid_times,
    neighbours,
    odometer_step,
    round_paths,
    tuned_boundary,
    ville_step,
)
from expost.audit.core import Audit, Twin
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import DEPLOY_QUICK, delta_tag, register_at_deltas
from expost.audit.tilting import ROUNDING_MARGIN
from expost.boundaries import LinearPrivacyBoundary, MixturePrivacyBoundary
from expost.odometers import BrownianOdometer
from expost.processes import sample_brownian_grid

__all__ = [
    "Drift",
    "HalfNormalMixture",
    "crossing_weights",
    "odometer_weights",
    "tilted_paths",
    "ville_weights",
    "weight_bound",
]

FloatArray = npt.NDArray[np.float64]
Level = Callable[[FloatArray], FloatArray]


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
Boundary = LinearPrivacyBoundary | MixturePrivacyBoundary


def weight_bound(proposal: Proposal, times: FloatArray, level: Level, sensitivity: float) -> float:
    """B = max over the grid of the weight at the least W that crosses: ``W = h(t)``.

    ``L(t) > level(t)`` ⟺ ``W(t) > h(t) = (level(t)·t − Δ²/2)/Δ``; both weights decrease in W
    (θ >= 0; M₁ increases in W), so the weight on the event is at most its value at h(τ).
    """
    t = np.asarray(times, dtype=np.float64)
    h = (level(t) * t - 0.5 * sensitivity**2) / sensitivity
    return float(np.exp(np.max(proposal.log_weight(t, h)))) * ROUNDING_MARGIN


def tilted_paths(
    proposal: Proposal,
    times: tuple[float, ...],
    fx: tuple[float, ...],
    fxp: tuple[float, ...],
    level: Level,
    n: int,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """Paths (n, K, d) of a Brownian mechanism's noise under Q, and ``w·1{τ exists}``.

    ``times`` decreasing (the mechanism's order); τ is the smallest grid time where the loss of
    ``f(x) + path`` exceeds ``level``. Under Q the drift runs until τ and stops there:
    ``W(t) = λ·min(t, τ) + W̃(t)`` (λ from the proposal). The drift of each increment (in
    increasing t) is fixed by the path below it, so dP/dQ of the whole path is the weight at
    ``τ ∧ t_max`` (module docstring); on {τ exists} that is the weight at τ, returned (0
    elsewhere). An event that depends on the path above τ may therefore be weighted by it, as
    long as it implies {τ exists}. Below τ the path is the fully drifted one, so τ is also the
    first crossing of the fully drifted path (what is computed).
    """
    t = np.asarray(times)
    a, b = np.asarray(fx), np.asarray(fxp)
    u = (a - b) / np.linalg.norm(a - b)
    plain = sample_brownian_grid(t, n, a.size, rng)
    drift = proposal.drifts(n, rng)[:, None]

    def shifted(until: FloatArray) -> FloatArray:
        moved: FloatArray = plain + (drift * np.minimum(t[None, :], until))[:, :, None] * u
        return moved

    crossed = gaussian_loss(a + shifted(np.full((n, 1), np.inf)), t, a, b) > level(t)
    any_cross = crossed.any(axis=1)
    last = t.size - 1 - np.argmax(crossed[:, ::-1], axis=1)  # smallest t that crosses
    paths = shifted(np.where(any_cross, t[last], np.inf)[:, None])
    w = paths[np.arange(n), last] @ u
    log_w = proposal.log_weight(t[last], w)
    weights: FloatArray = np.where(any_cross, np.exp(np.minimum(log_w, 700.0)), 0.0)
    return paths, weights


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
    values (`gaussian_loss`); the weight at τ, the smallest crossing time (`tilted_paths`).
    """
    return tilted_paths(proposal, times, fx, fxp, level, n, rng)[1]


# --- the ex-post privacy boundaries (BNR Thm 3.6), uniform adversary ------------------------


def _proposal_for(psi: Boundary) -> Proposal:
    if isinstance(psi, MixturePrivacyBoundary):
        return HalfNormalMixture(psi.r)
    return Drift(2.0 * psi.a)


def _grid(psi: Boundary) -> tuple[float, ...]:
    return tuple(float(t) for t in grid_times(psi))


def _crossing(
    proposal: Proposal,
    level: Level,
    times: tuple[float, ...],
    fx: FloatArray,
    fxp: FloatArray,
    sensitivity: float,
    delta: float,
) -> tuple[ImportanceClaim, partial[FloatArray]]:
    """The claim ``w·1{crossing} <= B`` at delta (`weight_bound`) and its `crossing_weights`."""
    bound = weight_bound(proposal, np.asarray(times), level, sensitivity)
    claim = ImportanceClaim(delta, bound, proposal.name)
    return claim, partial(crossing_weights, proposal, times, tuple(fx), tuple(fxp), level)


def _boundary_crossing(
    psi: Boundary, times: tuple[float, ...], fx: FloatArray, fxp: FloatArray, delta: float
) -> tuple[ImportanceClaim, partial[FloatArray]]:
    """`_crossing` of ψ itself, under ψ's proposal (`_proposal_for`)."""
    return _crossing(_proposal_for(psi), psi, times, fx, fxp, psi.sensitivity, delta)


def _n(suite: str, quick: int, full: int) -> int:
    return quick if suite == DEPLOY_QUICK else full


_CONFIGS = ((0.5, 1), (1.0, 3), (3.0, 1), (0.5, 3), (1.0, 1), (3.0, 3))


def _ex_post(suite: str, delta: float, kind: str, sensitivity: float, d: int) -> Audit:
    psi = tuned_boundary(kind, sensitivity, delta)
    wrong = tuned_boundary(kind, sensitivity, 10.0 * delta)
    fx, fxp = neighbours(sensitivity, d)
    times = _grid(psi)
    claim, simulate = _boundary_crossing(psi, times, fx, fxp, delta)
    twin_claim, twin_simulate = _boundary_crossing(wrong, times, fx, fxp, delta)
    name = f"bm-ex-post/{kind}/uniform/sens-{sensitivity:g}/d-{d}/{delta_tag(delta)}"
    return Audit(
        name=name,
        source="BNR Thm 3.6",
        statement=(
            f"BM, {kind} boundary tuned at E={TUNED_AT:g}, sensitivity {sensitivity:g}, d={d}, "
            f"{len(times)} log-spaced times, adversary stops when L > psi: "
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


def _time_map(
    psi: LinearPrivacyBoundary, t_stop: float, proposal: Proposal, delta: float
) -> tuple[ImportanceClaim, partial[FloatArray]]:
    """The run walks the grid down to ``t_stop``; the adversary stops once L > E (d = 1)."""
    fx, fxp = neighbours(psi.sensitivity, 1)
    full = np.asarray(_grid(psi))
    times = tuple(full[full >= t_stop])
    return _crossing(proposal, Constant(TUNED_AT), times, fx, fxp, psi.sensitivity, delta)


@register_at_deltas("deploy", "deploy-quick")
def bnr_cor37_time_map_deploy(suite: str, delta: float) -> list[Audit]:
    """BNR Cor 3.7 corrected (holds) and as printed (refuted), linear boundary, sensitivity 1."""
    psi = LinearPrivacyBoundary.tuned_for(TUNED_AT, delta, 1.0)
    wrong = LinearPrivacyBoundary.from_delta(psi.a, delta**0.25, psi.sensitivity)
    grid = np.asarray(_grid(psi))
    corrected = psi.time_for(TUNED_AT)
    printed = float(grid[psi(grid) >= TUNED_AT].min())
    tag = delta_tag(delta)
    claim, simulate = _time_map(psi, corrected, Drift(2.0 * psi.a), delta)
    twin_claim, twin_simulate = _time_map(psi, wrong.time_for(TUNED_AT), Drift(2.0 * psi.a), delta)
    common = (
        f"BM, linear boundary (delta={delta:g}), target E={TUNED_AT:g}: the run walks the grid "
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


# --- APC Thm 4: one BM, corrected (with the drift 1/(2t)) vs printed ---------------------------


@frozen
class _OdometerLevel:
    """The odometer's bound on the loss of one BM stopped at t: ``bound_at(V = 1/t)`` (Δ = 1)."""

    odometer: BrownianOdometer

    def __call__(self, times: FloatArray) -> FloatArray:
        return self.odometer.bound_at(1.0 / times)


def _thm4(odometer: BrownianOdometer, delta: float) -> tuple[ImportanceClaim, partial[FloatArray]]:
    """One BM at `THM4_TIME` (Δ = 1, d = 1), W shifted to the threshold h(t) of the level.

    θ = max(h(t)/t, 0), so W(t) ~ N(h(t), t) under Q and B = exp(−θh(t) + θ²t/2) = exp(−θ²t/2).
    """
    fx, fxp = neighbours(1.0, 1)
    times = np.array([THM4_TIME])
    level = _OdometerLevel(odometer)
    threshold = float((level(times)[0] * THM4_TIME - 0.5) / THM4_TIME)
    return _crossing(Drift(max(threshold, 0.0)), level, (THM4_TIME,), fx, fxp, 1.0, delta)


@register_at_deltas("deploy", "deploy-quick")
def apc_thm4_deploy(suite: str, delta: float) -> Audit:
    """APC Thm 4 with the drift holds at delta; the printed form (twin) is refuted at delta.

    Proposal for both: W(t) shifted to the threshold of the bound (`_thm4`); with the drift the
    threshold is ψ(V)·t, so B = exp(−ψ(V)²t/2); without it (ψ(V) − V/2)·t.
    """
    claim, simulate = _thm4(BrownianOdometer(THM4_GAMMA, delta), delta)
    printed = BrownianOdometer(THM4_GAMMA, delta, printed_apc_thm4=True)
    twin_claim, twin_simulate = _thm4(printed, delta)
    name = f"apc-thm4/corrected/{delta_tag(delta)}"
    return Audit(
        name=name,
        source="APC Lemma 6.1, eq. 1 (Thm 4 with drift, THEORY §5)",
        statement=(
            f"one BM at t={THM4_TIME:g} (V={1 / THM4_TIME:g}), gamma={THM4_GAMMA:g}: "
            f"P(L >= 1/(2t) + psi(V)) <= {delta:g}"
        ),
        claim=claim,
        simulate=simulate,
        n=_n(suite, 20_000, 40_000),
        twin=Twin(f"{name}/printed-bound-without-drift", twin_claim, twin_simulate),
        chunk_size=20_000,
    )


# --- sequences of adaptively chosen BMs (APC eq. 1) ----------------------------------------


def ville_weights(log_target: float, n: int, rng: np.random.Generator) -> FloatArray:
    """``w·1{∃m: ∏_(i<=m) M_i(τ_i) >= e^log_target}`` for the adaptive BMs of ``apc-eq1-ville``.

    The same interaction as `expost.audit.paper.martingale.ville_product_crosses` (BM i's grid and λ_i
    chosen from the previous released value, walked from large t to small and stopped once the
    running product reaches the target), drawn with BM i tilted by its own e-value given the
    past: ``B_i(t) = λ_i + B̃_i(t)`` (module docstring). Then dQ/dP on the run so far is the
    running product ∏M_i, so at the first crossing ``w = 1/∏M_i <= e^−log_target`` = B.
    """
    log_product = np.zeros(n)
    last = np.zeros(n)
    weight = np.zeros(n)
    active = np.ones(n, dtype=np.bool_)
    for _ in range(ROUNDS):
        lam = np.asarray(VILLE_LAMBDAS)[choice(last, len(VILLE_LAMBDAS))]
        live = np.flatnonzero(active)
        for rows_in_live, times, b in round_paths(choice(-last[live], len(MENU)), rng):
            rows = live[rows_in_live]
            b += lam[rows, None]  # the tilt: B_i = λ_i + B̃_i under Q
            ville_step((log_product, last), (rows, times, b), lam, 0.5, log_target)
        crossed = active & (log_product >= log_target)
        weight[crossed] = np.exp(-log_product[crossed])
        active &= ~crossed
    return weight


@register_at_deltas("deploy", "deploy-quick")
def apc_eq1_ville_deploy(suite: str, delta: float) -> Audit:
    """Ville for the product of stopped e-values of adaptive BMs (APC eq. 1), at delta.

    Twin: the product's crossing of 1/(10·delta) (a boundary built for 10·delta), claimed at delta.
    """
    name = f"apc-eq1-ville/{delta_tag(delta)}"
    proposal = "each BM tilted by its e-value given the past"
    return Audit(
        name=name,
        source="APC eq. 1, Lemma 6.1",
        statement=(
            f"{ROUNDS} BMs, grids and lam_i in {{0.5, 1, 2}} chosen from past outputs, each "
            f"stopped at a reverse stopping time: P(exists m: prod M_i >= 1/delta) <= {delta:g}"
        ),
        claim=ImportanceClaim(delta, delta * ROUNDING_MARGIN, proposal),
        simulate=partial(ville_weights, math.log(1.0 / delta)),
        n=_n(suite, 20_000, 40_000),
        twin=Twin(
            f"{name}/crossing-1-over-10-delta",
            ImportanceClaim(delta, 10.0 * delta * ROUNDING_MARGIN, proposal),
            partial(ville_weights, math.log(1.0 / (10.0 * delta))),
        ),
        chunk_size=20_000,
    )


def odometer_weights(
    odometer: BrownianOdometer, proposal: Proposal, n: int, rng: np.random.Generator
) -> FloatArray:
    """``w·1{∃ prefix: Σ L_i >= odometer bound}`` for the adaptive BMs of ``apc-eq1-odometer``.

    The interaction of `expost.audit.paper.martingale.odometer_sequence_exceeds`; with sensitivity 1
    ``Σ L_i = V/2 + S``, ``S = Σ B_i(t_i)/t_i``, ``V = Σ 1/t_i``. Under Q a drift λ is drawn from
    the proposal and every BM is shifted by it, ``B_i = λ + B̃_i``: dQ/dP = exp(λS − λ²V/2)
    given λ, so the weight is ``exp(log_weight(V, S))`` of the proposal with (t, W) = (V, S).
    The corrected bound crosses only where S >= ψ(V) = g₂(V), where 1/M₁ <= 1/M₂ <= delta.
    """
    lam = proposal.drifts(n, rng)
    loss = np.zeros(n)
    volume = np.zeros(n)
    last = np.zeros(n)
    weight = np.zeros(n)
    active = np.ones(n, dtype=np.bool_)
    for _ in range(ROUNDS):
        live = np.flatnonzero(active)
        for rows_in_live, times, b in round_paths(choice(last[live], len(MENU)), rng):
            rows = live[rows_in_live]
            b += lam[rows, None]
            odometer_step(odometer, (loss, volume, last), (rows, times, b))
        crossed = active & (loss >= odometer.bound_at(volume))
        s = loss[crossed] - volume[crossed] / 2.0
        weight[crossed] = np.exp(np.minimum(proposal.log_weight(volume[crossed], s), 700.0))
        active &= ~crossed
    return weight


@register_at_deltas("deploy", "deploy-quick")
def apc_eq1_odometer_deploy(suite: str, delta: float) -> Audit:
    """The corrected BM odometer over adaptive BMs at delta (APC eq. 1).

    Proposal: half-normal mixture of drifts with precision γ, B = delta (module docstring).
    Twin: the odometer built with log(1/delta)/4 (i.e. for delta^(1/4)), claimed at delta, drawn
    under its own mixture proposal (B = delta^(1/4)). (The printed bound without the drift V/2 is
    crossed with probability ~1e-4 at delta = 1e-12, too rare for a plain-law twin and without a
    closed-form weight bound under a tilt; the paper suite and ``apc-thm4`` audit it.)
    """
    odometer = BrownianOdometer(THM4_GAMMA, delta)
    wrong = BrownianOdometer(THM4_GAMMA, delta**0.25)
    mixture = HalfNormalMixture(THM4_GAMMA)
    name = f"apc-eq1-odometer/{delta_tag(delta)}"
    return Audit(
        name=name,
        source="APC Lemma 6.1, eq. 1 (Thm 4 with drift)",
        statement=(
            f"{ROUNDS} BMs with adaptive grids, adversarial stops: P(exists m: sum L_i >= "
            f"V_m/2 + psi(V_m; {THM4_GAMMA:g}, {delta:g})) <= {delta:g}"
        ),
        claim=ImportanceClaim(delta, delta * ROUNDING_MARGIN, mixture.name),
        simulate=partial(odometer_weights, odometer, mixture),
        n=_n(suite, 20_000, 40_000),
        twin=Twin(
            f"{name}/log-1-over-delta-quartered",
            ImportanceClaim(delta, delta**0.25 * ROUNDING_MARGIN, mixture.name),
            partial(odometer_weights, wrong, mixture),
        ),
        chunk_size=20_000,
    )
