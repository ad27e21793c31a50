"""Claims, their statistical tests, audits and reports (ARCHITECTURE "Statistical audits").

Every test here has false-alarm level at most ``alpha`` when its claim is true, and reports a
lower confidence bound (level 1 − alpha) on the audited quantity; the claim is refuted iff that
bound exceeds the claimed value.

- `ProbabilityClaim`: ``P(event) <= delta`` by the exact one-sided binomial test
  (Clopper–Pearson lower bound).
- `EValueClaim`: ``E[X] <= c`` for X >= 0 by a betting test: the wealth
  ``K_n = mean over λ of prod_(i<=n) (1 + λ(X_i/c − 1))``. Under E[X] <= c each factor has
  conditional mean <= 1 and is >= 1 − λ > 0, so K is a nonnegative supermartingale with K_0 = 1
  and, by Ville's inequality, ``P(max_n K_n >= 1/alpha) <= alpha``. No moment beyond the mean is
  needed, so it stays valid for heavy tails (a t-test does not).
- `DPClaim`: "the mechanism is eps-DP" by a distinguishing test on neighbouring inputs.

An `Audit` simulates N independent runs in chunks (`expost.execution`): their sizes and streams
(``SeedSequence.spawn``) are fixed by the audit alone, so results are bit-identical for a seed
whatever executes the chunks (in process, a process pool, a Dask cluster). An audit with a
backend simulator (``on_backend``) can draw its runs with torch or cupy (`expost.backends`);
the others run on numpy whatever backend is asked.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    nonnegative,
    open_probability,
    positive,
    positive_int,
    probability,
    validator,
)
from expost.backends import ArrayBackend, Draws
from expost.errors import InvalidParameter
from expost.execution import Execution, chunk_sizes, map_chunks

__all__ = [
    "ALPHA_AUDIT",
    "CUT_LEVELS",
    "Audit",
    "AuditReport",
    "AuditResult",
    "BackendSimulator",
    "Claim",
    "DPClaim",
    "EValueClaim",
    "Expected",
    "ProbabilityClaim",
    "Progress",
    "Simulator",
    "Tally",
    "Twin",
    "TwinResult",
    "Verdict",
    "audit_seed",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "eps_lower_bound",
    "run_audit",
    "run_audits",
]

ALPHA_AUDIT = 1e-6
Simulator = Callable[[int, np.random.Generator], npt.ArrayLike]
BackendSimulator = Callable[[int, Draws], Any]
"""``simulate(n, draws)``: the runs drawn with an array backend's draws (`expost.backends`)."""
Progress = Callable[[int, int, str], None]
Expected = Literal["holds", "refuted"]
FloatArray = npt.NDArray[np.float64]


def clopper_pearson_lower(hits: int, n: int, alpha: float) -> float:
    """One-sided lower confidence bound (level 1 − alpha) for a binomial proportion."""
    from scipy import stats  # lazy: keeps the `expost` command fast

    return 0.0 if hits <= 0 else float(stats.beta.ppf(alpha, hits, n - hits + 1))


def clopper_pearson_upper(hits: int, n: int, alpha: float) -> float:
    """One-sided upper confidence bound (level 1 − alpha) for a binomial proportion."""
    from scipy import stats  # lazy: keeps the `expost` command fast

    return 1.0 if hits >= n else float(stats.beta.ppf(1.0 - alpha, hits + 1, n - hits))


class _Figures(Mapping[str, float | str]):
    """A read-only copy of a mapping (picklable, unlike ``types.MappingProxyType``)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, float | str]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> float | str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)


def _frozen_mapping(value: Mapping[str, float | str]) -> Mapping[str, float | str]:
    return value if isinstance(value, _Figures) else _Figures(value)


@frozen
class Verdict:
    """The outcome of one test: ``refuted`` iff ``bound`` (a lower confidence bound) > ``claimed``.

    ``extra``: a read-only mapping of further figures a claim reports (an `ImportanceClaim`'s
    proposal, weight bound, upper bound, ratio to delta with its interval, effective sample size);
    the JSON report writes it under ``"importance"``. Empty for the other claims.
    """

    n: int
    observed: float
    bound: float
    claimed: float
    refuted: bool
    detail: str
    extra: Mapping[str, float | str] = field(
        factory=dict, converter=_frozen_mapping, hash=False, repr=False
    )

    @property
    def word(self) -> Expected:
        """``"refuted"`` or ``"holds"`` (not refuted at the audit's level)."""
        return "refuted" if self.refuted else "holds"


class Claim(Protocol):
    """What is asserted about the samples a simulator returns, and the test that checks it."""

    def describe(self) -> str:
        """The claim in words, e.g. ``P(event) <= 0.01``."""
        ...

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        """Test the claim on ``samples`` at false-alarm level ``alpha``."""
        ...


def _alpha(alpha: object) -> float:
    return open_probability("alpha", alpha)


def _samples(samples: npt.ArrayLike, ndim: int, rule: str) -> npt.NDArray[Any]:
    arr = np.asarray(samples)
    if arr.ndim != ndim or arr.shape[0] == 0:
        raise InvalidParameter("samples", arr.shape, rule)
    return arr


@frozen
class Tally:
    """Runs and events among them: all a `ProbabilityClaim` needs, so chunks add up (``+``)."""

    n: int
    hits: int

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.n + other.n, self.hits + other.hits)


@frozen
class ProbabilityClaim:
    """``P(event) <= delta``; samples are one boolean per run (True: the event happened).

    Exact one-sided binomial test: refuted iff the Clopper–Pearson lower bound at level alpha
    exceeds delta, i.e. iff ``P(Binomial(n, delta) >= hits) < alpha``.
    """

    delta: float = field(converter=as_float, validator=validator(probability))

    def describe(self) -> str:
        return f"P(event) <= {self.delta:g}"

    @staticmethod
    def tally(samples: npt.ArrayLike) -> Tally:
        """The test's sufficient statistic of ``samples``: (runs, events)."""
        events = _samples(samples, 1, "must be a non-empty 1-d boolean array of events")
        if events.dtype != np.bool_:
            raise InvalidParameter("samples", events.dtype, "must be a boolean array of events")
        return Tally(events.size, int(np.count_nonzero(events)))

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        return self.verdict_of(self.tally(samples), alpha)

    def verdict_of(self, tally: Tally, alpha: float) -> Verdict:
        """The verdict from the runs' `Tally` alone (chunks of a large audit are tallied apart)."""
        a = _alpha(alpha)
        n, hits = tally.n, tally.hits
        lower = clopper_pearson_lower(hits, n, a)
        upper = clopper_pearson_upper(hits, n, a)
        detail = f"{hits}/{n} events; {1 - a:.6g} bounds [{lower:.4g}, {upper:.4g}]"
        return Verdict(n, hits / n, lower, self.delta, lower > self.delta, detail)


# Bets of the mixture test; mixing over several λ keeps power for large and small effects.
_LAMBDAS = np.array([0.9, 0.75, 0.5, 0.25, 0.125, 1 / 16, 1 / 32, 1 / 64, 1 / 128])
_BLOCK = 65_536


def _max_log_wealth(x: FloatArray, mean: float) -> float:
    """log of ``max_(1<=n<=N) K_n`` for the betting test of ``E[X] <= mean`` (module docstring).

    n = 0 (K_0 = 1) is left out: it never reaches 1/alpha > 1, and without it the function
    has no flat part, which keeps the root search of the lower bound fast.
    """
    lam = _LAMBDAS[:, None]
    carry = np.zeros((_LAMBDAS.size, 1))
    best = -math.inf
    for start in range(0, x.size, _BLOCK):
        with np.errstate(over="ignore", divide="ignore"):
            steps = np.log1p(lam * (x[None, start : start + _BLOCK] / mean - 1.0))
        np.cumsum(steps, axis=1, out=steps)
        steps += carry
        carry = steps[:, -1:]
        top = steps.max(axis=0)
        finite = np.isfinite(top)
        if not np.all(finite):
            return math.inf
        with np.errstate(under="ignore"):
            mixed = top + np.log(np.exp(steps - top).mean(axis=0))
        best = max(best, float(mixed.max()))
    return best


def _evalue_lower_bound(x: FloatArray, threshold: float) -> float:
    """``inf{m > 0 : max_n K_n(m) < 1/alpha}``: K_n(m) is continuous and decreasing in m."""
    if not np.any(x > 0.0):
        return 0.0

    def excess(log_m: float) -> float:
        # asinh tames the steep rise at small m, so Brent's method converges in few steps
        return math.asinh(_max_log_wealth(x, math.exp(log_m)) - threshold)

    hi = math.log(max(float(x.mean()), 1e-300))
    while excess(hi) >= 0.0:
        hi += math.log(2.0)
    lo = hi - math.log(2.0)
    while excess(lo) < 0.0:
        lo -= math.log(2.0)
        if lo < math.log(1e-300):
            return 0.0
    from scipy import optimize  # lazy: keeps the `expost` command fast

    return math.exp(float(optimize.brentq(excess, lo, hi, xtol=1e-5)))


@frozen
class EValueClaim:
    """``E[X] <= bound`` for nonnegative X (an e-value when bound = 1), by the betting test.

    Refuted iff the mixture wealth reaches 1/alpha (valid by Ville's inequality, module
    docstring); the reported bound is the lower confidence bound on E[X] from inverting it.
    """

    bound: float = field(default=1.0, converter=as_float, validator=validator(positive))

    def describe(self) -> str:
        return f"E[X] <= {self.bound:g}"

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        a = _alpha(alpha)
        x = _samples(samples, 1, "must be a non-empty 1-d array of nonnegative values")
        if x.dtype.kind not in "iuf":
            raise InvalidParameter("samples", x.dtype, "must be real numbers")
        x = x.astype(np.float64)
        if not (np.all(np.isfinite(x)) and np.all(x >= 0.0)):
            bad = x[~(np.isfinite(x) & (x >= 0.0))][:3]
            raise InvalidParameter("samples", bad, "must be finite and nonnegative")
        threshold = math.log(1.0 / a)
        wealth = _max_log_wealth(x, self.bound)
        lower = _evalue_lower_bound(x, threshold)
        detail = f"max log-wealth {wealth:.4g} vs log(1/alpha) = {threshold:.4g}"
        return Verdict(x.size, float(x.mean()), lower, self.bound, wealth >= threshold, detail)


# Quantile levels of the candidate thresholds, finer in the tails where ratios are largest.
_TAIL = np.geomspace(1e-4, 1e-2, 9)
CUT_LEVELS = np.unique(np.concatenate([_TAIL, np.linspace(0.01, 0.99, 99), 1.0 - _TAIL]))


def _counts_at_least(sorted_values: FloatArray, cuts: FloatArray) -> npt.NDArray[np.int64]:
    return sorted_values.size - np.searchsorted(sorted_values, cuts, side="left")


def _event_counts(a: FloatArray, b: FloatArray, cuts: FloatArray) -> tuple[Any, Any, int]:
    """Hits under (A, B) of the events {y >= c} and {y < c} in both orders: arrays (4, cuts)."""
    m = a.size
    ha = _counts_at_least(np.sort(a), cuts)
    hb = _counts_at_least(np.sort(b), cuts)
    first = np.stack([ha, m - ha, hb, m - hb])
    second = np.stack([hb, m - hb, ha, m - ha])
    return first, second, m


def eps_lower_bound(
    hits_x: npt.ArrayLike,
    n_x: int,
    hits_x_prime: npt.ArrayLike,
    n_x_prime: int,
    alpha: float,
    delta: float = 0.0,
) -> FloatArray:
    """``log((CP_lower(P(E|x)) − delta) / CP_upper(P(E|x')))``, each limit at alpha/2, elementwise.

    For an (eps, delta)-DP mechanism P(E|x) <= e^eps P(E|x') + delta (the hockey-stick form), so
    with probability >= 1 − alpha (Bonferroni over the two exact one-sided limits) the value is
    <= eps for a fixed event E. −inf where the lower limit does not exceed delta. Hit counts may
    be non-integer (scaled counts predict a later test's bound).
    """
    from scipy import stats  # lazy: keeps the `expost` command fast

    a = np.asarray(hits_x, dtype=np.float64)
    b = np.asarray(hits_x_prime, dtype=np.float64)
    lower = np.where(a > 0, stats.beta.ppf(alpha / 2, np.maximum(a, 1e-12), n_x - a + 1), 0.0)
    upper = np.where(
        b < n_x_prime,
        stats.beta.ppf(1 - alpha / 2, b + 1, np.maximum(n_x_prime - b, 1e-12)),
        1.0,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        result: FloatArray = np.where(lower > delta, np.log(lower - delta) - np.log(upper), -np.inf)
    return result


_EVENTS = (
    "y >= c under x vs x'",
    "y < c under x vs x'",
    "y >= c under x' vs x",
    "y < c under x' vs x",
)


@frozen
class DPClaim:
    """Claim "the mechanism is eps-DP", by a distinguishing test on neighbouring inputs x, x'.

    Samples have shape (n, 2): column 0 a scalar output under x, column 1 under x' (any scalar
    statistic of the output: post-processing keeps DP). The first half of the rows chooses an
    event S = {y >= c} or its complement and an order of (x, x'); on the second half,
    ``eps_lb = log(CP_lower(P(S|x)) / CP_upper(P(S|x')))``, each bound at alpha/2, so
    ``P(eps_lb > eps) <= alpha`` for an eps-DP mechanism. Refuted iff eps_lb > eps.
    """

    eps: float = field(converter=as_float, validator=validator(nonnegative))

    def describe(self) -> str:
        return f"mechanism is {self.eps:g}-DP"

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        a = _alpha(alpha)
        pairs = _samples(samples, 2, "must have shape (n, 2): outputs under x and x'")
        if pairs.shape[1] != 2 or pairs.shape[0] < 2 or pairs.dtype.kind not in "iuf":
            raise InvalidParameter("samples", pairs.shape, "must be real, shape (n >= 2, 2)")
        y = pairs.astype(np.float64)
        half = y.shape[0] // 2
        choose, test = y[:half], y[half : 2 * half]
        cuts = np.unique(np.quantile(choose, CUT_LEVELS))
        first, second, m = _event_counts(choose[:, 0], choose[:, 1], cuts)
        score = eps_lower_bound(first, m, second, m, a)
        kind, at = np.unravel_index(int(np.argmax(score)), score.shape)
        first, second, m = _event_counts(test[:, 0], test[:, 1], cuts[at : at + 1])
        hit_a, hit_b = int(first[kind, 0]), int(second[kind, 0])
        bound = max(0.0, float(eps_lower_bound(first[kind], m, second[kind], m, a)[0]))
        observed = math.log((hit_a + 0.5) / (hit_b + 0.5))
        detail = f"S: {_EVENTS[kind]}, c = {cuts[at]:.4g}; hits {hit_a}/{m} vs {hit_b}/{m}"
        return Verdict(y.shape[0], observed, bound, self.eps, bound > self.eps, detail)


def _name(name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter(name, value, "must be a non-empty string")


def _claim(name: str, value: object) -> None:
    if not (hasattr(value, "verdict") and hasattr(value, "describe")):
        raise InvalidParameter(name, value, "must be a Claim (ProbabilityClaim, EValueClaim, …)")


def _simulator(name: str, value: object) -> None:
    if not callable(value):
        raise InvalidParameter(name, value, "must be callable as simulate(n, rng)")


def _optional_simulator(name: str, value: object) -> None:
    if value is not None:
        _simulator(name, value)


def _expected(name: str, value: object) -> None:
    if value not in ("holds", "refuted"):
        raise InvalidParameter(name, value, "must be 'holds' or 'refuted'")


@frozen
class Twin:
    """A planted bug (a wrong bound or mechanism) that the audit's test must refute.

    ``simulate=None`` reuses the audit's own samples (a wrong claim about the same runs).
    ``on_backend``: the same simulation on an array backend (see `Audit`).
    """

    name: str = field(validator=validator(_name))
    claim: Claim = field(validator=validator(_claim))
    simulate: Simulator | None = field(default=None, validator=validator(_optional_simulator))
    on_backend: BackendSimulator | None = field(
        default=None, validator=validator(_optional_simulator)
    )


@frozen
class Audit:
    """A claim, a seeded vectorised simulator ``simulate(n, rng) -> samples`` and its planted bug.

    ``statement`` is the claim in words (the report's "claim"); ``source`` cites it ("BNR Thm 3.6").
    ``expected="refuted"`` marks a printed statement that is supposed to fail. Runs are drawn in
    chunks of ``chunk_size``; with several workers ``simulate`` must be picklable (a module-level
    function or a ``functools.partial`` of one). ``on_backend(n, draws)``, if given, draws the
    same law with an array backend's draws and returns a backend array (torch, cupy); without it
    the audit runs on numpy whatever backend is asked.
    """

    name: str = field(validator=validator(_name))
    source: str = field(validator=validator(_name))
    statement: str = field(validator=validator(_name))
    claim: Claim = field(validator=validator(_claim))
    simulate: Simulator = field(validator=validator(_simulator))
    n: int = field(validator=validator(positive_int))
    twin: Twin | None = None
    expected: Expected = field(default="holds", validator=validator(_expected))
    chunk_size: int = field(default=50_000, validator=validator(positive_int))
    on_backend: BackendSimulator | None = field(
        default=None, validator=validator(_optional_simulator)
    )

    def chunks(self) -> list[int]:
        """The chunk sizes, in order; they depend on n and chunk_size only."""
        return chunk_sizes(self.n, self.chunk_size)

    def runs_on(self, backend: ArrayBackend) -> bool:
        """Whether the audit's runs are drawn on ``backend`` (numpy: always)."""
        twin_ok = (
            self.twin is None or self.twin.simulate is None or self.twin.on_backend is not None
        )
        return backend.name == "numpy" or (self.on_backend is not None and twin_ok)


@frozen
class TwinResult:
    """The planted bug's verdict (it should be refuted)."""

    name: str
    verdict: Verdict


@frozen
class AuditResult:
    """One audit's verdict, its twin's, and the wall time of both."""

    name: str
    source: str
    statement: str
    verdict: Verdict
    seconds: float
    expected: Expected = "holds"
    twin: TwinResult | None = None

    @property
    def passed(self) -> bool:
        """The verdict is the expected one and the planted bug (if any) was refuted."""
        twin_ok = self.twin is None or self.twin.verdict.refuted
        return self.verdict.word == self.expected and twin_ok

    def problems(self) -> list[str]:
        """Why the audit did not pass, one line per reason (empty when it passed)."""
        out = []
        v = self.verdict
        if v.word != self.expected:
            out.append(
                f"{self.name}: expected {self.expected}, got {v.word} "
                f"(lower bound {v.bound:.6g} vs claimed {v.claimed:.6g}; {v.detail})"
            )
        if self.twin is not None and not self.twin.verdict.refuted:
            t = self.twin.verdict
            out.append(
                f"{self.name}: planted bug {self.twin.name} NOT caught "
                f"(lower bound {t.bound:.6g} <= claimed {t.claimed:.6g}; {t.detail})"
            )
        return out

    def to_json(self) -> dict[str, object]:
        """The report entry: keys as in ARCHITECTURE ("expected" only when "refuted").

        A verdict with ``extra`` figures (importance-sampled claims) adds them under
        ``"importance"``, for the claim and for its twin.
        """
        twin: dict[str, object] | None = None
        if self.twin is not None:
            twin = {
                "name": self.twin.name,
                "verdict": self.twin.verdict.word,
                "observed": self.twin.verdict.observed,
                "bound": self.twin.verdict.bound,
            }
            if self.twin.verdict.extra:
                twin["importance"] = dict(self.twin.verdict.extra)
        entry: dict[str, object] = {
            "name": self.name,
            "source": self.source,
            "claim": self.statement,
            "n": self.verdict.n,
            "observed": self.verdict.observed,
            "bound": self.verdict.bound,
            "verdict": self.verdict.word,
            "seconds": self.seconds,
            "twin": twin,
        }
        if self.verdict.extra:
            entry["importance"] = dict(self.verdict.extra)
        if self.expected == "refuted":
            entry["expected"] = "refuted"
        return entry


_HEADER = ("audit", "source", "claim", "N", "observed", "lower bound", "verdict", "twin", "s")


def _row(r: AuditResult) -> tuple[str, ...]:
    v = r.verdict
    verdict = v.word + ("" if r.expected == "holds" else " (expected)")
    twin = "-" if r.twin is None else "refuted" if r.twin.verdict.refuted else "NOT CAUGHT"
    observed = f"{v.observed:.4g}"
    if "ratio" in v.extra:  # an importance-sampled claim: P/delta with its interval
        x = v.extra
        observed += f" (P/d {x['ratio']:.3g} [{x['ratio_lower']:.3g}, {x['ratio_upper']:.3g}])"
    cells = (r.name, r.source, r.statement, str(v.n), observed, f"{v.bound:.4g}")
    return (*cells, verdict, twin, f"{r.seconds:.1f}")


@frozen
class AuditReport:
    """The results of a suite, with the seed and level they were run at."""

    results: tuple[AuditResult, ...]
    seed: int
    alpha_audit: float

    @property
    def passed(self) -> bool:
        """Every claim has its expected verdict and every planted bug was caught."""
        return all(r.passed for r in self.results)

    @property
    def exit_code(self) -> int:
        """0 when `passed`, else 1."""
        return 0 if self.passed else 1

    def to_json(self) -> dict[str, object]:
        """``{"claims": [...], "seed", "alpha_audit"}``."""
        return {
            "claims": [r.to_json() for r in self.results],
            "seed": self.seed,
            "alpha_audit": self.alpha_audit,
        }

    def dumps(self) -> str:
        """The JSON report as text."""
        return json.dumps(self.to_json(), indent=2) + "\n"

    def table(self) -> str:
        """A fixed-width table, a summary line, and one line per problem."""
        rows = [_HEADER, *(_row(r) for r in self.results)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        ok = sum(r.passed for r in self.results)
        lines.append(
            f"\n{ok}/{len(self.results)} audits passed (claim as expected, planted bug refuted) "
            f"at alpha_audit = {self.alpha_audit:g}, seed = {self.seed}"
        )
        lines += [f"FAIL {p}" for r in self.results for p in r.problems()]
        return "\n".join(lines)


def _seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidParameter("seed", seed, "must be an integer >= 0")
    return int(seed)


def audit_seed(seed: int, name: str) -> np.random.SeedSequence:
    """The seed sequence of the runs named ``name``: fixed by (seed, name) alone.

    So an audit draws the same runs whether it runs alone (``--only``) or in a suite.
    """
    digest = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:16], "little")
    return np.random.SeedSequence([_seed(seed), digest])


def _simulate_chunk(
    simulate: Simulator,
    on_backend: BackendSimulator | None,
    backend: ArrayBackend,
    size: int,
    seed: np.random.SeedSequence,
) -> npt.NDArray[Any]:
    if on_backend is None or backend.name == "numpy":
        out = np.asarray(simulate(size, np.random.default_rng(seed)))
    else:
        out = ArrayBackend.to_numpy(on_backend(size, backend.draws(seed)))
    if out.ndim == 0 or out.shape[0] != size:
        raise InvalidParameter(
            "simulate", simulate, f"returned shape {out.shape} for {size} runs (need {size} rows)"
        )
    return out


def _tally_chunk(
    simulate: Simulator,
    on_backend: BackendSimulator | None,
    backend: ArrayBackend,
    size: int,
    seed: np.random.SeedSequence,
) -> Tally:
    """A chunk reduced where it ran: only (runs, events) travel back and stay in memory."""
    return ProbabilityClaim.tally(_simulate_chunk(simulate, on_backend, backend, size, seed))


@frozen
class _Context:
    """What every chunk of a run shares: seed, level, executor, backend, progress tick."""

    seed: int
    alpha: float
    executor: Executor
    backend: ArrayBackend
    tick: Callable[[], None]


Samples = npt.NDArray[Any] | Tally


def _draw(
    simulate: Simulator,
    on_backend: BackendSimulator | None,
    audit: Audit,
    name: str,
    tally: bool,
    ctx: _Context,
) -> Samples:
    """The runs of ``name``, concatenated in chunk order, or (``tally``) their summed `Tally`."""
    backend = ctx.backend if audit.runs_on(ctx.backend) else ArrayBackend()
    sizes = audit.chunks()
    seeds = audit_seed(ctx.seed, name).spawn(len(sizes))
    chunks = [
        (simulate, on_backend, backend, size, ss) for size, ss in zip(sizes, seeds, strict=True)
    ]
    if tally:
        return functools.reduce(
            operator.add, map_chunks(_tally_chunk, chunks, ctx.executor, ctx.tick)
        )
    return np.concatenate(map_chunks(_simulate_chunk, chunks, ctx.executor, ctx.tick), axis=0)


def _verdict(claim: Claim, samples: Samples, alpha: float) -> Verdict:
    if isinstance(samples, Tally):
        assert isinstance(claim, ProbabilityClaim)  # only they are tallied (_tallied)
        return claim.verdict_of(samples, alpha)
    return claim.verdict(samples, alpha)


def _tallied(*claims: Claim) -> bool:
    """Chunks are reduced to a `Tally` when every claim on their runs is a `ProbabilityClaim`."""
    return all(isinstance(c, ProbabilityClaim) for c in claims)


def _alpha_audit(alpha_audit: object) -> float:
    return open_probability("alpha_audit", alpha_audit)


def _run(audit: Audit, ctx: _Context) -> AuditResult:
    start = time.perf_counter()
    t = audit.twin
    shared = [audit.claim] + ([t.claim] if t is not None and t.simulate is None else [])
    samples = _draw(audit.simulate, audit.on_backend, audit, audit.name, _tallied(*shared), ctx)
    verdict = _verdict(audit.claim, samples, ctx.alpha)
    twin = None
    if t is not None:
        if t.simulate is not None:
            samples = _draw(t.simulate, t.on_backend, audit, t.name, _tallied(t.claim), ctx)
        twin = TwinResult(t.name, _verdict(t.claim, samples, ctx.alpha))
    seconds = time.perf_counter() - start
    return AuditResult(
        audit.name, audit.source, audit.statement, verdict, seconds, audit.expected, twin
    )


def _tasks(audit: Audit) -> int:
    own = len(audit.chunks())
    return own * (2 if audit.twin is not None and audit.twin.simulate is not None else 1)


def _execution(execution: Execution | None, workers: int) -> Execution:
    w = positive_int("workers", workers)
    if execution is None:
        return Execution(workers=w)
    if w != 1:
        raise InvalidParameter("workers", workers, "must be 1 when an execution is given")
    return execution


def run_audits(
    audits: Sequence[Audit],
    *,
    seed: int = 0,
    alpha_audit: float = ALPHA_AUDIT,
    workers: int = 1,
    progress: Progress | None = None,
    execution: Execution | None = None,
    backend: ArrayBackend | None = None,
) -> AuditReport:
    """Run audits in order; the chunks of each audit run on ``execution``'s executor.

    ``workers=N`` is short for ``execution=Execution(workers=N)`` (a local process pool). The
    verdicts do not depend on the execution (chunks and their seeds are fixed per audit); with
    a ``backend`` other than numpy, audits that support it draw their runs there (same law,
    other draws). ``progress(done, total, name)`` is called after every chunk.
    """
    alpha = _alpha_audit(alpha_audit)
    where = _execution(execution, workers)
    array_backend = (ArrayBackend() if backend is None else backend).check()
    seed = _seed(seed)
    names = [a.name for a in audits]
    if len(set(names)) != len(names):
        raise InvalidParameter("audits", names, "must have distinct names")
    total = sum(_tasks(a) for a in audits)
    done = 0
    results = []
    with where.executor() as executor:
        for audit in audits:

            def tick(name: str = audit.name) -> None:
                nonlocal done
                done += 1
                if progress is not None:
                    progress(done, total, name)

            ctx = _Context(seed, alpha, executor, array_backend, tick)
            results.append(_run(audit, ctx))
    return AuditReport(tuple(results), seed, alpha)


def run_audit(
    audit: Audit,
    *,
    seed: int = 0,
    alpha_audit: float = ALPHA_AUDIT,
    workers: int = 1,
    execution: Execution | None = None,
    backend: ArrayBackend | None = None,
) -> AuditResult:
    """Run one audit (and its twin); see `run_audits`."""
    report = run_audits(
        [audit],
        seed=seed,
        alpha_audit=alpha_audit,
        workers=workers,
        execution=execution,
        backend=backend,
    )
    return report.results[0]
