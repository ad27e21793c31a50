"""The doubling method with discrete Gaussian tries (APC Sec. 7.1; CKS Thm 4, Alg. 3).

`DoublingMethod` releases float Gaussian tries; `ExactDoubling` takes the same levels, stopping
rule and caps from a `DoublingMethod` and releases integer tries f(x) + N_Z(0, Δ²/eps_i²) drawn
exactly. Try i is eps_i²/2-zCDP (CKS Thm 4), the tries compose (APC Lemma 2.2), and the rule sees
released values only, so a run that made k tries costs `DoublingMethod.cumulative_cost[k − 1]`,
the same rho as the float method; as a cost it is a `ZCDPCost`, not a `GaussianCost` (the
discrete Gaussian is not claimed to be mu-GDP, `GaussianMechanism` with ``exact=True``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import exact_integers, exact_sensitivity, read_only
from expost.errors import InvalidParameter
from expost.exact.bits import BitSource
from expost.filters.costs import ZCDPCost
from expost.mechanisms.additive import GaussianMechanism
from expost.mechanisms.doubling import DoublingMethod
from expost.stopping import Released

__all__ = ["ExactDoubling", "ExactDoublingTranscript"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@frozen(eq=False)
class ExactDoublingTranscript:
    """One run: ``released`` (tries, *value.shape) integers, ``eps2`` per try, ``stop_index``
    (None: no try accepted) and ``cost`` = ZCDPCost(Σ eps_i²/2 over the tries made, rounded up)."""

    released: IntArray
    eps2: FloatArray
    stop_index: int | None
    cost: ZCDPCost

    @property
    def stopped(self) -> bool:
        """Whether the rule accepted a try."""
        return self.stop_index is not None

    @property
    def value(self) -> IntArray:
        """The last released try: the accepted one on success."""
        last: IntArray = self.released[-1]
        return last


def _method(value: object) -> DoublingMethod:
    if not isinstance(value, DoublingMethod):
        raise InvalidParameter("method", value, "must be a DoublingMethod")
    exact_sensitivity(value.sensitivity)  # integer noise needs an integer sensitivity
    return value


@frozen
class ExactDoubling:
    """`DoublingMethod` ``method``'s levels, rule and caps, with exact discrete Gaussian tries."""

    method: DoublingMethod = field(converter=_method)

    @property
    def tries(self) -> tuple[GaussianMechanism, ...]:
        """Try i: the discrete Gaussian with σ_i² = Δ²/eps_i² exactly (rho_i = eps_i²/2)."""
        delta = exact_sensitivity(self.method.sensitivity)
        return tuple(
            GaussianMechanism.from_sigma2(
                delta, Fraction(delta**2) / Fraction(float(e2)), exact=True
            )
            for e2 in self.method.grid.eps2
        )

    def cost(self) -> ZCDPCost:
        """The worst case, every try made: ZCDPCost(`DoublingMethod.guarantee().rho`), not the
        float method's `GaussianCost`: discrete Gaussian tries are zCDP (CKS Thm 4), not GDP."""
        return ZCDPCost(self.method.guarantee().rho)

    def run(self, value: npt.ArrayLike, bits: BitSource) -> ExactDoublingTranscript:
        """One run: release integer tries until the rule accepts one or the cap is reached."""
        v = exact_integers("value", value)
        times = self.method.grid.times.array
        released: list[IntArray] = []
        stopped_at: int | None = None
        for k, mechanism in enumerate(self.tries):
            released.append(mechanism.run(v, bits))
            path = np.reshape(released, (k + 1, -1)).astype(np.float64)
            if self.method.stop(Released(path, times[: k + 1], self.method.sensitivity)):
                stopped_at = k
                break
        made = len(released)
        out = np.stack(released)
        out.flags.writeable = False
        return ExactDoublingTranscript(
            released=out,
            eps2=read_only(self.method.grid.eps2[:made]),
            stop_index=stopped_at,
            cost=ZCDPCost(float(self.method.cumulative_cost[made - 1])),
        )
