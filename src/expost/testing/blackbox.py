"""Black-box privacy audits of any mechanism: `audit_mechanism` and `assert_private` (issue 15).

The claim "M is (eps, delta)-DP" means P(M(x) ∈ E) <= e^eps · P(M(x') ∈ E) + delta for every
neighbouring pair (x, x') and every output event E (the hockey-stick form). The audit looks for
a pair and an event where this fails, in two independent stages:

1. Search, on outputs drawn from the stream ``audit_seed(seed, "blackbox").spawn(2)[0]``:
   candidate pairs are screened, the best few kept, and for each pair (both orders) the event
   families of `expost.testing.events` are scored by their lower bound on the search outputs
   (`expost.audit.eps_lower_bound`). One (pair, event) wins.
2. Test, on ``samples`` fresh outputs per side drawn after the search from the independent
   stream ``audit_seed(seed, "blackbox").spawn(2)[1]`` (children 0 for x, 1 for x'): with
   exact one-sided Clopper–Pearson limits at alpha/2 each,
   ``eps_lower = log((CP_lower(P(E|x)) − delta) / CP_upper(P(E|x')))`` (0 when not positive);
   refuted iff eps_lower > eps, i.e. iff CP_lower − e^eps · CP_upper > delta.

Why alpha is the real false-alarm level: the winning (pair, event) is a function of the search
outputs only, which are independent of the test outputs. Given it, both limits hold together
with probability >= 1 − alpha (Bonferroni), and then, for an (eps, delta)-DP mechanism,
CP_lower − delta <= P(E|x) − delta <= e^eps P(E|x') <= e^eps CP_upper, so eps_lower <= eps.
The search may be as greedy as it likes (``budget_s`` only limits its time). For mechanisms
drawing their own randomness (`expost.testing.adapters`) the verdict stays valid, since every
draw is fresh, but it is no longer reproducible from ``seed``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from attrs import frozen

from expost._validation import nonnegative, open_probability, positive, positive_int, probability
from expost.audit.core import audit_seed
from expost.confidence import eps_lower_bound
from expost.errors import InvalidParameter, refused
from expost.testing.events import OutputEvent, Outputs, as_outputs, families
from expost.testing.neighbours import (
    NEIGHBOURS,
    Dataset,
    Neighbours,
    Pair,
    candidate_pairs,
    collect_datasets,
    difference,
    show,
)

__all__ = ["BlackBoxResult", "Mechanism", "Witness", "assert_private", "audit_mechanism"]

Mechanism = Callable[[Dataset, np.random.Generator], Any]
KEEP = 3  # pairs kept after screening
MIN_SAMPLES = 1_000


@frozen
class Witness:
    """The pair (x, x') and the event E of the final test, with its hits among n outputs each."""

    x: Dataset
    x_prime: Dataset
    event: OutputEvent
    hits_x: int
    hits_x_prime: int
    n: int

    def describe(self) -> str:
        """The witness in words."""
        return (
            f"x = {show(self.x)}, x' = {show(self.x_prime)} "
            f"({difference(self.x, self.x_prime)}); E: {self.event.describe()}; "
            f"P(E|x) ≈ {self.hits_x}/{self.n}, P(E|x') ≈ {self.hits_x_prime}/{self.n}"
        )


@frozen
class BlackBoxResult:
    """The verdict of `audit_mechanism` on the claim (eps, delta)-DP at level alpha.

    ``refuted``: the fresh test rejects the claim (false-alarm probability <= alpha when it is
    true). ``eps_lower``: a (1 − alpha) lower confidence bound on the mechanism's eps at the
    claimed delta. ``witness``: the pair and event tested. ``search_samples``: outputs drawn by
    the search (all pairs, both sides); ``test_samples``: outputs per side in the final test.
    ``seed``: the audit's seed (the same seed reproduces the verdict of a mechanism drawing from
    the ``rng`` it is given).
    """

    refuted: bool
    eps_lower: float
    witness: Witness
    eps: float
    delta: float
    alpha: float
    search_samples: int
    test_samples: int
    pairs_searched: int
    seconds: float
    seed: int

    def report(self) -> str:
        """A readable report of the claim, the verdict and its witness."""
        verdict = "REFUTED" if self.refuted else "not refuted"
        return "\n".join(
            [
                f"claim: ({self.eps:g}, {self.delta:g})-DP; verdict: {verdict}",
                f"level: alpha = {self.alpha:g}",
                f"eps lower bound ({1 - self.alpha:g} confidence): {self.eps_lower:.4g}",
                f"witness: {self.witness.describe()}",
                f"search: {self.search_samples} outputs, {self.pairs_searched} pairs",
                f"test: {self.test_samples} fresh outputs per side; {self.seconds:.1f} s",
                f"seed: {self.seed} (reproduces this audit if the mechanism draws from its rng)",
            ]
        )


def draw(mechanism: Mechanism, dataset: Dataset, n: int, rng: np.random.Generator) -> Outputs:
    """n outputs of the mechanism on ``dataset``: one ``batch(dataset, n, rng)`` call if it has
    one, else n calls ``mechanism(dataset, rng)``."""
    batch = getattr(mechanism, "batch", None)
    raw = batch(dataset, n, rng) if callable(batch) else [mechanism(dataset, rng) for _ in range(n)]
    return as_outputs(raw, n, dataset)


@frozen
class _Choice:
    score: float
    x: Dataset
    x_prime: Dataset
    event: OutputEvent


def _best(out_x: Outputs, out_xp: Outputs, pair: Pair, alpha: float, delta: float) -> _Choice:
    """The event and order with the largest lower bound on the search outputs themselves.

    Bounds at the search's own sample size penalise rare events as much as their noise
    warrants, which keeps the winner's curse of picking the luckiest tail in check.
    """
    n = out_x.n
    found = families(out_x, out_xp)
    best = _Choice(-math.inf, pair[0], pair[1], found[0].make(0))
    for family in found:
        hx, hxp = family.hits_x, family.hits_x_prime
        for first, second, x, x_prime in ((hx, hxp, *pair), (hxp, hx, pair[1], pair[0])):
            score = eps_lower_bound(first, n, second, n, alpha, delta)
            at = int(np.argmax(score))
            if score[at] > best.score:
                best = _Choice(float(score[at]), x, x_prime, family.make(at))
    return best


class _Search:
    """The search stage: draws from its own stream, counts outputs, watches the time budget."""

    def __init__(
        self, mechanism: Mechanism, stream: np.random.SeedSequence, deadline: float
    ) -> None:
        self.mechanism = mechanism
        self.stream = stream
        self.deadline = deadline
        self.drawn = 0

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def choose(self, pair: Pair, n: int, alpha: float, delta: float) -> _Choice:
        rx, rxp = (np.random.default_rng(s) for s in self.stream.spawn(2))
        out_x = draw(self.mechanism, pair[0], n, rx)
        out_xp = draw(self.mechanism, pair[1], n, rxp)
        self.drawn += 2 * n
        return _best(out_x, out_xp, pair, alpha, delta)


def _search(
    search: _Search, pairs: list[Pair], samples: int, alpha: float, delta: float
) -> tuple[_Choice, int]:
    """Screen every pair on few outputs, then search the best `KEEP` on half of ``samples``.

    Returns the choice with the largest bound among the pairs searched last, and how many
    pairs were searched; time runs out only after at least one pair.
    """
    screened: list[tuple[_Choice, Pair]] = []
    if len(pairs) > KEEP:
        n_screen = max(MIN_SAMPLES, samples // 20)
        for pair in pairs:
            if screened and search.out_of_time():
                break
            screened.append((search.choose(pair, n_screen, alpha, delta), pair))
        screened.sort(key=lambda item: -item[0].score)
    kept = [pair for _, pair in screened[:KEEP]] if screened else pairs
    refined: list[_Choice] = []
    for pair in kept:
        if (refined or screened) and search.out_of_time():
            break
        refined.append(search.choose(pair, max(MIN_SAMPLES, samples // 2), alpha, delta))
    last = refined or [screened[0][0]]
    return max(last, key=lambda c: c.score), max(len(screened), len(refined))


def _pairs(pairs: object, datasets: object, neighbours: object) -> list[Pair]:
    if not (callable(neighbours) or neighbours in NEIGHBOURS):
        raise InvalidParameter(
            "neighbours", neighbours, f"must be one of {NEIGHBOURS} or a callable x -> neighbours"
        )
    if pairs is not None:
        if isinstance(pairs, str) or not isinstance(pairs, Sequence) or not pairs:
            raise refused("pairs", pairs, "must be a non-empty sequence of (x, x') pairs")
        for i, p in enumerate(pairs):
            if not (isinstance(p, Sequence) and len(p) == 2):
                raise refused(
                    "pairs", pairs, f"each pair must be a 2-tuple (x, x'): entry {i} is not"
                )
        return [(p[0], p[1]) for p in pairs]
    if datasets is None:
        raise InvalidParameter("datasets", None, "must be given when pairs is None")
    if isinstance(datasets, list | tuple):
        if not datasets:
            raise refused("datasets", datasets, "must not be empty")
        return candidate_pairs(list(datasets), neighbours)
    if type(datasets).__module__.startswith("hypothesis"):  # hypothesis is then installed
        from hypothesis.strategies import SearchStrategy

        if isinstance(datasets, SearchStrategy):
            return candidate_pairs(collect_datasets(datasets), neighbours)
    raise refused("datasets", datasets, "must be a list of datasets or a strategy")


def audit_mechanism(
    mechanism: Mechanism,
    eps: float = 1.0,
    delta: float = 0.0,
    pairs: Sequence[Pair] | None = None,
    datasets: Any = None,
    neighbours: Neighbours = "add-remove",
    samples: int = 200_000,
    alpha: float = 1e-3,
    seed: int = 0,
    budget_s: float | None = None,
) -> BlackBoxResult:
    """Test the claim "``mechanism`` is (eps, delta)-DP" by sample splitting (module docstring).

    ``mechanism(dataset, rng)`` returns one output (a float, an array, an int or any hashable);
    with a method ``batch(dataset, n, rng)`` it is asked for n outputs at once. ``pairs``:
    neighbouring (x, x'); when None they are built from ``datasets`` (a list, or a Hypothesis
    strategy drawn from deterministically) under ``neighbours`` ("add-remove", "replace-one" or
    a callable x -> neighbours), with the structured datasets of `expost.testing.neighbours` (made of
    the record values seen: a claim covers only the mechanism's domain).
    ``samples``: outputs per side in the final test (the search draws its own). ``budget_s``
    bounds the search's time, never the test's validity. Refuted with probability <= alpha when
    the claim holds.
    """
    if not callable(mechanism):
        raise InvalidParameter("mechanism", mechanism, "must be callable as mechanism(x, rng)")
    eps = nonnegative("eps", eps)
    delta = probability("delta", delta)
    samples = positive_int("samples", samples)
    if samples < MIN_SAMPLES:
        raise InvalidParameter("samples", samples, f"must be >= {MIN_SAMPLES}")
    alpha = open_probability("alpha", alpha)
    root = audit_seed(seed, "blackbox")
    budget = math.inf if budget_s is None else positive("budget_s", budget_s)
    candidates = _pairs(pairs, datasets, neighbours)

    start = time.perf_counter()
    search_stream, test_stream = root.spawn(2)
    search = _Search(mechanism, search_stream, start + budget)
    choice, searched = _search(search, candidates, samples, alpha, delta)

    rx, rxp = (np.random.default_rng(s) for s in test_stream.spawn(2))
    hits_x = int(np.count_nonzero(choice.event.contains(draw(mechanism, choice.x, samples, rx))))
    out_xp = draw(mechanism, choice.x_prime, samples, rxp)
    hits_xp = int(np.count_nonzero(choice.event.contains(out_xp)))
    bound = float(eps_lower_bound(hits_x, samples, hits_xp, samples, alpha, delta))
    eps_lower = max(0.0, bound)
    witness = Witness(choice.x, choice.x_prime, choice.event, hits_x, hits_xp, samples)
    return BlackBoxResult(
        refuted=eps_lower > eps,
        eps_lower=eps_lower,
        witness=witness,
        eps=eps,
        delta=delta,
        alpha=alpha,
        search_samples=search.drawn,
        test_samples=samples,
        pairs_searched=searched,
        seconds=time.perf_counter() - start,
        seed=int(seed),
    )


def assert_private(
    mechanism: Mechanism,
    eps: float = 1.0,
    delta: float = 0.0,
    pairs: Sequence[Pair] | None = None,
    datasets: Any = None,
    neighbours: Neighbours = "add-remove",
    samples: int = 200_000,
    alpha: float = 1e-3,
    seed: int = 0,
    budget_s: float | None = None,
) -> BlackBoxResult:
    """`audit_mechanism`, raising ``AssertionError`` with its report when the claim is refuted.

    For a downstream project's tests: a true claim fails with probability <= alpha.
    """
    result = audit_mechanism(
        mechanism, eps, delta, pairs, datasets, neighbours, samples, alpha, seed, budget_s
    )
    if result.refuted:
        raise AssertionError(
            f"mechanism is not ({result.eps:g}, {result.delta:g})-DP\n" + result.report()
        )
    return result
