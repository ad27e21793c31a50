"""The exact samplers against their exact pmfs, with planted twins the same tests reject.

Goodness of fit: a G-test (likelihood-ratio chi-square) of the sample's counts against the
exact pmf, at false-alarm level ALPHA = 1e-6 (tests/stats.py). The bins are the integers whose
expected count is at least 5, plus two pooled tail bins (everything left / right of them), so
the tails are tested too. Every sampler has a twin that the same test must reject: a wrong
parameter (off by one) and a biased bit source (a coin that comes up 0 too often).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from expost.errors import InvalidParameter
from expost.exact import (
    GeneratorBits,
    SecureBits,
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_ratio,
    binomial,
    discrete_gaussian,
    discrete_laplace,
    poisson,
    skellam,
)
from expost.exact.bits import BitSource
from tests.stats import ALPHA, proportion_is_consistent

N = 100_000
Pmf = Callable[[int], float]


def bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.default_rng(seed))


class BiasedBits(GeneratorBits):
    """A planted bug: with probability 1/20 a draw is forced to 0."""

    def _small(self, n: int, size: int) -> npt.NDArray[np.int64]:
        draws = super()._small(n, size)
        return np.where(self.rng.integers(0, 20, size=size) == 0, 0, draws)


def fits(samples: npt.NDArray[np.int64], pmf: Pmf, lo: int, hi: int) -> bool:
    """G-test of ``samples`` against ``pmf`` (mass outside [lo, hi] below 1e-12) at ALPHA."""
    support = np.arange(lo, hi + 1)
    probs = np.array([pmf(int(k)) for k in support])
    core = np.flatnonzero(samples.size * probs >= 5)
    first, last = support[core[0]], support[core[-1]]
    expected = np.concatenate(
        [[probs[: core[0]].sum()], probs[core[0] : core[-1] + 1], [probs[core[-1] + 1 :].sum()]]
    )
    expected = expected / expected.sum() * samples.size
    inner = np.bincount(samples[(samples >= first) & (samples <= last)] - first)
    observed = np.concatenate(
        [
            [np.sum(samples < first)],
            np.pad(inner, (0, last - first + 1 - inner.size)),
            [np.sum(samples > last)],
        ]
    )
    keep = expected > 0
    assert observed[~keep].sum() == 0
    _, pvalue = sps.power_divergence(observed[keep], expected[keep], lambda_="log-likelihood")
    return bool(pvalue > ALPHA)


def laplace_pmf(scale: Fraction) -> Pmf:
    q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
    return lambda k: float((1 - q) / (1 + q) * q ** abs(k))


def gaussian_pmf(sigma2: Fraction) -> Pmf:
    s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
    reach = int(40 * math.sqrt(float(sigma2))) + 40
    z = mpmath.fsum(mpmath.exp(-(k**2) / (2 * s2)) for k in range(-reach, reach + 1))
    return lambda k: float(mpmath.exp(-(k**2) / (2 * s2)) / z)


LAWS: list[tuple[str, Callable[[BitSource, int], npt.NDArray[np.int64]], Pmf, Pmf, int, int]] = [
    # name, sampler, its pmf, the off-by-one twin's law (sampled and tested against the pmf)
    (
        "discrete_laplace",
        lambda b, n: discrete_laplace(Fraction(7, 2), b, n),
        laplace_pmf(Fraction(7, 2)),
        laplace_pmf(Fraction(9, 2)),
        -120,
        120,
    ),
    (
        "discrete_gaussian",
        lambda b, n: discrete_gaussian(10, b, n),
        gaussian_pmf(Fraction(10)),
        gaussian_pmf(Fraction(11)),
        -60,
        60,
    ),
    (
        "discrete_gaussian_small",
        lambda b, n: discrete_gaussian(Fraction(1, 3), b, n),
        gaussian_pmf(Fraction(1, 3)),
        gaussian_pmf(Fraction(4, 3)),
        -20,
        20,
    ),
    (
        "poisson",
        lambda b, n: poisson(Fraction(17, 5), b, n),
        lambda k: float(sps.poisson.pmf(k, 17 / 5)),
        lambda k: float(sps.poisson.pmf(k, 22 / 5)),
        0,
        60,
    ),
    (
        "binomial",
        lambda b, n: binomial(12, Fraction(2, 7), b, n),
        lambda k: float(sps.binom.pmf(k, 12, 2 / 7)),
        lambda k: float(sps.binom.pmf(k, 13, 2 / 7)),
        0,
        13,
    ),
    (
        "skellam",
        lambda b, n: skellam(Fraction(5, 2), b, n),
        lambda k: float(sps.skellam.pmf(k, 2.5, 2.5)),
        lambda k: float(sps.skellam.pmf(k, 3.5, 3.5)),
        -60,
        60,
    ),
]


@pytest.mark.parametrize(
    ("name", "sample", "pmf", "twin", "lo", "hi"), LAWS, ids=[x[0] for x in LAWS]
)
def test_sampler_follows_its_exact_pmf(
    name: str,
    sample: Callable[[BitSource, int], npt.NDArray[np.int64]],
    pmf: Pmf,
    twin: Pmf,
    lo: int,
    hi: int,
) -> None:
    x = sample(bits(11), N)
    assert x.dtype == np.int64
    assert fits(x, pmf, lo, hi)
    # planted twins: the off-by-one law's pmf and a biased bit source, both rejected
    assert not fits(x, twin, lo - 20, hi + 20)
    assert not fits(sample(BiasedBits(np.random.default_rng(12)), N), pmf, lo, hi)


def test_binomial_with_per_sample_counts() -> None:
    counts = np.tile(np.array([0, 3, 9]), N // 3)
    x = binomial(counts, Fraction(1, 3), bits(3), counts.size)
    assert np.all(x[counts == 0] == 0)
    assert fits(x[counts == 9], lambda k: float(sps.binom.pmf(k, 9, 1 / 3)), 0, 9)
    assert fits(x[counts == 3], lambda k: float(sps.binom.pmf(k, 3, 1 / 3)), 0, 3)
    assert not fits(x[counts == 3], lambda k: float(sps.binom.pmf(k, 4, 1 / 3)), 0, 4)


def test_float_parameter_with_large_denominator_takes_the_python_int_path() -> None:
    # Fraction(2.3) has denominator 2**51: the Gaussian's acceptance numerators overflow int64
    x = discrete_gaussian(2.3, bits(5), 20_000)
    assert fits(x, gaussian_pmf(Fraction(2.3)), -30, 30)
    assert not fits(x, gaussian_pmf(Fraction(33, 10)), -30, 30)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(23, 7)])
def test_bernoulli_exp_rate(gamma: Fraction) -> None:
    hits = int(bernoulli_exp(gamma, bits(7), N).sum())
    p = math.exp(-gamma)
    assert proportion_is_consistent(hits, N, p)
    assert not proportion_is_consistent(hits, N, math.exp(-(gamma + Fraction(1, 10))))


def test_bernoulli_rate_and_biased_twin() -> None:
    p = Fraction(3, 11)
    assert proportion_is_consistent(int(bernoulli(p, bits(8), N).sum()), N, float(p))
    biased = int(bernoulli(p, BiasedBits(np.random.default_rng(8)), N).sum())
    assert not proportion_is_consistent(biased, N, float(p))


class Scripted:
    """A stub bit source: records each n asked for and returns the scripted integers."""

    def __init__(self, values: list[int]) -> None:
        self.values = values
        self.asked: list[int] = []

    def below(self, n: int, size: int) -> npt.NDArray[np.int64]:
        self.asked.append(n)
        out, self.values = self.values[:size], self.values[size:]
        return np.array(out, dtype=object if n > 2**62 else np.int64)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-300, max_value=1.0, exclude_max=True))
def test_bernoulli_uses_a_float_p_exactly(p: float) -> None:
    a, b = Fraction(p).numerator, Fraction(p).denominator
    stub = Scripted([a - 1, a])
    assert bernoulli(p, stub, 2).tolist() == [True, False]
    assert stub.asked == [b]


def test_bernoulli_tells_float_point_one_from_one_tenth() -> None:
    a = Fraction(0.1).numerator  # 3602879701896397 / 2**55 > 1/10
    assert Fraction(0.1) != Fraction(1, 10)
    assert bernoulli(0.1, Scripted([a - 1]), 1).tolist() == [True]
    assert bernoulli(Fraction(1, 10), Scripted([a - 1]), 1).tolist() == [False]  # U < 1 needs U = 0


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1.0, exclude_max=True))
def test_bernoulli_exp_uses_float_parameters_exactly(x: float) -> None:
    den = Fraction(x).denominator
    stub = Scripted([den - 1])  # A_1 = [U < num] = 0: K = 1, output True
    assert bernoulli_exp(x, stub, 1).tolist() == [True]
    assert stub.asked == [Fraction(x).denominator]


@settings(max_examples=30, deadline=None)
@given(st.floats(min_value=1e-2, max_value=1.0, exclude_max=True))
def test_laplace_uses_float_parameters_exactly(x: float) -> None:
    from expost.exact import samplers, tables

    scale = 1 / x
    discrete_laplace(scale, bits(0), 2**14)  # builds the table of rate exactly 1/Fraction(scale)
    assert tables.cached(1 / Fraction(scale), Fraction(0))
    # the rejection path (CKS Alg. 2): U = 0; Bern(exp(0)) = 1; V = 0 (5039 fails A_2); sign +
    stub = Scripted([0, 0] + [5039] * 2 + [0])
    t, s = Fraction(scale).numerator, Fraction(scale).denominator
    assert samplers._laplace(t, s, stub, 1).tolist() == [0]
    assert stub.asked == [Fraction(scale).numerator] * 2 + [5040, 2]


def test_generator_bits_same_seed_same_integers() -> None:
    for n in (2, 7, 2**40 + 3, 2**62, 2**80 + 1):
        assert bits(4).below(n, 50).tolist() == bits(4).below(n, 50).tolist()
        assert bits(4).below(n, 50).tolist() != bits(5).below(n, 50).tolist()
    assert np.array_equal(discrete_gaussian(5, bits(4), 1000), discrete_gaussian(5, bits(4), 1000))


def uniform_fits(x: npt.ArrayLike, n: int) -> bool:
    counts = np.bincount(np.asarray(x, dtype=np.int64), minlength=n)
    return bool(sps.chisquare(counts).pvalue > ALPHA)


@pytest.mark.parametrize("source", [SecureBits(), bits(9)], ids=["secure", "generator"])
def test_bit_sources_are_uniform(source: BitSource) -> None:
    x = source.below(6, 60_000)
    assert x.dtype == np.int64
    assert x.min() >= 0
    assert x.max() < 6
    assert uniform_fits(x, 6)
    assert not uniform_fits(np.minimum(x, 4), 6)  # twin: a source that never yields 5
    big = source.below(3 * 2**68, 6_000)  # object path: top bits spread evenly over 3 thirds
    assert all(0 <= int(v) < 3 * 2**68 for v in big)
    assert uniform_fits([int(v) // 2**68 for v in big], 3)
    assert np.array_equal(source.below(1, 5), np.zeros(5, dtype=np.int64))


def test_secure_bits_drives_the_samplers() -> None:
    x = discrete_laplace(2, SecureBits(), 20_000)
    assert fits(x, laplace_pmf(Fraction(2)), -60, 60)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: bernoulli(1.5, bits(0), 1), "p"),
        (lambda: bernoulli("0.5", bits(0), 1), "p"),  # type: ignore[arg-type]
        (lambda: bernoulli(float("nan"), bits(0), 1), "p"),
        (lambda: bernoulli_exp(-1, bits(0), 1), "gamma"),
        (lambda: discrete_laplace(0, bits(0), 1), "scale"),
        (lambda: discrete_laplace(2.0**41, bits(0), 1), "scale"),
        (lambda: discrete_gaussian(float("inf"), bits(0), 1), "sigma2"),
        (lambda: discrete_gaussian(-1, bits(0), 1), "sigma2"),
        (lambda: poisson(-Fraction(1, 2), bits(0), 1), "mean"),
        (lambda: binomial(-1, 0.5, bits(0), 1), "n"),
        (lambda: binomial(np.array([1, 2]), 0.5, bits(0), 3), "n"),
        (lambda: binomial(3, 2, bits(0), 1), "p"),
        (lambda: skellam(1, bits(0), -1), "size"),
        (lambda: bits(0).below(0, 1), "n"),
        (lambda: GeneratorBits(np.random.RandomState(0)), "rng"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_names_the_argument(call: Callable[[], object], name: str) -> None:
    with pytest.raises(InvalidParameter) as err:
        call()
    assert err.value.name == name


def test_counting_samplers_sum_across_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    from expost.exact import samplers

    monkeypatch.setattr(samplers, "_CHUNK", 1000)  # many chunks, samples split across none
    counts = np.tile(np.array([7, 0, 7]), 10_000)
    x = binomial(counts, Fraction(1, 2), bits(6), counts.size)
    assert np.all(x[counts == 0] == 0)
    assert fits(x[counts == 7], lambda k: float(sps.binom.pmf(k, 7, 1 / 2)), 0, 7)
    assert fits(poisson(3, bits(6), 20_000), lambda k: float(sps.poisson.pmf(k, 3)), 0, 40)


def test_bernoulli_exp_ratio_per_sample() -> None:
    nums = np.tile(np.array([0, 3, 10, 25]), N // 4)
    x = bernoulli_exp_ratio(nums, 5, bits(13)).reshape(-1, 4)
    for j, g in enumerate((0, 3, 10, 25)):
        hits = int(x[:, j].sum())
        assert proportion_is_consistent(hits, N // 4, math.exp(-g / 5))
        if g in (3, 10):  # twin n_i + 1 (at 25 the rates differ by 0.0012: no power at this n)
            assert not proportion_is_consistent(hits, N // 4, math.exp(-(g + 1) / 5))
    big = np.array([2**70] * 1000, dtype=object)  # Python-int path: exp(-(2**70)/(2**70)) = e^-1
    assert proportion_is_consistent(
        int(bernoulli_exp_ratio(big, 2**70, bits(14)).sum()), 1000, math.exp(-1)
    )
    with pytest.raises(InvalidParameter):
        bernoulli_exp_ratio(np.array([-1]), 2, bits(0))
    with pytest.raises(InvalidParameter):
        bernoulli_exp_ratio(np.array([0.5]), 2, bits(0))
    with pytest.raises(InvalidParameter):
        bernoulli_exp_ratio(np.array([1]), 0, bits(0))


@pytest.mark.parametrize("n", [3 * 2**7, 3 * 2**14, 3 * 2**30, 3 * 2**60])  # 1, 2, 4, 8-byte words
def test_secure_bits_every_word_size_is_uniform(n: int) -> None:
    x = SecureBits().below(n, 30_000)
    assert x.dtype == np.int64
    assert int(x.min()) >= 0
    assert int(x.max()) < n
    thirds = x // (n // 3)
    assert uniform_fits(thirds, 3)
    assert uniform_fits(x % 8, 8)  # low bits too
    assert not uniform_fits(np.minimum(thirds, 1), 3)  # twin: the top third never drawn


def test_secure_bits_buffers_small_reads_and_drops_the_buffer_in_a_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    calls: list[int] = []
    real = os.urandom

    def counted(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(os, "urandom", counted)
    source = SecureBits(block=4096)
    for _ in range(100):
        source.below(2**16, 1)  # 200 bytes in all: one block read
    assert calls == [4096]
    source.below(2**16, 10_000)  # larger than block/4: read directly
    assert calls[-1] == 20_000
    # a forked child (another pid) must not reuse the parent's buffered bytes
    monkeypatch.setattr(os, "getpid", lambda: -1)
    before = len(calls)
    source.below(2**16, 1)
    assert len(calls) == before + 1
    # twin: a source that skips the pid check would have served the draw from the old buffer
    twin = SecureBits(block=4096)
    twin.below(2**16, 1)
    twin._pid = -1  # the check passes: no new read, the child would repeat the parent's bytes
    before = len(calls)
    twin.below(2**16, 1)
    assert len(calls) == before


@pytest.mark.parametrize("n", [2**5, 2**8, 2**16, 2**40])
def test_secure_bits_powers_of_two_are_uniform(n: int) -> None:
    x = SecureBits().below(n, 60_000)
    assert int(x.min()) >= 0
    assert int(x.max()) < n
    assert uniform_fits(x // (n // 4), 4)
    assert uniform_fits(x % 4, 4)
    assert not uniform_fits(np.minimum(x // (n // 4), 2), 4)
