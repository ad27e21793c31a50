"""`max_rounds` within 1% of the exact count at sampling rates 1e-4 to 1 (issue 40 item 7).

    PYTHONPATH=src python benchmarks/bench_pld_counts.py

For each pair (Poisson-subsampled Gaussian σ = 0.8, 1, 2; subsampled Laplace b = 1), budget
(ε = 2; δ = 1e-5, 1e-8) and rate q: the count K (its own δ upper bound within the budget, so
K <= the exact count K*), a probe k'' in (K, K/0.99 + 1] with 8 significant binary digits and the
certified lower bound on δ after k'' rounds: above δ proves K* < k'', so K >= 0.99·K* ("proven");
otherwise the 1% is not proven there. Times: counting, then the lower bound (one process, cold).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from expost.pld import PrivacyLossDistribution, compose_rounds, counting, max_rounds

PLD = PrivacyLossDistribution
RATES = (1e-4, 3e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0)
EPS = 2.0


def probe(k: int) -> int:
    """A round count in (k, k/0.99 + 1] with at most 8 significant binary digits."""
    top = int(k / 0.99) + 1
    shift = max(0, top.bit_length() - 8)
    return max(k + 1, (top >> shift) << shift)


def row(name: str, make: Callable[[], PLD], delta: float, q: float) -> None:
    counting.clear_caches()
    start = time.perf_counter()
    k = max_rounds(make(), EPS, delta)
    t_count = time.perf_counter() - start
    k2 = probe(k)
    start = time.perf_counter()
    low, _ = compose_rounds(make(), k2).delta_bracket(EPS)
    t_low = time.perf_counter() - start
    verdict = "proven" if low > delta else "not proven"
    print(
        f"| {name} | {delta:g} | {q:g} | {k:,} | {k2:,} | {low:.4e} | {verdict} | "
        f"{t_count:.1f} s | {t_low:.1f} s |",
        flush=True,
    )


def main() -> None:
    print("| pair | δ | q | K | k'' | lower δ at k'' | within 1% | count | lower |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, noise, delta in (
        ("Gaussian σ = 1", ("g", 1.0), 1e-5),
        ("Gaussian σ = 1", ("g", 1.0), 1e-8),
        ("Gaussian σ = 2", ("g", 2.0), 1e-5),
        ("Gaussian σ = 2", ("g", 2.0), 1e-8),
        ("Gaussian σ = 0.8", ("g", 0.8), 1e-5),
        ("Laplace b = 1", ("l", 1.0), 1e-5),
        ("Laplace b = 1", ("l", 1.0), 1e-8),
    ):
        for q in RATES:
            kind, scale = noise

            def make(kind: str = kind, scale: float = scale, q: float = q) -> PLD:
                if kind == "g":
                    return PLD.gaussian(scale, sampling_prob=q)
                return PLD.laplace(scale, sampling_prob=q)

            row(name, make, delta, q)


if __name__ == "__main__":
    main()
