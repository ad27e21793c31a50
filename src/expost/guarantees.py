"""Privacy guarantees as immutable values, and the conversions between them.

Each conversion names the result it implements (THEORY.md §1). The papers' conversions
are the defaults; the tighter Canonne–Kamath–Steinke conversion is a separate, named
function and never replaces them silently.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any, Literal

from attrs import field, frozen

from expost._validation import (
    as_float,
    nonnegative,
    open_probability,
    positive,
    probability,
    validator,
)
from expost.errors import InvalidParameter
from expost.rounding import (
    SMALLEST,
    down,
    iv_below,
    iv_eval,
    largest_where,
    neg_log_up,
    nudge_down,
    nudge_up,
    smallest_where,
    sum_up,
    up_exact,
    up_iv,
    up_ratio,
)

__all__ = [
    "ZCDP",
    "ApproxDP",
    "ExPost",
    "GaussianDP",
    "Guarantee",
    "ProbabilisticDP",
    "PureDP",
    "cks_delta",
    "cks_rho_for_dp",
    "cks_zcdp_to_dp",
    "compose_ex_post",
    "compose_zcdp",
    "dp_to_pdp",
    "dp_to_zcdp",
    "gdp_delta",
    "gdp_mu_for_dp",
    "pdp_to_dp",
    "rho_for_dp",
    "rho_of_eps",
    "zcdp_to_dp",
]


@frozen
class PureDP:
    """Pure eps-differential privacy (APC Def 2.1 with delta = 0)."""

    eps: float = field(converter=as_float, validator=validator(positive))


@frozen
class ApproxDP:
    """(eps, delta)-differential privacy (APC Def 2.1); eps = 0 means total variation <= delta."""

    eps: float = field(converter=as_float, validator=validator(nonnegative))
    delta: float = field(default=0.0, converter=as_float, validator=validator(probability))


@frozen
class ZCDP:
    """delta-approximate rho-zCDP, in the mixture form (APC Def 2.3, FAC Def 3); delta = 0 is zCDP."""

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(default=0.0, converter=as_float, validator=validator(probability))


@frozen
class ProbabilisticDP:
    """(eps, delta)-probabilistic DP: P(|L| > eps) <= delta (FAC Sec. 2)."""

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(default=0.0, converter=as_float, validator=validator(probability))


@frozen
class ExPost:
    """An ex-post guarantee for the values actually released: P(L > bound) <= delta.

    ``bound`` is the realised value E(A(x)) of the ex-post function (APC Def 4.1, BNR Def 2.2).
    Ex-post privacy is not closed under post-processing (APC Remark 1).
    """

    bound: float = field(converter=as_float, validator=validator(nonnegative))
    delta: float = field(default=0.0, converter=as_float, validator=validator(probability))


@frozen
class GaussianDP:
    """mu-Gaussian differential privacy (Dong, Roth & Su 2022; THEORY.md §9).

    For all neighbours the trade-off function of (P_x, P_x') is at least G_mu, that of
    N(0, 1) vs N(mu, 1). Equivalently (their Cor. 2.13) (eps, delta_mu(eps))-DP for every
    eps >= 0 (`to_dp`, `gdp_delta`).
    """

    mu: float = field(converter=as_float, validator=validator(positive))

    def to_dp(self, eps: float) -> ApproxDP:
        """(eps, delta_mu(eps))-DP, delta_mu(eps) = Φ(−eps/mu + mu/2) − e^eps·Φ(−eps/mu − mu/2).

        delta is `gdp_delta`'s upper bound; an eps at which it reaches 1 (vacuous) is refused.
        """
        delta = gdp_delta(self.mu, eps)
        if delta >= 1.0:
            raise InvalidParameter("eps", eps, f"gives a vacuous delta for mu = {self.mu!r}")
        return ApproxDP(eps, delta)

    def eps_for(self, delta: float) -> float:
        """The smallest eps >= 0 with delta_mu(eps) <= ``delta`` (delta_mu decreases in eps).

        0.0 when delta_mu(0) = 2Φ(mu/2) − 1 <= delta already.
        """
        from scipy.optimize import brentq  # lazy: keeps `import expost` fast

        d = open_probability("delta", delta)
        target, mu = math.log(d), self.mu
        if gdp_delta(mu, 0.0) <= d:
            return 0.0
        hi = max(1.0, mu * mu)
        while _gdp_log_delta(mu, hi) > target:
            hi *= 2.0
        root = float(
            brentq(lambda e: _gdp_log_delta(mu, e) - target, 0.0, hi, xtol=1e-14, rtol=1e-14)
        )
        return nudge_up(root, lambda e: gdp_delta(mu, e) <= d)


def _gdp_log_delta(mu: float, eps: float) -> float:
    """An upper bound on log delta_mu(eps), in log space (scipy's log_ndtr) for large eps.

    delta = Φ(a) − e^eps·Φ(b) = Φ(a)·(1 − exp(gap)), a = −eps/mu + mu/2, b = a − mu,
    gap = eps + log Φ(b) − log Φ(a) < 0; the bracket is computed with expm1. For small mu, gap is
    a difference of two nearly equal logs of size about eps²/(2mu²), so it is moved down by a
    bound on its rounding error (16 ulps of the terms); where that leaves nothing, delta <= Φ(a).
    """
    from scipy.special import log_ndtr  # lazy: keeps `import expost` fast

    la = float(log_ndtr(-eps / mu + mu / 2.0))
    log_phi_b = float(log_ndtr(-eps / mu - mu / 2.0))
    gap = eps + log_phi_b - la
    gap -= 16.0 * sys.float_info.epsilon * (eps + abs(log_phi_b) + abs(la))
    if gap >= 0.0:  # cannot happen for exact values; delta_mu(eps) <= Φ(a) always
        return la
    return la + math.log(-math.expm1(gap))


_GDP_MARGIN = 1.0 + 1e-6  # above the float evaluation's relative error (tests: < 1e-8)


def gdp_delta(mu: float, eps: float) -> float:
    """delta_mu(eps) = Φ(−eps/mu + mu/2) − e^eps·Φ(−eps/mu − mu/2) (Dong–Roth–Su Cor. 2.13).

    Increasing in mu, decreasing in eps; computed in log space (stable for large eps) and
    returned as an upper bound: the float value enlarged by a relative 1e-6, far above its
    measured error (< 1e-8 against 60-digit arithmetic down to delta = 1e-300), plus two ulps
    so that a subnormal or underflowing value stays above the truth (never 0: mu-GDP is never
    pure DP), capped at 1.
    """
    log_delta = _gdp_log_delta(positive("mu", mu), nonnegative("eps", eps))
    bound = math.exp(log_delta) * _GDP_MARGIN
    return min(1.0, bound + 2.0 * math.ulp(bound))


_GDP_MAX_EPS = 1e150  # log Φ(−eps/mu + mu/2) at the search's mu = 1 stays finite
_GDP_MIN_DELTA = 2.0**-1022  # gdp_delta's two-ulp cushion is at most 2⁻⁵¹ relative above it


def gdp_mu_for_dp(eps: float, delta: float) -> float:
    """The largest mu with delta_mu(eps) <= delta: mu-GDP then gives (eps, delta)-DP.

    delta_mu(eps) increases in mu (Dong–Roth–Su Cor. 2.13), so this is a root in mu
    (brentq), moved down by ulps until the inequality holds. (10, 1e-6) gives mu ≈ 1.848
    (mu²/2 ≈ 1.708 against the Bun–Steinke rho* ≈ 1.353); (1, 1e-6) gives mu²/2 ≈ 0.0280.
    """
    from scipy.optimize import brentq  # lazy: keeps `import expost` fast

    e = positive("eps", eps)
    d = open_probability("delta", delta)
    if e > _GDP_MAX_EPS:
        raise InvalidParameter("eps", eps, f"must be <= {_GDP_MAX_EPS:g} (eps²/mu² overflows)")
    if d < _GDP_MIN_DELTA:
        raise InvalidParameter(
            "delta", delta, "must be >= 2**-1022: gdp_delta cannot certify a subnormal delta"
        )
    target = math.log(d)
    hi = 1.0
    while _gdp_log_delta(hi, e) <= target:
        hi *= 2.0
    lo = hi / 2.0
    while _gdp_log_delta(lo, e) > target:
        lo /= 2.0
        if lo < _GDP_MIN_DELTA:  # the float bound on delta_mu(eps) is too coarse down here
            raise InvalidParameter(
                "delta", delta, f"is too small for eps = {e!r}: mu would be below 2**-1022"
            )
    root = float(brentq(lambda m: _gdp_log_delta(m, e) - target, lo, hi, xtol=1e-15, rtol=1e-14))
    return nudge_down(root, lambda m: gdp_delta(m, e) <= d)


Guarantee = PureDP | ApproxDP | ZCDP | ProbabilisticDP | ExPost | GaussianDP


def rho_of_eps(eps: float) -> float:
    """eps²/2 rounded up: an eps-DP round is eps²/2-zCDP (APC Lemma 2.1; Bun–Steinke Prop 1.4)."""
    a, b = eps.as_integer_ratio()
    return up_ratio(eps * eps / 2.0, a * a, 2 * b * b)


def dp_to_zcdp(guarantee: PureDP | ApproxDP) -> ZCDP:
    """(eps, delta)-DP implies delta-approximate (eps²/2)-zCDP (APC Lemma 2.1, FAC Lemma 1).

    rho is eps²/2 rounded up (`rho_of_eps`).
    """
    if not isinstance(guarantee, PureDP | ApproxDP):
        raise InvalidParameter("guarantee", guarantee, "must be PureDP or ApproxDP")
    delta = guarantee.delta if isinstance(guarantee, ApproxDP) else 0.0
    return ZCDP(rho_of_eps(guarantee.eps), delta)


def _check_zcdp(guarantee: ZCDP) -> ZCDP:
    if not isinstance(guarantee, ZCDP):
        raise InvalidParameter("guarantee", guarantee, "must be a ZCDP guarantee")
    return guarantee


def _combined_delta(delta: float, delta_second: float, form: str) -> float:
    """The total delta, rounded up: delta + (1 − delta)·delta'' (fac) or delta + delta'' (apc)."""
    d, d2 = Fraction(delta), Fraction(delta_second)
    if form == "fac":
        return up_exact(d + (1 - d) * d2)
    if form == "apc":
        return up_exact(d + d2)
    raise InvalidParameter("form", form, "must be 'fac' or 'apc'")


def _bun_steinke_within(rho: float, eps: float, ell: float) -> bool:
    """rho + 2·sqrt(rho·ℓ) <= eps, decided exactly in rationals."""
    if math.isinf(eps):
        return eps > 0.0
    r, e = Fraction(rho), Fraction(eps)
    return e >= r and (e - r) ** 2 >= 4 * r * Fraction(ell)


def zcdp_to_dp(
    guarantee: ZCDP, delta_second: float, *, form: Literal["fac", "apc"] = "fac"
) -> ApproxDP:
    """delta-approx rho-zCDP implies (rho + 2·sqrt(rho·log(1/delta'')), delta_total)-DP.

    Bun–Steinke, as APC Lemma 2.1 and FAC Lemma 1. ``form="fac"`` gives
    delta_total = delta + (1 − delta)·delta'' (FAC Lemma 1); ``form="apc"`` the looser
    delta + delta'' printed in APC Lemma 2.1. Both eps and delta_total are rounded up: eps is
    raised until rho + 2·sqrt(rho·ℓ) <= eps holds in exact arithmetic with ℓ >= log(1/delta'').
    """
    g = _check_zcdp(guarantee)
    d2 = open_probability("delta_second", delta_second)
    ell = neg_log_up(d2)
    start = g.rho + 2.0 * math.sqrt(g.rho) * math.sqrt(ell)  # rho·ℓ may overflow, the roots not
    eps = nudge_up(start, lambda e: _bun_steinke_within(g.rho, e, ell))
    if math.isinf(eps):
        raise InvalidParameter("guarantee", guarantee, "its DP eps is beyond the largest float")
    return ApproxDP(eps, _combined_delta(g.delta, d2, form))


def rho_for_dp(eps: float, delta_second: float) -> float:
    """The largest rho whose Bun–Steinke conversion (APC Lemma 2.1) gives at most ``eps``.

    Closed form: solving rho + 2·sqrt(rho·ℓ) = eps with ℓ = log(1/delta'') gives
    rho* = (sqrt(ℓ + eps) − sqrt(ℓ))²; (10, 1e-6) gives rho* ≈ 1.35301 (APC Sec. 7). A budget:
    rounded down, until rho + 2·sqrt(rho·ℓ) <= eps holds in exact arithmetic with ℓ at least
    log(1/delta''), so the float returned is never above the exact rho*.
    """
    e = positive("eps", eps)
    ell = neg_log_up(open_probability("delta_second", delta_second))
    # eps / (sqrt(ℓ+eps) + sqrt(ℓ)) equals sqrt(ℓ+eps) − sqrt(ℓ) without cancellation.
    rho = (e / (math.sqrt(ell + e) + math.sqrt(ell))) ** 2
    return nudge_down(rho, lambda r: _bun_steinke_within(r, e, ell))


def _cks_order(rho: float, eps: float) -> float:
    """The order a > 1 minimising CKS's log delta, in floats (Canonne–Kamath–Steinke 2020).

    The exponent (a−1)(a·rho − eps) − log a + (a−1)·log(1 − 1/a) is convex in a with derivative
    (2a − 1)·rho − eps + log(1 − 1/a), which increases from −∞ to +∞: its unique root.
    """
    from scipy.optimize import brentq  # lazy: keeps `import expost` fast

    def slope(a: float) -> float:
        return (2.0 * a - 1.0) * rho - eps + math.log1p(-1.0 / a)

    hi = 2.0
    while slope(hi) <= 0.0:
        if hi >= _MAX_ORDER:  # the minimiser is beyond the floats: any order bounds delta
            return hi
        hi *= 2.0
    lo = 1.0 + 1e-15
    return lo if slope(lo) >= 0.0 else float(brentq(slope, lo, hi, xtol=1e-14, rtol=1e-15))


_MAX_ORDER = 2.0**1000
_CKS_MAX_RHO = 1e300  # above, cks_zcdp_to_dp returns the Bun–Steinke eps (never below CKS's)
_CKS_MAX_EPS = 1e12  # above, cks_rho_for_dp returns the Bun–Steinke rho (never above CKS's)
_LOG_SMALLEST = -746.0  # below log 2⁻¹⁰⁷⁴ ≈ −744.44: delta is below the smallest float


def _cks_log_delta(rho: float, eps: float) -> float:
    """log of inf_{a>1} exp((a−1)(a·rho − eps))·(1/a)·(1 − 1/a)^(a−1) (CKS 2020, Prop. 12), in
    floats: for the searches only (no direction)."""
    a = _cks_order(rho, eps)
    return (a - 1.0) * (a * rho - eps) - math.log(a) + (a - 1.0) * math.log1p(-1.0 / a)


def _cks_log_delta_iv(rho: float, eps: float) -> Any:
    """An interval holding CKS's exponent at the float order `_cks_order`: its upper end bounds
    log delta from above, since delta is the infimum over every a > 1 (CKS Prop. 12)."""
    a = _cks_order(rho, eps)

    def compute(iv: Any) -> Any:
        x, r, e = iv.mpf(a), iv.mpf(rho), iv.mpf(eps)
        return (x - 1) * (x * r - e) - iv.log(x) + (x - 1) * iv.log((x - 1) / x)

    return iv_eval(compute)


def _cks_within(rho: float, eps: float, delta_second: float) -> bool:
    """Rigorously: the CKS delta of rho-zCDP at eps is <= delta'' (interval arithmetic)."""
    return iv_below(_cks_log_delta_iv(rho, eps), iv_eval(lambda iv: iv.log(iv.mpf(delta_second))))


def cks_delta(rho: float, eps: float) -> float:
    """The delta at which rho-zCDP gives (eps, delta)-DP by Canonne–Kamath–Steinke (2020, Prop. 12).

    Rounded up: the exponent at the float order a, in 128-bit interval arithmetic, exponentiated
    and its upper end rounded up (`rounding.up_iv`); at least 2⁻¹⁰⁷⁴ (never 0), at most 1.
    """
    r = positive("rho", rho)
    e = nonnegative("eps", eps)
    exponent = _cks_log_delta_iv(r, e)
    if exponent.b < _LOG_SMALLEST:  # compared in mpmath: the exponent may be -1e600
        return SMALLEST
    if exponent.b >= 0:
        return 1.0
    return min(1.0, up_iv(lambda iv: iv.exp(_cks_log_delta_iv(r, e))))


def _cks_eps_float(rho: float, delta_second: float) -> float:
    """The smallest eps with CKS delta <= delta'', in floats: for the searches (no direction)."""
    from scipy.optimize import brentq  # lazy: keeps `import expost` fast

    target = math.log(delta_second)
    if _cks_log_delta(rho, 0.0) <= target:
        return 0.0
    hi = rho + 2.0 * math.sqrt(rho * -math.log(delta_second))  # not 1/delta'': inf if subnormal
    while _cks_log_delta(rho, hi) > target:
        hi *= 2.0
    return float(brentq(lambda e: _cks_log_delta(rho, e) - target, 0.0, hi, xtol=1e-14, rtol=1e-13))


def _cks_eps(rho: float, delta_second: float) -> float:
    """The smallest eps with CKS delta <= delta'', rounded up: the float root, then the smallest
    float at which the interval check `_cks_within` holds (`rounding.smallest_where`)."""
    if _cks_within(rho, 0.0, delta_second):
        return 0.0
    root = _cks_eps_float(rho, delta_second)
    high = 4.0 * (root + rho + 2.0 * math.sqrt(rho * -math.log(delta_second)))
    found = smallest_where(lambda e: _cks_within(rho, e, delta_second), root, 0.0, high)
    if found is None:  # cannot happen: above the Bun–Steinke eps, which CKS never exceeds
        raise InvalidParameter("delta_second", delta_second, f"no eps found for rho = {rho!r}")
    return found


def cks_zcdp_to_dp(
    guarantee: ZCDP, delta_second: float, *, form: Literal["fac", "apc"] = "fac"
) -> ApproxDP:
    """rho-zCDP implies (eps, delta'')-DP with the smallest eps allowed by Canonne–Kamath–Steinke.

    ``delta'' = inf_{a>1} exp((a−1)(a·rho − eps))·(1/a)·(1 − 1/a)^(a−1)`` (CKS 2020, Prop. 12),
    inverted in eps numerically; eps rounded up (the smallest float at which the exponent, in
    interval arithmetic, is <= log delta''). Never looser than `zcdp_to_dp`. For
    delta-approximate zCDP the deltas combine as in `zcdp_to_dp`.
    """
    g = _check_zcdp(guarantee)
    d2 = open_probability("delta_second", delta_second)
    bun_steinke = zcdp_to_dp(g, d2, form=form)  # valid for CKS too: never return more
    if g.rho > _CKS_MAX_RHO:  # the order's float search overflows
        return bun_steinke
    return ApproxDP(min(_cks_eps(g.rho, d2), bun_steinke.eps), bun_steinke.delta)


def cks_rho_for_dp(eps: float, delta_second: float) -> float:
    """The largest rho whose Canonne–Kamath–Steinke conversion gives at most ``eps``.

    A budget: rounded down, to the largest float at which CKS delta at ``eps`` is <=
    delta'' in interval arithmetic. Never smaller than `rho_for_dp` for the same arguments.
    """
    from scipy.optimize import brentq  # lazy: keeps `import expost` fast

    e = positive("eps", eps)
    d2 = open_probability("delta_second", delta_second)
    lo = rho_for_dp(e, d2)
    if e > _CKS_MAX_EPS:  # the float searches lose their bracket; Bun–Steinke is valid for CKS
        return lo
    if lo == 0.0 and not _cks_within(SMALLEST, e, d2):
        return 0.0  # rho* is below the smallest positive float: 0.0 is the float below it
    hi = 2.0 * max(lo, SMALLEST)
    while _cks_eps_float(hi, d2) <= e:
        lo, hi = hi, 2.0 * hi
    # xtol relative to the scale: rho is ~eps²/(4 log(1/delta'')), 1e-8 and less at small eps
    xtol = max(1e-15 * lo, SMALLEST)
    # disp=False: an unconverged root is only a start; largest_where checks rigorously
    f = lambda r: _cks_eps_float(r, d2) - e
    root = float(brentq(f, lo, hi, xtol=xtol, rtol=1e-13, disp=False))
    found = largest_where(lambda r: _cks_within(r, e, d2), root, SMALLEST, 4.0 * hi)
    return lo if found is None else max(found, lo)  # lo (Bun–Steinke) is valid for CKS too


def pdp_to_dp(guarantee: ProbabilisticDP) -> ApproxDP:
    """(eps, delta)-pDP implies (eps, delta)-DP (Kasiviswanathan–Smith; FAC Lemma 2)."""
    if not isinstance(guarantee, ProbabilisticDP):
        raise InvalidParameter("guarantee", guarantee, "must be ProbabilisticDP")
    return ApproxDP(guarantee.eps, guarantee.delta)


def dp_to_pdp(guarantee: ApproxDP | PureDP) -> ProbabilisticDP:
    """(eps, delta)-DP implies (2eps, 2delta/(eps·e^eps))-pDP (Kasiviswanathan–Smith; FAC Lemma 2).

    Pure eps-DP is (eps, 0)-pDP, since then |L| <= eps surely. The pDP delta is rounded up
    (e^eps bounded below by libm's exp moved down 2 ulps; the rest exact).
    """
    if isinstance(guarantee, PureDP):
        return ProbabilisticDP(guarantee.eps, 0.0)
    if not isinstance(guarantee, ApproxDP):
        raise InvalidParameter("guarantee", guarantee, "must be PureDP or ApproxDP")
    eps = guarantee.eps
    try:
        exp_low = down(math.exp(eps), 2)
    except OverflowError:  # e^eps is above the largest float
        exp_low = sys.float_info.max
    delta = up_exact(2 * Fraction(guarantee.delta) / (Fraction(eps) * Fraction(exp_low)))
    if delta >= 1.0:
        raise InvalidParameter(
            "guarantee",
            guarantee,
            f"gives a vacuous pDP delta 2·delta/(eps·e^eps) = {delta!r} >= 1",
        )
    return ProbabilisticDP(2.0 * eps, delta)


def _total_delta(deltas: list[float]) -> float:
    total = sum_up(deltas)
    if total >= 1.0:
        raise InvalidParameter("guarantees", deltas, "the deltas must sum to less than 1")
    return total


def compose_zcdp(*guarantees: ZCDP) -> ZCDP:
    """Composition of approximate zCDP adds rho and delta (APC Lemma 2.2); both sums rounded up."""
    if not guarantees:
        raise InvalidParameter("guarantees", guarantees, "must name at least one guarantee")
    gs = [_check_zcdp(g) for g in guarantees]
    return ZCDP(sum_up(g.rho for g in gs), _total_delta([g.delta for g in gs]))


def compose_ex_post(*guarantees: ExPost) -> ExPost:
    """Basic composition of ex-post guarantees adds bounds and deltas (APC Lemma B.1).

    This cannot be improved in general (APC Sec. 5). Both sums are rounded up.
    """
    if not guarantees or not all(isinstance(g, ExPost) for g in guarantees):
        raise InvalidParameter("guarantees", guarantees, "must be one or more ExPost guarantees")
    return ExPost(sum_up(g.bound for g in guarantees), _total_delta([g.delta for g in guarantees]))
