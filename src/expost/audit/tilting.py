"""Exponential tilting of privacy losses: proposals for importance-sampled audits (issue 13).

A release y with density p_x under x has loss ``L(y) = log p_x(y)/p_x'(y)`` (APC Def 2.2). The
loss-tilted law of parameter θ >= 0 is

    q_θ(y) = p_x(y)·exp(θ·L(y)) / M(θ),   M(θ) = E_x[exp(θ·L)] = exp(θ·D_(1+θ)(P_x ‖ P_x')),

(D_α the Rényi divergence), so ``dP/dQ_θ = M(θ)·exp(−θ·L)``. A rho-zCDP round has
``log M(θ) <= θ(θ+1)·rho`` (Bun–Steinke 2016, Def 1.1 with α = 1 + θ); an eps-DP round is
eps²/2-zCDP (Bun–Steinke Prop 3.3), so ``log M(θ) <= θ(θ+1)·eps²/2``.

Rounds run one after another, round n tilted given the past: the likelihood ratio of a whole
run is ``W = exp(−θ·Σ L_n + Σ log M_n(θ))``. When Σ rho_n <= rho on every path (a filter's
budget), ``W <= exp(−θ·eps + θ(θ+1)·rho)`` on the event {Σ L_n > eps} — the weight bound `bound`.
It is smallest at ``θ* = (eps − rho)/(2·rho)`` (`chernoff_tilt`), where it equals
``exp(−(eps − rho)²/(4·rho))``: δ itself for APC Lemma 2.1's ``eps = rho + 2·sqrt(rho·log(1/δ))``.

For the hockey-stick integrand ``h = (1 − e^(eps − L))⁺`` (the (eps, delta)-DP quantity of
a pair of laws, `hockey_stick_bound`) the weight times h is at most
``exp(−θ·L + θ(θ+1)·rho)·(1 − e^(eps − L))``, largest at e^(eps − L) = θ/(1 + θ), where it is
``bound(eps, rho, θ)·θ^θ/(1 + θ)^(1+θ)``; `hockey_stick_tilt` minimises it over θ.

The proposals here, each with its exact log-likelihood ratio ``log dP/dQ``:

- Gaussian N(f(x), σ²I): tilting by θ shifts the mean by ``θ·(f(x) − f(x'))`` (`shift`) and
  leaves σ alone, so the loss N(r, 2r) becomes N(r + 2θr, 2r). `gaussian_log_weight`.
- Brownian mechanism stopped at time T (APC Def 4.4): in privacy time s = 1/t the path is
  X(s) = s·(y(1/s) − f(x)), a BM, and the loss is ``Δ²s/2 + ⟨X(s), u⟩·Δ`` (THEORY §3). A drift
  ``v = θ·(f(x) − f(x'))`` of X (Girsanov) is the constant shift v of every iterate; its
  likelihood ratio on the path up to the stopping time is the Gaussian one of the last iterate
  with variance T, ``exp(−θ·L(T) + θ(θ+1)·Δ²/(2T))``: the same form, with the realised cost
  Δ²/(2T). `gaussian_log_weight` with variance T.
- Laplace f(x) + Lap(b) per coordinate: the tilt factorises over coordinates; coordinate j with
  e = |f(x')_j − f(x)_j|/b is a three-piece law (`tilted_laplace`, `laplace_log_mgf`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import nonnegative, positive
from expost.audit._shared import gaussian_loss
from expost.audit.core import Audit, Simulator, Twin
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import DEPLOY, delta_tag
from expost.errors import InvalidParameter

__all__ = [
    "ROUNDING_MARGIN",
    "ImportanceCase",
    "bound",
    "chernoff_tilt",
    "gaussian_log_weight",
    "hockey_stick_bound",
    "hockey_stick_tilt",
    "in_suite",
    "laplace_log_mgf",
    "shift",
    "tilted_laplace",
]

FloatArray = npt.NDArray[np.float64]
ROUNDING_MARGIN = 1.0 + 1e-9
"""Relative margin of a weight bound B stated from a maximum that the samples can reach: their
computed log-weights exceed the exact values by float rounding (up to about 2e-14)."""


def chernoff_tilt(eps: float, rho: float) -> float:
    """θ* = max(0, (eps − rho)/(2·rho)): the tilt that minimises `bound` (mean loss moved to eps)."""
    return max(0.0, (eps - positive("rho", rho)) / (2.0 * rho))


def bound(eps: float, rho: float, theta: float) -> float:
    """``exp(−θ·eps + θ(θ+1)·rho)``: the weight on {Σ L_n > eps} when Σ rho_n <= rho (module doc)."""
    t = nonnegative("theta", theta)
    return math.exp(-t * eps + t * (t + 1.0) * positive("rho", rho))


def hockey_stick_bound(eps: float, rho: float, theta: float) -> float:
    """``bound(eps, rho, θ)·θ^θ/(1 + θ)^(1+θ)``: the largest ``w·(1 − e^(eps − L))⁺`` when
    Σ rho_n <= rho (module doc; ``θ^θ = 1`` at θ = 0). Exact: runs that spend the whole budget
    reach it, so a claim states it times `ROUNDING_MARGIN`."""
    t = nonnegative("theta", theta)
    shape = (t * math.log(t) if t > 0.0 else 0.0) - (t + 1.0) * math.log1p(t)
    return bound(eps, rho, t) * math.exp(shape)


def hockey_stick_tilt(eps: float, rho: float) -> float:
    """The θ >= 0 minimising `hockey_stick_bound`: the root of its log's derivative
    ``−eps + (2θ + 1)·rho + log(θ/(1 + θ))`` (increasing: the log-bound is convex), by bisection."""
    r = positive("rho", rho)

    def slope(t: float) -> float:
        return -eps + (2.0 * t + 1.0) * r + math.log(t / (1.0 + t))

    lo, hi = 0.0, 1.0
    while slope(hi) < 0.0:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if mid > 0.0 and slope(mid) < 0.0:
            lo = mid
        else:
            hi = mid
    return hi


def shift(fx: FloatArray, fxp: FloatArray, theta: float) -> FloatArray:
    """``θ·(f(x) − f(x'))``: the mean shift of a Gaussian (or every BM iterate) tilted by θ."""
    moved: FloatArray = nonnegative("theta", theta) * (fx - fxp)
    return moved


def gaussian_log_weight(
    y: FloatArray, variance: FloatArray | float, fx: FloatArray, moved: FloatArray
) -> FloatArray:
    """``log dP/dQ`` of y for P = N(f(x), variance·I), Q = N(f(x) + moved, variance·I).

    ``log p(y) − log q(y) = (‖y − f(x) − moved‖² − ‖y − f(x)‖²)/(2·variance)``. For a BM stopped
    at T it is the path's likelihood ratio with y its last iterate and variance T (module doc).
    """
    return -gaussian_loss(y, variance, fx + moved, fx)


def _pieces(e: FloatArray, theta: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """log masses of the tilted law on u <= 0, 0 < u < e, u >= e (u = (y − f(x))/b, f(x') at e)."""
    rate = 1.0 + 2.0 * theta
    low: FloatArray = math.log(0.5) + theta * e
    with np.errstate(divide="ignore"):  # e = 0: the middle piece is empty
        middle: FloatArray = low + np.log(-np.expm1(-rate * e)) - np.log(rate)
    high: FloatArray = math.log(0.5) - (1.0 + theta) * e
    return low, middle, high


def _theta(theta: float | FloatArray) -> FloatArray:
    t = np.asarray(theta, dtype=np.float64)
    if not np.all(t >= 0.0):
        raise InvalidParameter("theta", theta, "must be >= 0")
    return t


def laplace_log_mgf(e: npt.ArrayLike, theta: float | FloatArray) -> FloatArray:
    """``log E[exp(θ·L)]`` for one Laplace coordinate at loss range e = Δ_j/b:
    ``log((θ+1)/(2θ+1)·e^(θe) + θ/(2θ+1)·e^(−(θ+1)e))`` (the three pieces' masses summed);
    e and θ broadcast."""
    low, middle, high = _pieces(np.asarray(e, dtype=np.float64), _theta(theta))
    out: FloatArray = np.logaddexp(np.logaddexp(low, middle), high)
    return out


def tilted_laplace(
    fx: FloatArray,
    fxp: FloatArray,
    scale: float,
    theta: float | FloatArray,
    n: int,
    rng: np.random.Generator,
) -> FloatArray:
    """n draws (shape (n, d)) of f(x) + Lap(scale) per coordinate, tilted by θ towards high loss.

    Per coordinate, with u = ±(y − f(x))/b oriented so that f(x') sits at e >= 0, the density
    ½e^(−|u|)·e^(θ·L), L = |u − e| − |u|, is: ∝ e^(u) on u <= 0 (L = e), ∝ e^(−(1+2θ)u) on
    (0, e) (L = e − 2u), ∝ e^(−u) on u >= e (L = −e); a piece is drawn by its mass, then u
    by inversion. θ = 0 is the Laplace law itself; θ may be one value per draw, shape (n,).
    """
    t = _theta(theta)
    t = t[:, None] if t.ndim == 1 else t
    b = positive("scale", scale)
    gap = fxp - fx
    e = np.abs(gap) / b
    logs = np.stack(np.broadcast_arrays(*_pieces(e, t)))  # (3, d) or (3, n, d)
    probs = np.exp(logs - np.logaddexp.reduce(logs, axis=0))
    pick = rng.random((n, e.size))
    exp1 = rng.standard_exponential((n, e.size))
    uniform = rng.random((n, e.size))
    rate = 1.0 + 2.0 * t
    inside = -np.log1p(uniform * np.expm1(-rate * e)) / rate
    u = np.where(pick < probs[0], -exp1, np.where(pick < probs[0] + probs[1], inside, e + exp1))
    y: FloatArray = fx + b * np.where(gap < 0, -u, u)
    return y


@frozen
class ImportanceCase:
    """An importance-sampled claim ``P(event) <= delta`` and its planted bug (same delta).

    ``quantity`` names what is bounded when the samples are ``w·h`` with h ∈ [0, 1] other than an
    indicator (`ImportanceClaim`). ``simulate(n, rng)`` returns ``w·1{event}`` (or ``w·h``) per run, each in ``[0, weight_bound]``;
    the twin's simulator likewise in ``[0, twin_bound]``. `audit` makes the registered audit.
    """

    delta: float
    name: str
    source: str
    statement: str
    proposal: str
    weight_bound: float
    simulate: Simulator
    twin_name: str
    twin_proposal: str
    twin_bound: float
    twin_simulate: Simulator
    quantity: str = "P(event)"

    def audit(self, n: int, chunk_size: int) -> Audit:
        """The audit at ``delta`` (names end in `delta_tag`), claim and twin `ImportanceClaim`s."""
        tag = delta_tag(self.delta)
        twin_claim = ImportanceClaim(self.delta, self.twin_bound, self.twin_proposal, self.quantity)
        return Audit(
            name=f"{self.name}/{tag}",
            source=self.source,
            statement=self.statement,
            claim=ImportanceClaim(self.delta, self.weight_bound, self.proposal, self.quantity),
            simulate=self.simulate,
            n=n,
            twin=Twin(f"{self.twin_name}/{tag}", twin_claim, self.twin_simulate),
            chunk_size=chunk_size,
        )


def in_suite(
    cases: Sequence[ImportanceCase], suite: str, quick: Collection[str]
) -> list[ImportanceCase]:
    """All ``cases`` in the deploy suite; in deploy-quick only those named in ``quick``."""
    return [c for c in cases if suite == DEPLOY or c.name in quick]
