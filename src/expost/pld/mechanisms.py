"""Pairs given by probability mass functions, and the built-in pairs built from them (THEORY §12).

A finite (or truncated integer) pair is carried as *bounds* on each outcome's two masses,
``p_lo <= P(x) <= p_hi`` and ``q_lo <= Q(x) <= q_hi`` (`Bounds`). The remove direction (P, Q)
is priced with masses ``p_hi`` at losses ``log p_hi − log q_lo`` rounded up, the add direction
(Q, P) with ``q_hi`` at ``log q_hi − log p_lo`` (a larger measure at larger losses: every
hockey-stick sum grows, THEORY §12 (a), (d)); an outcome with Q = 0 has loss +∞. Truncated tails
become two outcomes (P-mass bound, 0) and (0, Q-mass bound): at +∞ in both directions.

Poisson subsampling at rate s (Zhu, Dong & Wang 2022, Thm 11) is done on the masses:
P' = (1 − s)Q + sP, the remove pair (P', Q) and the add pair (Q, P'); three float operations,
so P' is bracketed by a relative 4u.

Pairs: `pmf_bounds` (a user's two pmfs, normalised with outward rounding), `discrete_gaussian`
(N_Z(Δ, σ²) vs N_Z(0, σ²), Canonne, Kamath & Steinke 2020), `discrete_laplace`
(P(x) ∝ e^{−|x−Δ|/t} vs e^{−|x|/t}), `eps_delta` (the worst (ε, δ)-DP pair: every (ε, δ)-DP
mechanism is a post-processing of it, Kairouz, Oh & Viswanath 2015).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.errors import InvalidParameter
from expost.pld.pairs import ROUND_TAIL, LossLaw

__all__ = [
    "MAX_SUPPORT",
    "Bounds",
    "discrete_gaussian",
    "discrete_laplace",
    "eps_delta",
    "pmf_bounds",
]

FloatArray = npt.NDArray[np.float64]
MAX_SUPPORT = 1 << 22  # outcomes a pmf pair may have (memory and time: a few seconds)
_U = 2.0**-53
_TINY = math.ulp(0.0)


@frozen(eq=False)
class Bounds:
    """Outward bounds on a finite pair's masses (module doc)."""

    p_lo: FloatArray
    p_hi: FloatArray
    q_lo: FloatArray
    q_hi: FloatArray

    def sampled(self, s: float) -> Bounds:
        """The Poisson-subsampled pair's P' = (1 − s)Q + sP (Q unchanged), bounds kept."""
        if s == 1.0:
            return self
        lo = ((1.0 - s) * self.q_lo + s * self.p_lo) * (1.0 - 4.0 * _U)
        hi = ((1.0 - s) * self.q_hi + s * self.p_hi) * (1.0 + 4.0 * _U)
        return Bounds(lo, np.nextafter(hi, np.inf), self.q_lo, self.q_hi)

    def laws(self) -> tuple[LossLaw, LossLaw]:
        """(remove, add) loss laws, losses rounded up (module doc)."""
        return _law(self.p_hi, self.q_lo), _law(self.q_hi, self.p_lo)

    def lower_laws(self) -> tuple[LossLaw, LossLaw]:
        """(remove, add) laws dominated by the pair: masses ``p_lo`` at losses rounded down."""
        return _law(self.p_lo, self.q_hi, lower=True), _law(self.q_lo, self.p_hi, lower=True)


def _law(mass: FloatArray, other: FloatArray, *, lower: bool = False) -> LossLaw:
    keep = mass > 0
    m, o = mass[keep], other[keep]
    with np.errstate(divide="ignore"):
        lm, lo = np.log(m), np.log(o)
    loss = lm - lo  # +∞ where o = 0
    finite = np.isfinite(loss)
    # np.log: < 4 ulps; the difference: 1 ulp; so 8u·(|log m| + |log o|) + 2u|loss| covers it
    slack = np.where(finite, 8.0 * _U * (np.abs(lm) + np.where(finite, np.abs(lo), 0.0)), 0.0)
    slack = slack + 2.0 * _U * np.where(finite, np.abs(loss), 0.0) + 1e-300
    if lower:
        loss = np.where(finite, np.nextafter(loss - slack, -np.inf), loss)
    else:
        loss = np.where(finite, np.nextafter(loss + slack, np.inf), loss)
    return LossLaw(np.stack([loss, m], axis=1), ())


def _array(name: str, value: object) -> FloatArray:
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameter(name, value, "must be a 1-d array of probabilities") from None
    if a.ndim != 1 or a.size == 0:
        raise InvalidParameter(name, value, "must be a non-empty 1-d array of probabilities")
    if a.size > MAX_SUPPORT:
        raise InvalidParameter(name, a.size, f"must have at most {MAX_SUPPORT} outcomes")
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        i = int(bad[0])
        raise InvalidParameter(
            f"{name}[{i}]", float(a[i]), "every probability must be finite and >= 0"
        )
    return a


def _aligned(p: object, q: object) -> tuple[FloatArray, FloatArray]:
    """Two pmfs over one support: arrays of one length, or mappings outcome -> probability."""
    if isinstance(p, Mapping) or isinstance(q, Mapping):
        if not (isinstance(p, Mapping) and isinstance(q, Mapping)):
            raise InvalidParameter("q", type(q).__name__, "must be a mapping when p is one")
        keys = list(dict.fromkeys([*p.keys(), *q.keys()]))
        return _array("p", [p.get(k, 0.0) for k in keys]), _array(
            "q", [q.get(k, 0.0) for k in keys]
        )
    a, b = _array("p", p), _array("q", q)
    if a.size != b.size:
        raise InvalidParameter("q", b.size, f"must have as many outcomes as p ({a.size})")
    return a, b


def _normalised(name: str, a: FloatArray, tolerance: float) -> tuple[FloatArray, FloatArray]:
    total = math.fsum(a.tolist())
    if not abs(total - 1.0) <= tolerance:
        raise InvalidParameter(
            f"sum({name})", total, f"must be 1 within tolerance {tolerance} (a probability)"
        )
    # a / total: the sum is correctly rounded (fsum) and the division adds 1 ulp
    lo = np.nextafter(a / total * (1.0 - 2.0 * _U), 0.0)
    hi = np.nextafter(a / total * (1.0 + 2.0 * _U), np.inf)
    return np.where(a > 0, lo, 0.0), np.where(a > 0, hi, 0.0)


def pmf_bounds(p: object, q: object, tolerance: float) -> Bounds:
    """Bounds on a user's pair (P, Q): each pmf divided by its sum, which must be 1 within
    ``tolerance``; P(x) > 0 = Q(x) is an outcome of infinite loss (allowed)."""
    a, b = _aligned(p, q)
    p_lo, p_hi = _normalised("p", a, tolerance)
    q_lo, q_hi = _normalised("q", b, tolerance)
    return Bounds(p_lo, p_hi, q_lo, q_hi)


def _with_tails(
    p: FloatArray,
    q: FloatArray,
    rel: FloatArray,
    tail_p: float,
    tail_q: float,
    underflow: bool = True,
) -> Bounds:
    """Bounds from values with relative error ``rel`` (capped at 1: a lower bound 0), two tail
    outcomes at +∞, and, if ``underflow`` (no value is exactly 0), zeros raised to the smallest
    subnormal in the upper bounds."""
    r = np.minimum(rel, 1.0)
    zero = np.zeros(2)
    p_lo = np.concatenate([p * (1.0 - r), zero])
    q_lo = np.concatenate([q * (1.0 - r), zero])
    floor = _TINY if underflow else 0.0
    p_up = np.where(p > 0, np.nextafter(p * (1.0 + r), np.inf), floor)
    q_up = np.where(q > 0, np.nextafter(q * (1.0 + r), np.inf), floor)
    p_hi = np.concatenate([p_up, [tail_p, 0.0]])
    q_hi = np.concatenate([q_up, [0.0, tail_q]])
    return Bounds(p_lo, p_hi, q_lo, q_hi)


def discrete_gaussian(sigma: float, sensitivity: int, tail: float) -> Bounds:
    """N_Z(Δ, σ²) vs N_Z(0, σ²) on the integers, truncated where each side's tail mass is at most
    tail·2^-30 (the tails at +∞). Z = Σ e^{−x²/(2σ²)} is bracketed by the kept terms and the
    integral bound Σ_{x>T} e^{−x²/(2σ²)} <= ∫_T^∞ e^{−x²/(2σ²)} dx.

    The bounds hold for every true σ' <= σ within a relative 2u of it (u = 2^-53), so an exact
    σ'² is priced at the least float σ >= sqrt(σ'²): an exponent e = y²/(2σ²) is then off by at
    most 2u·e (σ·σ, the division) + 4u·e (σ against σ') and exp by 2u, within the 8u·(1 + e)
    allowed; the normaliser's terms likewise (within its 1e-12), and the tail integral grows
    with σ."""
    from scipy.special import erfc  # lazy: importing expost loads no scipy

    if 2.0 * sigma * sigma < 1e-300:  # all but e^{-1e300} of each pmf on one integer
        one = np.array([1.0, 0.0])
        return _with_tails(one, one[::-1].copy(), np.full(2, 4.0 * _U), _TINY, _TINY)
    z = math.sqrt(2.0 * math.log(2.0 / (tail * ROUND_TAIL)))
    t = math.ceil(z * sigma) + 1
    if 2 * t + sensitivity + 1 > MAX_SUPPORT:
        raise InvalidParameter(
            "sigma",
            sigma,
            f"gives more than {MAX_SUPPORT} integer outcomes (the exact pmf pair is refused there)",
        )
    two_var = 2.0 * sigma * sigma
    x = np.arange(-t, t + sensitivity + 1, dtype=np.float64)
    ep, eq = (x - sensitivity) ** 2 / two_var, x * x / two_var
    rel = 8.0 * _U * (1.0 + np.maximum(ep, eq))  # the exponent's rounding carried through exp
    central = np.arange(-t, t + 1, dtype=np.float64) ** 2 / two_var
    low_terms = np.exp(-central) * np.maximum(0.0, 1.0 - 8.0 * _U * (1.0 + central))
    tail_int = sigma * math.sqrt(math.pi / 2.0) * float(erfc(t / (sigma * math.sqrt(2.0))))
    z_lo = math.fsum(low_terms.tolist()) * (1.0 - 4.0 * _U)  # >= e^0 = 1 > 0
    z_hi = (math.fsum(np.exp(-central).tolist()) + 2.0 * tail_int) * (1.0 + 1e-12)
    tails = 2.0 * tail_int * (1.0 + 1e-12) / z_lo + _TINY  # both tails of either side
    p, q = np.exp(-ep), np.exp(-eq)
    lo = _with_tails(p / z_hi, q / z_hi, rel + 4 * _U, 0.0, 0.0)
    hi = _with_tails(p / z_lo, q / z_lo, rel + 4 * _U, tails, tails)
    return Bounds(lo.p_lo, hi.p_hi, lo.q_lo, hi.q_hi)


def discrete_laplace(scale: float, sensitivity: int) -> Bounds:
    """P(x) ∝ e^{−|x−Δ|/t} vs Q(x) ∝ e^{−|x|/t} on the integers, t = ``scale``: the outcomes
    x <= 0 (loss −Δ/t) and x >= Δ (loss Δ/t) merged (equal losses: no change), 0 < x < Δ
    one by one; masses in closed form: P(x <= 0) = e^{−Δ/t}/(1 + e^{−1/t}),
    P(x >= Δ) = 1/(1 + e^{−1/t}), P(x) = e^{−(Δ−x)/t}·tanh(1/(2t)) (x = 1..Δ−1), Q mirrored.

    The bounds hold for every true scale t' within a relative 2u of t (u = 2^-53), so an exact
    rational t' is priced at a float t within an ulp of it: r = 1/t, Δ·r and exp cost at most
    2u·Δr + 2u, t' against t another 2u·Δr, tanh and 1/(1 + e^{−r}) at most 4u each (their
    relative sensitivity to r is below 1), within the 16u·(1 + Δr) allowed."""
    if sensitivity + 1 > MAX_SUPPORT:
        raise InvalidParameter(
            "sensitivity",
            sensitivity,
            f"gives more than {MAX_SUPPORT} outcomes (the exact pmf pair is refused there)",
        )
    r = 1.0 / scale
    d = float(sensitivity)
    norm_edge = 1.0 / (1.0 + math.exp(-r))
    norm_mid = math.tanh(0.5 * r)
    mid = np.arange(1, sensitivity, dtype=np.float64)
    p = np.concatenate([[math.exp(-d * r) * norm_edge], np.exp(-(d - mid) * r) * norm_mid,
                        [norm_edge]])  # fmt: skip
    q = p[::-1].copy()
    rel = 16.0 * _U * (1.0 + d * r)  # the exponents' rounding carried through exp
    return _with_tails(p, q, np.full(p.size, rel), 0.0, 0.0)


def eps_delta(eps: float, delta: float) -> Bounds:
    """The worst (ε, δ)-DP pair: P = (δ, (1−δ)a, (1−δ)b, 0), Q = (0, (1−δ)b, (1−δ)a, δ),
    a = 1/(1 + e^{−ε}), b = e^{−ε}/(1 + e^{−ε}) (Kairouz, Oh & Viswanath 2015)."""
    e = math.exp(-eps)
    a, b = 1.0 / (1.0 + e), max(e / (1.0 + e), _TINY)  # b raised where it underflows
    p = np.array([delta, (1.0 - delta) * a, (1.0 - delta) * b, 0.0])
    q = np.array([0.0, (1.0 - delta) * b, (1.0 - delta) * a, delta])
    return _with_tails(p, q, np.full(4, 8.0 * _U), 0.0, 0.0, underflow=False)
