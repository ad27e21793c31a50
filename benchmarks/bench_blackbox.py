"""Validity and power of black-box audits (`expost.testing.audit_mechanism`, issue 15).

(a) Validity: correct mechanisms (Laplace, Gaussian at its exact (eps, delta), randomized
    response, exponential mechanism, `AboveThreshold`, integer outputs with a rare 0.5), each
    audited ``--trials`` times with seeds 0, 1, … at alpha = 0.05 with ``--samples`` per side.
    The refutation count must stay within the binomial margin of 0.05: at most the largest k
    with P(Bin(trials, 0.05) >= k) >= 1e-3.
(b) Power at the defaults (200,000 samples per side, alpha = 1e-3, pairs searched where said):
    Laplace with real eps twice the claim (timed), Lyu et al.'s SVT Alg. 5 (noise on the
    threshold only, no noise on the queries) and Alg. 6 (no halting), a mean with its
    sensitivity under-estimated twofold. Each must be refuted.
(c) Comparison at claimed eps = 0.1 with DP-Sniper's published reference results
    (eth-sri/dp-sniper, eval_sp2021/reference-results/dd_search_reg_data.log, commit a4a2037:
    DD-Search with logistic regression, 90% confidence, n_final = 2·10^8 samples), on the same
    mechanisms and input pairs.

Run: ``python benchmarks/bench_blackbox.py [--trials 50] [--samples 20000]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from scipy import stats

from expost.testing import audit_mechanism, statdp_pairs
from expost.testing import reference as ref

__all__ = ["main"]

ALPHA = 0.05
MARGIN_LEVEL = 1e-3


def _validity_cases() -> list[tuple[str, Any, dict[str, Any]]]:
    return [
        ("Laplace count", ref.LaplaceCount(1.0, 1.0), {"pairs": [([0, 1], [0, 1, 1])]}),
        ("Gaussian, exact delta", ref.GaussianCount(1.0, 1.0), {"pairs": [([0, 1], [0, 1, 1])]}),
        ("randomized response", ref.RandomizedResponse(1.0), {"pairs": [([0], [1])]}),
        ("exponential mechanism", ref.ReportNoisyChoice(1.0), {"pairs": [([0, 1, 2], [0, 1])]}),
        ("AboveThreshold", ref.SparseVector(1.0), {"pairs": statdp_pairs(5)[:3]}),
        ("parity, rare 0.5", ref.ParityWithRareHalf(1.0, 2.5e-5), {"pairs": [([0], [1])]}),
    ]


def validity(trials: int, samples: int) -> bool:
    limit = int(stats.binom.isf(MARGIN_LEVEL, trials, ALPHA))  # P(X > limit) <= 1e-3
    print(f"(a) validity: {trials} audits each, alpha = {ALPHA}, {samples} samples per side")
    print(f"    refutations allowed: <= {limit} (P(Bin({trials}, {ALPHA}) > {limit}) <= 1e-3)")
    ok = True
    for name, mechanism, kwargs in _validity_cases():
        eps, delta = mechanism.claim()
        start = time.perf_counter()
        refuted = sum(
            audit_mechanism(
                mechanism, eps, delta, samples=samples, alpha=ALPHA, seed=s, **kwargs
            ).refuted
            for s in range(trials)
        )
        seconds = time.perf_counter() - start
        ok &= refuted <= limit
        print(
            f"    {name:24s} ({eps:g}, {delta:.3g})-DP: refuted {refuted:2d}/{trials} "
            f"= {refuted / trials:.3f}  {'ok' if refuted <= limit else 'TOO MANY'}  "
            f"({seconds:.1f} s)"
        )
    return ok


def _power_cases() -> list[tuple[str, Any, dict[str, Any]]]:
    records = {"datasets": [[0.0, 1.0, 1.0, 0.0, 1.0]]}
    return [
        ("Laplace, real eps 2x claim", ref.LaplaceCount(1.0, 2.0), records),
        ("SVT Alg. 5 (threshold noise only)", ref.SVTThresholdNoiseOnly(1.0), {}),
        ("SVT Alg. 6 (no halting)", ref.SVTNoHalting(1.0), {}),
        ("mean, sensitivity 1/2 of true", ref.LaplaceMean(1.0, 0.5), records),
    ]


def power() -> bool:
    print("\n(b) power: claim (1, 0)-DP, defaults (200000 samples per side, alpha = 1e-3)")
    ok = True
    for name, mechanism, kwargs in _power_cases():
        if not kwargs:
            kwargs = {"pairs": statdp_pairs(10)}
        elif name.startswith("mean"):
            kwargs = {**kwargs, "neighbours": "replace-one"}
        result = audit_mechanism(mechanism, 1.0, **kwargs)
        ok &= result.refuted
        print(
            f"    {name:36s} eps_lower {result.eps_lower:6.3f}  "
            f"{'refuted' if result.refuted else 'NOT REFUTED'}  {result.seconds:5.1f} s  "
            f"({result.pairs_searched} pairs, {result.search_samples} search outputs)"
        )
    return ok


# DP-Sniper (DD-Search, logistic regression) eps_lcb at claimed eps = 0.1: see module docstring.
_DPSNIPER = {"Laplace": 0.0968, "SVT Alg. 5": 1.761, "SVT Alg. 6": 0.272}


def comparison() -> None:
    print("\n(c) comparison at claimed eps = 0.1 (same mechanisms and input pairs as DP-Sniper)")
    svt_pair = [(np.r_[2.0 * np.ones(5), np.zeros(5)], np.ones(10))]
    cases: list[tuple[str, Any, list[Any]]] = [
        ("Laplace", ref.LaplaceCount(0.1, 0.1), [([1.0], [1.0, 1.0])]),
        ("SVT Alg. 5", ref.SVTThresholdNoiseOnly(0.1), svt_pair),
        ("SVT Alg. 6", ref.SVTNoHalting(0.1), svt_pair),
    ]
    print(
        f"    {'mechanism':12s} {'ours: eps_lower':>16s} {'(alpha 1e-3, 2e5/side)':>24s}"
        f" {'DP-Sniper eps_lcb':>18s} {'(conf. 0.9, 2e8)':>17s}"
    )
    for name, mechanism, pairs in cases:
        result = audit_mechanism(mechanism, 0.1, pairs=pairs)
        verdict = "refuted" if result.refuted else "holds"
        print(f"    {name:12s} {result.eps_lower:16.3f} {verdict:>24s} {_DPSNIPER[name]:18.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--samples", type=int, default=20_000)
    args = parser.parse_args()
    start = time.perf_counter()
    ok = validity(args.trials, args.samples)
    ok &= power()
    comparison()
    print(f"\nall checks {'passed' if ok else 'FAILED'}; {time.perf_counter() - start:.0f} s total")


if __name__ == "__main__":
    main()
