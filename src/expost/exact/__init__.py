"""Exact samplers: integer and ``Fraction`` arithmetic only, driven by a bit source.

``bits`` holds the sources of uniform integers (the OS CSPRNG for releases, a seeded numpy
``Generator`` for reproducible tests and audits); ``samplers`` holds the batch samplers
(Bernoulli, Bernoulli(exp(−γ)), discrete Laplace, discrete Gaussian, Poisson, binomial,
Skellam); ``tables`` the cached exact-inversion tables of the discrete Laplace and Gaussian;
``counts`` the O(sqrt mean) Poisson and binomial, ``polylog`` the polylog(mean) ones from mean
2**20. See docs/exact-samplers.md.
"""

from expost.exact.bits import BitSource, GeneratorBits, SecureBits
from expost.exact.samplers import (
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_ratio,
    binomial,
    discrete_gaussian,
    discrete_laplace,
    poisson,
    skellam,
)

__all__ = [
    "BitSource",
    "GeneratorBits",
    "SecureBits",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_ratio",
    "binomial",
    "discrete_gaussian",
    "discrete_laplace",
    "poisson",
    "skellam",
]
