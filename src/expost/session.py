"""`PrivateSession`: the analyst-facing object that ties mechanisms, a filter and a ledger.

Every round follows one path (ARCHITECTURE "Filters guard budgets"; docs/session.md):

1. the round is *prepared* (`expost.prepare`, protocol in `expost.rounds`): every input checked
   and converted by the input contract, the mechanism chosen by the mode, its request known —
   no side effects; bad input raises, says that nothing was spent, and spends nothing;
2. the round's worst-case cost (its *request*; for a Brownian mechanism the grid's smallest
   time, APC condition (2)/(3)) is checked by the filter — a refused round raises
   `BudgetExceeded` and changes nothing;
3. the round is *reserved* at its request (with a ledger: written and committed first) — in
   `_release` (`poisson_batch`: its draw spans two calls, so it reserves and settles itself);
4. the mechanism runs, its stopping rule seeing only released iterates;
5. the realised cost is *settled* (written before the result is returned), and the round
   joins `history`.

A reservation stays charged until a valid settle replaces it: if anything fails after step 3
(a stopping rule raises after seeing iterates, the settle's write fails, the filter refuses
the realised cost), the round stays charged at its request, in the live filter and in the
ledger alike: what may have been seen is paid for. Rounds are charged in reservation order
(`expost.ledger.replay.Replay`, the one replay of the live session and of every ledger). With
a ledger several processes can share one budget: each reservation re-reads the ledger under
its write lock, so they cannot jointly overspend, and a crash between reserve and settle
leaves the round charged at its worst case. A ledger holding a round its filter cannot charge
(over budget) opens read-only: every release is refused (`LedgerError`).

Threads may share a session: steps 2–3 and 5 run under the session's lock, which is held only
for the accounting (never while a mechanism or a stopping rule runs), so every returned release
is charged, rounds of several threads run at once, and no call waits on another round's user
code. A session (or an open ledger) refuses to be copied or pickled (`expost.spendable`), and a
forked child refuses to use its parent's session (docs/session.md, "Threads, copies and pickles").
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from expost import own_round, prepare
from expost.batches import PoissonBatch, prepare_poisson_batch
from expost.errors import InvalidParameter, LedgerError, LedgerRefused, NotCopyable
from expost.exact.bits import BitSource
from expost.filters import Cost, PrivacyFilter
from expost.grids import EpsilonGrid, OpenEpsilonGrid, TimeGrid
from expost.guarantees import ZCDP, ApproxDP, GaussianDP
from expost.ledger import LedgerBackend
from expost.ledger.checkpoints import checkpoint, opened, settle_stale
from expost.ledger.records import filter_from_description, open_session_ledger
from expost.ledger.replay import Replay, Settled, reserve_record, settle_record
from expost.mechanisms import (
    AboveThresholdResult,
    BrownianThresholdResult,
    DoublingTranscript,
    PrivacyBoundaryWithDelta,
    Transcript,
)
from expost.mechanisms.skellam_noise_reduction import FixedPrice
from expost.privacy_spent import PrivacySpent, privacy_spent
from expost.rounds import NOT_EXACT, Mode, Number, Prepared, Round, noise_sources, refusing
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.spendable import Spendable
from expost.stopping import StoppingRule

__all__ = ["NOT_EXACT", "PrivateSession", "Round", "SessionFilter", "filter_from_description"]

SessionFilter = PrivacyFilter
R = TypeVar("R")


# ----------------------------------------------------------------------------- session


class PrivateSession(Spendable):
    """Adaptive private analysis under one filter (FAC Thm 1–2, APC Thm 1–2, 5, Lemma 6.2, B.2).

    ``filter`` is the budget (e.g. ``UnifiedFilter.from_dp(10.0, 1e-6)``), ``rng`` the only
    source of randomness in float mode (not needed in the secure mode), ``ledger`` an optional
    SQLite file, or a ``postgresql://…?ledger=NAME`` URL, that makes the spend persistent and
    shareable between processes (`expost.ledger`): an existing ledger only (`LedgerNotFound`
    otherwise) unless ``create=True``; ``ledger_id`` pins the id printed when it was created, so
    a re-created ledger is refused. The private values passed to the methods are used for one
    release and never stored; results hold only released values.

    By default releases add float noise from ``rng``: for research and simulation (float
    samplers leak, docs/releasing-safely.md). ``exact=True`` (bits from the OS CSPRNG) or an
    explicit ``bits`` source is the secure mode, which draws only from its bits (``rng`` may be
    left out): ``gaussian``, ``laplace`` and ``exponential_mechanism`` release integers from the
    exact mechanisms (discrete Gaussian, discrete Laplace, exact exponential mechanism),
    ``above_threshold`` runs `AboveThreshold` with exact noise, and every other mechanism is
    refused, naming the alternative, before it spends anything.

    Threads may share a session (every returned release is charged; docs/session.md, "Threads,
    copies and pickles"); copying or pickling it raises `NotCopyable`.
    """

    _COPY_ADVICE = (
        "share this session between threads, or give each process its own session on the "
        "same ledger (ledger=...), which they share safely"
    )

    def __init__(
        self,
        filter: SessionFilter,
        rng: np.random.Generator | None = None,
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
        self._rng, self._bits = noise_sources(rng, exact, bits)
        self._filter: SessionFilter = filter
        self._history: list[Round] = []
        self._lock = threading.Lock()  # held only for accounting: never around user code
        self._running = threading.local()  # per thread: is a round of this session drawing?
        self._pid = os.getpid()
        self._ledger: LedgerBackend | None = None
        self._unsettled: dict[int, tuple[Cost, Cost]] = {}  # (request, cost) to retry
        self._replay = Replay(filter, "the session (no ledger)")
        if ledger is not None:
            if filter.rounds:
                raise InvalidParameter(
                    "filter", filter, "must have no recorded rounds when a ledger is used"
                )
            self._ledger = open_session_ledger(ledger, filter, create=create, ledger_id=ledger_id)
            self._replay, self._checkpointed = opened(self._ledger, filter)
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
        `UnifiedFilter` that knows its delta'', the filter's theorem's guarantee otherwise);
        `LedgerError` for a ledger over budget (`read_only`), whose rounds no filter covers.
        """
        self._replay.check_writable()
        return self._filter.reported_guarantee()

    def refresh(self) -> None:
        """Re-read the ledger, so ``spent``/``remaining`` include other processes' rounds.

        Every round does this under the ledger's lock anyway; without a ledger it does nothing.
        """
        self._owned()
        if self._ledger is not None:
            with self._lock:
                self._filter = self._replay.update(self._ledger.entries())

    @property
    def read_only(self) -> bool:
        """Whether the ledger holds a round its filter cannot charge (over budget, e.g. written
        outside this library), so every release is refused; ``expost ledger show`` lists them."""
        return self._replay.over_budget

    def close(self) -> None:
        """Close the ledger, if any, after retrying a settle that a failed write left
        (`LedgerError` if it fails again: that round stays charged at its request)."""
        if self._ledger is not None:
            with self._lock:
                try:
                    self._write_settles()
                finally:
                    self._ledger.close()

    def _owned(self) -> None:
        """A forked child holds a copy of its parent's session: refused, as for any copy."""
        if os.getpid() != self._pid:
            raise NotCopyable(
                f"{type(self).__name__} inherited by a forked process", self._COPY_ADVICE
            )

    # -- the round protocol ----------------------------------------------------------------

    def _prepare(self, method: str, build: Callable[..., R], *args: object) -> R:
        """Step 1 (no side effects): ``prepare(mode, *args)``; an input error says nothing was spent."""
        self._owned()
        with refusing(method):
            return build(Mode(self._rng, self._bits, self._filter), *args)

    def _release(self, prepared: Prepared[R]) -> R:
        """Steps 2–5 for a prepared round: the only place a round is reserved.

        Steps 2–3 and 5 hold the session's lock; the draw (step 4) does not, so other threads'
        rounds run meanwhile. A round started from inside a running round of this session in
        the same thread (by its stopping rule) is refused before anything is reserved.
        """
        if getattr(self._running, "round", False):
            raise InvalidParameter(
                "mechanism",
                prepared.mechanism,
                "a round of this session is running in this thread: its stopping rule may not "
                "start another; nothing was spent",
            )
        with self._lock:
            key = self._reserve(prepared.mechanism, prepared.request)
        self._running.round = True
        try:
            result = prepared.draw()
        except BaseException:
            with self._lock:
                self._settle(key, prepared.request, prepared.request)
            raise
        finally:
            self._running.round = False
        self._finish(key, prepared.mechanism, prepared.request, prepared.realised(result), result)
        return result

    def _finish(self, key: int, mechanism: str, request: Cost, cost: Cost, out: object) -> None:
        """Step 5: settle round ``key`` at ``cost``, then add it to the history."""
        with self._lock:
            self._settle(key, request, cost)
            self._history.append(Round(len(self._history), mechanism, request, cost, out))

    def _reserve(self, mechanism: str, request: Cost) -> int:
        """Check and record ``request`` (the caller holds the lock); the round's key."""
        replay = self._replay
        if self._ledger is None:
            replay.check_writable()
            replay.current().check(request)  # BudgetExceeded: nothing recorded
            key = replay.reserve(request)
            self._filter = replay.current()
            return key
        self._write_settles()  # a settle a cut interrupted, and stale rounds, before the next
        settle_stale(self._ledger, replay)
        entry = self._ledger.append("reserve", reserve_record(replay, mechanism, request))
        self._filter = replay.update(self._ledger.entries())
        return int(entry.record["round"])

    def _settle(self, key: int, request: Cost, cost: Cost) -> None:
        """Replace round ``key``'s reservation by ``cost`` (the caller holds the lock); a settle
        the replay refuses raises and leaves the round charged at ``request``."""
        if self._ledger is None:
            self._replay.check_settle(key, cost)
            self._replay.settle(key, cost)
            self._filter = self._replay.current()
            return
        self._unsettled[key] = (request, cost)
        self._write_settles()
        self._checkpointed = checkpoint(self._ledger, self._replay, self._checkpointed)

    def _write_settles(self) -> None:
        """Write every settle not yet written, idempotently (a round shown settled is not
        settled again): one that failed for the ledger's sake (`LedgerError`) is kept to retry;
        one the server refused (`LedgerRefused`) is written once at its request instead; any
        other refusal is dropped (its round stays charged at its request)."""
        ledger, replay = self._ledger, self._replay
        for key, (request, cost) in sorted(self._unsettled.items()):
            assert ledger is not None  # only a session with a ledger has unsettled rounds
            try:
                with contextlib.suppress(Settled):
                    ledger.append("settle", settle_record(replay, key, cost))
            except LedgerRefused:
                self._unsettled[key] = (request, request)  # once, as the live filter charges it
                if cost != request:
                    with contextlib.suppress(Settled, LedgerRefused, InvalidParameter):
                        ledger.append("settle", settle_record(replay, key, request))
                del self._unsettled[key]
                self._filter = replay.update(ledger.entries())
                raise
            except LedgerError:
                raise
            except Exception:
                del self._unsettled[key]
                self._filter = replay.update(ledger.entries())
                raise
            del self._unsettled[key]
            self._filter = replay.update(ledger.entries())

    # -- release methods: each prepares its round (rounds.py), then releases it -----------------

    def gaussian(self, value: npt.ArrayLike, sensitivity: Number, rho: Number) -> npt.NDArray[Any]:
        """Release ``value + N(0, σ²)`` with σ = Δ/sqrt(2·rho): a rho-zCDP round, sqrt(2·rho)-GDP.

        Secure mode: integer ``value`` + discrete Gaussian N_Z(0, Δ²/(2·rho)) (CKS Thm 4), an
        integer ``sensitivity``; a rho-zCDP round (not GDP: `GaussianMechanism`).
        """
        p = self._prepare("gaussian", prepare.prepare_gaussian, value, sensitivity, rho)
        return self._release(p)

    def laplace(self, value: npt.ArrayLike, sensitivity: Number, eps: Number) -> npt.NDArray[Any]:
        """Release ``value + Lap(Δ1/eps)``: a pure eps-DP round.

        Secure mode: integer ``value`` + discrete Laplace noise of scale Δ1/eps (integer Δ1).
        """
        return self._release(
            self._prepare("laplace", prepare.prepare_laplace, value, sensitivity, eps)
        )

    def subsampled_gaussian(
        self, records: npt.ArrayLike, sensitivity: Number, sigma: Number, sampling_prob: Number
    ) -> npt.NDArray[np.float64]:
        """One DP-SGD step: a Poisson sample of the rows of ``records`` (each kept with
        probability ``sampling_prob``, drawn by the session), each clipped to ℓ2 norm
        ``sensitivity``, summed, plus N(0, (sigma·sensitivity)²) per coordinate.

        ``records`` is (n, d) (or (n,): d = 1); the release is a float vector of length d. The
        round costs `SubsampledGaussianCost` (sigma, sampling_prob), priced by the subsampled
        pair in `PLDFilter` (THEORY §12) and as the Gaussian of rho = 1/(2σ²) elsewhere.
        Secure mode: refused (`NOT_EXACT`).
        """
        args = (records, sensitivity, sigma, sampling_prob)
        build = prepare.prepare_subsampled_gaussian
        return self._release(self._prepare("subsampled_gaussian", build, *args))

    def poisson_batch(
        self, n: int, sampling_prob: Number, sigma: Number, sensitivity: Number
    ) -> PoissonBatch:
        """One DP-SGD step at the cost of its batch (`expost.batches`): reserved now, the private
        ``batch.indices`` sampled from range(n), settled by ``batch.release(rows)`` (once)."""
        args = (n, sampling_prob, sigma, sensitivity, getattr(self._running, "round", False))
        p = self._prepare("poisson_batch", prepare_poisson_batch, *args)
        with self._lock:
            key = self._reserve(p.mechanism, p.request)

        return p.open(lambda out: self._finish(key, p.mechanism, p.request, p.request, out))

    def privacy_spent(self, delta: Number) -> PrivacySpent:
        """(ε, δ) of the rounds so far as a fixed composition (`expost.privacy_spent`): valid
        only for a stop decided independently of the outputs (``valid_for`` says so)."""
        return privacy_spent(self._filter, delta)

    def exponential_mechanism(
        self,
        scores: npt.ArrayLike,
        eps: Number,
        monotone: bool,
        candidates: npt.ArrayLike | None = None,
        sensitivity: Number = 1.0,
    ) -> int:
        """The index chosen by the exponential mechanism among ``candidates`` (APC Sec. 7.2).

        An eps-bounded-range round for monotone scores, 2·eps otherwise (Cesar–Rogers): a
        zCDP filter charges eps²/8, resp. (2·eps)²/8; `GaussianDPFilter` mu(eps/2)², resp. mu(eps)².

        Secure mode: integer scores, the same law drawn exactly by rejection
        (`ExponentialMechanism` with ``exact=True``), at the same price.
        """
        args = (scores, eps, monotone, candidates, sensitivity)
        return self._release(
            self._prepare("exponential_mechanism", prepare.prepare_exponential, *args)
        )

    def above_threshold(
        self, utilities: Iterable[float], eps: Number, threshold: Number, sensitivity: Number = 1.0
    ) -> AboveThresholdResult:
        """AboveThreshold (sparse vector, Lyu et al. 2017): a pure eps-DP round.

        ``utilities`` (a lazy iterable too) is read before the round is reserved, at most
        `MAX_QUERIES` of them. Secure mode: `AboveThreshold` with ``exact=True`` (integer
        utilities, threshold and sensitivity, discrete Laplace noises).
        """
        args = (utilities, eps, threshold, sensitivity)
        return self._release(
            self._prepare("above_threshold", prepare.prepare_above_threshold, *args)
        )

    def doubling(
        self,
        value: npt.ArrayLike,
        sensitivity: Number = 1.0,
        start_eps2: Number = 1e-4,
        ratio: Number = 2.0,
        stop: StoppingRule | Callable[..., bool] | None = None,
    ) -> DoublingTranscript:
        """The doubling method (APC Sec. 7.1): fresh Gaussian tries, eps² × ratio, all paid.

        The tries go up to the largest eps² whose total the budget still admits (at most
        `MAX_DOUBLING_TRIES`); the round is charged the sum of the tries made. Secure mode:
        `DoublingMethod(..., exact=True)`, the same levels, rule, cap and rho with discrete
        Gaussian tries on an integer value (CKS Thm 4), charged as `ZCDPCost`. The default rule,
        `RelativeError(0.1)`, needs a scalar value.
        """
        args = (value, sensitivity, start_eps2, ratio, stop)
        return self._release(self._prepare("doubling", prepare.prepare_doubling, *args))

    def brownian(
        self,
        value: npt.ArrayLike,
        sensitivity: Number,
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
        args = (value, sensitivity, grid, stop, boundary)
        return self._release(self._prepare("brownian", prepare.prepare_brownian, *args))

    def laplace_noise_reduction(
        self,
        value: npt.ArrayLike,
        sensitivity: Number,
        scales: npt.ArrayLike,
        stop: StoppingRule | Callable[..., bool] | None = None,
    ) -> Transcript:
        """Laplace noise reduction (BNR Sec. 4): (Δ1/t_stop)-ex-post private (BNR Prop 4.2).

        Recorded as an `ExPostCost` (Δ1/t_stop, with eps_max = Δ1/t_min): filters with an
        ex-post budget charge Δ1/t_stop, the others its worst case Δ1/t_min as pure DP.
        """
        args = (value, sensitivity, scales, stop)
        build = prepare.prepare_laplace_noise_reduction
        return self._release(self._prepare("laplace_noise_reduction", build, *args))

    def skellam(
        self,
        value: npt.ArrayLike,
        sensitivity: Number,
        times: npt.ArrayLike,
        rate: Number = 1.0,
        stop: StoppingRule | Callable[..., bool] | None = None,
        boundary: SkellamPrivacyBoundary | None = None,
        fixed_delta: Number | None = None,
        fixed_price: FixedPrice = "exact",
    ) -> Transcript:
        """Skellam noise reduction on one count (BNR App. E), (ψ(t_stop), delta)-ex-post private
        with a `SkellamPrivacyBoundary` ψ (THEORY §10). Admitted on max ψ over the grid, recorded
        as `ExPostCost` (ψ(t_stop), delta): filters with an ex-post budget (`ExPostFilter`)
        charge it. Or, with ``fixed_delta`` instead of a boundary, charged the run's fixed
        `DPCost` (``SkellamNoiseReduction.fixed_cost(fixed_delta, fixed_price)``: the (eps,
        fixed_delta) of the grid's smallest time) whenever it stops; ``fixed_price`` is
        ``"exact"`` (the exact hockey-stick price, refused beyond its work limit
        `expost.skellam.loss.MAX_TERMS`) or ``"akl"`` (Agarwal–Kairouz–Liu's closed-form
        bound, larger, for any mean and Δ), and only with ``fixed_delta``. In the secure mode
        the integers are drawn exactly from the session's bit source (Poisson, then binomial
        thinning), else from its rng. The count is an integer with |value| <= 2**1000 in both
        modes, released exactly (Python ints beyond int64); the mean λ·t_1 is limited
        (docs/session.md)."""
        args = (value, sensitivity, times, rate, stop, boundary, fixed_delta, fixed_price)
        return self._release(self._prepare("skellam", prepare.prepare_skellam, *args))

    def release(self, cost: Cost, draw: Callable[[Any], R]) -> R:
        """Run the caller's own mechanism ``draw`` as one round priced at ``cost``, declared
        before it runs (`expost.own_round`; docs/your-own-mechanism.md): reserved, drawn with
        the session's rng (float mode; the bit source in secure mode), settled at ``cost`` —
        also if ``draw`` raises. The guarantee holds if ``draw`` is the mechanism ``cost``
        describes."""
        prepared: Prepared[R] = self._prepare("release", own_round.prepare_release, cost, draw)
        return self._release(prepared)

    def reduced_above_threshold(
        self,
        value: npt.ArrayLike,
        utility: Callable[[npt.NDArray[np.float64]], float],
        grid: TimeGrid | EpsilonGrid,
        boundary: PrivacyBoundaryWithDelta,
        threshold: Number,
        sensitivity: Number = 1.0,
    ) -> BrownianThresholdResult:
        """ReducedAboveThreshold on Brownian iterates (BNR Algorithm 1, Cor 5.2).

        ``utility`` is evaluated privately on each hidden iterate; only the first that passes is
        released, with the ex-post guarantee (2ψ(T_N), delta). Needs a filter with an ex-post
        budget (`ExPostFilter` or `ConcurrentFilter`); charged 2ψ(t_min) up front and
        2ψ(T_N) when it halts (a run where no check passes stays charged 2ψ(t_min)).
        """
        args = (value, utility, grid, boundary, threshold, sensitivity)
        build = prepare.prepare_reduced_above_threshold
        return self._release(self._prepare("reduced_above_threshold", build, *args))
