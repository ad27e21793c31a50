"""The float leak, shown (issue 22 item 4; Mironov, CCS 2012).

numpy's ``Generator.laplace(loc, b)`` is the textbook inverse-CDF sampler on a 53-bit uniform:
U = k·2⁻⁵³ (k the top 53 bits of one 64-bit draw); U >= 1/2 gives loc − b·log(2 − 2U), else
loc + b·log(2U) (numpy/random/src/distributions/distributions.c, ``random_laplace``; 2 − 2U is
computed as (2 − U) − U, which rounds). Above ``loc`` its outputs are fl(loc + noise(k)) with
noise(k) = −log((2 − U) − U) for k in [2⁵², 2⁵³): at most one double per k.

With b = 1 and mean 0, an output y in (1, 2) is a noise value −log(j·2⁻⁵²) itself, and these are
at least 2⁻⁵²·e^y apart: wider than the doubles' spacing 2⁻⁵², so only about a fraction e^−y of the
doubles in (1, 2) can be output at all. With mean 1 the same y is 1 + E with E in (0, 1), and
those sums fill the doubles of (1, 2) far more densely. A release y that mean 0 cannot produce
proves the true value is not 0: the privacy loss of that output is infinite, whatever eps the
scale claims. The test counts how often that happens under mean 1 (about a quarter of all
draws) and checks that the exact discrete Laplace mechanism has no such output.

Which log: the sampler calls the C library's ``log`` (libm), so the replica does too, through
``math.log`` (CPython calls libm's ``log`` for a finite positive float). numpy's ufunc ``np.log``
is another function: it dispatches at run time to SIMD kernels (AVX-512 where the CPU has it)
that differ from libm by one ulp on some arguments (345 of the 100,000 draws below on this
2-core AMD EPYC sandbox with AVX-512; none with ``NPY_DISABLE_CPU_FEATURES=X86_V4``). So the
replica is numpy's sampler on any CPU, as far as both use the same libm.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
TWO53 = 2.0**53
WINDOW = 8  # k candidates either side of 2⁵³(1 − e^−y/2): rounding moves k by at most 2
N = 100_000


def libm_log(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The C library's ``log`` of every element (``math.log``), not numpy's SIMD ``np.log``."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    out = np.fromiter(map(math.log, flat.tolist()), dtype=np.float64, count=flat.size)
    return out.reshape(np.shape(x))


def _noise(k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """numpy's Laplace(0, 1) noise above 0 for U = k·2⁻⁵³ >= 1/2, as it computes it."""
    u = k * 2.0**-53
    return -libm_log(2.0 - u - u)


def _replica(
    raw: npt.NDArray[np.uint64], loc: float, log: Callable[[FloatArray], FloatArray] = libm_log
) -> FloatArray:
    """``random_laplace`` with b = 1, written out from the 64-bit draws (``log``: libm's)."""
    u = (raw >> np.uint64(11)).astype(np.int64) * 2.0**-53
    upper = u >= 0.5
    arg = np.where(upper, 2.0 - u - u, u + u)
    arg[arg == 0.0] = 1.0  # U = 0 is redrawn by numpy; never seen in N draws (p = N·2⁻⁵³)
    value = log(arg)
    return np.where(upper, loc - value, loc + value)


def reachable_from_zero(y: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """For outputs y in (1, 2): can numpy's Laplace(0, 1) output exactly y?

    Under mean 0 an output above 1 is a noise value noise(k) (adding 0 is exact), and the
    noise is increasing in k, so k must be near 2⁵³(1 − e^−y/2); every k in a window around it
    is tried, and the window is checked to bracket y (its ends' noise lies strictly either side).
    """
    centre = np.rint(TWO53 * (1.0 - np.exp(-y) / 2.0)).astype(np.int64)
    k = centre[:, None] + np.arange(-WINDOW, WINDOW + 1)
    e = _noise(k)
    assert np.all(e[:, 0] < y), "window does not bracket y"
    assert np.all(e[:, -1] > y), "window does not bracket y"
    hit: npt.NDArray[np.bool_] = np.any(e == y[:, None], axis=1)
    return hit


def test_the_replica_is_numpys_sampler_bit_for_bit() -> None:
    raw = np.random.default_rng(7).bit_generator.random_raw(N)
    for loc in (0.0, 1.0):
        drawn = np.random.default_rng(7).laplace(loc, 1.0, N)
        np.testing.assert_array_equal(_replica(raw, loc), drawn)


def test_the_bit_for_bit_check_sees_one_ulp() -> None:
    # the planted twin: a log one ulp off on a single argument (what np.log's AVX-512 kernel
    # does on some) makes the replica differ from numpy's draws
    raw = np.random.default_rng(7).bit_generator.random_raw(N)

    def off_by_one_ulp(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out = libm_log(x)
        out[0] = np.nextafter(out[0], np.inf)
        return out

    drawn = np.random.default_rng(7).laplace(0.0, 1.0, N)
    assert np.count_nonzero(_replica(raw, 0.0, off_by_one_ulp) != drawn) == 1


_CHILD = """
import hashlib, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_float_leak import N, _replica, _simd_targets
print(" ".join(["simd:", *_simd_targets()]))
raw = np.random.default_rng(7).bit_generator.random_raw(N)
for loc in (0.0, 1.0):
    drawn = np.random.default_rng(7).laplace(loc, 1.0, N)
    assert np.array_equal(_replica(raw, loc), drawn), loc
    print(hashlib.sha256(drawn.tobytes()).hexdigest())
"""


def _simd_targets() -> list[str]:
    """The SIMD dispatch targets numpy uses on this CPU (``np.show_runtime``'s "found")."""
    umath = importlib.import_module("numpy._core._multiarray_umath")
    features: dict[str, bool] = getattr(umath, "__cpu_features__", {})
    return [t for t in getattr(umath, "__cpu_dispatch__", []) if features.get(t)]


def test_the_draws_and_the_replica_do_not_depend_on_numpys_simd_dispatch() -> None:
    """In a child process with every SIMD target numpy found here disabled
    (``NPY_DISABLE_CPU_FEATURES``), numpy's draws are the same doubles and the replica still
    matches them: the sampler and the replica call libm, not numpy's dispatched kernels."""
    here = [
        hashlib.sha256(np.random.default_rng(7).laplace(loc, 1.0, N).tobytes()).hexdigest()
        for loc in (0.0, 1.0)
    ]
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(_simd_targets())}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    simd, *hashes = child.stdout.splitlines()
    assert simd.split() == ["simd:"]  # every target numpy found here is off in the child
    assert hashes == here


def test_numpy_laplace_outputs_under_mean_1_that_mean_0_cannot_produce() -> None:
    y = np.random.default_rng(11).laplace(1.0, 1.0, N)
    window = y[(y > 1.0) & (y < 2.0)]
    impossible = ~reachable_from_zero(window)
    share = impossible.sum() / N
    # Measured 0.236 (seed 11); heuristic ∫₁² ½e^{1−y}(1 − e^−y) dy ≈ 0.24. The bound asserted is
    # far below it and far above 0: one such draw already has infinite privacy loss.
    assert share > 0.15, share


def test_the_checker_accepts_every_output_of_mean_0() -> None:
    # the planted twin: draws that mean 0 did produce must all be found reachable
    y = np.random.default_rng(13).laplace(0.0, 1.0, N)
    window = y[(y > 1.0) & (y < 2.0)]
    assert window.size > 10_000
    assert np.all(reachable_from_zero(window))


def test_the_leak_is_certain_for_a_structured_window() -> None:
    """Every k that can give an output in (1, 1 + 2⁻⁴⁰] under each mean, enumerated (with a
    margin of 1000 k, far beyond rounding): the two sets of reachable doubles differ."""
    h = 2.0**-40
    lo0 = int(TWO53 * (1.0 - np.exp(-1.0) / 2.0)) - 1000
    hi0 = int(TWO53 * (1.0 - np.exp(-1.0 - h) / 2.0)) + 1000
    out0 = _noise(np.arange(lo0, hi0 + 1, dtype=np.int64))
    hi1 = int(TWO53 * (1.0 - np.exp(-h) / 2.0)) + 1000
    out1 = 1.0 + _noise(np.arange(2**52, hi1 + 1, dtype=np.int64))

    def inside(v: npt.NDArray[np.float64]) -> set[float]:
        return set(v[(v > 1.0) & (v <= 1.0 + h)].tolist())

    r0, r1 = inside(out0), inside(out1)
    # measured: 4,096 doubles in the window; mean 0 reaches 1,507, mean 1 reaches 3,071, and
    # 1,940 of those mean 0 never outputs (and 376 the other way round)
    assert len(r1 - r0) > 1000
    assert len(r0 - r1) > 100


def test_the_exact_discrete_laplace_has_no_impossible_output() -> None:
    """Its support is every integer under both means, with pmf ratio exactly e^{±eps·step}: the
    outputs seen under mean 1 are all seen under mean 0 as well (and the other way round)."""
    from expost.exact.bits import GeneratorBits
    from expost.mechanisms.additive import LaplaceMechanism

    m = LaplaceMechanism(1, 1, exact=True)
    under = [
        m.run_batch(mean, N, GeneratorBits(np.random.default_rng(seed)))
        for mean, seed in ((0, 21), (1, 22))
    ]
    assert all(u.dtype == np.int64 for u in under)
    common = set(range(-4, 6))  # P(y) >= e^-5·tanh(1/2) ≈ 3e-3 under both means: > 300 expected
    assert common <= set(np.unique(under[0]).tolist())
    assert common <= set(np.unique(under[1]).tolist())
