"""The rounding registry: every public callable that returns a guarantee parameter, with the side
its float is rounded to (issue 28; ARCHITECTURE principles 7 and 8).

A reported eps, delta, rho, mu, ψ, bound, price, cost or time-for-a-level is rounded **up**; a
budget, what remains of one, or the largest parameter a target allows is rounded **down**
(`expost.rounding`). Names are paths in the public namespace: ``"cks_delta"`` is
``expost.cks_delta``, ``"filters.gaussian_dp.gdp_price"`` is ``expost.filters.gaussian_dp.gdp_price``, a method is
``"Class.method"`` on the public class. For a method defined on a private base the entry names
each public subclass. The rounding audit (tests/test_rounding_*.py) is parametrised by these
entries, with a 50-digit mpmath reference and an input strategy for each; a test fails when a
public callable whose name or return type says it returns a guarantee parameter is missing here
(tests/rounding/test_rounding_registry.py), and docs/guarantees.md prints this table. A cost
kind's own numbers (its ``zcdp``, ``dp``, ``ex_post``) are not listed by hand: they are derived
from the table of kinds (`expost.filters.kinds.KINDS`), each described by its docstring.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

from attrs import field, frozen
from attrs.validators import in_

from expost.errors import InvalidParameter

__all__ = ["REGISTRY", "Rounded", "entry"]

Direction = Literal["up", "down"]


@frozen
class Rounded:
    """One registered callable: its public ``name``, the safe ``direction`` of what it returns,
    and ``what`` it returns (the parameter and how it is put on the safe side)."""

    name: str
    direction: Direction = field(validator=in_(("up", "down")))
    what: str

    @property
    def up(self) -> bool:
        """Rounded up (else down)."""
        return self.direction == "up"

    def resolve(self) -> object:
        """The callable itself, looked up from ``expost`` (its modules, then attributes)."""
        obj: object = importlib.import_module("expost")
        parts = self.name.split(".")
        for k, part in enumerate(parts):
            if not hasattr(obj, part):
                obj = importlib.import_module(".".join(["expost", *parts[: k + 1]]))
            else:
                obj = getattr(obj, part)
        return obj


_UP: Direction = "up"
_DOWN: Direction = "down"
_TABLE: tuple[tuple[str, Direction, str], ...] = (
    # --- conversions and compositions (guarantees.py)
    ("zcdp_to_dp", _UP, "eps (exact Bun–Steinke check), delta (up_exact)"),
    ("cks_zcdp_to_dp", _UP, "eps: smallest float passing the CKS interval check; delta up_exact"),
    ("cks_delta", _UP, "CKS delta at the float order, interval exp, >= 2^-1074"),
    ("rho_for_dp", _DOWN, "rho*: largest float passing the exact Bun–Steinke check"),
    ("cks_rho_for_dp", _DOWN, "rho: largest float passing the CKS interval check"),
    ("dp_to_zcdp", _UP, "rho = eps²/2 up_exact"),
    ("guarantees.rho_of_eps", _UP, "eps²/2 up_exact"),
    ("dp_to_pdp", _UP, "pDP delta: exact ratio with e^eps bounded below"),
    ("pdp_to_dp", _UP, "the same (eps, delta): no arithmetic"),
    ("compose_zcdp", _UP, "rho and delta sums, sum_up"),
    ("compose_ex_post", _UP, "bound and delta sums, sum_up"),
    ("guarantees.gdp_delta", _UP, "delta_mu(eps): float value, relative margin 1e-6 + 2 ulps"),
    ("guarantees.gdp_mu_for_dp", _DOWN, "mu: largest float with gdp_delta <= delta"),
    ("GaussianDP.eps_for", _UP, "eps: smallest float with gdp_delta <= delta"),
    ("GaussianDP.to_dp", _UP, "delta = gdp_delta"),
    # --- privacy losses (loss.py, Skellam)
    ("GaussianLoss.delta_for_eps", _UP, "hockey stick, precision doubling"),
    ("GaussianLoss.eps_for_delta", _UP, "root nudged up to the rounded-up profile"),
    ("GaussianLoss.renyi", _UP, "alpha·rho up_exact"),
    ("GaussianLoss.from_mechanism", _UP, "rho = Δ²/(2σ²) up_exact"),
    ("BrownianLoss.rho", _UP, "Δ²/(2t) up_exact"),
    ("BrownianLoss.delta_for_eps", _UP, "delegates to GaussianLoss"),
    ("BrownianLoss.eps_for_delta", _UP, "delegates to GaussianLoss"),
    ("BrownianLoss.renyi", _UP, "delegates to GaussianLoss"),
    ("LaplaceLoss.eps", _UP, "distance/scale up_exact"),
    ("LaplaceLoss.from_eps", _UP, "the loss at a given eps: stored"),
    ("LaplaceLoss.delta_for_eps", _UP, "1 − e^(−(ε − eps)/2), precision doubling"),
    ("LaplaceLoss.eps_for_delta", _UP, "root nudged up"),
    ("LaplaceLoss.renyi", _UP, "precision doubling"),
    ("LaplaceNoiseReductionLoss.ex_post_bound", _UP, "distance/scale up_exact"),
    ("LaplaceNoiseReductionLoss.delta_for_eps", _UP, "delegates to LaplaceLoss"),
    ("LaplaceNoiseReductionLoss.eps_for_delta", _UP, "delegates to LaplaceLoss"),
    ("LaplaceNoiseReductionLoss.renyi", _UP, "delegates to LaplaceLoss"),
    ("loss.eps_for_delta_of", _UP, "any profile's root nudged up"),
    ("loss.rho_of_sigma", _UP, "Δ²/(2σ²) up_exact"),
    ("SkellamLoss.delta_for_eps", _UP, "hockey stick in mpmath, tails bounded, >= 2^-1074"),
    ("SkellamLoss.eps_for_delta", _UP, "root nudged up"),
    ("SkellamLoss.renyi", _UP, "precision doubling, tails bounded"),
    ("skellam.akl_renyi", _UP, "AKL bound up_exact"),
    ("skellam.akl_eps_for_delta", _UP, "Mironov conversion: log up 2 ulps, exact sums"),
    # --- boundaries and grids
    ("LineCrossing.__call__", _UP, "a·v + b, proven ulps"),
    ("NormalMixture.__call__", _UP, "two-sided mixture, proven ulps"),
    ("FACStitched.__call__", _UP, "FAC Thm 3's stitched g, proven ulps (intervals off range)"),
    (
        "PolynomialStitching.__call__",
        _UP,
        "Howard et al.'s stitching, proven ulps (else intervals)",
    ),
    ("LineCrossing.bound", _UP, "its __call__'s g on checked points"),
    ("NormalMixture.bound", _UP, "its __call__'s g on checked points"),
    ("FACStitched.bound", _UP, "its __call__'s g on checked points"),
    ("PolynomialStitching.bound", _UP, "its __call__'s g on checked points"),
    ("SkellamPrivacyBoundary.__call__", _UP, "Skellam ψ: nextafter(ψ + stated log-pmf margin)"),
    ("apc_psi", _UP, "proven ulps"),
    ("LineCrossing.delta", _UP, "exp(−2ab), 2 ulps"),
    ("LineCrossing.for_delta", _UP, "b = log(1/delta)/(2a), 2 ulps"),
    ("LinearPrivacyBoundary.__call__", _UP, "ψ(t), proven ulps"),
    ("LinearPrivacyBoundary.delta", _UP, "its line's delta"),
    ("LinearPrivacyBoundary.from_delta", _UP, "its line's b (LineCrossing.for_delta)"),
    ("LinearPrivacyBoundary.time_for", _UP, "a time with ψ(t) <= level: nudged up"),
    ("LinearPrivacyBoundary.times_for", _UP, "time_for at each level (one closed form)"),
    ("MixturePrivacyBoundary.__call__", _UP, "ψ(t), proven ulps"),
    ("MixturePrivacyBoundary.time_for", _UP, "a time with ψ(t) <= level: nudged up"),
    ("MixturePrivacyBoundary.times_for", _UP, "time_for at each level"),
    ("SkellamPrivacyBoundary.time_for", _UP, "bisection's end: a time with ψ(t) <= level"),
    ("TimeGrid.from_boundary", _UP, "times with ψ <= each level"),
    ("TimeGrid.rho_for", _UP, "Δ²/(2t), proven ulps"),
    ("TimeGrid.max_rho_for", _UP, "Δ²/(2·t_min), proven ulps"),
    ("TimeGrid.eps_for", _UP, "Δ/sqrt(t), proven ulps"),
    ("EpsilonGrid.rho", _UP, "eps²/2: halving, exact"),
    ("EpsilonGrid.max_rho", _UP, "the last eps²/2: halving, exact"),
    ("EpsilonGrid.clip", _DOWN, "keeps points with eps² <= max_eps² exactly"),
    ("OpenEpsilonGrid.clip", _DOWN, "ends at the largest float <= max_eps²"),
    ("OpenEpsilonGrid.clip_each", _DOWN, "ends at the largest float <= max_eps²"),
    # --- odometers
    ("FilterOdometer.bound", _UP, "the line at the realised V"),
    ("FilterOdometer.bound_at", _UP, "the line at V, proven ulps"),
    ("MixtureOdometer.bound", _UP, "bound_at at the realised V"),
    ("MixtureOdometer.bound_at", _UP, "mixture bound, proven ulps"),
    ("StitchedOdometer.bound", _UP, "bound_at at the realised V"),
    ("StitchedOdometer.bound_at", _UP, "stitched bound, proven ulps"),
    ("BrownianOdometer.psi", _UP, "apc_psi"),
    ("BrownianOdometer.bound_at", _UP, "V/2 + ψ(V)"),
    ("BrownianOdometer.bound_from_times", _UP, "bound_at of the summed privacy times"),
    # --- the cost model (expost.costs): the base's derivations; each kind's own: `_kinds`
    ("costs.Mechanism.zcdp", _UP, "derived: rho_of_eps(eps) of dp(), its delta"),
    ("costs.Mechanism.dp", _UP, "None unless a cost states it"),
    ("costs.Mechanism.ex_post", _UP, "derived: dp()"),
    ("costs.domination.profile_bounds", _UP, "upper: the float sum + its error; lower: - it"),
    ("filters.gaussian_dp.pure_dp_mu_squared", _UP, "mu(eps)² with margin, up_exact"),
    # --- filters: prices, budgets, guarantees
    ("filters.zcdp.zcdp_price", _UP, "rho and delta of a round, up_exact / rho_of_eps"),
    (
        "filters.gaussian_dp.gdp_price",
        _UP,
        "mu² of a round: 2·rho exact, mu(eps)² with margin up_exact",
    ),
    ("filters.gaussian_dp.pure_dp_mu", _UP, "mu(eps) by scipy: the price adds a 2^-40 margin"),
    ("filters.Filter.price", _UP, "the subclass's price"),
    ("filters.Filter.spent", _UP, "exact sum, sum_up"),
    ("filters.Filter.remaining", _DOWN, "exact difference, sum_down"),
    ("filters.Filter.budget", _DOWN, "abstract: the subclass's budget"),
    ("filters.Filter.delta_budget", _DOWN, "abstract: the subclass's delta budget"),
    ("filters.Filter.guarantee", _UP, "abstract: the subclass's guarantee"),
    ("filters.Filter.reported_guarantee", _UP, "guarantee() unless overridden"),
    ("filters.Filter.max_bm_eps", _DOWN, "None: no BM pricing"),
    ("filters.Filter.min_bm_time", _UP, "None: no BM pricing"),
    (
        "filters.base.BrownianPricedFilter.max_bm_eps",
        _DOWN,
        "largest admitted eps (bounded search)",
    ),
    (
        "filters.base.BrownianPricedFilter.min_bm_time",
        _UP,
        "smallest admitted time (bounded search)",
    ),
    ("ZCDPFilter.budget", _DOWN, "rho: stored"),
    ("ZCDPFilter.delta_budget", _DOWN, "delta: stored"),
    ("ZCDPFilter.guarantee", _UP, "ZCDP(rho, delta): stored"),
    ("UnifiedFilter.from_dp", _DOWN, "rho = rho_for_dp / cks_rho_for_dp"),
    ("UnifiedFilter.budget", _DOWN, "rho: stored"),
    ("UnifiedFilter.delta_budget", _DOWN, "delta: stored"),
    ("UnifiedFilter.guarantee", _UP, "ZCDP(rho, delta): stored"),
    ("UnifiedFilter.dp_guarantee", _UP, "zcdp_to_dp / cks_zcdp_to_dp"),
    ("UnifiedFilter.reported_guarantee", _UP, "dp_guarantee"),
    ("ApproxDPFilter.budget", _DOWN, "rho_budget"),
    ("ApproxDPFilter.rho_budget", _DOWN, "rho_for_dp"),
    ("ApproxDPFilter.delta_budget", _DOWN, "delta': stored"),
    ("ApproxDPFilter.guarantee", _UP, "(eps, delta' + delta''): stored eps, delta up_exact"),
    ("ExPostFilter.budget", _DOWN, "eps: stored"),
    ("ExPostFilter.delta_budget", _DOWN, "delta: stored"),
    ("ExPostFilter.guarantee", _UP, "stored"),
    ("BrownianFilter.budget", _DOWN, "rho: stored"),
    ("BrownianFilter.delta_budget", _DOWN, "delta: stored"),
    ("BrownianFilter.guarantee", _UP, "stored"),
    ("GaussianDPFilter.from_dp", _DOWN, "mu = gdp_mu_for_dp"),
    ("GaussianDPFilter.budget", _DOWN, "mu² down_ratio"),
    ("GaussianDPFilter.delta_budget", _DOWN, "0.0"),
    ("GaussianDPFilter.guarantee", _UP, "GaussianDP(mu): stored"),
    ("GaussianDPFilter.reported_guarantee", _UP, "the stored target, checked against gdp_delta"),
    ("PLDFilter.budget", _DOWN, "K rounds: k·mu² <= gdp_mu_for_dp² exactly, or pld.max_rounds"),
    ("PLDFilter.delta_budget", _DOWN, "0.0"),
    ("PLDFilter.guarantee", _UP, "ApproxDP(eps, delta): stored"),
    ("PLDFilter.price", _UP, "(1 round, 0): exact"),
    ("PLDFilter.remaining", _DOWN, "K − rounds (Filter.remaining); inf before the first round"),
    ("ConcurrentFilter.price", _UP, "the parts' prices"),
    ("ConcurrentFilter.spent", _UP, "the parts' spends"),
    ("ConcurrentFilter.remaining", _DOWN, "the parts' remainders"),
    ("ConcurrentFilter.guarantee", _UP, "sums of the parts' guarantees, sum_up"),
    ("ConcurrentFilter.reported_guarantee", _UP, "guarantee"),
    ("ConcurrentFilter.max_bm_eps", _DOWN, "smallest of the parts'"),
    ("ConcurrentFilter.min_bm_time", _UP, "largest of the parts'"),
    ("filters.rdp.rdp_price", _UP, "ε_α of a round: α·rho up_exact; the renyi curves"),
    ("RDPFilter.prices", _UP, "rdp_price at each order"),
    ("RDPFilter.price", _UP, "rdp_price at the best order, delta 0"),
    ("RDPFilter.budgets", _DOWN, "eps − log(k/delta)/(α−1): share down, tail up"),
    ("RDPFilter.spent_by_order", _UP, "exact sums per order, up_exact"),
    ("RDPFilter.remaining_by_order", _DOWN, "budget − exact sum per order, down_exact"),
    ("RDPFilter.spent", _UP, "min over α of exact sum + tail (rounded up), up_exact"),
    ("RDPFilter.remaining", _DOWN, "remaining_by_order at the best order"),
    ("RDPFilter.guarantee", _UP, "ApproxDP(eps, delta): stored"),
    ("RDPFilter.reported_guarantee", _UP, "guarantee"),
    ("RDPFilter.max_bm_eps", _DOWN, "largest admitted eps (bounded search)"),
    ("RDPFilter.min_bm_time", _UP, "smallest admitted time (bounded search)"),
    ("RenyiFilter.budget", _DOWN, "CKS budget at one order: interval lower end, down_mp"),
    ("RenyiFilter.delta_budget", _DOWN, "0.0"),
    ("RenyiFilter.guarantee", _UP, "ApproxDP(eps, delta): stored"),
    ("apps.batch_budget.BatchBudget.remaining", _DOWN, "float bound with the error term"),
    ("apps.batch_budget.BatchBudget.max_bm_eps", _DOWN, "largest admitted eps (bounded search)"),
    # --- mechanisms: costs and guarantees
    ("GaussianMechanism.cost", _UP, "GaussianCost(rho): stored; exact: ZCDPCost(rho up_exact)"),
    ("GaussianMechanism.guarantee", _UP, "ZCDP(rho): stored; exact: rho up_exact"),
    ("GaussianMechanism.delta_for_eps", _UP, "GaussianLoss; exact: discrete_gaussian_delta"),
    ("GaussianMechanism.eps_for_delta", _UP, "GaussianLoss; exact: discrete_gaussian_eps"),
    ("LaplaceMechanism.cost", _UP, "DPCost(eps): stored; exact: eps up_exact"),
    ("LaplaceMechanism.guarantee", _UP, "PureDP(eps): stored; exact: eps up_exact"),
    (
        "LaplaceMechanism.cost_for",
        _UP,
        "scalar: LaplaceCost(eps) stored (float), DiscreteLaplaceCost(eps up_exact) (exact); else cost",
    ),
    (
        "GaussianMechanism.cost_for",
        _UP,
        "exact scalar: DiscreteGaussianCost(rho up_exact); else cost",
    ),
    (
        "mechanisms.SubsampledGaussianMechanism.cost",
        _UP,
        "SubsampledGaussianCost.from_sigma: rho = 1/(2σ²) up_exact",
    ),
    ("mechanisms.SubsampledGaussianMechanism.guarantee", _UP, "ZCDP(cost().rho)"),
    ("mechanisms.discrete_gaussian_dp.discrete_gaussian_delta", _UP, "error-bounded sum, up_mp"),
    ("mechanisms.discrete_gaussian_dp.discrete_gaussian_eps", _UP, "root nudged up"),
    ("PermuteAndFlip.cost", _UP, "DPCost(eps) up_exact"),
    ("PermuteAndFlip.guarantee", _UP, "PureDP(eps) up_exact"),
    ("ExponentialMechanism.cost", _UP, "BoundedRangeCost(eps or 2eps) up_exact"),
    ("ExponentialMechanism.guarantee", _UP, "ZCDP(eps²/8) up_exact"),
    ("ExponentialMechanism.dp_guarantee", _UP, "PureDP(eps or 2eps) up_exact"),
    ("AboveThreshold.cost", _UP, "DPCost(eps): stored (float), up_exact (exact)"),
    ("AboveThreshold.guarantee", _UP, "PureDP(eps): stored (float), up_exact (exact)"),
    ("ReducedAboveThreshold.brownian_cost", _UP, "ExPostCost(2ψ(t_min)): doubling is exact"),
    ("mechanisms.ReducedAboveThresholdResult.cost", _UP, "ExPostCost(level): stored"),
    ("mechanisms.ReducedAboveThresholdResult.ex_post", _UP, "ExPost(level): stored"),
    ("DoublingMethod.cost", _UP, "Gaussian/ZCDPCost Σ eps_i²/2 prefix_sums_up"),
    ("DoublingMethod.guarantee", _UP, "the method's worst case"),
    ("BrownianNoiseReduction.cost", _UP, "BrownianCost(t_min): stored"),
    ("BrownianNoiseReduction.cost_at", _UP, "BrownianCost(t) with ψ(t)"),
    ("BrownianNoiseReduction.guarantee", _UP, "Δ²/(2·t_min) up_exact"),
    ("LaplaceNoiseReduction.cost", _UP, "cost_at(t_min)"),
    ("LaplaceNoiseReduction.cost_at", _UP, "ExPostCost(Δ1/scale, eps_max = Δ1/t_min), 1 ulp up"),
    ("LaplaceNoiseReduction.guarantee", _UP, "PureDP(Δ1/t_min), 1 ulp up"),
    ("LaplaceNoiseReduction.ex_post_bounds", _UP, "Δ1/t of each scale, 1 ulp up"),
    ("SkellamNoiseReduction.cost", _UP, "ExPostCost of the Skellam boundary"),
    ("SkellamNoiseReduction.cost_at", _UP, "ExPostCost(ψ(t))"),
    ("SkellamNoiseReduction.fixed_cost", _UP, "DPCost: SkellamLoss / AKL eps, up"),
    # --- RDP curves of mechanisms (THEORY §12)
    ("rdp_curves.pure_dp_renyi", _UP, "randomised response's ε_α: interval, up_mp; <= αeps²/2"),
    ("rdp_curves.laplace_renyi", _UP, "Mironov 2017 Prop 6: interval, up_mp; <= pure_dp_renyi"),
    ("rdp_curves.subsampled_gaussian_renyi", _UP, "MTZ 2019 sum / convexity line: interval, up_mp"),
    # --- ex-post RDP (THEORY §11)
    ("ex_post_rdp.markov_bound", _UP, "ε_α + log(1/delta)/(α−1): log up 2 ulps, up_exact"),
    ("filters.rdp.ex_post_rdp_of", _UP, "rho = Δ²/(2t) up (Brownian); else the stored cost"),
    ("ExPostRDP.eps", _UP, "α·rho up_exact; pure or tabled value: stored"),
    ("ExPostRDP.of_rho", _UP, "rho: stored"),
    ("ExPostRDP.of_pure", _UP, "eps: stored"),
    ("ExPostRDP.of_orders", _UP, "the table: stored"),
    ("ExPostRDP.sup", _UP, "max of stored values, or of eps at each order"),
    ("ExPostRDP.probabilistic", _UP, "min over orders of markov_bound at delta/k rounded down"),
    ("ExPostRDP.pure_ex_post", _UP, "ExPost(pure): stored"),
    ("Transcript.ex_post_rdp", _UP, "ex_post_rdp_of its cost"),
    ("DoublingTranscript.ex_post_rdp", _UP, "of_rho of its cost's rho (rounded up when priced)"),
    ("apps.erm.ValidationCheck.charge", _UP, "ex_post_rdp_of a BrownianCost"),
    ("apps.erm.ValidationCheck.rho", _UP, "Δ²/(2τ) up (charge's rho)"),
    ("rounds.result_cost", _UP, "the realised cost the mechanism's result reports: stored"),
    ("PrivateSession.spent", _UP, "the filter's spent"),
    ("PrivateSession.remaining", _DOWN, "the filter's remaining"),
    ("PrivateSession.guarantee", _UP, "the filter's reported guarantee"),
    ("PrivateSession.privacy_spent", _UP, "privacy_spent of the session's filter"),
    ("privacy_spent.privacy_spent", _UP, "PLD eps, GaussianDP.eps_for, CKS up_iv, cks_zcdp_to_dp"),
    ("apps.lnr_composition.ComposedLaplace.dp_eps", _UP, "a bracket (lower, upper): upper up"),
    # --- privacy loss distributions (THEORY §12)
    ("pld.discrete.DiscreteLoss.delta", _UP, "Σ m·(1 − e^(ε−l))_+ with e^x down, + ∞-mass + error"),
    ("pld.discrete.DiscreteLoss.eps", _UP, "smallest float with the delta above <= target"),
    ("PrivacyLossDistribution.delta", _UP, "max of the directions' DiscreteLoss.delta"),
    ("PrivacyLossDistribution.eps", _UP, "max of the directions' DiscreteLoss.eps"),
    ("pld.max_rounds", _DOWN, "a count whose composed delta (up) is within the target"),
    (
        "pld.discrete.DiscreteLoss.delta_lower",
        _DOWN,
        "optimistic law: e^x up, products down − error",
    ),
    ("pld.discrete.DiscreteLoss.eps_lower", _DOWN, "largest float with delta_lower > target"),
    ("PrivacyLossDistribution.delta_bracket", _UP, "a bracket (lower, upper): upper = delta"),
    ("PrivacyLossDistribution.eps_bracket", _UP, "a bracket (lower, upper): upper = eps"),
    ("apps.learning.accounting.steps_eps", _UP, "PrivacyLossDistribution.eps of the steps"),
    ("apps.learning.ex_post_rdp_eps", _UP, "ExPostRDP.probabilistic of sum_up of Unit.rdp"),
    ("realised_privacy.CountingGrid.reported", _UP, "PrivacyLossDistribution.eps at δ_j (down)"),
)


def _public_name(cls: Any) -> str:
    """``cls``'s path in the public namespace: under the first package on its module's path
    whose ``__all__`` lists it (``PoissonSampled``, ``costs.Composed``,
    ``filters.costs.DiscreteLaplaceCost``)."""
    parts = cls.__module__.split(".")
    for k in range(1, len(parts) + 1):
        if cls.__name__ in getattr(importlib.import_module(".".join(parts[:k])), "__all__", ()):
            return ".".join([*parts[1:k], cls.__name__])
    raise InvalidParameter("cls", cls.__name__, "must be exported by a public module")


def _kinds() -> tuple[tuple[str, Direction, str], ...]:
    """Each cost kind's own numbers, from the table of kinds (`expost.filters.kinds.KINDS`):
    every representation a kind's class defines itself and answers with a `Price` (``zcdp``:
    rho; ``dp``: eps; ``ex_post``: a bound; each with its delta) is an upper bound, rounded up
    as its docstring says. Derived, so adding a kind (one row) registers its numbers."""
    from expost.costs.model import REPRESENTATIONS
    from expost.filters.kinds import KINDS

    out: list[tuple[str, Direction, str]] = []
    for kind in KINDS.values():
        if kind.legacy:
            continue
        for name in REPRESENTATIONS:
            method = vars(kind.make).get(name)
            if method is None or "Price" not in str(method.__annotations__.get("return")):
                continue
            what = " ".join((method.__doc__ or "").split("\n\n")[0].split())
            out.append((f"{_public_name(kind.make)}.{name}", _UP, what))
    return tuple(out)


REGISTRY: tuple[Rounded, ...] = tuple(Rounded(n, d, w) for n, d, w in _TABLE + _kinds())


def entry(name: str) -> Rounded:
    """The registered entry called ``name``; `InvalidParameter` if there is none."""
    for e in REGISTRY:
        if e.name == name:
            return e
    raise InvalidParameter("name", name, "is not in the rounding registry")
