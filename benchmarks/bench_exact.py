"""Exact samplers vs numpy's float samplers (and OpenDP's exact ones, where installed).

    PYTHONPATH=src python benchmarks/bench_exact.py [--size 100000] [--repeats 3]

For each law: samples per second of the exact batch sampler with a seeded `GeneratorBits`
and with `SecureBits` (os.urandom), of numpy's float sampler of the same law (the float
sibling the library uses otherwise: ``rng.laplace`` for the discrete Laplace, ``rng.normal``
for the discrete Gaussian, ``rng.poisson`` …), and of OpenDP's exact ``make_laplace`` /
``make_gaussian`` on a vector of ints (when ``opendp`` is installed: the ``bench`` extra),
with the ratios. It also prints the uniform draws per sample and their information
(the sum of log2 n over the draws ``below(n)``, in bits per sample).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from timing import median_seconds

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
)
from expost.exact.bits import BitSource

Sampler = Callable[[BitSource, int], npt.NDArray[np.generic]]


class Counting:
    """Wraps a bit source and counts its draws and their information in bits."""

    def __init__(self, inner: BitSource) -> None:
        self.inner, self.draws, self.bits = inner, 0, 0.0

    def below(self, n: int, size: int) -> npt.NDArray[np.int64]:
        self.draws += size
        self.bits += size * math.log2(n)
        return self.inner.below(n, size)


def _opendp() -> dict[str, Callable[[int], object]]:
    try:
        import opendp.prelude as dp
    except ImportError:
        return {}
    dp.enable_features("contrib")
    ints = dp.vector_domain(dp.atom_domain(T=int))
    lap = dp.m.make_laplace(ints, dp.l1_distance(T=int), scale=10.0)
    gauss = dp.m.make_gaussian(ints, dp.l2_distance(T=int), scale=10.0)
    return {
        "discrete_laplace": lambda n: lap([0] * n),
        "discrete_gaussian": lambda n: gauss([0] * n),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, reps = args.size, args.repeats
    rng = np.random.default_rng(0)
    laws: list[tuple[str, Sampler, Callable[[], object]]] = [
        (
            "bernoulli(1/3)",
            lambda b, m: bernoulli(Fraction(1, 3), b, m),
            lambda: rng.random(n) < 1 / 3,
        ),
        (
            "bernoulli_exp(1/2)",
            lambda b, m: bernoulli_exp(Fraction(1, 2), b, m),
            lambda: rng.random(n) < math.exp(-0.5),
        ),
        (
            "discrete_laplace",
            lambda b, m: discrete_laplace(10, b, m),
            lambda: rng.laplace(0, 10, n),
        ),
        (
            "discrete_gaussian",
            lambda b, m: discrete_gaussian(100, b, m),
            lambda: rng.normal(0, 10, n),
        ),
        ("poisson(10)", lambda b, m: poisson(10, b, m), lambda: rng.poisson(10, n)),
        (
            "binomial(20,1/3)",
            lambda b, m: binomial(20, Fraction(1, 3), b, m),
            lambda: rng.binomial(20, 1 / 3, n),
        ),
        (
            "skellam(5)",
            lambda b, m: skellam(5, b, m),
            lambda: rng.poisson(5, n) - rng.poisson(5, n),
        ),
    ]
    opendp = _opendp()
    print(
        f"size {n}, median of {reps}; samples/s (M = 1e6); np/ex = numpy rate / exact rate; ex/odp = exact rate / OpenDP rate; draws, bits: per sample"
    )
    print(
        f"{'law':20} {'draws':>8} {'bits':>7} {'exact':>9} {'secure':>9} {'numpy':>9} "
        f"{'np/ex':>6} {'opendp':>9} {'ex/odp':>7}"
    )
    for name, sample, float_sampler in laws:
        counter = Counting(GeneratorBits(np.random.default_rng(1)))
        sample(counter, n)
        gen = GeneratorBits(np.random.default_rng(2))
        exact = n / median_seconds(lambda s=sample, g=gen: s(g, n), reps)
        secure = n / median_seconds(lambda s=sample: s(SecureBits(), n), reps)
        base = n / median_seconds(float_sampler, reps)
        key = name if name in opendp else ""
        odp = n / median_seconds(lambda k=key: opendp[k](n), 1) if key else float("nan")
        print(
            f"{name:20} {counter.draws / n:8.2f} {counter.bits / n:7.1f} {exact:9.3g} "
            f"{secure:9.3g} {base:9.3g} {base / exact:6.1f} {odp:9.3g} {exact / odp:7.1f}"
        )


if __name__ == "__main__":
    main()
