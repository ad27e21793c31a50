"""What a noise-reduction run leaves behind: the released iterates and what they cost.

A `Transcript` is one interactive run (APC Def 4.2, BNR Def 2.3): the iterates actually
released, noisiest first, up to and including the one where the stopping rule fired. Its realised
cost is that of the last iterate alone (APC Lemma 4.1, BNR Lemma 3.2). A `BatchTranscript` holds
the final iterate of many independent runs at once. Arrays are stored as read-only copies.

The result vocabulary, shared by every mechanism's results (`Transcript`, `DoublingTranscript`,
`AboveThresholdResult`, ...):

- single run: ``value`` (what it released last), ``stopped`` (bool: did the stopping rule or
  check fire), ``stop_index`` (0-based index of the iterate, try or query where it stopped; None
  iff it never stopped) and ``cost`` (the realised `expost.filters.costs.Cost` of the round, None
  only where no guarantee exists: Skellam, BNR App. E).
- batch: the same names over trials, ``value`` (trials, ...), ``stopped`` (trials,) bool,
  ``stop_index`` (trials,) int and ``cost`` (trials,) float, the realised amount in the
  mechanism's natural unit (each class says which). **Convention: ``stop_index`` is −1 exactly
  where ``stopped`` is False.** The index of the iterate a run ended on whether or not it stopped
  is ``end_index`` where a batch carries it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost.ex_post_rdp import ExPostRDP
from expost.filters.costs import Cost
from expost.filters.rdp import ex_post_rdp_of
from expost.guarantees import ExPost

__all__ = ["BatchTranscript", "Transcript"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


def _frozen_copy(value: npt.ArrayLike) -> npt.NDArray[Any]:
    arr = np.array(value)
    arr.flags.writeable = False
    return arr


def _optional_frozen_copy(value: npt.ArrayLike | None) -> npt.NDArray[Any] | None:
    return None if value is None else _frozen_copy(value)


@frozen(eq=False)
class Transcript:
    """One noise-reduction run, as the analyst saw it.

    - ``released`` (k, d): the iterates released, noisiest first; the last one is ``value``.
    - ``times`` (k,): their noise levels (Brownian times, Laplace scales or Skellam times).
    - ``eps`` (k,): their privacy levels (BM: Δ/sqrt(t), so rho = eps²/2; LNR: Δ1/scale, pure DP;
      Skellam: Δ/σ with σ² the noise variance, a noise level, not a guarantee).
    - ``stopped``: whether the stopping rule fired (False: the grid ran out); ``stop_index`` the
      index of the iterate where it fired (None: it never did).
    - ``cost``: the realised cost of the whole run, which is that of the last iterate, also when
      the grid ran out (BM: `BrownianCost` at t_stop, ``mechanism.cost_at(t_stop)``, APC Thm 3/5,
      BNR Thm 3.6; LNR: `ExPostCost` (Δ1/t_stop), BNR Prop 4.2; Skellam: `ExPostCost`
      (ψ(t_stop), delta) with a `SkellamPrivacyBoundary`, THEORY §10, else None).
    - ``ex_post``: the ex-post guarantee of the values released (BM with a privacy boundary ψ:
      ExPost(ψ(t_stop), delta), BNR Thm 3.6/Cor 3.7; LNR: ExPost(Δ1/t_stop), BNR Prop 4.2;
      None otherwise).
    - ``ex_post_rdp`` (property): the post-processing-immune ex-post RDP guarantee (THEORY §11),
      from ``cost``: BM rho = Δ²/(2·t_stop), LNR pure Δ1/b(t_stop), Skellam None (open).
    """

    released: npt.NDArray[Any] = field(converter=_frozen_copy)
    times: FloatArray = field(converter=_frozen_copy)
    eps: FloatArray = field(converter=_frozen_copy)
    stopped: bool
    cost: Cost | None
    ex_post: ExPost | None

    @property
    def stop_index(self) -> int | None:
        """0-based index of the iterate where the rule fired (the last one), None if it never did."""
        return int(self.times.size) - 1 if self.stopped else None

    @property
    def value(self) -> npt.NDArray[Any]:
        """The last released (least noisy) iterate, shape (d,)."""
        out: npt.NDArray[Any] = self.released[-1]
        return out

    @property
    def time(self) -> float:
        """The noise level of the last released iterate."""
        return float(self.times[-1])

    @property
    def ex_post_rdp(self) -> ExPostRDP | None:
        """Ex-post RDP of the values released, immune to post-processing (THEORY §11): BM
        ``ExPostRDP.of_rho(Δ²/(2·t_stop))`` rounded up, LNR ``of_pure(Δ1/b(t_stop))``; None for
        Skellam (open) and runs without a cost."""
        return ex_post_rdp_of(self.cost)


@frozen(eq=False)
class BatchTranscript:
    """The final iterate of ``trials`` independent runs, each field an array over trials.

    ``end_index`` (trials,) the index of the iterate each run ended on (where the rule fired, else
    the grid's last), ``value`` (trials, d) that iterate, ``times`` and ``eps`` (trials,) its noise
    and privacy level, ``stopped`` (trials,) whether the rule fired, ``stop_index`` (−1 where it
    did not, module docstring), ``cost`` (trials,) the realised cost in the mechanism's unit (BM:
    rho = Δ²/(2t) zCDP, APC Thm 3; LNR: eps = Δ1/t, BNR Prop 4.2; Skellam: None),
    ``ex_post_bound`` (trials,) the realised ex-post bound with failure probability ``delta``
    (both None without a bound).
    """

    end_index: IntArray = field(converter=_frozen_copy)
    value: npt.NDArray[Any] = field(converter=_frozen_copy)
    times: FloatArray = field(converter=_frozen_copy)
    eps: FloatArray = field(converter=_frozen_copy)
    stopped: BoolArray = field(converter=_frozen_copy)
    cost: FloatArray | None = field(converter=_optional_frozen_copy)
    ex_post_bound: FloatArray | None = field(converter=_optional_frozen_copy)
    delta: float | None

    @property
    def stop_index(self) -> IntArray:
        """Where the rule fired, −1 where it never did (module docstring)."""
        return _frozen_copy(np.where(self.stopped, self.end_index, -1))

    @property
    def trials(self) -> int:
        """How many runs."""
        return int(self.end_index.size)
