"""Exact samplers against numpy's float samplers, in one run (issue 30).

    PYTHONPATH=src python benchmarks/bench_exact.py [--size 100000] [--repeats 3]

1. Discrete Gaussian (σ² in 1, 100, 1e6) and discrete Laplace (scale 1, 10, 1000): samples
   per second with a seeded `GeneratorBits` and with `SecureBits` (os.urandom), numpy's
   ``normal`` / ``laplace`` at the same scale, the ratio numpy/secure, the information of the
   draws (Σ log2 n over ``below(n)``, bits per sample) against the law's entropy H and the
   goal 2H + 8, and the table's one-off set-up time.
2. The other samplers (Bernoulli, Bernoulli(exp(−γ)), binomial, Skellam) at one parameter.
3. Poisson at means 1e3, 1e6, 1e9, 1e12: one exact draw (median and max over repeats), ms
   per draw in a batch, numpy's float Poisson and the ratio; the draws of an exact Skellam
   noise-reduction release at λt = 1e7 (Poisson at the largest time, binomial thinning at
   three smaller ones, two counts each) and the whole release through
   ``PrivateSession(exact=True, bits=SecureBits()).skellam``.
4. One scalar secure release through ``PrivateSession(exact=True)`` (discrete Gaussian and
   Laplace), no ledger.
5. os.urandom throughput in large blocks against small reads, and ChaCha20 keystream
   (`cryptography`, optional, skipped when missing) in blocks of 4 KiB, 64 KiB, 1 MiB.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import time
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
from timing import median_seconds, seconds

from expost import ExPostFilter, PrivateSession, ZCDPFilter
from expost.exact import (
    GeneratorBits,
    SecureBits,
    bernoulli,
    bernoulli_exp,
    binomial,
    discrete_gaussian,
    discrete_laplace,
    poisson,
    skellam,
    tables,
)
from expost.exact.bits import BitSource
from expost.mechanisms.skellam_noise_reduction import FixedPrice

Sampler = Callable[[BitSource, int], npt.NDArray[np.generic]]
FloatArray = npt.NDArray[np.float64]


class Counting:
    """Wraps a bit source and counts its draws and their information in bits."""

    def __init__(self, inner: BitSource) -> None:
        self.inner, self.draws, self.bits = inner, 0, 0.0

    def below(self, n: int, size: int) -> npt.NDArray[np.int64]:
        self.draws += size
        self.bits += size * math.log2(n)
        return self.inner.below(n, size)


def entropy(log_weight: Callable[[FloatArray], FloatArray], reach: int) -> float:
    """Entropy in bits of P(x) ∝ exp(log_weight(x)) over |x| <= reach (floats: a yardstick)."""
    x = np.arange(-reach, reach + 1, dtype=float)
    lw = log_weight(x)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def rate(run: Callable[[], object], n: int, reps: int) -> float:
    return n / median_seconds(run, reps)


def _gaussian_log_weight(s2: float, x: FloatArray) -> FloatArray:
    return -(x**2) / (2 * s2)


def _laplace_log_weight(scale: float, x: FloatArray) -> FloatArray:
    return -np.abs(x) / scale


def noise_table(n: int, reps: int) -> None:
    rng = np.random.default_rng(0)
    rows: list[tuple[str, Sampler, Callable[[], object], float, tuple[Fraction, Fraction]]] = []
    for s2 in (1, 100, 10**6):
        rows.append(
            (
                f"gaussian σ²={s2:g}",
                partial(discrete_gaussian, s2),
                partial(rng.normal, 0, math.sqrt(s2), n),
                entropy(partial(_gaussian_log_weight, s2), int(40 * math.sqrt(s2)) + 40),
                (Fraction(1, 2 * s2), Fraction(1, s2)),
            )
        )
    for sc in (1, 10, 1000):
        rows.append(
            (
                f"laplace scale={sc:g}",
                partial(discrete_laplace, sc),
                partial(rng.laplace, 0, sc, n),
                entropy(partial(_laplace_log_weight, sc), 60 * sc + 60),
                (Fraction(1, sc), Fraction(0)),
            )
        )
    print(f"1. size {n}, median of {reps}; rates in samples/s; bits per sample; setup: table build")
    print(
        f"{'law':20} {'seeded':>9} {'secure':>9} {'numpy':>9} {'np/sec':>7} {'goal':>5} "
        f"{'bits':>6} {'H':>6} {'2H+8':>6} {'goal':>5} {'setup':>8}"
    )
    for name, sample, numpy_draw, h, key in rows:
        start = time.perf_counter()
        tables.table(*key)
        setup = time.perf_counter() - start
        counter = Counting(GeneratorBits(np.random.default_rng(1)))
        sample(counter, n)
        seeded = rate(partial(sample, GeneratorBits(np.random.default_rng(2)), n), n, reps)
        secure = rate(partial(sample, SecureBits(), n), n, reps)
        base = rate(numpy_draw, n, reps)
        bits = counter.bits / n
        limit = 5 if name.startswith("gaussian") else 3
        print(
            f"{name:20} {seeded:9.3g} {secure:9.3g} {base:9.3g} {base / secure:7.2f} "
            f"{'met' if base / secure <= limit else 'NOT':>5} {bits:6.1f} {h:6.2f} "
            f"{2 * h + 8:6.1f} {'met' if bits <= 2 * h + 8 else 'NOT':>5} {setup * 1e3:6.1f}ms"
        )


def other_samplers(n: int, reps: int) -> None:
    laws: list[tuple[str, Sampler]] = [
        ("bernoulli(1/3)", lambda b, m: bernoulli(Fraction(1, 3), b, m)),
        ("bernoulli_exp(1/2)", lambda b, m: bernoulli_exp(Fraction(1, 2), b, m)),
        ("binomial(20,1/3)", lambda b, m: binomial(20, Fraction(1, 3), b, m)),
        ("poisson(10)", lambda b, m: poisson(10, b, m)),
        ("skellam(5)", lambda b, m: skellam(5, b, m)),
        ("poisson(1000)", lambda b, m: poisson(1000, b, m)),
    ]
    print(f"\n2. other samplers, size {n}: samples/s, draws and bits per sample")
    print(f"{'law':20} {'seeded':>9} {'secure':>9} {'draws':>7} {'bits':>7}")
    for name, sample in laws:
        counter = Counting(GeneratorBits(np.random.default_rng(1)))
        sample(counter, n)
        seeded = rate(partial(sample, GeneratorBits(np.random.default_rng(2)), n), n, reps)
        secure = rate(partial(sample, SecureBits(), n), n, reps)
        print(
            f"{name:20} {seeded:9.3g} {secure:9.3g} {counter.draws / n:7.2f} {counter.bits / n:7.1f}"
        )


def single(run: Callable[[], object], reps: int) -> tuple[float, float]:
    """Median and max wall time of ``run()`` over ``reps`` calls (after one warm-up)."""
    times = seconds(run, reps)
    return statistics.median(times), max(times)


def large_means(reps: int) -> None:
    print(f"\n3. exact secure Poisson, median / max of {reps} single draws (goal: 1e9 under 10 ms)")
    print("   and ms per draw in a batch of 200; numpy's float poisson per draw, same run")
    sec, rng = SecureBits(), np.random.default_rng(0)
    for lam in (10**3, 10**6, 10**9, 10**12):
        med, worst = single(partial(poisson, lam, sec, 1), reps)
        batch = median_seconds(partial(poisson, lam, sec, 200), 3) / 200
        npy = median_seconds(partial(rng.poisson, lam, 10**5), 3) / 10**5
        print(
            f"poisson mean {lam:8.0e}: {med * 1e3:7.3f} ms  max {worst * 1e3:7.3f} ms  "
            f"batch {batch * 1e3:7.3f} ms  numpy {npy * 1e6:6.3f} µs  ratio {batch / npy:8.0f}"
        )
    times = [Fraction(10**7), Fraction(10**6), Fraction(10**5), Fraction(10**4)]

    def release() -> None:  # the draws of SkellamNoiseReduction(exact=True).run on one count
        counts = poisson(times[0], sec, 2)
        for before, now in itertools.pairwise(times):
            counts = binomial(counts, now / before, sec, 2)

    med, worst = single(release, reps)
    print(
        f"skellam NR draws, λt = 1e7, 4 times: {med * 1e3:6.2f} ms  max {worst * 1e3:6.2f} ms "
        "(goal: under 50 ms)"
    )
    session = PrivateSession(ExPostFilter(1e12, 1e-2), rng, exact=True, bits=SecureBits())
    grid = [float(t) for t in times]
    npy = median_seconds(lambda: rng.poisson(1e7, 2 * len(times)), 3)
    print(f"numpy's {2 * len(times)} float Poisson draws: {npy * 1e6:.1f} µs")
    prices: tuple[FixedPrice, ...] = ("exact", "akl")
    for price in prices:  # the fixed-delta price: the exact one is computed once per grid
        session_release = partial(session.skellam, 0, 1, grid, fixed_delta=1e-6, fixed_price=price)
        start = time.perf_counter()
        session_release()
        first = time.perf_counter() - start
        med, worst = single(session_release, reps)
        print(
            f"session.skellam(exact=True, SecureBits, fixed_price={price!r}), λt = 1e7, 4 times: "
            f"first {first * 1e3:7.2f} ms, then {med * 1e3:6.2f} ms  max {worst * 1e3:6.2f} ms"
        )


def session_latency(reps: int) -> None:
    session = PrivateSession(ZCDPFilter(1e9), np.random.default_rng(0), exact=True)
    gauss = single(lambda: session.gaussian(100, sensitivity=1, rho=0.005), reps)
    lap = single(lambda: session.laplace(100, sensitivity=1, eps=0.1), reps)
    print(
        f"\n4. scalar secure release via PrivateSession(exact=True), median of {reps} (goal < 100 µs)"
    )
    print(
        f"gaussian (σ² = 100): {gauss[0] * 1e6:7.1f} µs   laplace (scale 10): {lap[0] * 1e6:7.1f} µs"
    )
    sec = SecureBits()
    draw = single(lambda: discrete_gaussian(100, sec, 1), reps)
    print(f"the sampler alone (discrete_gaussian, size 1): {draw[0] * 1e6:7.1f} µs")


def _reads(size: int, count: int) -> list[bytes]:
    return [os.urandom(size) for _ in range(count)]


def _keystream(encryptor: Any, zeros: bytes, count: int) -> list[bytes]:
    return [encryptor.update(zeros) for _ in range(count)]


def urandom(reps: int) -> None:
    print("\n5. os.urandom throughput (MB/s) by read size")
    for size in (16, 4096, 1 << 16, 1 << 20):
        count = max(1, (1 << 22) // size)
        t = median_seconds(partial(_reads, size, count), reps)
        print(f"{size:8d} bytes: {size * count / t / 1e6:8.0f}")
    chacha20(reps)


def chacha20(reps: int) -> None:
    """ChaCha20 keystream (the `cryptography` package, optional: skipped when missing)."""
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
    except ImportError:
        print("ChaCha20: skipped (the cryptography package is not installed)")
        return
    enc = Cipher(algorithms.ChaCha20(os.urandom(32), os.urandom(16)), mode=None).encryptor()
    print("ChaCha20 keystream from an os.urandom key (MB/s) by block size")
    for size in (4096, 1 << 16, 1 << 20):
        zeros, count = bytes(size), max(1, (1 << 24) // size)
        t = median_seconds(partial(_keystream, enc, zeros, count), reps)
        print(f"{size:8d} bytes: {size * count / t / 1e6:8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    noise_table(args.size, args.repeats)
    other_samplers(args.size, args.repeats)
    large_means(max(args.repeats, 9))
    session_latency(max(args.repeats, 200))
    urandom(args.repeats)


if __name__ == "__main__":
    main()
