"""APC App. C's open problem, measured: the slack of summing k Laplace noise-reduction bounds.

k Laplace noise-reduction rounds stopped at scales t_1, …, t_k are (Σ Δ1/t_i, 0)-ex-post private
by summing the ex-post bounds (APC Thm B.1 with Lemma B.1; BNR Prop 4.2); APC App. C leaves open
whether composition can do better. For neighbours at ℓ1 distance Δ1 the total loss is
``L = Σ L_i`` with ``L_i = (|X_i − Δ1| − |X_i|)/t_i`` and X_i the noise of the iterate round i
stopped on (APC Lemma C.1). We measure the tightest bound of the summed form, the factor

    c(delta) = inf {c : P(L > c · Σ Δ1/t_i) <= delta},

the (1 − delta)-quantile of the ratio ``R = L / Σ Δ1/t_i`` (summing is c = 1, delta = 0). The k
rounds are independent runs of one stopping rule on the same value: the stop within a round is
adaptive (it sees that round's releases), the choice of rule across rounds is not. A composition
theorem must hold for every analyst, so one stopping rule with c = 1 already rules out a better
bound of the summed form.

Why summing is often exact: ``L_i = Δ1/t_i`` whenever ``X_i <= 0`` (the noise lies on the side
away from the neighbour), so ``R = 1`` on the event that every round ends there, and c(delta) = 1
for every delta < P(R = 1) = Π P(X_i <= 0). A fixed stop has ``P(X_i <= 0) = 1/2`` (so
P(R = 1) = 2^−k); an adaptive stop ("stop at the first iterate below f(x)") pushes the per-round
probability towards 1, another (APC's relative-error rule, neighbour above) below 1/2. Two routes:

- `composed_fixed_scale`: rounds stopped at a fixed level eps (the non-adaptive case), exactly: the
  loss law is explicit (atoms 1/2 at eps and e^(−eps)/2 at −eps, CDF ``e^(−(eps − l)/2)/2``
  between), discretised on a grid of step h = eps/steps rounding every loss up (down), which
  dominates (is dominated by) the true loss pointwise, and convolved k times: a deterministic
  bracket on the tail and on the (eps, delta)-DP curve (the hockey stick is monotone in the loss).
  `small_eps_limit` is its eps → 0 limit, a floor at every eps.
- `simulate_rounds`: any stopping rule, by exact sampling of the Laplace process
  (`LaplaceNoiseReduction.run_batch`); c(delta) with an order-statistic interval, and the all-hit
  probability ``P(R = 1) = Π P(X_i <= 0)`` (rounds independent) certifying c(delta) = 1 where its
  lower bound exceeds delta — the route that reaches delta = 1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import generator, open_probability, positive, positive_int
from expost.confidence import clopper_pearson_lower
from expost.errors import InvalidParameter
from expost.mechanisms.noise_reduction import LaplaceNoiseReduction
from expost.stopping import AtIndex, RelativeError, StoppingRule, WhenPublicUtility

__all__ = [
    "ComposedLaplace",
    "FactorEstimate",
    "SimulatedComposition",
    "composed_fixed_scale",
    "fixed_scale_pmf",
    "simulate_rounds",
    "small_eps_limit",
]

FloatArray = npt.NDArray[np.float64]

DEFAULT_ROUNDS = (2, 5, 10, 20)
DEFAULT_DELTAS = (1e-3, 1e-6)
FIXED_EPS = (1.0, 0.1, 0.01, 0.001)  # exact rows; small eps is the noise-reduction regime
_CHUNK = 100_000  # rounds per run_batch call (memory: chunk × grid size floats)


def fixed_scale_pmf(eps: float, steps: int, round_up: bool) -> FloatArray:
    """One Laplace release's loss at level eps on the grid ``−eps + j·h``, h = eps/steps.

    The law (APC Lemma C.1, X ~ Lap(t), eps = Δ1/t): ``G(l) = P(L <= l) = e^(−(eps − l)/2)/2``
    on ``[−eps, eps)`` (an atom e^(−eps)/2 at −eps), G(eps) = 1 (an atom 1/2 at eps). Each loss is
    moved to the grid point above it (``round_up``) or below it; ``pmf[j]`` is the mass at j.
    """
    e = positive("eps", eps)
    m = positive_int("steps", steps)
    g = 0.5 * np.exp(-(e - np.linspace(-e, e, 2 * m + 1)) / 2.0)  # G at the grid, left limits
    jumps = np.diff(g)
    if round_up:  # (c_(j−1), c_j] -> c_j
        return np.concatenate(([g[0]], jumps[:-1], [1.0 - g[-2]]))
    return np.concatenate(([g[1]], jumps[1:], [0.5]))  # [c_j, c_(j+1)) -> c_j


@frozen
class ComposedLaplace:
    """k Laplace releases at level eps each, composed, as a bracket of two grid laws.

    ``upper`` (``lower``) is the law of the sum of the rounded-up (-down) losses on the grid
    ``losses``; the true sum lies between them pointwise, so every tail and hockey-stick value
    of the true law lies between theirs.
    """

    eps: float
    rounds: int
    losses: FloatArray
    upper: FloatArray
    lower: FloatArray

    @property
    def summed(self) -> float:
        """The summed ex-post bound k·eps (APC Thm B.1)."""
        return self.rounds * self.eps

    def factor(self, delta: float) -> tuple[float, float]:
        """A bracket on c(delta) = inf{c: P(L > c·k·eps) <= delta} (module docstring)."""
        d = open_probability("delta", delta)
        return (
            _first_below(self.losses, _tail(self.lower), d) / self.summed,
            _first_below(self.losses, _tail(self.upper), d) / self.summed,
        )

    def dp_eps(self, delta: float) -> tuple[float, float]:
        """A bracket on the smallest eps >= 0 with the composition (eps, delta)-DP (hockey stick);
        (0, 0) when it is (0, delta)-DP already (total variation <= delta)."""
        d = open_probability("delta", delta)
        low = _hockey_stick(self.losses, self.lower)
        above = self.losses[low > d]
        lower = float(above[-1]) if above.size else -math.inf
        upper = _first_below(self.losses, _hockey_stick(self.losses, self.upper), d)
        return max(0.0, lower), max(0.0, upper)


def _tail(pmf: FloatArray) -> FloatArray:
    """``P(S > losses[i])`` for each i, summed from the top (no cancellation)."""
    out = np.zeros_like(pmf)
    out[:-1] = np.cumsum(pmf[::-1])[::-1][1:]
    return out


def _hockey_stick(losses: FloatArray, pmf: FloatArray) -> FloatArray:
    """``E[(1 − e^(x − S))_+]`` at each x = losses[i]: the DP delta at eps = x."""
    mass = _tail(pmf)
    weighted = _tail(pmf * np.exp(-losses))
    return np.asarray(np.maximum(mass - np.exp(losses) * weighted, 0.0))


def _first_below(losses: FloatArray, curve: FloatArray, delta: float) -> float:
    """The smallest grid loss whose (decreasing) ``curve`` is <= delta."""
    return float(losses[np.flatnonzero(curve <= delta)[0]])


def composed_fixed_scale(eps: float, rounds: int, steps: int = 1000) -> ComposedLaplace:
    """k = ``rounds`` Laplace releases at level eps composed, bracketed on a grid of eps/steps."""
    k = positive_int("rounds", rounds)
    laws = []
    for round_up in (True, False):
        one = fixed_scale_pmf(eps, steps, round_up)
        law = one
        for _ in range(k - 1):
            law = np.convolve(law, one)
        laws.append(law)
    losses = np.linspace(-k * eps, k * eps, laws[0].size)
    return ComposedLaplace(float(eps), k, losses, laws[0], laws[1])


def small_eps_limit(rounds: int, delta: float) -> float:
    """c(delta) of k fixed stops as eps → 0: ``1 − 2j/k``, j the least integer with
    ``P(J <= j) > delta``, J ~ Bin(k, 1/2).

    One round's ``R_i = L_i/eps`` has an atom 1/2 at 1 and ``P(R_i <= r) = e^(−eps(1 − r)/2)/2``
    on [−1, 1): as eps → 0, R_i = ±1 with probability 1/2 each and ``R = 1 − 2J/k``, J the rounds
    at −1. That CDF falls as eps grows, so c(delta) is nondecreasing in eps: the limit is a floor.
    """
    k = positive_int("rounds", rounds)
    d = open_probability("delta", delta)
    below = 0.0
    for j in range(k + 1):
        below += math.comb(k, j) / 2.0**k
        if below > d:
            return 1.0 - 2.0 * j / k
    raise AssertionError("unreachable: P(J <= k) = 1 > delta")


@frozen
class FactorEstimate:
    """c(delta) from samples of R: the empirical value and a (1 − alpha) two-sided interval.

    The interval comes from order statistics (distribution-free, binomial counts); R <= 1 always,
    so the upper end is 1 when the sample cannot say more. No point estimate (None) when fewer
    than one exceedance is expected (trials·delta < 1).
    """

    delta: float
    estimate: float | None
    lower: float
    upper: float


@frozen
class SimulatedComposition:
    """``ratio`` (trials, k): R for the first j + 1 rounds in column j; ``hits`` (trials, k):
    whether round j ended with its loss at its ex-post bound (X <= 0)."""

    rule: str
    ratio: FloatArray
    hits: npt.NDArray[np.bool_]

    def factor(self, rounds: int, delta: float, alpha: float = 0.01) -> FactorEstimate:
        """c(delta) for ``rounds`` rounds, with a two-sided (1 − alpha) interval."""
        from scipy import stats  # lazy: `import expost` stays light

        d = open_probability("delta", delta)
        a = open_probability("alpha", alpha) / 2.0
        r = np.sort(self.ratio[:, self._column(rounds)])
        n = r.size
        estimate = float(r[n - 1 - math.floor(n * d)]) if n * d >= 1.0 else None
        # Upper: the (m+1)-th largest with P(Bin(n, d) <= m) <= a; lower: with P(Bin >= m+1) <= a.
        m_up = int(stats.binom.ppf(a, n, d)) - 1
        upper = float(r[n - 1 - m_up]) if m_up >= 0 else 1.0
        m_low = int(stats.binom.isf(a, n, d))
        lower = float(r[n - 1 - m_low]) if m_low < n else -1.0
        return FactorEstimate(d, estimate, lower, upper)

    def all_hit(self, rounds: int, alpha: float = 0.01) -> tuple[float, float]:
        """``P(R = 1)`` for ``rounds`` rounds: a Clopper–Pearson lower bound from the per-round
        hit rate raised to the k-th power (rounds are iid), and the empirical all-hit frequency."""
        k = self._column(rounds) + 1
        per_round = self.hits[:, 0]
        lower = clopper_pearson_lower(int(per_round.sum()), per_round.size, alpha) ** k
        return lower, float(np.all(self.hits[:, :k], axis=1).mean())

    def _column(self, rounds: int) -> int:
        k = positive_int("rounds", rounds)
        if k > self.ratio.shape[1]:
            raise InvalidParameter("rounds", rounds, f"must be <= {self.ratio.shape[1]}")
        return k - 1


def simulate_rounds(
    lnr: LaplaceNoiseReduction,
    value: float,
    rounds: int,
    trials: int,
    rng: np.random.Generator,
    *,
    rule: str = "",
    above: bool = True,
) -> SimulatedComposition:
    """``trials`` × ``rounds`` independent runs of ``lnr`` on ``value``, the neighbour at
    value + Δ1 (``above``) or value − Δ1.

    Each round's loss is ``(|X − Δ1| − |X|)/t`` at its stop (APC Lemma C.1), X = ±(release −
    value) (the sign putting the neighbour at +Δ1), computed as Δ1/t exactly where X <= 0 so that
    all-hit trials have R = 1 exactly.
    """
    k = positive_int("rounds", rounds)
    n = positive_int("trials", trials)
    rng = generator(rng)
    delta1 = lnr.sensitivity
    numerator = np.empty(n * k)
    bound = np.empty(n * k)
    hit = np.empty(n * k, dtype=np.bool_)
    for start in range(0, n * k, _CHUNK):
        size = min(_CHUNK, n * k - start)
        batch = lnr.run_batch(value, size, rng)
        x = (batch.value[:, 0] - value) * (1.0 if above else -1.0)
        part = slice(start, start + size)
        hit[part] = x <= 0.0
        numerator[part] = np.where(x <= 0.0, delta1, np.maximum(delta1 - 2.0 * x, -delta1))
        numerator[part] /= batch.times
        bound[part] = delta1 / batch.times
    shape = (n, k)
    ratio = np.cumsum(numerator.reshape(shape), axis=1) / np.cumsum(bound.reshape(shape), axis=1)
    return SimulatedComposition(rule, ratio, hit.reshape(shape))


def paper_rules(value: float) -> dict[str, tuple[StoppingRule, bool]]:
    """The stops measured, each with its neighbour's side (True: value + Δ1): fixed (the
    non-adaptive case), APC's relative-error rule (both sides: it stops on large releases), and
    the adversary who stops at the first release below f(x), where the loss is at its bound."""

    def release(values: FloatArray) -> FloatArray:
        return values[..., 0]

    adversary = WhenPublicUtility(release, threshold=value, at_least=False, batched=True)
    return {
        "fixed (eps = 1)": (AtIndex(15), True),
        "relative error 0.1, neighbour above": (RelativeError(0.1), True),
        "relative error 0.1, neighbour below": (RelativeError(0.1), False),
        "adversarial (y <= f(x))": (adversary, True),
    }


SCALES = np.geomspace(10.0, 0.1, 31)  # index 15 is scale 1: eps = 1
VALUE = 25.0


def measure(
    trials: int,
    seed: int,
    rounds: Sequence[int] = DEFAULT_ROUNDS,
    deltas: Sequence[float] = DEFAULT_DELTAS,
) -> list[dict[str, Any]]:
    """The slack table's rows: each rule × k × delta, simulated; fixed scales also exactly, and
    their eps → 0 limit; ``certified`` where P(R = 1) > delta forces c(delta) = 1."""
    k_max = max(positive_int("rounds", k) for k in rounds)
    rows: list[dict[str, Any]] = []
    seeds = np.random.SeedSequence(seed).spawn(len(paper_rules(VALUE)))
    for (name, (rule, above)), child in zip(paper_rules(VALUE).items(), seeds, strict=True):
        lnr = LaplaceNoiseReduction(SCALES, 1.0, rule)
        rng = np.random.default_rng(child)
        sim = simulate_rounds(lnr, VALUE, k_max, trials, rng, rule=name, above=above)
        for k in rounds:
            hit_lower, hit_freq = sim.all_hit(k)
            for delta in deltas:
                f = sim.factor(k, delta)
                rows.append({
                    "rule": name, "k": k, "delta": delta, "c": f.estimate,
                    "c_low": f.lower, "c_high": f.upper,
                    "all_hit_lower": hit_lower, "all_hit": hit_freq,
                })  # fmt: skip
    for eps in FIXED_EPS:
        for k in rounds:
            exact = composed_fixed_scale(eps, k)
            for delta in deltas:
                low, high = exact.factor(delta)
                dp_low, dp_high = exact.dp_eps(delta)
                rows.append({
                    "rule": f"fixed (eps = {eps:g}), exact", "k": k, "delta": delta,
                    "c": None, "c_low": low, "c_high": high, "all_hit_lower": 0.5**k,
                    "all_hit": 0.5**k, "dp_eps_low": dp_low, "dp_eps_high": dp_high,
                    "summed": exact.summed,
                })  # fmt: skip
    for k in rounds:
        for delta in deltas:
            limit = small_eps_limit(k, delta)
            rows.append({
                "rule": "fixed (eps → 0), limit", "k": k, "delta": delta, "c": None,
                "c_low": limit, "c_high": limit, "all_hit_lower": 0.5**k, "all_hit": 0.5**k,
            })  # fmt: skip
    for row in rows:
        row["certified"] = row["all_hit_lower"] > row["delta"]  # c(delta) = 1: P(R = 1) > delta
    return rows


CERTIFIED = (
    "† c(delta) = 1 certified: P(R = 1) > delta (simulated rules: the 99% Clopper–Pearson "
    "bound on the per-round hit rate, to the k-th power; fixed stops: 2^−k exactly)."
)


def _bracket(row: dict[str, Any]) -> str:
    point = "" if row["c"] is None else f"{row['c']:.4g} "
    mark = " †" if row["certified"] else ""
    return f"{point}[{row['c_low']:.4g}, {row['c_high']:.4g}]{mark}"


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown table of `measure`'s rows: one line per stop rule and k, a column per delta,
    then the legend of the † mark."""
    deltas = sorted({r["delta"] for r in rows}, reverse=True)
    head = ["stop rule", "k", "P(R = 1) >="]
    head += [f"c({d:g})" for d in deltas] + [f"DP eps({d:g}) / k·eps" for d in deltas]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    cells: dict[tuple[str, int], dict[float, dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["rule"], r["k"]), {})[r["delta"]] = r
    for (rule, k), by_delta in cells.items():
        first = by_delta[deltas[0]]
        line = [rule, str(k), f"{first['all_hit_lower']:.3g}"]
        line += [_bracket(by_delta[d]) for d in deltas]
        line += [
            f"[{by_delta[d]['dp_eps_low']:.4g}, {by_delta[d]['dp_eps_high']:.4g}] / "
            f"{by_delta[d]['summed']:.4g}"
            if "summed" in by_delta[d]
            else "—"
            for d in deltas
        ]
        lines.append("| " + " | ".join(line) + " |")
    return "\n".join([*lines, "", CERTIFIED])
