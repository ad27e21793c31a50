"""Trade-off functions of Gaussian DP (Dong–Roth–Su), shared by the GDP proofs (THEORY §9)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mpmath as mp
import sympy as sp

__all__ = ["Phi", "Phi_inv", "below_on_grid", "gaussian_tradeoff", "randomized_response"]


def Phi(x: Any) -> Any:
    """The standard normal distribution function."""
    return (1 + sp.erf(x / sp.sqrt(2))) / 2


def Phi_inv(p: Any) -> Any:
    """Its inverse."""
    return sp.sqrt(2) * sp.erfinv(2 * p - 1)


def gaussian_tradeoff(mu: Any, alpha: Any) -> Any:
    """G_mu(α) = Φ(Φ⁻¹(1 − α) − mu), the trade-off of N(0, 1) against N(mu, 1)."""
    return Phi(Phi_inv(1 - alpha) - mu)


def randomized_response(eps: Any, alpha: Any) -> Any:
    """f_(eps,0)(α) = max(0, 1 − e^eps·α, e^(−eps)·(1 − α)) in mpmath: the eps-DP trade-off."""
    return max(mp.mpf(0), 1 - mp.exp(eps) * alpha, mp.exp(-eps) * (1 - alpha))


def below_on_grid(
    mu_of: Any,
    f_of: Callable[[Any, Any], Any],
    eps: Any,
    eps_values: Sequence[float],
    n: int = 100,
) -> bool:
    """G_mu(α) <= f(eps, α) + 1e-40 at n − 1 interior α, for each eps in ``eps_values`` (mu is
    ``mu_of`` at that eps; 50-digit mpmath)."""
    mp.mp.dps = 50
    for e in eps_values:
        m = mp.mpf(sp.N(mu_of.subs(eps, sp.Rational(str(e))), 50))
        for k in range(1, n):
            a = mp.mpf(k) / n
            g = mp.ncdf(-mp.sqrt(2) * mp.erfinv(2 * a - 1) - m)  # Φ(Φ⁻¹(1 − α) − mu)
            if g > f_of(mp.mpf(e), a) + mp.mpf("1e-40"):
                return False
    return True
