"""BM loss decomposition: L = ‖Δv‖²/(2t) + (‖Δv‖/t)·W(t), W(t) = −⟨u, B(t)⟩ a standard 1-d BM.

Derived from the d-dimensional densities of f(x) + B(t) and f(x') + B(t), for d = 1, 2, 3 with
explicit symbolic vectors; Δv = f(x') − f(x), u = Δv/‖Δv‖.
Assumptions: t > 0; f(x) ≠ f(x'); B(t) ~ N(0, t·I_d).
Source: APC Thm 3, BNR Thm 3.4.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.loss import BrownianLoss
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import log_likelihood_ratio, normal_pdf
from expost.symbolic.steps import exact_point, identity, library_matches

__all__ = ["PROOF"]

t, norm = sp.symbols("t norm_Delta_v", positive=True)
w = sp.Symbol("W", real=True)

_LIBRARY_POINTS = ((0.5, 1.0, 0.3), (2.0, 3.0, -1.7), (0.01, 1.0, 0.05))  # (t, ‖Δv‖, W(t))


def _steps_in_dimension(d: int, loss_form: Any) -> tuple[Step, ...]:
    fx = sp.symbols(f"a1:{d + 1}", real=True)
    fx_prime = sp.symbols(f"c1:{d + 1}", real=True)
    noise = sp.symbols(f"z1:{d + 1}", real=True)
    y = [a + z for a, z in zip(fx, noise, strict=True)]
    loss = sum(
        log_likelihood_ratio(normal_pdf(yi, ai, t), normal_pdf(yi, ci, t))
        for yi, ai, ci in zip(y, fx, fx_prime, strict=True)
    )
    dv = [c - a for a, c in zip(fx, fx_prime, strict=True)]
    length = sp.sqrt(sum(v**2 for v in dv))
    u = [v / length for v in dv]
    projection = -sum(ui * zi for ui, zi in zip(u, noise, strict=True))
    return (
        identity(
            f"d = {d}: log p_x(y)/p_x'(y) at y = f(x) + B(t) equals the claim "
            "with ‖Δv‖ = ‖f(x') − f(x)‖, W(t) = −⟨u, B(t)⟩",
            loss,
            loss_form.subs({norm: length, w: projection}),
        ),
        identity(
            f"d = {d}: ‖u‖² = 1, so Cov(W(s), W(t)) = min(s, t)·‖u‖² = min(s, t): W is a standard BM",
            sum(ui**2 for ui in u),
            1,
        ),
    )


def check(loss_form: Any) -> tuple[Step, ...]:
    """Expand the Gaussian log-densities coordinate by coordinate and project on u."""
    library = (
        library_matches(
            f"BrownianLoss({time}, {dist}).at({value})",
            float(BrownianLoss(time, dist).at([value])[0]),
            loss_form.subs(exact_point({t: time, norm: dist, w: value})),
        )
        for time, dist, value in _LIBRARY_POINTS
    )
    return (*(s for d in (1, 2, 3) for s in _steps_in_dimension(d, loss_form)), *library)


PROOF = Proof(
    name="apc-thm-3",
    source="APC Thm 3, BNR Thm 3.4",
    statement=(
        "For the Brownian mechanism f(x) + B(t), the privacy loss at time t is "
        "‖Δv‖²/(2t) + (‖Δv‖/t)·W(t) with Δv = f(x') − f(x) and W a standard 1-d Brownian motion."
    ),
    assumptions=("t > 0", "f(x) ≠ f(x')", "B a standard d-dimensional BM, d = 1, 2, 3 checked"),
    claim=norm**2 / (2 * t) + norm / t * w,
    wrong_claim=norm**2 / (2 * t) + norm / sp.sqrt(t) * w,
    check=check,
)
