"""Which filter admits the most rounds of a workload at equal (eps, delta) (docs/choosing-a-filter.md).

For each workload (a cycle of round costs) and each filter, the rounds the filter admits,
spent one by one through its own admission rule until it refuses one (at most `CAP`); a filter
that cannot price a round of the workload at all counts the rounds before it ("refuses"
follows the count). Filters: ``UnifiedFilter.from_dp`` (zCDP), ``GaussianDPFilter.from_dp``,
``RDPFilter.from_dp`` (12 orders, Markov), ``RenyiFilter.for_rounds`` (one order fixed in
advance for the first cost, Canonne–Kamath–Steinke), ``PLDFilter`` (the counting filter; its
mechanism is the workload's first round) and ``ApproxDPFilter(eps, 0, delta)`` (FAC Thm 2).
Counts only, no timing; prints a markdown table and the seconds the whole run took.
Run: ``python benchmarks/choosing_a_filter.py``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence

from expost import ApproxDPFilter, GaussianDPFilter, PLDFilter, RenyiFilter, UnifiedFilter
from expost.errors import ExpostError
from expost.filters import BrownianCost, Cost, GaussianCost, LaplaceCost, SubsampledGaussianCost
from expost.filters.base import PrivacyFilter
from expost.filters.rdp import RDPFilter

__all__ = ["FILTERS", "WORKLOADS", "admitted", "main"]

CAP = 10_000


def _gaussian(sigma: float) -> GaussianCost:
    return GaussianCost(1.0 / (2.0 * sigma * sigma))


WORKLOADS: tuple[tuple[str, float, float, tuple[Cost, ...]], ...] = (
    ("Laplace counts, eps0 = 0.1", 10.0, 1e-6, (LaplaceCost(0.1),)),
    ("Laplace counts, eps0 = 0.1", 1.0, 1e-6, (LaplaceCost(0.1),)),
    ("Gaussian rounds, σ = 10", 10.0, 1e-6, (_gaussian(10.0),)),
    (
        "Gaussian rounds, σ cycling 10, 20, 40",
        10.0,
        1e-6,
        tuple(map(_gaussian, (10.0, 20.0, 40.0))),
    ),
    ("DP-SGD steps, q = 0.01, σ = 1", 2.0, 1e-5, (SubsampledGaussianCost.from_sigma(1.0, 0.01),)),
    ("noise reduction (BM stopped at eps 0.1)", 10.0, 1e-6, (BrownianCost.from_eps(0.1),)),
    ("mix: Laplace eps0 = 0.1, Gaussian σ = 10", 10.0, 1e-6, (LaplaceCost(0.1), _gaussian(10.0))),
)

FILTERS: tuple[tuple[str, Callable[[float, float, Cost], PrivacyFilter]], ...] = (
    ("UnifiedFilter", lambda e, d, _c: UnifiedFilter.from_dp(e, d)),
    ("GaussianDPFilter", lambda e, d, _c: GaussianDPFilter.from_dp(e, d)),
    ("RDPFilter (12 orders)", lambda e, d, _c: RDPFilter.from_dp(e, d)),
    ("RenyiFilter (one order, CKS)", lambda e, d, c: RenyiFilter.for_rounds(e, d, c)),
    ("PLDFilter (counting)", lambda e, d, _c: PLDFilter(e, d)),
    ("ApproxDPFilter", lambda e, d, _c: ApproxDPFilter(e, 0.0, d)),
)


def admitted(f: PrivacyFilter, costs: Sequence[Cost]) -> str:
    """Rounds of the cycle ``costs`` the filter admits; "refuses" appended where it cannot
    price the next round at all (a refusal other than the budget)."""
    n = 0
    for cost in itertools.islice(itertools.cycle(costs), CAP):
        try:
            if not f.admits(cost):
                return str(n)
        except ExpostError:
            return f"{n}, then refuses"
        f, n = f.spend(cost), n + 1
    return f">= {n}"


def _cell(make: Callable[[float, float, Cost], PrivacyFilter], e: float, d: float,
          costs: Sequence[Cost]) -> str:  # fmt: skip
    try:
        f = make(e, d, costs[0])
    except ExpostError:
        return "refuses"
    return admitted(f, costs)


def main() -> None:
    start = time.perf_counter()
    head = ["workload", "(eps, delta)", *(name for name, _ in FILTERS)]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, e, d, costs in WORKLOADS:
        cells = [_cell(make, e, d, costs) for _, make in FILTERS]
        print(f"| {name} | ({e:g}, {d:g}) | " + " | ".join(cells) + " |")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
