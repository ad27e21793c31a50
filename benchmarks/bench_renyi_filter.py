"""How many rounds each RDP filter admits at equal (eps, delta) (docs/filters.md's table).

For a workload of identical rounds, the number of rounds each filter admits before it refuses:

- ``RDPFilter`` with its 12 default orders (Markov, delta split over the orders: THEORY §11);
- ``RDPFilter`` at one order (Markov at the full delta), the best of `CANDIDATE_ORDERS`;
- ``RenyiFilter`` (one order, the Canonne–Kamath–Steinke conversion: THEORY §12) at the order
  ``RenyiFilter.for_rounds`` picks;
- the pure-DP price before the exact curve: ``RDPFilter`` (12 orders) at min(eps, α·eps²/2),
  counted as max over the orders of ⌊B_α / price_α⌋ (identical rounds);
- ``UnifiedFilter.from_dp`` (zCDP) and ``GaussianDPFilter.from_dp`` for reference.

Counts are exact (the filters' own admission, spent round by round up to 10,000); no timing.
Run: ``python benchmarks/bench_renyi_filter.py``.
"""

from __future__ import annotations

from fractions import Fraction

from expost import GaussianDPFilter, RenyiFilter, UnifiedFilter
from expost.filters import Cost, DPCost, GaussianCost, LaplaceCost, SubsampledGaussianCost
from expost.filters.base import PrivacyFilter
from expost.filters.rdp import RDPFilter
from expost.filters.renyi import CANDIDATE_ORDERS
from expost.rounding import up_exact

__all__ = ["WORKLOADS", "admitted", "main", "old_pure_dp_count"]

CAP = 10_000

WORKLOADS: tuple[tuple[str, float, float, Cost], ...] = (
    ("DP-SGD steps, q = 0.01, σ = 1", 2.0, 1e-5, SubsampledGaussianCost.from_sigma(1.0, 0.01)),
    ("DP-SGD steps, q = 0.001, σ = 1", 1.0, 1e-6, SubsampledGaussianCost.from_sigma(1.0, 1e-3)),
    ("DP-SGD steps, q = 0.01, σ = 0.8", 8.0, 1e-5, SubsampledGaussianCost.from_sigma(0.8, 0.01)),
    ("Laplace rounds, eps0 = 0.1", 10.0, 1e-6, LaplaceCost(0.1)),
    ("Laplace rounds, eps0 = 0.1", 1.0, 1e-6, LaplaceCost(0.1)),
    ("pure-DP rounds, eps0 = 0.1", 10.0, 1e-6, DPCost(0.1)),
    ("Gaussian rounds, rho = 0.01", 10.0, 1e-6, GaussianCost(0.01)),
)


def admitted(f: PrivacyFilter, cost: Cost) -> int:
    """Rounds of ``cost`` the filter admits (spent one by one; at most `CAP`)."""
    n = 0
    while n < CAP and f.admits(cost):
        f, n = f.spend(cost), n + 1
    return n


def old_pure_dp_count(eps: float, delta: float, cost: DPCost) -> int:
    """`RDPFilter` (12 default orders) at the old pure-DP price min(eps0, α·eps0²/2)."""
    f = RDPFilter.from_dp(eps, delta)
    prices = [min(cost.eps, up_exact(Fraction(a) * Fraction(cost.eps) ** 2 / 2)) for a in f.orders]
    return max(
        int(Fraction(b) // Fraction(p)) if b > 0.0 else 0
        for b, p in zip(f.budgets, prices, strict=True)
    )


def _row(name: str, eps: float, delta: float, cost: Cost) -> list[str]:
    renyi = RenyiFilter.for_rounds(eps, delta, cost)
    one = max(admitted(RDPFilter.from_dp(eps, delta, (a,)), cost) for a in CANDIDATE_ORDERS)
    gdp_filter = GaussianDPFilter.from_dp(eps, delta)
    gdp = admitted(gdp_filter, cost) if gdp_filter.accepts(cost) else 0
    old = old_pure_dp_count(eps, delta, cost) if isinstance(cost, DPCost) else None
    return [
        f"{name} at ({eps:g}, {delta:g})",
        str(admitted(RDPFilter.from_dp(eps, delta), cost)),
        "" if old is None else str(old),
        str(one),
        f"{admitted(renyi, cost)} (α = {renyi.alpha:g})",
        str(admitted(UnifiedFilter.from_dp(eps, delta), cost)),
        str(gdp),
    ]


def main() -> None:
    head = [
        "workload",
        "RDPFilter, 12 orders",
        "… old pure-DP price",
        "RDPFilter, best one order",
        "RenyiFilter (CKS)",
        "UnifiedFilter",
        "GaussianDPFilter",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for workload in WORKLOADS:
        print("| " + " | ".join(_row(*workload)) + " |")


if __name__ == "__main__":
    main()
