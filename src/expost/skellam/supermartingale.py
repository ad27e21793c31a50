"""Ex-post RDP of Skellam noise reduction: THEORY §11's supermartingale condition, checked step
by step on a grid in mpmath (issue 29, item 6).

Skellam noise reduction (THEORY §10) releases f(x) + X_(T_n) at decreasing times T_1 > … > T_N,
X_t = P1(λt) − P2(λt), so X_t ~ Skellam(λt, λt) with pmf p_t. Its loss after n releases is
ℓ_(T_n)(X_(T_n)) with ℓ_t(z) = log p_t(z) − log p_t(z − D), 1 <= |D| <= Δ (sufficiency, §10).
Going down in time X is Markov with the bridge kernel q(k | z) = p_s(k)·p_(t−s)(z − k)/p_t(z)
(independent increments; binomial thinning of P1, P2 has this law for the difference). A bound
ε_α(T_n) is an ex-post RDP bound at every stopping time on the grid if

    M_n = exp((α−1)(ℓ_(T_n)(X_(T_n)) − ε_α(T_n)))

is a supermartingale in the release order with E[M_1] <= 1 (optional stopping; THEORY §11):

    E[M_1] = exp((α−1)(D_α(T_1) − ε_α(T_1))) <= 1,
    R_n(z) = E[g_(T_(n+1))(X) | X_(T_n) = z] / g_(T_n)(z) · exp(−(α−1)(ε_(n+1) − ε_n)) <= 1

for every z, with g_t = exp((α−1)ℓ_t) and D_α(t) the Rényi divergence of the shifted Skellam.
Both sides are computed here in mpmath (p_t(k) = e^(−2λt)·I_|k|(2λt)) on the window |z| <= Z
(``sds`` standard deviations of X_(T_n), plus Δ), with the bridge sum over k wide enough that
the omitted kernel mass is negligible at the working precision. D < 0 is the mirror image of
−D (the Skellam pmf is symmetric), so D = 1..Δ is checked.

This is a numerical certificate on a truncated support, not a proof: the condition must hold
for every integer z. `certify_skellam_rdp` refuses where the worst z of a step lies at the edge
of its window (the supremum may lie outside). Docs: docs/mechanisms/skellam.md, "Ex-post RDP".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import Any

from attrs import frozen

from expost._validation import positive, positive_decreasing, positive_int, renyi_order
from expost.errors import InvalidParameter
from expost.rounding import down_mp, up_mp
from expost.skellam.loss import SkellamLoss

__all__ = [
    "StepReport",
    "SupermartingaleReport",
    "certify_skellam_rdp",
    "check_skellam_rdp",
    "gaussian_shaped",
    "worst_stopping_mean",
]

Mp = Any  # an mpmath number
_DPS = 40


@lru_cache(maxsize=65_536)
def _pmf(mu: float, k: int) -> Mp:
    """p(k) of Skellam(mu, mu) = e^(−2mu)·I_|k|(2mu), in mpmath at `_DPS` digits."""
    import mpmath  # lazy: keeps `import expost` fast

    with mpmath.workdps(_DPS):
        return mpmath.exp(-2 * mpmath.mpf(mu)) * mpmath.besseli(abs(k), 2 * mpmath.mpf(mu))


def _g(mu: float, z: int, d: int, alpha: float) -> Mp:
    """g(z) = (p(z)/p(z − d))^(α−1): exp((α−1)·loss)."""
    import mpmath

    with mpmath.workdps(_DPS):
        return (_pmf(mu, z) / _pmf(mu, z - d)) ** (mpmath.mpf(alpha) - 1)


def _window(mu: float, sds: float, extra: int) -> int:
    return math.ceil(sds * math.sqrt(2.0 * mu)) + extra


@frozen
class StepReport:
    """One step of the check: ``index`` n (0: the first release, E[M_1]; n >= 1: from T_n to
    T_(n+1) in 1-based release order), the worst ratio over the window and shifts (<= 1: the
    step holds), where it is attained (z, D), the window half-width Z, and the smallest
    increment ε_(n+1) − ε_n (n = 0: ε_1) that would make the step hold on the window."""

    index: int
    worst_ratio: float
    worst_z: int
    worst_shift: int
    window: int
    needed: float

    @property
    def at_edge(self) -> bool:
        """Is the worst z within Δ + 1 of the window's edge (so the sup may lie outside)?"""
        return abs(self.worst_z) >= self.window - abs(self.worst_shift) - 1


@frozen
class SupermartingaleReport:
    """The steps of `check_skellam_rdp` and the largest ratio over them."""

    steps: tuple[StepReport, ...]

    @property
    def worst_ratio(self) -> float:
        return max(s.worst_ratio for s in self.steps)

    @property
    def holds(self) -> bool:
        """Every step's worst ratio is <= 1 (on the windows)."""
        return self.worst_ratio <= 1.0


def _bridge_mean(t: float, s: float, rate: float, z: int, h: Callable[[int], Mp], sds: float) -> Mp:
    """E[h(X_s) | X_t = z] by the bridge kernel, summed over k within sds + 4 standard
    deviations of the bridge around z·s/t (h >= 0: the omitted terms only lower the value)."""
    import mpmath

    mu_s, mu_gap = rate * s, rate * (t - s)
    centre, spread = round(z * s / t), _window(mu_s * (t - s) / t, sds + 4.0, 2)
    with mpmath.workdps(_DPS):
        total = mpmath.mpf(0)
        for k in range(centre - spread, centre + spread + 1):
            total += _pmf(mu_s, k) * _pmf(mu_gap, z - k) * h(k)
        return total / _pmf(rate * t, z)


def _step_log_ratios(
    t: float, s: float, rate: float, d: int, alpha: float, sds: float
) -> tuple[int, list[tuple[int, Mp]]]:
    """(Z, [(z, log(E[g_s(X_s) | X_t = z] / g_t(z)))] for |z| <= Z)."""
    import mpmath

    z_max = _window(rate * t, sds, d + 1)
    out = []
    with mpmath.workdps(_DPS):
        for z in range(-z_max, z_max + 1):
            mean = _bridge_mean(t, s, rate, z, lambda k: _g(rate * s, k, d, alpha), sds)
            out.append((z, mpmath.log(mean) - mpmath.log(_g(rate * t, z, d, alpha))))
    return z_max, out


def _renyi(t: float, rate: float, d: int, alpha: float) -> float:
    """D_α of Skellam(λt, λt) against its shift by d, rounded up (`SkellamLoss.renyi`)."""
    return SkellamLoss(rate * t, d).renyi(alpha)


def _arguments(
    times: Sequence[float], rate: float, sensitivity: int, alpha: float
) -> tuple[list[float], float, int, float]:
    grid = positive_decreasing("times", times).tolist()
    return (
        grid,
        positive("rate", rate),
        positive_int("sensitivity", sensitivity),
        renyi_order(alpha),
    )


def _candidate(eps: Sequence[float], size: int) -> list[float]:
    values = [float(e) for e in eps]
    if len(values) != size or not all(math.isfinite(e) and e >= 0.0 for e in values):
        raise InvalidParameter("eps", eps, f"must be {size} finite values >= 0")
    return values


def _steps(
    grid: list[float], rate: float, delta: int, alpha: float, eps: Sequence[float], sds: float
) -> tuple[StepReport, ...]:
    import mpmath

    a1 = alpha - 1.0
    first, shift = max((_renyi(grid[0], rate, d, alpha), d) for d in range(1, delta + 1))
    steps = [StepReport(0, math.exp(a1 * (first - eps[0])), 0, shift, 0, first)]
    for n in range(len(grid) - 1):
        worst: tuple[Mp, int, int, int] | None = None
        for d in range(1, delta + 1):
            z_max, logs = _step_log_ratios(grid[n], grid[n + 1], rate, d, alpha, sds)
            for z, value in logs:
                if worst is None or value > worst[0]:
                    worst = (value, z, d, z_max)
        assert worst is not None  # the window is never empty
        value, z, d, z_max = worst
        with mpmath.workdps(_DPS):
            ratio = mpmath.exp(value - a1 * (mpmath.mpf(eps[n + 1]) - mpmath.mpf(eps[n])))
        steps.append(StepReport(n + 1, float(ratio), z, d, z_max, up_mp(value / a1)))
    return tuple(steps)


def check_skellam_rdp(
    times: Sequence[float],
    rate: float,
    sensitivity: int,
    alpha: float,
    eps: Sequence[float],
    sds: float = 12.0,
) -> SupermartingaleReport:
    """Check a candidate ε_α(T_1..T_N) (aligned with the decreasing ``times``) against the
    supermartingale condition of the module docstring, step by step, on windows of ``sds``
    standard deviations; the report gives each step's worst ratio (<= 1: it holds there)."""
    grid, lam, delta, a = _arguments(times, rate, sensitivity, alpha)
    values = _candidate(eps, len(grid))
    return SupermartingaleReport(_steps(grid, lam, delta, a, values, positive("sds", sds)))


def certify_skellam_rdp(
    times: Sequence[float], rate: float, sensitivity: int, alpha: float, sds: float = 12.0
) -> tuple[float, ...]:
    """The smallest ε_α(T_n) the step-by-step condition allows on the windows: ε_1 = D_α(T_1)
    and ε_(n+1) = ε_n + max(0, the step's needed increment), each rounded up; with the
    increments >= 0 the bound is valid for every shift at once (module docstring).

    Raises InvalidParameter (refuses) where a step's worst z lies at its window's edge.
    """
    grid, lam, delta, a = _arguments(times, rate, sensitivity, alpha)
    zeros = [0.0] * len(grid)
    steps = _steps(grid, lam, delta, a, zeros, positive("sds", sds))
    edge = [s.index for s in steps if s.index > 0 and s.at_edge]
    if edge:
        raise InvalidParameter("times", times, f"steps {edge} peak at the window's edge: refused")
    out = [steps[0].needed]
    for step in steps[1:]:
        out.append(math.nextafter(out[-1] + step.needed, math.inf))
    return tuple(out)


def gaussian_shaped(
    times: Sequence[float], rate: float, sensitivity: int, alpha: float
) -> list[float]:
    """The Gaussian analogue α·Δ²/(2·var) with var = 2λt (THEORY §10, §11), a candidate."""
    grid, lam, delta, a = _arguments(times, rate, sensitivity, alpha)
    return [a * delta**2 / (2.0 * 2.0 * lam * t) for t in grid]


def _value(table: dict[int, Mp], k: int) -> Mp:
    return table.get(k, 0)


def worst_stopping_mean(
    times: Sequence[float],
    rate: float,
    sensitivity: int,
    alpha: float,
    eps: Sequence[float],
    sds: float = 12.0,
) -> tuple[float, int]:
    """sup over stopping rules on the grid of E[exp((α−1)(L − ε_α(T_stop)))], and the shift D
    attaining it: the Snell envelope V_N = M_N, V_n = max(M_n, E[V_(n+1) | X_(T_n)]) by
    backward induction, then E[V_1] (a run releases at least once). Terms outside the windows
    are dropped, so the value is a lower bound (rounded down): above 1 it refutes ``eps`` as an
    ex-post RDP bound on this grid for the best (adversarial) stopping rule."""
    import mpmath

    grid, lam, delta, a = _arguments(times, rate, sensitivity, alpha)
    values = _candidate(eps, len(grid))
    best: tuple[Mp, int] | None = None
    with mpmath.workdps(_DPS):
        for d in range(1, delta + 1):
            envelope: dict[int, Mp] = {}
            for n in range(len(grid) - 1, -1, -1):
                t, z_max = grid[n], _window(lam * grid[n], positive("sds", sds), d + 1)
                scale = mpmath.exp(-(mpmath.mpf(a) - 1) * mpmath.mpf(values[n]))
                later = partial(_value, envelope)
                envelope = {}
                for z in range(-z_max, z_max + 1):
                    stop = _g(lam * t, z, d, a) * scale
                    if n + 1 < len(grid):
                        stop = max(stop, _bridge_mean(t, grid[n + 1], lam, z, later, sds))
                    envelope[z] = stop
            mean = mpmath.fsum(_pmf(lam * grid[0], z) * v for z, v in envelope.items())
            if best is None or mean > best[0]:
                best = (mean, d)
    assert best is not None  # sensitivity >= 1
    return down_mp(best[0]), best[1]
