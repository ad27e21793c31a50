"""`PrivateSession`: the analyst-facing object that ties mechanisms, a filter and a ledger.

Every round follows one path (ARCHITECTURE "Filters guard budgets"):

1. the mechanism and its inputs are validated — bad input raises and spends nothing;
2. the round's worst-case cost (its *request*; for a Brownian mechanism the grid's smallest
   time, APC condition (2)/(3)) is checked by the filter — a refused round raises
   `BudgetExceeded` and changes nothing;
3. the round is *reserved* at its request (with a ledger: written and committed first);
4. the mechanism runs, its stopping rule seeing only released iterates;
5. the realised cost is *settled* (written before the result is returned), and the round
   joins `history`.

If anything fails after step 3 (say a stopping rule raises after seeing iterates), the round
is settled at its request: what may have been seen is paid for. With a ledger several
processes can share one budget: each reservation re-reads the ledger under its write lock,
so they cannot jointly overspend, and a crash between reserve and settle leaves the round
charged at its worst case. A session object is not thread-safe.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

import attrs
import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import candidates_mask, generator, path_value, point, positive, scores_array
from expost.errors import InvalidParameter
from expost.exact.bits import BitSource, SecureBits
from expost.filters import (
    BrownianCost,
    Cost,
    PrivacyFilter,
)
from expost.grids import EpsilonGrid, OpenEpsilonGrid, TimeGrid
from expost.guarantees import ZCDP, ApproxDP, GaussianDP
from expost.ledger import LedgerBackend, LedgerEntry
from expost.ledger.records import Replay, encode, filter_from_description, open_session_ledger
from expost.mechanisms import (
    AboveThreshold,
    AboveThresholdResult,
    BrownianNoiseReduction,
    BrownianThresholdResult,
    DoublingMethod,
    DoublingTranscript,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    LaplaceNoiseReduction,
    PrivacyBoundaryWithDelta,
    ReducedAboveThreshold,
    SkellamNoiseReduction,
    Transcript,
)
from expost.mechanisms.exact_additive import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    integers,
)
from expost.mechanisms.exact_doubling import ExactDoubling, ExactDoublingTranscript
from expost.mechanisms.exact_threshold import ExactAboveThreshold
from expost.mechanisms.permute_and_flip import PermuteAndFlip
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.stopping import Never, RelativeError, StoppingRule

__all__ = ["PrivateSession", "Round", "SessionFilter", "filter_from_description"]

SessionFilter = PrivacyFilter
R = TypeVar("R")


class _Costed(Protocol):
    @property
    def cost(self) -> Cost | None: ...


def _result_cost(result: _Costed) -> Cost:
    """The realised cost a result reports (every mechanism a session runs reports one)."""
    if result.cost is None:
        raise InvalidParameter("mechanism", type(result).__name__, "reported no realised cost")
    return result.cost


@frozen
class Round:
    """One admitted round: what it was, what it could cost, what it cost, what was released."""

    index: int
    mechanism: str
    request: Cost
    realised: Cost
    result: object = attrs.field(eq=False)


# ----------------------------------------------------------------------------- session


NOT_EXACT = {
    "brownian": "use Skellam noise reduction (SkellamNoiseReduction) on integer values",
    "laplace-noise-reduction": "use Skellam noise reduction (SkellamNoiseReduction)",
    "reduced-above-threshold": "no exact version; use exponential_mechanism rounds",
}
"""Mechanisms refused in secure mode, with the alternative each refusal names."""


class PrivateSession:
    """Adaptive private analysis under one filter (FAC Thm 1–2, APC Thm 1–2, 5, Lemma 6.2, B.2).

        ``filter`` is the budget (e.g. ``UnifiedFilter.from_dp(10.0, 1e-6)``), ``rng`` the only
        source of randomness, ``ledger`` an optional SQLite file, or a ``postgresql://…?ledger=NAME``
        URL, that makes the spend persistent and shareable between processes (`expost.ledger`): an
    existing ledger only (`LedgerNotFound` otherwise) unless ``create=True``; ``ledger_id`` pins
    the id printed when it was created, so a re-created ledger is refused. The private values passed to the methods are
        used for one release and never stored; results hold only released values.

        By default releases add float noise from ``rng``: for research and simulation (float
        samplers leak, docs/releasing-safely.md). ``exact=True`` (bits from the OS CSPRNG) or an
        explicit ``bits`` source is the secure mode: ``gaussian``, ``laplace`` and
        ``exponential_mechanism`` release integers from the exact mechanisms (discrete Gaussian,
        discrete Laplace, permute-and-flip), ``above_threshold`` runs `ExactAboveThreshold`, and every
        other mechanism is refused, naming the
        alternative, before it spends anything.
    """

    def __init__(
        self,
        filter: SessionFilter,
        rng: np.random.Generator,
        ledger: str | os.PathLike[str] | None = None,
        *,
        exact: bool = False,
        bits: BitSource | None = None,
        create: bool = False,
        ledger_id: str | None = None,
    ) -> None:
        if not isinstance(filter, PrivacyFilter):
            raise InvalidParameter(
                "filter", filter, "must be a privacy filter (see expost.filters.PrivacyFilter)"
            )
        self._rng = generator(rng)
        if not isinstance(exact, bool):
            raise InvalidParameter("exact", exact, "must be True or False")
        self._bits: BitSource | None = SecureBits() if exact and bits is None else bits
        self._filter: SessionFilter = filter
        self._history: list[Round] = []
        self._running = False
        self._ledger: LedgerBackend | None = None
        if ledger is not None:
            if filter.rounds:
                raise InvalidParameter(
                    "filter", filter, "must have no recorded rounds when a ledger is used"
                )
            self._ledger = open_session_ledger(ledger, filter, create=create, ledger_id=ledger_id)
            self._replay = Replay(filter, self._ledger.path)
            self._filter = self._replay.update(self._ledger.entries())

    # -- state ---------------------------------------------------------------------------

    @property
    def filter(self) -> SessionFilter:
        """The current (immutable) filter state."""
        return self._filter

    @property
    def spent(self) -> float | tuple[float, float]:
        """The realised spend in the filter's unit (a pair for a `ConcurrentFilter`).

        With a shared ledger: as of this session's last round or `refresh`.
        """
        return self._filter.spent

    @property
    def remaining(self) -> float | tuple[float, float]:
        """What is left of the budget in the filter's unit (a pair for a `ConcurrentFilter`)."""
        return self._filter.remaining

    @property
    def history(self) -> tuple[Round, ...]:
        """The rounds this session admitted, in order (rounds of other processes excluded)."""
        return tuple(self._history)

    def guarantee(self) -> ZCDP | ApproxDP | GaussianDP:
        """The guarantee of the whole interaction, whenever it stops.

        The filter's `reported_guarantee` (e.g. (eps, delta)-DP by APC Lemma 2.1 for a
        `UnifiedFilter` that knows its delta'', the filter's theorem's guarantee otherwise).
        """
        return self._filter.reported_guarantee()

    def refresh(self) -> None:
        """Re-read the ledger, so ``spent``/``remaining`` include other processes' rounds.

        Every round does this under the ledger's lock anyway; without a ledger it does nothing.
        """
        if self._ledger is not None:
            self._filter = self._replay.update(self._ledger.entries())

    def close(self) -> None:
        """Close the ledger, if any."""
        if self._ledger is not None:
            self._ledger.close()

    # -- the round protocol ----------------------------------------------------------------

    def _round(
        self,
        mechanism: str,
        request: Cost,
        run: Callable[[], R],
        realised: Callable[[R], Cost],
    ) -> R:
        if self._bits is not None and mechanism in NOT_EXACT:
            raise InvalidParameter(
                "mechanism",
                mechanism,
                f"has no exact version (secure mode): {NOT_EXACT[mechanism]}",
            )
        if self._running:  # without a ledger the running round's reservation is not recorded
            raise InvalidParameter(
                "mechanism", mechanism, "a round is running: a stopping rule may not start another"
            )
        key = self._reserve(mechanism, request)
        self._running = True
        try:
            result = run()
        except BaseException:
            self._settle(key, request, request)
            raise
        finally:
            self._running = False
        cost = realised(result)
        self._settle(key, request, cost)
        self._history.append(Round(len(self._history), mechanism, request, cost, result))
        return result

    def _exact(
        self,
        mechanism: str,
        cost: Cost,
        run: Callable[[BitSource], R],
        realised: Callable[[R], Cost] | None = None,
    ) -> R:
        """A secure-mode round: ``run`` draws from the session's bit source; it is charged
        ``realised(result)``, by default the requested ``cost``."""
        bits = self._bits
        assert bits is not None  # only called in secure mode
        charge = (lambda _: cost) if realised is None else realised
        return self._round(mechanism, cost, lambda: run(bits), charge)

    def _reserve(self, mechanism: str, request: Cost) -> int:
        if self._ledger is None:
            self._filter.check(request)
            return len(self._history)
        replay = self._replay

        def decide(entries: tuple[LedgerEntry, ...]) -> dict[str, Any]:
            replay.update(entries).check(request)
            return {"round": replay.rounds, "mechanism": mechanism, "cost": encode(request)}

        entry = self._ledger.append("reserve", decide)
        self._filter = replay.update(self._ledger.entries())
        return int(entry.record["round"])

    def _settle(self, key: int, request: Cost, cost: Cost) -> None:
        if self._ledger is None:
            self._filter = self._filter.spend(cost)
            return
        self._ledger.append("settle", lambda _entries: {"round": key, "cost": encode(cost)})
        self._filter = self._replay.update(self._ledger.entries())

    # -- zCDP and pure DP mechanisms ---------------------------------------------------------

    def gaussian(self, value: npt.ArrayLike, sensitivity: float, rho: float) -> npt.NDArray[Any]:
        """Release ``value + N(0, σ²)`` with σ = Δ/sqrt(2·rho): a rho-zCDP round, sqrt(2·rho)-GDP.

        Secure mode: integer ``value`` + discrete Gaussian N_Z(0, Δ²/(2·rho)) (CKS Thm 4), an
        integer ``sensitivity``; a rho-zCDP round (not GDP: `DiscreteGaussianMechanism`).
        """
        if self._bits is not None:
            dg, n = DiscreteGaussianMechanism.from_rho(sensitivity, rho), integers("value", value)
            return self._exact("gaussian", dg.cost(), lambda b: dg.run(n, b))
        mechanism = GaussianMechanism(sensitivity, rho)
        v = point("value", value)
        cost = mechanism.cost()
        return self._round("gaussian", cost, lambda: mechanism.run(v, self._rng), lambda _: cost)

    def laplace(self, value: npt.ArrayLike, sensitivity: float, eps: float) -> npt.NDArray[Any]:
        """Release ``value + Lap(Δ1/eps)``: a pure eps-DP round.

        Secure mode: integer ``value`` + discrete Laplace noise of scale Δ1/eps (integer Δ1).
        """
        if self._bits is not None:
            dl, n = DiscreteLaplaceMechanism(sensitivity, eps), integers("value", value)
            return self._exact("laplace", dl.cost(), lambda b: dl.run(n, b))
        mechanism = LaplaceMechanism(sensitivity, eps)
        v = point("value", value)
        cost = mechanism.cost()
        return self._round("laplace", cost, lambda: mechanism.run(v, self._rng), lambda _: cost)

    def exponential_mechanism(
        self,
        scores: npt.ArrayLike,
        eps: float,
        monotone: bool,
        candidates: npt.ArrayLike | None = None,
        sensitivity: float = 1.0,
    ) -> int:
        """The index chosen by Gumbel-max among ``candidates`` (APC Sec. 7.2).

        An eps-bounded-range round for monotone scores, 2·eps otherwise (Cesar–Rogers): a
        zCDP filter charges eps²/8, resp. (2·eps)²/8; `GaussianDPFilter` mu(eps/2)², resp. mu(eps)².

        Secure mode: permute-and-flip on integer scores, an eps-DP round whatever ``monotone``
        says (`PermuteAndFlip`; priced as DPCost(eps), bounded range is not claimed).
        """
        if self._bits is not None:
            pf, u = PermuteAndFlip(eps, sensitivity), integers("scores", scores)
            mask = candidates_mask(candidates, u.shape)
            return self._exact("exponential", pf.cost(), lambda b: pf.run(u, b, mask))
        mechanism = ExponentialMechanism(eps, monotone, sensitivity)
        s = scores_array(scores, max_ndim=1)
        allowed = candidates_mask(candidates, s.shape)
        cost = mechanism.cost()

        def run() -> int:
            return mechanism.run(s, self._rng, candidates=allowed)

        return self._round("exponential", cost, run, lambda _: cost)

    def above_threshold(
        self, utilities: Iterable[float], eps: float, threshold: float, sensitivity: float = 1.0
    ) -> AboveThresholdResult:
        """AboveThreshold (sparse vector, Lyu et al. 2017): a pure eps-DP round.

        Secure mode: `ExactAboveThreshold` (integer utilities, threshold and sensitivity).
        """
        if self._bits is not None:
            eat = ExactAboveThreshold(eps, threshold, sensitivity)
            return self._exact("above-threshold", eat.cost(), lambda b: eat.run(utilities, b))
        mechanism = AboveThreshold(eps, threshold, sensitivity)
        cost = mechanism.cost()

        def run() -> AboveThresholdResult:
            return mechanism.run(utilities, self._rng)

        return self._round("above-threshold", cost, run, lambda _: cost)

    def doubling(
        self,
        value: npt.ArrayLike,
        sensitivity: float = 1.0,
        start_eps2: float = 1e-4,
        ratio: float = 2.0,
        stop: StoppingRule | Callable[..., bool] | None = None,
    ) -> DoublingTranscript | ExactDoublingTranscript:
        """The doubling method (APC Sec. 7.1): fresh Gaussian tries, eps² × ratio, all paid.

        The tries go up to the largest eps² whose total the budget still admits; the round is
        charged the sum of the tries made. Secure mode: `ExactDoubling`, the same levels, rule,
        cap and rho with discrete Gaussian tries on an integer value (CKS Thm 4), charged as
        `ZCDPCost`.
        """
        rule = RelativeError(0.1) if stop is None else stop
        if self._bits is not None:
            n = integers("value", value)
            exact = ExactDoubling(self._doubling_cap(sensitivity, start_eps2, ratio, rule))
            return self._exact("doubling", exact.cost(), lambda b: exact.run(n, b), _result_cost)
        v = point("value", value)
        cap = self._doubling_cap(sensitivity, start_eps2, ratio, rule)
        return self._round("doubling", cap.cost(), lambda: cap.run(v, self._rng), _result_cost)

    def _doubling_cap(
        self, sensitivity: float, start_eps2: float, ratio: float, rule: object
    ) -> DoublingMethod:
        """The longest doubling schedule whose total zCDP cost the filter admits."""
        tries = 1
        while True:
            longer = DoublingMethod(sensitivity, start_eps2, ratio, max_tries=tries + 1, stop=rule)
            if not self._filter.admits(longer.cost()):
                return DoublingMethod(sensitivity, start_eps2, ratio, max_tries=tries, stop=rule)
            tries += 1

    # -- noise reduction -----------------------------------------------------------------------

    def _clipped(
        self, grid: TimeGrid | EpsilonGrid | OpenEpsilonGrid, sensitivity: float
    ) -> TimeGrid | EpsilonGrid:
        """Clip an eps grid to what the budget allows (APC Sec. 7: "as far as the budget allows")."""
        if not isinstance(grid, TimeGrid | EpsilonGrid | OpenEpsilonGrid):
            raise InvalidParameter(
                "grid", grid, "must be a TimeGrid, EpsilonGrid or OpenEpsilonGrid"
            )
        if not isinstance(grid, TimeGrid) and grid.sensitivity != sensitivity:
            raise InvalidParameter(
                "sensitivity",
                sensitivity,
                f"must equal the grid's sensitivity {grid.sensitivity!r}",
            )
        if isinstance(grid, TimeGrid):
            return grid
        f = self._filter
        max_eps = f.max_bm_eps(sensitivity)
        if max_eps is None:  # the filter does not price BMs by time: nothing to clip to
            if isinstance(grid, OpenEpsilonGrid):
                raise InvalidParameter(
                    "grid",
                    grid,
                    f"an open grid needs a budget to close it: {type(f).__name__} "
                    "does not price Brownian mechanisms by time",
                )
            return grid
        if grid.first_eps > max_eps:  # refused with what was spent, asked and remains
            f.check(BrownianCost.from_eps(grid.first_eps, sensitivity))
        return grid.clip(max_eps)

    def brownian(
        self,
        value: npt.ArrayLike,
        sensitivity: float,
        grid: TimeGrid | EpsilonGrid | OpenEpsilonGrid,
        stop: StoppingRule | Callable[..., bool] | None = None,
        boundary: PrivacyBoundaryWithDelta | None = None,
    ) -> Transcript:
        """The Brownian mechanism (APC Def 4.4, BNR Def 3.1), charged where it stopped.

        An eps grid is clipped to the largest eps the budget allows (`max_bm_eps`); the round
        is admitted on the grid's smallest time (APC condition (2)/(3)) and recorded as a
        `BrownianCost` at its stopping time, which a rho filter prices Δ²/(2·t_stop) (APC
        Thm 3/5) and an `ExPostFilter` ψ(t_stop) (BNR Thm 3.6: a ``boundary`` is needed).
        """
        d = positive("sensitivity", sensitivity)
        v = path_value(value)
        mechanism = BrownianNoiseReduction(
            self._clipped(grid, d),
            d,
            Never() if stop is None else stop,
            boundary,
        )

        run = lambda: mechanism.run(v, self._rng)
        return self._round("brownian", mechanism.cost(), run, _result_cost)

    def laplace_noise_reduction(
        self,
        value: npt.ArrayLike,
        sensitivity: float,
        scales: npt.ArrayLike,
        stop: StoppingRule | Callable[..., bool] | None = None,
    ) -> Transcript:
        """Laplace noise reduction (BNR Sec. 4): (Δ1/t_stop)-ex-post private (BNR Prop 4.2).

        Recorded as an `ExPostCost` (Δ1/t_stop, with eps_max = Δ1/t_min): filters with an
        ex-post budget charge Δ1/t_stop, the others its worst case Δ1/t_min as pure DP.
        """
        mechanism = LaplaceNoiseReduction(scales, sensitivity, Never() if stop is None else stop)
        v = path_value(value)
        run = lambda: mechanism.run(v, self._rng)
        return self._round("laplace-noise-reduction", mechanism.cost(), run, _result_cost)

    def skellam(
        self,
        value: int,
        sensitivity: int,
        times: npt.ArrayLike,
        rate: float = 1.0,
        stop: StoppingRule | Callable[..., bool] | None = None,
        boundary: SkellamPrivacyBoundary | None = None,
        bits: BitSource | None = None,
        fixed_delta: float | None = None,
    ) -> Transcript:
        """Skellam noise reduction on one count (BNR App. E), (ψ(t_stop), delta)-ex-post private
        with a `SkellamPrivacyBoundary` ψ (THEORY §10). Admitted on max ψ over the grid, recorded
        as `ExPostCost` (ψ(t_stop), delta): filters with an ex-post budget (`ExPostFilter`)
        charge it. Or, with ``fixed_delta`` instead of a boundary, charged the run's fixed
        `DPCost` (``SkellamNoiseReduction.fixed_cost``: the exact (eps, fixed_delta) at the
        grid's smallest time) whenever it stops. In the secure mode (``exact=True`` or the
        session's ``bits``), or with ``bits`` given here, the integers are drawn exactly from
        that bit source (Poisson, then binomial thinning); else from the session's rng."""
        if (boundary is None) == (fixed_delta is None):
            raise InvalidParameter(
                "boundary",
                boundary,
                "give a SkellamPrivacyBoundary (tuned_for(level, delta)) or fixed_delta, not both",
            )
        if np.size(value) != 1:
            raise InvalidParameter("value", value, "must be one count")
        mechanism = SkellamNoiseReduction(
            times, rate, sensitivity, Never() if stop is None else stop, boundary
        )
        count = mechanism.check_value(value)  # before anything is spent
        source = self._bits if bits is None else bits
        if source is None:
            run = lambda: mechanism.run(count, self._rng)
        else:
            run = lambda: mechanism.run_exact(count, source)
        if fixed_delta is None:
            return self._round("skellam", mechanism.cost(), run, _result_cost)
        fixed = mechanism.fixed_cost(fixed_delta)
        return self._round("skellam", fixed, run, lambda _: fixed)

    def reduced_above_threshold(
        self,
        value: npt.ArrayLike,
        utility: Callable[[npt.NDArray[np.float64]], float],
        grid: TimeGrid | EpsilonGrid,
        boundary: PrivacyBoundaryWithDelta,
        threshold: float,
        sensitivity: float = 1.0,
    ) -> BrownianThresholdResult:
        """ReducedAboveThreshold on Brownian iterates (BNR Algorithm 1, Cor 5.2).

        ``utility`` is evaluated privately on each hidden iterate; only the first that passes is
        released, with the ex-post guarantee (2ψ(T_N), delta). Needs a filter with an ex-post
        budget (`ExPostFilter` or `ConcurrentFilter`); charged 2ψ(t_min) up front and
        2ψ(T_N) when it halts (a run where no check passes stays charged 2ψ(t_min)).
        """
        bm = BrownianNoiseReduction(grid, sensitivity, Never(), boundary)
        v = path_value(value)
        rat = ReducedAboveThreshold(threshold, float(boundary(bm.smallest_time)), sensitivity)
        run = lambda: rat.run_with_brownian(bm, v, utility, self._rng)
        return self._round("reduced-above-threshold", rat.brownian_cost(bm), run, _result_cost)
