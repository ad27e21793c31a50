"""The exponential mechanism (THEORY §2; Cesar–Rogers; APC Sec. 7.2): one law, two samplers.

Candidate i is chosen with probability ∝ exp(eps·u_i/Δ) among the allowed candidates. Float noise
(``exact=False``) draws it by Gumbel-max from a numpy Generator; exact noise (``exact=True``)
draws the same law by rejection from a `BitSource` with integer scores and a rational eps
(`expost.mechanisms.exact_selection`). The price is the law's, so it is the same for both.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import Converter, field, frozen

from expost._validation import (
    as_float,
    check_scale,
    exact_sensitivity,
    flag,
    noise_source,
    positive,
    positive_int,
    rational,
    validator,
)
from expost.errors import InvalidParameter, refused
from expost.exact.bits import BitSource
from expost.filters.costs import BoundedRangeCost
from expost.guarantees import ZCDP, PureDP
from expost.mechanisms.exact_additive import integers
from expost.mechanisms.exact_selection import exact_gaps, exact_select
from expost.mechanisms.selection_inputs import candidates_mask, scores_array
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


def _eps(value: Any, self_: Any) -> float | Fraction:
    """eps: an exact `Fraction` for exact noise (never rounded), else a float."""
    return rational("eps", value) if self_.exact else as_float(value)


def _sensitivity(value: Any, self_: Any) -> float | int:
    """Δ: a positive integer for exact noise (integer scores), else a float."""
    return exact_sensitivity(value) if self_.exact else as_float(value)


def _float_positive(self_: ExponentialMechanism, attribute: Any, value: Any) -> None:
    if not self_.exact:  # exact parameters were checked by their converters
        positive(attribute.name, value)


@frozen
class ExponentialMechanism:
    """Choose candidate i with probability ∝ exp(eps·u_i/Δ) among the allowed candidates
    (``candidates`` mask; APC Sec. 7 selects "over all remaining candidates").

    ``monotone`` is required. True: every score moves in the same direction between
    neighbours (counts under add/remove of one person); then the mechanism is eps-DP and
    eps-bounded-range, hence eps²/8-zCDP (Cesar–Rogers; APC Sec. 7.2). False: the range is
    2·eps, so it is 2eps-DP and (2eps)²/8 = eps²/2-zCDP (THEORY §2).

    ``exact`` picks the noise, not the law: False, float scores and eps, Gumbel-max from a
    numpy Generator; True, integer scores and Δ, eps an exact `Fraction`, rejection from a
    `BitSource` (`expost.mechanisms.exact_selection`). Both sample the law above (exactly for
    exact noise), so `cost()` is the same `BoundedRangeCost` in both modes.
    """

    exact: bool = field(default=False, kw_only=True, validator=validator(flag))
    eps: float | Fraction = field(
        converter=Converter(_eps, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
        validator=_float_positive,
    )
    monotone: bool = field(validator=validator(_is_bool))
    sensitivity: float | int = field(
        default=1.0,
        converter=Converter(_sensitivity, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
        validator=_float_positive,
    )

    def __attrs_post_init__(self) -> None:
        if not self.exact:
            check_scale("eps", float(self.eps), float(self.scale))

    @property
    def scale(self) -> float | Fraction:
        """The Gumbel scale Δ/eps (a `Fraction` for exact noise)."""
        if self.exact:
            return Fraction(self.sensitivity) / self.eps
        return float(self.sensitivity) / float(self.eps)

    @property
    def bounded_range(self) -> float:
        """The bounded-range parameter: eps if monotone, else 2·eps (rounded up)."""
        return up_exact(Fraction(self.eps) * (1 if self.monotone else 2))

    def guarantee(self) -> ZCDP:
        """bounded_range²/8-zCDP: eps²/8 if monotone, else eps²/2 (Cesar–Rogers; APC Sec. 7.2),
        rounded up."""
        return ZCDP(up_exact(Fraction(self.eps) ** 2 / (8 if self.monotone else 2)))

    def dp_guarantee(self) -> PureDP:
        """bounded_range-DP: eps-DP if monotone, else 2eps-DP (rounded up)."""
        return PureDP(self.bounded_range)

    def cost(self) -> BoundedRangeCost:
        """The round as a cost: BoundedRangeCost(bounded_range) (THEORY §2; Cesar–Rogers), for
        both noises: the exact sampler draws the same law, so it has the same bounded range."""
        return BoundedRangeCost(self.bounded_range)

    def selection_probabilities(
        self, scores: npt.ArrayLike, candidates: npt.ArrayLike | None = None
    ) -> FloatArray:
        """The law of the choice: softmax of eps·u/Δ over allowed candidates, 0 elsewhere (in
        floats; for exact noise from the exact integer gaps u* − u_i).

        ``scores`` (m,) or (trials, m); the result has the same shape.
        """
        from scipy import special  # lazy: keeps `import expost` fast

        u = self._scores(scores, max_ndim=2)
        logits = self._logits(u, candidates_mask(candidates, u.shape))
        probabilities: FloatArray = np.exp(
            logits - special.logsumexp(logits, axis=-1, keepdims=True)
        )
        return probabilities

    def run(
        self,
        scores: npt.ArrayLike,
        source: np.random.Generator | BitSource,
        candidates: npt.ArrayLike | None = None,
    ) -> int:
        """One selection: the index of an allowed candidate for scores (m,)."""
        u = self._scores(scores, max_ndim=1)
        allowed = candidates_mask(candidates, u.shape)
        return int(self._select(u[None], allowed, 1, noise_source(self.exact, source))[0])

    def run_batch(
        self,
        scores: npt.ArrayLike,
        trials: int,
        source: np.random.Generator | BitSource,
        candidates: npt.ArrayLike | None = None,
    ) -> IndexArray:
        """``trials`` independent selections, shape (trials,).

        ``scores`` is (m,) (the same for every trial) or (trials, m); ``candidates``
        broadcasts to (trials, m).
        """
        u, n = self._trial_scores(scores, trials)
        shape = (n, u.shape[-1])
        allowed = candidates_mask(candidates, shape)
        noise = noise_source(self.exact, source)
        if self.exact and u.ndim == 1 and (candidates is None or np.ndim(candidates) <= 1):
            shared = None if allowed is None else allowed[:1]  # one row serves every trial
            return self._select(u[None], shared, n, noise)
        return self._select(np.broadcast_to(u, shape), allowed, n, noise)

    def rank_batch(
        self, scores: npt.ArrayLike, trials: int, source: np.random.Generator | BitSource
    ) -> IndexArray:
        """For each trial, the order in which repeated rounds choose: shape (trials, m).

        Entry k of row i has the law of trial i's choice in round k + 1 when every round runs
        the mechanism, with fresh noise, over the candidates not chosen before (and the first k
        entries jointly that of k such rounds). Float noise: sorting the Gumbel-perturbed scores
        once is sequential selection without replacement (Gumbel-top-k; Yellott 1977, Kool et
        al. 2019). Exact noise: the m rounds are run one after the other (m exact selections).
        Each choice revealed is one round and costs `guarantee()`. ``scores`` (m,) or (trials, m).
        """
        u, n = self._trial_scores(scores, trials)
        noise = noise_source(self.exact, source)
        rows = np.broadcast_to(u, (n, u.shape[-1]))
        if isinstance(noise, np.random.Generator):
            logits = self._logits(rows, None)
            gumbel = noise.standard_exponential(logits.shape)
            np.log(gumbel, out=gumbel)
            order: IndexArray = np.argsort(np.subtract(gumbel, logits, out=logits), axis=-1)
            return order
        left = np.ones(rows.shape, bool)
        order = np.empty(rows.shape, np.intp)
        for k in range(rows.shape[1]):
            order[:, k] = self._select(rows, left, n, noise)
            left[np.arange(n), order[:, k]] = False
        return order

    def _scores(self, scores: npt.ArrayLike, *, max_ndim: int) -> npt.NDArray[Any]:
        """Finite float scores, or exact integers for exact noise, of shape (m,) or (trials, m)."""
        if not self.exact:
            return scores_array(scores, max_ndim=max_ndim)
        u = integers("scores", scores)
        if not 1 <= u.ndim <= max_ndim or u.shape[-1] == 0:
            shape = "(m,)" if max_ndim == 1 else "(m,) or (trials, m)"
            raise refused("scores", scores, f"must be a non-empty array of shape {shape}")
        return u

    def _trial_scores(self, scores: npt.ArrayLike, trials: int) -> tuple[npt.NDArray[Any], int]:
        u = self._scores(scores, max_ndim=2)
        n = positive_int("trials", trials)
        if u.ndim == 2 and u.shape[0] != n:
            raise InvalidParameter("scores", u.shape, f"must have {n} rows, one per trial")
        return u, n

    def _logits(self, u: npt.NDArray[Any], allowed: BoolArray | None) -> FloatArray:
        """eps·u/Δ shifted so the best allowed candidate is at 0; −inf where excluded."""
        if self.exact:  # exact integer gaps u* − u_i, then one rounding each
            gaps, _ = exact_gaps(u, allowed)
            with np.errstate(over="ignore"):
                logits: FloatArray = -(gaps.astype(np.float64) / float(self.scale))
            return logits if allowed is None else np.where(allowed, logits, -np.inf)
        logits = np.array(u) if allowed is None else np.where(allowed, u, -np.inf)
        with np.errstate(over="ignore"):
            logits -= logits.max(axis=-1, keepdims=True)
            logits /= float(self.scale)
        return logits

    def _select(
        self,
        u: npt.NDArray[Any],
        allowed: BoolArray | None,
        trials: int,
        source: np.random.Generator | BitSource,
    ) -> IndexArray:
        """Float: Gumbel-max on the logits, argmax of eps·u/Δ + Gumbel(1) = argmax of
        u + Gumbel(Δ/eps); Gumbel(1) noise is drawn as −log E with E ~ Exp(1) (the same law,
        about twice as fast as ``rng.gumbel``). Exact: `exact_select` (rows of ``u`` are
        trials, or one row shared by all ``trials``)."""
        if not isinstance(source, np.random.Generator):
            return exact_select(
                u, allowed, trials, Fraction(self.eps), int(self.sensitivity), source
            )
        logits = self._logits(np.broadcast_to(u, (trials, u.shape[-1])), allowed)
        noise = source.standard_exponential(logits.shape)
        np.log(noise, out=noise)
        choice: IndexArray = np.argmax(np.subtract(logits, noise, out=logits), axis=-1)
        return choice
