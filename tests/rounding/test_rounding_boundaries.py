"""Rounding audit of the boundaries and grids (issue 21): every ψ(t), g(v), apc_psi, delta and
boundary time is on the safe side of a 50-digit mpmath reference computed here, and within a
few ulps of it; each check also runs on a planted round-to-nearest twin, which it must catch.

Inputs: a seeded numpy draw, log-uniform over the whole valid domain (delta down to 1e-300,
times and parameters over many decades).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np
import numpy.typing as npt

from expost.boundaries import (
    FACStitched,
    LinearPrivacyBoundary,
    LineCrossing,
    MixturePrivacyBoundary,
    NormalMixture,
    PolynomialStitching,
    apc_psi,
)
from expost.grids import EpsilonGrid, OpenEpsilonGrid, TimeGrid
from expost.odometers import BrownianOdometer, MixtureOdometer, StitchedOdometer
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, N, audit, audits, log_uniform

FloatArray = npt.NDArray[np.float64]
Mp = Any  # an mpmath number
PER = 10  # points per boundary: N/PER boundaries, each evaluated on an array (vectorised path)
# The most a value may lie above the exact one, in its ulps (ulp(x) >= 2⁻⁵³·x): the proven
# error plus the ulps added, g's then ψ's (boundaries._LINE_ULPS, _MIXTURE_ULPS, _PSI_ULPS).
LINE_ULPS = 3 + 2 * 2  # < 2u error, then 3 ulps: < 8u
MIXTURE_ULPS = 8 * 2 + 7  # < 7u, then 8 ulps: < 23u
LINEAR_PSI_ULPS = LINE_ULPS + 4 + 5 * 2  # g's excess, ψ's < 4u, then 5 ulps
MIXTURE_PSI_ULPS = MIXTURE_ULPS + 4 + 5 * 2


def _draw(seed: int) -> dict[str, FloatArray]:
    rng = np.random.default_rng(seed)
    n = N // PER
    return {
        "a": log_uniform(rng, 1e-6, 1e3, n),
        "r": log_uniform(rng, 1e-8, 1e8, n),
        "delta": log_uniform(rng, 1e-300, 0.9, n),
        "sens": log_uniform(rng, 1e-3, 1e3, n),
        "t": log_uniform(rng, 1e-9, 1e12, N).reshape(n, PER),
    }


def mp_line(a: float, b: float, v: float) -> Mp:
    return mp.mpf(a) * mp.mpf(v) + mp.mpf(b)


def mp_mixture(r: float, delta: float, v: float) -> Mp:
    v_, r_ = mp.mpf(v), mp.mpf(r)
    return mp.sqrt(2 * (v_ + r_) * mp.log(mp.sqrt((v_ + r_) / r_) / mp.mpf(delta)))


def mp_psi(g: Mp, sens: float, t: float) -> Mp:
    d, t_ = mp.mpf(sens), mp.mpf(t)
    return d * d / (2 * t_) + d / t_ * g


def _values(
    compute: Callable[[int], FloatArray], reference: Callable[[int, int], Mp]
) -> tuple[list[float], list[Mp]]:
    got: list[float] = []
    want: list[Mp] = []
    with mp.workdps(DIGITS):
        for i in range(N // PER):
            row = compute(i)
            got += [float(x) for x in row]
            want += [reference(i, j) for j in range(PER)]
    return got, want


def _line_case(seed: int) -> tuple[list[float], list[float], list[Mp]]:
    p = _draw(seed)
    lines = [LineCrossing(a, b) for a, b in zip(p["a"], p["r"], strict=True)]
    got, want = _values(
        lambda i: lines[i](p["t"][i]), lambda i, j: mp_line(lines[i].a, lines[i].b, p["t"][i, j])
    )
    twin = [float(lines[i].a * v + lines[i].b) for i in range(N // PER) for v in p["t"][i]]
    return got, twin, want


@audits("LineCrossing.__call__")
def test_line_crossing_is_an_upper_bound(rounded: Rounded) -> None:
    got, twin, want = _line_case(1)
    audit(got, want, rounded.up, ulps=LINE_ULPS, twin=twin)


def _mixture_case(seed: int) -> tuple[list[float], list[float], list[Mp]]:
    p = _draw(seed)
    ms = [NormalMixture(r, d, sides=2) for r, d in zip(p["r"], p["delta"], strict=True)]
    got, want = _values(
        lambda i: ms[i](p["t"][i]), lambda i, j: mp_mixture(ms[i].r, ms[i].delta, p["t"][i, j])
    )
    twin = [
        float(np.sqrt((v + m.r) * (2.0 * math.log(1.0 / m.delta) + np.log1p(v / m.r))))
        for m, row in zip(ms, p["t"], strict=True)
        for v in row
    ]
    return got, twin, want


@audits("NormalMixture.__call__")
def test_two_sided_mixture_is_an_upper_bound(rounded: Rounded) -> None:
    got, twin, want = _mixture_case(2)
    audit(got, want, rounded.up, ulps=MIXTURE_ULPS, twin=twin)


@audits("apc_psi")
def test_apc_psi_is_an_upper_bound(rounded: Rounded) -> None:
    p = _draw(3)
    got, want = _values(
        lambda i: apc_psi(p["t"][i], float(p["r"][i]), float(p["delta"][i])),
        lambda i, j: mp.sqrt(
            (mp.mpf(p["t"][i, j]) + mp.mpf(p["r"][i]))
            * mp.log(
                (mp.mpf(p["t"][i, j]) + mp.mpf(p["r"][i]))
                / (mp.mpf(p["delta"][i]) ** 2 * mp.mpf(p["r"][i]))
            )
        ),
    )
    twin = [
        float(np.sqrt((v + r) * np.log((v + r) / (d * d * r))))
        for r, d, row in zip(p["r"], p["delta"], p["t"], strict=True)
        for v in row
    ]
    audit(got, want, rounded.up, ulps=MIXTURE_ULPS, twin=twin)


def _linear_boundaries(p: dict[str, FloatArray]) -> list[LinearPrivacyBoundary]:
    return [
        LinearPrivacyBoundary.from_delta(a, d, s)
        for a, d, s in zip(p["a"], p["delta"], p["sens"], strict=True)
    ]


def _mixture_boundaries(p: dict[str, FloatArray]) -> list[MixturePrivacyBoundary]:
    return [
        MixturePrivacyBoundary(r, d, s)
        for r, d, s in zip(p["r"], p["delta"], p["sens"], strict=True)
    ]


def _plain_psi(sens: float, g: float, t: float) -> float:
    return sens * sens / (2.0 * t) + (sens / t) * g


def _audit_psi(
    psis: Sequence[Any],
    times: FloatArray,
    mp_g: Callable[[Any, float], Mp],
    float_g: Callable[[Any, float], float],
    ulps: float,
    up: bool,
) -> None:
    """ψ(t) = Δ²/(2t) + (Δ/t)·g(t) of each boundary at its row of times, against mpmath; the
    twin is the same formula in floats, rounded to nearest."""
    got, want = _values(
        lambda i: psis[i](times[i]),
        lambda i, j: mp_psi(mp_g(psis[i], times[i, j]), psis[i].sensitivity, times[i, j]),
    )
    twin = [
        _plain_psi(b.sensitivity, float_g(b, t), t)
        for b, row in zip(psis, times, strict=True)
        for t in row
    ]
    audit(got, want, up, ulps=ulps, twin=twin)


PsiCase = tuple[
    int,
    Callable[[dict[str, FloatArray]], Sequence[Any]],
    Callable[[Any, float], Mp],
    Callable[[Any, float], float],
    float,
]
PSI_CASES: dict[str, PsiCase] = {
    "LinearPrivacyBoundary.__call__": (
        4,
        _linear_boundaries,
        lambda b, t: mp_line(b.a, b.b, t),
        lambda b, t: b.a * t + b.b,
        LINEAR_PSI_ULPS,
    ),
    "MixturePrivacyBoundary.__call__": (
        5,
        _mixture_boundaries,
        lambda b, t: mp_mixture(b.r, b.delta, t),
        lambda b, t: math.sqrt((t + b.r) * (2.0 * math.log(1.0 / b.delta) + math.log1p(t / b.r))),
        MIXTURE_PSI_ULPS,
    ),
}


@audits(*PSI_CASES)
def test_privacy_boundary_psi_is_an_upper_bound(rounded: Rounded) -> None:
    """`LinearPrivacyBoundary` and `MixturePrivacyBoundary` ψ(t), rounded up."""
    seed, build, mp_g, float_g, ulps = PSI_CASES[rounded.name]
    p = _draw(seed)
    _audit_psi(build(p), p["t"], mp_g, float_g, ulps, rounded.up)


@audits("LineCrossing.delta", "LineCrossing.for_delta")
def test_boundary_delta_is_an_upper_bound(rounded: Rounded) -> None:
    """``delta`` of a line boundary is exp(−2ab) rounded up; ``for_delta``'s b is rounded up."""
    rng = np.random.default_rng(6)
    a = log_uniform(rng, 1e-6, 1e3, N)
    deltas = log_uniform(rng, 1e-300, 0.9, N)
    lines = [LineCrossing.for_delta(x, d) for x, d in zip(a, deltas, strict=True)]
    with mp.workdps(DIGITS):
        if rounded.name == "LineCrossing.delta":
            want = [mp.exp(-2 * mp.mpf(x.a) * mp.mpf(x.b)) for x in lines]
            got = [x.delta for x in lines]
            twin = [math.exp(-2.0 * x.a * x.b) for x in lines]
        else:
            want = [-mp.log(mp.mpf(d)) / (2 * mp.mpf(x)) for x, d in zip(a, deltas, strict=True)]
            got = [x.b for x in lines]
            twin = [math.log(1.0 / d) / (2.0 * x) for x, d in zip(a, deltas, strict=True)]
    audit(got, want, rounded.up, ulps=2, twin=twin)


def _levels(rng: np.random.Generator, floor: Sequence[float]) -> FloatArray:
    """Levels eps from just above the boundary's floor (its asymptote, or 0) to far above it."""
    return np.array(
        [f + f * x + x for f, x in zip(floor, log_uniform(rng, 1e-6, 1e3, N), strict=True)]
    )


@audits("LinearPrivacyBoundary.time_for")
def test_linear_time_for_meets_its_level(rounded: Rounded) -> None:
    """ψ(time_for(eps)) <= eps both as computed and exactly; the time is at most a few ulps
    (scaled by eps/(eps − Δa), the condition number of the inversion) above the exact root."""
    rng = np.random.default_rng(7)
    p = _draw(7)
    psis = _linear_boundaries(p) * PER
    eps = _levels(rng, [b.sensitivity * b.a for b in psis])
    got = [b.time_for(float(e)) for b, e in zip(psis, eps, strict=True)]
    assert all(b(t) <= e for b, t, e in zip(psis, got, eps, strict=True))
    with mp.workdps(DIGITS):
        want = [
            mp.mpf(b.sensitivity)
            * (mp.mpf(b.sensitivity) / 2 + mp.mpf(b.b))
            / (mp.mpf(e) - mp.mpf(b.sensitivity) * mp.mpf(b.a))
            for b, e in zip(psis, eps, strict=True)
        ]
        scale = [
            float(mp.mpf(e) / (mp.mpf(e) - mp.mpf(b.sensitivity) * mp.mpf(b.a)))
            for b, e in zip(psis, eps, strict=True)
        ]
    twin = [
        b.sensitivity * (b.sensitivity / 2.0 + b.b) / (e - b.sensitivity * b.a)
        for b, e in zip(psis, eps, strict=True)
    ]
    audit(got, want, rounded.up, ulps=64, twin=twin, scale=scale)


def _gap(t: float, b: MixturePrivacyBoundary, e: float) -> float:
    return float(b(t)) - e


@audits("MixturePrivacyBoundary.time_for")
def test_mixture_time_for_meets_its_level(rounded: Rounded) -> None:
    """ψ(time_for(eps)) <= eps as computed and exactly; eps exceeds the exact ψ there by brentq's
    documented tolerance only (< 1e-12 relative, 2¹³ ulps). Twin: brentq's root as it ends."""
    from scipy.optimize import brentq

    rng = np.random.default_rng(8)
    p = _draw(8)
    psis = _mixture_boundaries(p) * PER
    eps = log_uniform(rng, 1e-4, 1e3, N)
    got = [b.time_for(float(e)) for b, e in zip(psis, eps, strict=True)]
    assert all(b(t) <= e for b, t, e in zip(psis, got, eps, strict=True))
    twin = [
        float(brentq(_gap, t / 2.0, 2.0 * t, args=(b, e), xtol=1e-300, rtol=1e-13))
        for b, e, t in zip(psis[:200], eps[:200], got[:200], strict=True)
    ]
    with mp.workdps(DIGITS):
        exact = [
            mp_psi(mp_mixture(b.r, b.delta, t), b.sensitivity, t)
            for b, t in zip(psis, got, strict=True)
        ]
        exact_twin = [
            mp_psi(mp_mixture(b.r, b.delta, t), b.sensitivity, t)
            for b, t in zip(psis[:200], twin, strict=True)
        ]
    # the level is audited against the exact ψ at the time: ψ(t) <= level is ``up`` for the level
    audit(list(eps), exact, rounded.up, ulps=2**13, twin=list(eps[:200]), twin_want=exact_twin)


@audits("TimeGrid.from_boundary")
def test_time_grid_from_boundary_meets_each_level(rounded: Rounded) -> None:
    assert rounded.up  # times with ψ <= each level: a later time is the safe side
    rng = np.random.default_rng(9)
    p = _draw(9)
    checked = 0
    for b in _linear_boundaries(p)[:100] + _mixture_boundaries(p)[:100]:
        floor = b.sensitivity * b.a if isinstance(b, LinearPrivacyBoundary) else 0.0
        levels = np.sort(floor * (1.0 + 1e-3) + log_uniform(rng, 1e-3, 1e2, PER))
        grid = TimeGrid.from_boundary(b, levels)
        psi = b(grid.array)
        assert np.all(psi <= levels)
        with mp.workdps(DIGITS):
            for t, e in zip(grid.array, levels, strict=True):
                if isinstance(b, LinearPrivacyBoundary):
                    g = mp_line(b.a, b.b, float(t))
                else:
                    g = mp_mixture(b.r, b.delta, float(t))
                assert mp_psi(g, b.sensitivity, float(t)) <= mp.mpf(e)
                checked += 1
    assert checked == N


def _square_down_exact(x: float) -> float:
    exact = Fraction(x) ** 2
    f = float(exact)
    return math.nextafter(f, 0.0) if Fraction(f) > exact else f


def _clip_levels(seed: int) -> FloatArray:
    """max_eps over the whole range a grid accepts (eps²/4 normal, eps² finite), tiny to huge."""
    rng = np.random.default_rng(seed)
    return log_uniform(rng, 4e-154, 1.3e154, N)


@audits("OpenEpsilonGrid.clip", "OpenEpsilonGrid.clip_each")
def test_clipped_grids_end_at_the_largest_float_below_max_eps_squared(rounded: Rounded) -> None:
    """`OpenEpsilonGrid.clip` and `clip_each` end at the largest float <= max_eps² (exact
    Fraction reference): a budget admitting max_eps admits every point. Twin: max_eps*max_eps."""
    levels = _clip_levels(10)
    want = [_square_down_exact(float(m)) for m in levels]
    assert not rounded.up  # the grid must end within the budget: down
    linear = OpenEpsilonGrid.linear_in_eps2(2.5e-308, 2)
    if rounded.name == "OpenEpsilonGrid.clip":
        assert [linear.clip(float(m)).eps2[-1] for m in levels] == want
    else:
        assert linear.clip_each(levels).eps2()[:, -1].tolist() == want
    twin = (levels * levels).tolist()
    assert sum(t > w for t, w in zip(twin, want, strict=True)) > 0  # the twin overshoots


@audits("EpsilonGrid.clip")
def test_closed_clip_keeps_exactly_the_affordable_points(rounded: Rounded) -> None:
    """`EpsilonGrid.clip(m)` keeps a point iff eps² <= m² exactly, on grids whose points sit at
    and around m² (the float nearest m² and its neighbours). Twin: sqrt(eps²) <= m."""
    assert not rounded.up  # keeps only what the budget affords: down
    twin_wrong = 0
    for m in _clip_levels(11):
        near = float(m) * float(m)
        for k in (-1, 0, 1, 2):
            eps2 = np.array([near / 4.0, near + k * math.ulp(near)])
            exact = [Fraction(x) <= Fraction(float(m)) ** 2 for x in eps2]
            assert EpsilonGrid.from_eps2(eps2).clip(float(m)).eps2.tolist() == eps2[exact].tolist()
            twin_wrong += (np.sqrt(eps2) <= m).tolist() != exact
    assert twin_wrong > 0


def _mp_apc_psi(v: float, gamma: float, delta: float) -> Mp:
    total = mp.mpf(v) + mp.mpf(gamma)
    return mp.sqrt(total * mp.log(total / (mp.mpf(delta) ** 2 * mp.mpf(gamma))))


@audits("MixtureOdometer.bound_at", "BrownianOdometer.bound_at")
def test_mixture_and_brownian_odometer_bounds_are_upper_bounds(rounded: Rounded) -> None:
    """V/2 + the two-sided mixture (FAC Thm 4) or V/2 + apc_psi (APC Thm 4 with the drift):
    the boundary's excess plus one rounding and 1 ulp. Twin: the float formula."""
    p = _draw(12)
    got, want, twin = [], [], []
    with mp.workdps(DIGITS):
        for r, d, row in zip(p["r"], p["delta"], p["t"], strict=True):
            r_, d_ = float(r), float(d)
            if rounded.name == "MixtureOdometer.bound_at":
                got += MixtureOdometer(r_, 1e-9, d_).bound_at(row).tolist()
                want += [mp_mixture(r_, d_, v) + mp.mpf(v) / 2 for v in row]
                twin += [
                    math.sqrt((v + r_) * (2.0 * math.log(1.0 / d_) + math.log1p(v / r_))) + v / 2
                    for v in row
                ]
            else:
                got += BrownianOdometer(r_, d_).bound_at(row).tolist()
                want += [_mp_apc_psi(v, r_, d_) + mp.mpf(v) / 2 for v in row]
                twin += [
                    math.sqrt((v + r_) * math.log((v + r_) / (d_ * d_ * r_))) + v / 2
                    if d_ * d_ * r_ > 0.0
                    else math.inf
                    for v in row
                ]
    audit(got, want, rounded.up, ulps=MIXTURE_PSI_ULPS, twin=twin)


@audits("StitchedOdometer.bound_at", "FACStitched.__call__")
def test_stitched_odometer_bound_is_an_upper_bound(rounded: Rounded) -> None:
    """u = g(V) + V/2, g(V) = 1.7·sqrt(V·(log log(2V/v0) + 0.72·log(5.2/delta''))) for V >= v0
    (FAC Thm 3), the paper's decimal constants exact in the reference; ``FACStitched`` is g
    alone. Twin: the float formula (the library's g before issue 28: 130 of 2,000 odometer bounds
    were unsafe)."""
    drift = 1 if rounded.name == "StitchedOdometer.bound_at" else 0
    rng = np.random.default_rng(13)
    n = N // PER
    v0s, deltas = log_uniform(rng, 1e-6, 1e6, n), log_uniform(rng, 1e-300, 0.5, n)
    got, want, twin = [], [], []
    with mp.workdps(DIGITS):
        for v0, d in zip(v0s.tolist(), deltas.tolist(), strict=True):
            row = (v0 * (1.0 + log_uniform(rng, 1e-9, 1e9, PER))).tolist()
            if drift:
                got += StitchedOdometer(v0, 1e-9, d).bound_at(row).tolist()
            else:
                got += FACStitched(v0, d)(np.array(row)).tolist()
            for v in row:
                inner = mp.log(mp.log(2 * mp.mpf(v) / v0)) + mp.mpf("0.72") * mp.log(
                    mp.mpf("5.2") / mp.mpf(d)
                )
                want.append(mp.mpf("1.7") * mp.sqrt(v * inner) + drift * mp.mpf(v) / 2)
                f_inner = math.log(math.log(2.0 * v / v0)) + 0.72 * math.log(5.2 / d)
                twin.append(1.7 * math.sqrt(v * f_inner) + drift * v / 2.0)
    audit(got, want, rounded.up, ulps=MIXTURE_PSI_ULPS, twin=twin)


@audits("PolynomialStitching.__call__")
def test_polynomial_stitching_is_an_upper_bound(rounded: Rounded) -> None:
    """g(v) = k1·sqrt(m·ℓ(m)), m = max(v, v0), k1 = (η^(1/4) + η^(−1/4))/√2, ℓ(m) = s·log log(η·m/v0)
    + log(ζ(s)/(delta·(log η)^s)) (Howard et al. 2021 Thm 1), η in [1.05, 4], s in [1.05, 3],
    inputs with ℓ > 0 (where g is defined). Twin: the float formula (the library's before issue
    28)."""
    from scipy.special import zeta

    rng = np.random.default_rng(14)
    n = N // PER
    got, want, twin = [], [], []
    with mp.workdps(DIGITS):
        for v0, d, eta, s in zip(
            log_uniform(rng, 1e-6, 1e6, n).tolist(),
            log_uniform(rng, 1e-300, 0.9, n).tolist(),
            rng.uniform(1.05, 4.0, n).tolist(),
            rng.uniform(1.05, 3.0, n).tolist(),
            strict=True,
        ):
            row = np.array(v0 * log_uniform(rng, 1e-3, 1e9, PER))
            e_, s_ = mp.mpf(eta), mp.mpf(s)
            c = mp.log(mp.zeta(s_) / (mp.mpf(d) * mp.log(e_) ** s_))
            k1 = (e_ ** mp.mpf(0.25) + e_ ** mp.mpf(-0.25)) / mp.sqrt(2)
            f_c = math.log(float(zeta(s)) / (d * math.log(eta) ** s))
            f_k1 = (eta**0.25 + eta**-0.25) / math.sqrt(2.0)
            for v in row.tolist():
                m = max(v, v0)
                ell = s_ * mp.log(mp.log(e_ * m / v0)) + c
                if ell <= 0:
                    continue
                got.append(float(PolynomialStitching(v0, d, eta=eta, s=s)(v)))
                want.append(k1 * mp.sqrt(m * ell))
                twin.append(f_k1 * math.sqrt(m * (s * math.log(math.log(eta * m / v0)) + f_c)))
    audit(got, want, rounded.up, ulps=32, twin=twin, n=N // 2)
