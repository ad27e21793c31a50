"""The exponential mechanism by Gumbel-max (THEORY §2; Cesar–Rogers; APC Sec. 7.2)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    candidates_mask,
    check_scale,
    generator,
    positive,
    positive_int,
    scores_array,
    validator,
)
from expost.errors import InvalidParameter
from expost.filters.costs import BoundedRangeCost
from expost.guarantees import ZCDP, PureDP
from expost.rounding import up_exact

__all__ = ["ExponentialMechanism"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]


def _is_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidParameter(
            name, value, "must be True or False (monotone scores decide the privacy cost)"
        )


@frozen
class ExponentialMechanism:
    """Return the index of the largest score + Gumbel(Δ/eps) noise (Gumbel-max).

    Candidate i is chosen with probability ∝ exp(eps·u_i/Δ) among the allowed candidates
    (``candidates`` mask; APC Sec. 7 selects "over all remaining candidates").

    ``monotone`` is required. True: every score moves in the same direction between
    neighbours (counts under add/remove of one person); then the mechanism is eps-DP and
    eps-bounded-range, hence eps²/8-zCDP (Cesar–Rogers; APC Sec. 7.2). False: the range is
    2·eps, so it is 2eps-DP and (2eps)²/8 = eps²/2-zCDP (THEORY §2).
    """

    eps: float = field(converter=as_float, validator=validator(positive))
    monotone: bool = field(validator=validator(_is_bool))
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))

    def __attrs_post_init__(self) -> None:
        check_scale("eps", self.eps, self.scale)

    @property
    def scale(self) -> float:
        """The Gumbel scale Δ/eps."""
        return self.sensitivity / self.eps

    @property
    def bounded_range(self) -> float:
        """The bounded-range parameter: eps if monotone, else 2·eps."""
        return self.eps if self.monotone else 2.0 * self.eps

    def guarantee(self) -> ZCDP:
        """bounded_range²/8-zCDP: eps²/8 if monotone, else eps²/2 (Cesar–Rogers; APC Sec. 7.2),
        rounded up."""
        return ZCDP(up_exact(Fraction(self.eps) ** 2 / (8 if self.monotone else 2)))

    def dp_guarantee(self) -> PureDP:
        """bounded_range-DP: eps-DP if monotone, else 2eps-DP."""
        return PureDP(self.bounded_range)

    def cost(self) -> BoundedRangeCost:
        """The round as a cost: BoundedRangeCost(bounded_range) (THEORY §2; Cesar–Rogers)."""
        return BoundedRangeCost(self.bounded_range)

    def selection_probabilities(
        self, scores: npt.ArrayLike, candidates: npt.ArrayLike | None = None
    ) -> FloatArray:
        """The exact law of the choice: softmax of eps·u/Δ over allowed candidates, 0 elsewhere.

        ``scores`` (m,) or (trials, m); the result has the same shape.
        """
        from scipy import special  # lazy: keeps `import expost` fast

        u = scores_array(scores, max_ndim=2)
        logits = self._logits(u, candidates_mask(candidates, u.shape))
        probabilities: FloatArray = np.exp(
            logits - special.logsumexp(logits, axis=-1, keepdims=True)
        )
        return probabilities

    def run(
        self,
        scores: npt.ArrayLike,
        rng: np.random.Generator,
        candidates: npt.ArrayLike | None = None,
    ) -> int:
        """One selection: the index of an allowed candidate for scores (m,)."""
        u = scores_array(scores, max_ndim=1)
        allowed = candidates_mask(candidates, u.shape)
        return int(self._select(u, allowed, generator(rng)))

    def run_batch(
        self,
        scores: npt.ArrayLike,
        trials: int,
        rng: np.random.Generator,
        candidates: npt.ArrayLike | None = None,
    ) -> IndexArray:
        """``trials`` independent selections, shape (trials,).

        ``scores`` is (m,) (the same for every trial) or (trials, m); ``candidates``
        broadcasts to (trials, m).
        """
        u = scores_array(scores, max_ndim=2)
        n = positive_int("trials", trials)
        if u.ndim == 2 and u.shape[0] != n:
            raise InvalidParameter("scores", u.shape, f"must have {n} rows, one per trial")
        shape = (n, u.shape[-1])
        return self._select(
            np.broadcast_to(u, shape), candidates_mask(candidates, shape), generator(rng)
        )

    def rank_batch(
        self, scores: npt.ArrayLike, trials: int, rng: np.random.Generator
    ) -> IndexArray:
        """For each trial, the order in which repeated rounds choose: shape (trials, m).

        Entry k of row i has the law of trial i's choice in round k + 1 when every round runs
        the mechanism, with fresh noise, over the candidates not chosen before (and the first k
        entries jointly that of k such rounds): sorting the Gumbel-perturbed scores once is
        sequential selection without replacement (Gumbel-top-k; Yellott 1977, Kool et al. 2019).
        Each choice revealed is one round and costs `guarantee()`. ``scores`` (m,) or (trials, m).
        """
        u = scores_array(scores, max_ndim=2)
        n = positive_int("trials", trials)
        if u.ndim == 2 and u.shape[0] != n:
            raise InvalidParameter("scores", u.shape, f"must have {n} rows, one per trial")
        g = generator(rng)
        logits = self._logits(np.broadcast_to(u, (n, u.shape[-1])), None)
        noise = g.standard_exponential(logits.shape)
        np.log(noise, out=noise)
        order: IndexArray = np.argsort(np.subtract(noise, logits, out=logits), axis=-1)
        return order

    def _logits(self, u: FloatArray, allowed: BoolArray | None) -> FloatArray:
        """eps·u/Δ shifted so the best allowed candidate is at 0; −inf where excluded."""
        logits: FloatArray = np.array(u) if allowed is None else np.where(allowed, u, -np.inf)
        with np.errstate(over="ignore"):
            logits -= logits.max(axis=-1, keepdims=True)
            logits /= self.scale
        return logits

    def _select(
        self, u: FloatArray, allowed: BoolArray | None, rng: np.random.Generator
    ) -> IndexArray:
        """Gumbel-max on the logits: argmax of eps·u/Δ + Gumbel(1) = argmax of u + Gumbel(Δ/eps).

        Gumbel(1) noise is drawn as −log E with E ~ Exp(1) (the same law, about twice as fast
        as ``rng.gumbel``, which takes two logarithms of a uniform).
        """
        logits = self._logits(u, allowed)
        noise = rng.standard_exponential(logits.shape)
        np.log(noise, out=noise)
        choice: IndexArray = np.argmax(np.subtract(logits, noise, out=logits), axis=-1)
        return choice
