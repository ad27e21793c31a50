"""The privacy loss of the Skellam mechanism, with safe-sided divergences (BNR App. E; issue 21).

For f(x) + Y, Y ~ Skellam(mu1, mu2), and an integer neighbour shift d >= 1, the loss is
L(y) = log p(y) − log p(y − d). The Skellam pmf is log-concave (a convolution of log-concave
Poisson pmfs), so L is non-increasing in y: {L > eps} is a lower interval of y.

``delta_for_eps``, ``eps_for_delta`` and ``renyi`` are rounded up: the pmf comes from
`expost.skellam.pmf.mp_pmf` on a window of y, and every term outside the window is bounded
above (Chernoff bounds, and a ratio bound from I_(n+1)/I_n <= x/(2n + 2)) and added; the sum is
evaluated at P and 2P bits until the two agree (`expost.rounding.up_mp_converged`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import converters, field, frozen, validators

from expost._validation import (
    as_float,
    finite,
    nonnegative,
    open_probability,
    positive,
    positive_int,
    renyi_order,
    sample_count,
    validator,
)
from expost.errors import InvalidParameter
from expost.loss import eps_for_delta_of
from expost.rounding import SMALLEST, delta_up, neg_log_up, up_exact, up_mp_converged
from expost.skellam.pmf import MAX_MEAN, MIN_MEAN, log_pmf, log_tail_above, mp_pmf, mp_tail_above

__all__ = ["MAX_TERMS", "SkellamLoss", "akl_eps_for_delta", "akl_renyi", "hockey_stick_terms"]

FloatArray = npt.NDArray[np.float64]
Mp = Any  # an mpmath number
Number = Any  # a float or an mpmath number

MAX_TERMS = 6500
"""The most pmf terms a safe-sided sum may start from: ``delta_for_eps`` and ``eps_for_delta``
refuse `hockey_stick_terms` above it, ``renyi`` 4·mu2 + 16·d above it (its geometric tail
bound starts near y = −2·mu2), so that each answers or refuses within 2 s on the 2-core sandbox
(measured at the corners, 12·sqrt(2·2.3e5) + 16 and 16·511 terms: 1.1 s of CPU each; the
limit keeps them below about 0.9 s)."""

_SUMMARY_TAIL = 5e-16  # omitted mass on each side of the float support (mean, cgf, sample)
_WINDOW_TAIL_BITS = 72  # the safe-sided sums: bounded tails below 2^-72 of the sum
_LOG_SMALLEST = math.log(2.0**-1074) - 1.0  # log bounds below this: delta is below 2^-1074
_FLOAT_LOSS_ERROR = 1e-8  # assumed |float L − L| in the window search (measured <= 1e-12)
_FLOAT_LOSS_RELATIVE = 1e-12  # and relative to |log p| (both are far above log_ive's error)


def _log_hockey_stick(lp: FloatArray, loss: FloatArray, e: float) -> float:
    """log Σ pmf(y)·(1 − e^(e − L(y))) over the table's y with L(y) > e, in floats (−inf if none)."""
    from scipy import special  # lazy: keeps `import expost` fast

    keep = loss > e
    if not keep.any():
        return -math.inf
    return float(special.logsumexp(lp[keep] + np.log(-np.expm1(e - loss[keep]))))


def _ratio_bound(m1: Number, m2: Number, d: int, u: Number, alpha: Number) -> Number:
    """q(u) >= T(y − 1)/T(y) for y = 1 − u <= 0, T(y) = pmf(y)^α·pmf(y − d)^(1 − α), and
    non-increasing in u: (mu2/u)·((u + d)/u + mu1·mu2/(u(u + d + 1)))^(α − 1), from
    I_(n+1)/I_n <= x/(2n + 2) and its consequence through the recurrence,
    I_n/I_(n+1) <= 2(n + 1)/x + x/(2n + 4). In floats or mpmath, as the arguments are."""
    inner = (u + d) / u + m1 * m2 / (u * (u + d + 1))
    return m2 / u * inner ** (alpha - 1)


def _upper_cut(mu1: float, mu2: float, log_mass: float) -> int:
    """The smallest k >= mu1 − mu2 with the Chernoff bound on P(Y > k) <= exp(``log_mass``)."""
    start = math.ceil(mu1 - mu2)
    width = math.ceil(20.0 * math.sqrt(mu1 + mu2)) + 64
    while True:
        k = np.arange(start, start + width, dtype=np.float64)
        ok = np.flatnonzero(log_tail_above(k + 1.0, mu1, mu2) <= log_mass)
        if ok.size:
            return int(k[ok[0]])
        width *= 2


def _mean(name: str, value: object) -> float:
    """A mean in [MIN_MEAN, MAX_MEAN] = [1e-3, 1e6]: where the float log pmf's error is measured
    (the float tables and window searches rely on it); beyond, the tables grow without bound."""
    m = positive(name, value)
    if not MIN_MEAN <= m <= MAX_MEAN:
        raise InvalidParameter(name, value, f"must lie in [{MIN_MEAN:g}, {MAX_MEAN:g}]")
    return m


def hockey_stick_terms(mu1: float, mu2: float, distance: int) -> float:
    """The window of pmf terms the safe-sided hockey-stick sums start from,
    12·sqrt(mu1 + mu2) + 16·d (`SkellamLoss._lower_cut`): their mpmath work grows with it."""
    return 12.0 * math.sqrt(mu1 + mu2) + 16.0 * distance


@frozen
class SkellamLoss:
    """Loss of the Skellam mechanism f(x) + Skellam(mu, mu2), integer neighbour shift d.

    L(y) = log pmf(y) − log pmf(y − d) for y ~ Skellam(mu, mu2) (BNR App. E); ``mu2``
    defaults to ``mu`` (symmetric noise). ``delta_for_eps``, ``eps_for_delta`` and ``renyi``
    are rounded up (never below the exact value for the float inputs; module docstring).
    ``mean``, ``variance``, ``cgf``, ``tail`` and ``sample`` use the support truncated to
    P(Y < lo), P(Y > hi) <= 5e-16 each, in floats. The means lie in [1e-3, 1e6].
    """

    mu: float = field(converter=as_float, validator=validator(_mean))
    distance: int = field(validator=validator(positive_int))
    mu2: float | None = field(
        default=None,
        converter=converters.optional(as_float),
        validator=validators.optional(validator(_mean)),
    )
    _lo: int = field(init=False, repr=False, eq=False)
    _log_p: FloatArray = field(init=False, repr=False, eq=False)
    _loss: FloatArray = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        log_mass = math.log(_SUMMARY_TAIL)
        lo = -_upper_cut(self._mu2, self.mu, log_mass)
        hi = _upper_cut(self.mu, self._mu2, log_mass)
        log_p, loss = self._table(lo, hi)
        object.__setattr__(self, "_lo", lo)
        object.__setattr__(self, "_log_p", log_p)
        object.__setattr__(self, "_loss", loss)

    @property
    def _mu2(self) -> float:
        return self.mu if self.mu2 is None else self.mu2

    def _log_pmf(self, y: npt.ArrayLike) -> FloatArray:
        return log_pmf(y, self.mu, self._mu2)

    def _loss_at(self, y: FloatArray) -> FloatArray:
        return self._log_pmf(y) - self._log_pmf(y - self.distance)

    @property
    def _p(self) -> FloatArray:
        return np.exp(self._log_p)

    @property
    def mean(self) -> float:
        return float(np.dot(self._p, self._loss))

    @property
    def variance(self) -> float:
        return float(np.dot(self._p, (self._loss - self.mean) ** 2))

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        size = sample_count(n, rng)
        idx = rng.poisson(self.mu, size) - rng.poisson(self._mu2, size) - self._lo
        outside = (idx < 0) | (idx >= self._loss.size)
        loss = self._loss[np.where(outside, 0, idx)]
        if outside.any():  # probability < 1e-15 per draw
            loss[outside] = self._loss_at((idx[outside] + self._lo).astype(np.float64))
        return loss

    def cgf(self, lam: float) -> float:
        """logsumexp over the truncated support of log pmf(y) + lam·L(y) (floats)."""
        from scipy import special  # lazy: keeps `import expost` fast

        x = finite("lam", lam)
        return float(special.logsumexp(self._log_p + x * self._loss))

    def tail(self, e: float) -> float:
        x = finite("e", e)
        return float(self._p[self._loss > x].sum())

    # -- safe-sided divergences -------------------------------------------------------------

    def _check_work(self, terms: float, method: str) -> None:
        """Refuse, before any table, a sum whose window of mpmath terms exceeds ``MAX_TERMS``."""
        if terms > MAX_TERMS:
            raise InvalidParameter(
                "mu",
                (self.mu, self._mu2, self.distance),
                f"with mu2 and distance, {method} needs about {terms:.0f} mpmath pmf terms, "
                f"more than {MAX_TERMS} (bounded work, issue 28)",
            )

    def _log_tail_below(self, k: float) -> float:
        """Chernoff: log P(Y <= k) is at most this."""
        return float(log_tail_above(-k, self._mu2, self.mu))

    def _may_exceed(self, y: int, e: float) -> bool:
        """False only where L(y) <= e for certain (the float loss with a wide error margin)."""
        lp, lq = self._log_pmf([y, y - self.distance])
        slack = _FLOAT_LOSS_ERROR + _FLOAT_LOSS_RELATIVE * (abs(lp) + abs(lq))
        return not lp - lq <= e - slack

    def _region_end(self, e: float) -> int | None:
        """b >= every y with L(y) > e, or None when P(L > e) < 2^-1074 (Chernoff)."""
        step = 1
        if self._may_exceed(0, e):
            below, above = 0, 1
            while self._may_exceed(above, e):
                below, above, step = above, above + step, 2 * step
        else:
            above, below = 0, -1
            while not self._may_exceed(below, e):
                if self._log_tail_below(below - 1) < _LOG_SMALLEST:
                    return None  # {L > e} ⊆ {Y <= below − 1}
                above, below, step = below, below - step, 2 * step
        while above - below > 1:  # may exceed at below, not at above
            mid = (below + above) // 2
            if self._may_exceed(mid, e):
                below = mid
            else:
                above = mid
        return below

    def _lower_cut(self, b: int, log_sum: Callable[[int], float]) -> int:
        """a <= b whose tail bound P(Y <= a − 1) is below 2^-72 of ``log_sum(a)``."""
        width = math.ceil(hockey_stick_terms(self.mu, self._mu2, self.distance)) + 16
        margin = _WINDOW_TAIL_BITS * math.log(2.0)
        while self._log_tail_below(b - width - 1) > log_sum(b - width) - margin:
            width *= 2
        return b - width

    def _window(self, e: float) -> tuple[int, int] | None:
        """[a, b] holding {L > e} but for a lower tail below 2^-72 of the sum; None when
        P(L > e) < 2^-1074."""
        b = self._region_end(e)
        if b is None:
            return None
        return self._lower_cut(b, lambda lo: self._log_delta_float(e, lo, b)), b

    def _mp_delta(self, e: float, a: int, b: int) -> tuple[Mp, Mp]:
        """At mpmath's precision: Σ_y (pmf(y) − e^e·pmf(y − d))_+ with the tail below a bounded
        (Chernoff) and added, and Σ pmf(y − d) over the positive terms (−d/de of the sum / e^e).
        """
        import mpmath as mp  # lazy: keeps `import expost` fast

        d, gain, hi = self.distance, mp.exp(e), b + 1
        while True:
            p = mp_pmf(a - d, hi, self.mu, self._mu2)  # p[i] = pmf(a − d + i)
            terms = [p[i + d] - gain * p[i] for i in range(hi - a + 1)]
            if terms[-1] <= 0:  # L(hi) <= e, so L <= e above hi: the region is covered
                tail = mp_tail_above(1 - a, self._mu2, self.mu)  # P(Y <= a − 1)
                above = [i for i, t in enumerate(terms) if t > 0]
                total = mp.fsum(terms[i] for i in above) + tail
                return total, mp.fsum(p[i] for i in above)
            hi += hi - a  # the float search missed (not seen): widen and recompute

    def delta_for_eps(self, eps: float) -> float:
        """Σ_y (pmf(y) − e^eps·pmf(y − d))_+ (the hockey-stick divergence), rounded up (`delta_up`)."""
        e = nonnegative("eps", eps)
        self._check_work(hockey_stick_terms(self.mu, self._mu2, self.distance), "delta_for_eps")
        window = self._window(e)
        if window is None:
            return SMALLEST
        return delta_up(lambda: self._mp_delta(e, *window)[0])

    def _table(self, lo: int, hi: int) -> tuple[FloatArray, FloatArray]:
        """Float log pmf(y) and L(y) for y in [lo, hi]."""
        y = np.arange(lo, hi + 1, dtype=np.float64)
        lp = self._log_pmf(y)
        return lp, lp - self._log_pmf(y - self.distance)

    def _log_delta_float(self, e: float, lo: int, hi: int) -> float:
        """log of the float hockey-stick sum over y in [lo, hi] (−inf when no term is positive)."""
        return _log_hockey_stick(*self._table(lo, hi), e)

    def _profile_float(self, delta: float) -> Callable[[float], float]:
        """A fast float delta(eps) for the search of `eps_for_delta`: one table of the loss over
        the y where the pmf's tails hold more than delta·2^-72 (the mass outside is ignored)."""
        log_mass = math.log(delta) - _WINDOW_TAIL_BITS * math.log(2.0)
        lp, loss = self._table(
            -_upper_cut(self._mu2, self.mu, log_mass), _upper_cut(self.mu, self._mu2, log_mass)
        )
        return lambda e: math.exp(_log_hockey_stick(lp, loss, e))

    def eps_for_delta(self, delta: float) -> float:
        """The smallest eps with delta_for_eps(eps) <= delta, rounded up (`eps_for_delta_of`;
        the float root is refined by a Newton step on the 128-bit profile)."""
        d = open_probability("delta", delta)
        self._check_work(hockey_stick_terms(self.mu, self._mu2, self.distance), "eps_for_delta")

        def newton(root: float) -> float:
            import mpmath as mp  # lazy: keeps `import expost` fast

            window = self._window(root)
            if window is None:
                return root
            with mp.workprec(128):
                value, mass = self._mp_delta(root, *window)
                slope = -mp.exp(root) * mass
                return root if slope == 0 else float(root - (value - d) / slope)

        return eps_for_delta_of(self.delta_for_eps, d, self._profile_float(d), newton)

    def renyi(self, alpha: float) -> float:
        """D_alpha = log(Σ_y pmf(y)^alpha·pmf(y − d)^(1 − alpha))/(alpha − 1), rounded up."""
        import mpmath as mp  # lazy: keeps `import expost` fast

        a_ = renyi_order(alpha)
        self._check_work(4.0 * self._mu2 + 16.0 * self.distance, "renyi")
        lo, hi = self._renyi_window(a_)
        d = self.distance

        def value() -> Mp:
            al = mp.mpf(a_)
            p = mp_pmf(lo - d, hi, self.mu, self._mu2)  # p[i] = pmf(lo − d + i)
            terms = [p[i + d] ** al * p[i] ** (1 - al) for i in range(hi - lo + 1)]
            q = _ratio_bound(mp.mpf(self.mu), mp.mpf(self._mu2), d, mp.mpf(1 - lo), al)
            q *= 1 + mp.mpf(2) ** -40  # the evaluation's rounding
            upper = mp_tail_above(hi + 1, self.mu, self._mu2)  # terms <= pmf where L <= 0
            total = mp.fsum(terms) + terms[0] * q / (1 - q) + upper
            return mp.log(total) / (al - 1)

        return up_mp_converged(value)

    def _renyi_window(self, alpha: float) -> tuple[int, int]:
        """[lo, hi] with lo <= 0: the ratio bound q(1 − lo) <= 1/2 and the term at lo below 2^-72
        of the estimated sum; hi >= 0 with L(hi) <= 0 and P(Y > hi) below 2^-72 of it."""
        d = self.distance
        estimate = max(self.cgf(alpha - 1.0), 0.0)  # log S, from the float support
        log_target = math.log(min(1.0, estimate) or 2.0**-60) - _WINDOW_TAIL_BITS * math.log(2.0)
        hi = max(_upper_cut(self.mu, self._mu2, log_target), 0)
        while self._may_exceed(hi, 0.0):  # the upper tail bound needs L <= 0 above hi
            hi = 2 * hi + d
        u = 1
        while True:
            q = _ratio_bound(self.mu, self._mu2, d, u, alpha)
            y = float(1 - u)
            log_term = alpha * self._log_pmf(y) + (1.0 - alpha) * self._log_pmf(y - d)
            if q <= 0.5 and log_term <= log_target:
                return 1 - u, hi
            u *= 2


def _akl(alpha: Number, mu: Number, d: Number, least: Callable[[Number, Number], Number]) -> Number:
    """AKL's bound in whatever arithmetic the arguments carry (Fractions, or numpy arrays with
    ``least = np.minimum``)."""
    extra = least(((2 * alpha - 1) * d * d + 6 * d) / (16 * mu * mu), 3 * d / (4 * mu))
    return alpha * d * d / (4 * mu) + extra


def akl_renyi(alpha: int, mu: float, sensitivity: int) -> float:
    """Agarwal, Kairouz & Liu (2021)'s Rényi bound for f(x) + Skellam(mu, mu) on one count with
    integer sensitivity Δ (THEORY §10; their code's form, with Δ₁ = Δ₂ = Δ): for integer
    alpha > 1, D_alpha <= alpha·Δ²/(4mu) + min(((2alpha − 1)Δ² + 6Δ)/(16mu²), 3Δ/(4mu)), rounded
    up exactly. The Gaussian term alone (rho-zCDP with rho = Δ²/(4mu)) is not a bound: see
    ``SkellamLoss.renyi`` near alpha = 1."""
    if isinstance(alpha, bool) or not isinstance(alpha, int) or alpha < 2:
        raise InvalidParameter("alpha", alpha, "must be an integer >= 2 (the bound's orders)")
    m = Fraction(positive("mu", mu))
    d = Fraction(positive_int("sensitivity", sensitivity))
    return up_exact(_akl(alpha, m, d, min))


def akl_eps_for_delta(mu: float, sensitivity: int, delta: float, max_order: int = 256) -> float:
    """The (eps, delta)-DP that `akl_renyi` gives through Mironov's (2017, Prop. 3) conversion,
    eps = min over alpha = 2..``max_order`` of D_alpha + log(1/delta)/(alpha − 1), rounded up.
    The order is chosen in floats; it and its neighbours are then rounded up exactly (the exact
    minimum is within rounding of the float one's order)."""
    d = open_probability("delta", delta)
    top = positive_int("max_order", max_order)
    if top < 2:
        raise InvalidParameter("max_order", max_order, "must be >= 2")
    ell = neg_log_up(d)
    orders = np.arange(2, top + 1)
    sens = positive_int("sensitivity", sensitivity)
    approx = _akl(orders, positive("mu", mu), sens, np.minimum) + ell / (orders - 1)
    best = int(np.argmin(approx))
    near = orders[max(best - 1, 0) : best + 2].tolist()
    return min(
        up_exact(Fraction(akl_renyi(a, mu, sensitivity)) + Fraction(ell) / (a - 1)) for a in near
    )
