"""The cost model: a cost carries what is known of its mechanism (ARCHITECTURE "Filters guard
budgets"; docs/your-own-mechanism.md).

A cost answers, each optionally and each on the safe side (rounded up), the representations
filters price by (`REPRESENTATIONS`): its dominating ``pair`` for both neighbour directions
(`PLDFilter`), its fixed Rényi curve ``rdp(α)`` (`RenyiFilter`, `RDPFilter`), ``zcdp`` (rho,
delta) (`ZCDPFilter`, `UnifiedFilter`, `ConcurrentFilter`), ``gdp`` mu² (`GaussianDPFilter`),
``dp`` (eps, delta) (`ApproxDPFilter`), ``ex_post`` (bound, delta) (`ExPostFilter`), ``brownian``
(time, sensitivity) (`BrownianFilter`) and ``ex_post_rdp(α)`` (a realised ex-post RDP charge,
`RDPFilter`). None means "not known": the filter refuses the round, naming the representation it
prices by and the filters that could price it (`expost.filters.kinds.refusal`).

`Mechanism` derives what a cost does not state from what it does, each a theorem: an
(eps, 0)-DP round is eps²/2-zCDP (Bun–Steinke 2016 Prop 1.4) and (eps, delta) gives
(eps²/2, delta)-approximate zCDP (APC Lemma 2.1), mu(eps)-GDP (THEORY §9: randomised response's
trade-off), randomised response's Rényi curve and pair (Kairouz, Oh & Viswanath 2015); a
delta-0 rho-zCDP round has ε_α = α·rho.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from expost.rounding import up_exact

if TYPE_CHECKING:
    from expost.costs.pairs import Pair

__all__ = ["REPRESENTATIONS", "Mechanism", "Price"]

Price = tuple[float, float]

REPRESENTATIONS = {
    "pair": "a dominating pair of output laws (both neighbour directions)",
    "rdp": "a Rényi curve fixed before the round runs",
    "zcdp": "a zCDP rho (with delta)",
    "gdp": "a Gaussian-DP mu",
    "dp": "an (eps, delta)-DP level",
    "ex_post": "an ex-post bound (with delta)",
    "brownian": "a Brownian stopping time",
    "ex_post_rdp": "a realised ex-post Rényi charge",
}
"""Each representation a cost may carry, and what it is."""


class Mechanism:
    """What a cost knows (module docstring); every method None unless stated or derived."""

    __slots__ = ()

    def pair(self) -> Pair | None:
        """The dominating pair; derived: randomised response at eps for an (eps, 0)-DP round,
        the worst (eps, delta) pair otherwise (Kairouz, Oh & Viswanath 2015)."""
        from expost.costs.pairs import ClosedPair

        d = self.dp()
        if d is None:
            return None
        return (
            ClosedPair("rr", d[0]) if d[1] == 0.0 else ClosedPair("eps_delta", d[0], extra=(d[1],))
        )

    def rdp(self, alpha: float) -> float | None:
        """ε_α of a curve fixed before the round; derived: randomised response's for an
        (eps, 0)-DP round, α·rho for a delta-0 zCDP one."""
        d = self.dp()
        if d is not None and d[1] == 0.0:
            from expost.rdp_curves import pure_dp_renyi

            return pure_dp_renyi(d[0], alpha)
        z = self.zcdp()
        if z is not None and z[1] == 0.0:
            return times_up(alpha, z[0])
        return None

    def zcdp(self) -> Price | None:
        """(rho, delta); derived: (eps²/2 rounded up, delta) for an (eps, delta)-DP round."""
        d = self.dp()
        if d is None:
            return None
        from expost.guarantees import rho_of_eps

        return rho_of_eps(d[0]), d[1]

    def gdp(self) -> float | None:
        """mu²; derived: mu(eps)² for an (eps, 0)-DP round (`GaussianDPFilter`)."""
        d = self.dp()
        if d is None or d[1] != 0.0:
            return None
        from expost.gdp_conversions import pure_dp_mu_squared

        return pure_dp_mu_squared(Fraction(d[0]))

    def dp(self) -> Price | None:
        """(eps, delta): the round is (eps, delta)-DP."""
        return None

    def ex_post(self) -> Price | None:
        """(bound, delta) for `ExPostFilter`; derived: the round's (eps, delta)."""
        return self.dp()

    def brownian(self) -> tuple[float, float] | None:
        """(time, sensitivity) of a Brownian mechanism stopped at that time."""
        return None

    def ex_post_rdp(self, alpha: float) -> float | None:
        """A realised ex-post ε_α (THEORY §11), for rounds without a fixed curve."""
        return None


def times_up(alpha: float, x: float | Fraction) -> float:
    """α·x rounded up (inf stays inf)."""
    if isinstance(x, float) and x == float("inf"):
        return x
    return up_exact(Fraction(alpha) * Fraction(x))
