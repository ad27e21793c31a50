"""What a noise-reduction run leaves behind: the released iterates and what they cost.

A `Transcript` is one interactive run (APC Def 4.2, BNR Def 2.3): the iterates actually
released, noisiest first, up to and including the one where the stopping rule fired. Its realised
cost is that of the last iterate alone (APC Lemma 4.1, BNR Lemma 3.2). A `BatchTranscript` holds
the stopped iterate of many independent runs at once. Arrays are stored as read-only copies.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

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
    - ``stopped``: whether the stopping rule fired (False: the grid ran out).
    - ``cost``: the realised cost of the whole run, which is that of the last iterate
      (BM: rho = Δ²/(2 t_stop), APC Thm 3/5; LNR: eps = Δ1/t_stop, BNR Prop 4.2; Skellam: None,
      BNR App. E states no guarantee).
    - ``ex_post``: the ex-post guarantee of the values released (BM with a privacy boundary ψ:
      ExPost(ψ(t_stop), delta), BNR Thm 3.6/Cor 3.7; LNR: ExPost(Δ1/t_stop), BNR Prop 4.2;
      None otherwise).
    """

    released: npt.NDArray[Any] = field(converter=_frozen_copy)
    times: FloatArray = field(converter=_frozen_copy)
    eps: FloatArray = field(converter=_frozen_copy)
    stopped: bool
    cost: float | None
    ex_post: ExPost | None

    @property
    def stop_index(self) -> int:
        """0-based index of the last released iterate."""
        return int(self.times.size) - 1

    @property
    def value(self) -> npt.NDArray[Any]:
        """The last released (least noisy) iterate, shape (d,)."""
        out: npt.NDArray[Any] = self.released[-1]
        return out

    @property
    def time(self) -> float:
        """The noise level of the last released iterate."""
        return float(self.times[-1])


@frozen(eq=False)
class BatchTranscript:
    """The stopped iterate of ``trials`` independent runs, each field an array over trials.

    ``stop_index`` (trials,), ``values`` (trials, d) the iterate at the stop, ``times`` and
    ``eps`` (trials,) its noise and privacy level, ``stopped`` (trials,) whether the rule fired,
    ``cost`` (trials,) the realised cost (None for Skellam), ``ex_post_bound`` (trials,) the
    realised ex-post bound with failure probability ``delta`` (both None without a bound).
    """

    stop_index: IntArray = field(converter=_frozen_copy)
    values: npt.NDArray[Any] = field(converter=_frozen_copy)
    times: FloatArray = field(converter=_frozen_copy)
    eps: FloatArray = field(converter=_frozen_copy)
    stopped: BoolArray = field(converter=_frozen_copy)
    cost: FloatArray | None = field(converter=_optional_frozen_copy)
    ex_post_bound: FloatArray | None = field(converter=_optional_frozen_copy)
    delta: float | None

    @property
    def trials(self) -> int:
        """How many runs."""
        return int(self.stop_index.size)
