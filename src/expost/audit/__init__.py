"""Statistical audits of probabilistic claims, with planted-bug twins (ARCHITECTURE, "Statistical audits").

How an audit is written
-----------------------
An `Audit` is a claim plus a seeded, vectorised simulator::

    from functools import partial
    from expost.audit import Audit, ProbabilityClaim, Twin, register

    def exceeds(delta, n, rng):                  # n runs -> n booleans (event happened?)
        loss, bound = ...                        # vectorised over the n runs, rng only
        return loss > bound

    @register("quick", "paper")                  # suites this audit belongs to
    def my_bound(suite: str) -> Audit:           # called when the suite is built
        return Audit(
            name="my-bound",                     # unique in the suite; used by --only
            source="BNR Thm 3.6",                # where the claim is stated
            statement="P(L > psi(T)) <= 0.05",   # the claim in words (the report's "claim")
            claim=ProbabilityClaim(0.05),
            simulate=partial(exceeds, 0.05),     # simulate(n, rng) -> samples
            n=20_000 if suite == "quick" else 1_000_000,
            twin=Twin("my-bound/delta-over-10", ProbabilityClaim(0.005)),  # must be refuted
            # expected="refuted" for a printed statement that is supposed to fail
        )

Claims and what ``simulate(n, rng)`` returns (n rows):

- `ProbabilityClaim(delta)`: n booleans; exact one-sided binomial (Clopper–Pearson) test.
- `EValueClaim(bound=1.0)`: n nonnegative floats; betting test, valid under heavy tails.
- `DPClaim(eps)`: shape (n, 2), a scalar output under x and under x'; distinguishing test.
- `ImportanceClaim(delta, weight_bound, proposal, quantity="P(event)")`: n floats ``w·1{event}``
  (or ``w·h``, h ∈ [0, 1] a function of the run, e.g. a hockey-stick integrand) from runs drawn
  under a proposal law (w = dP/dQ), each checked to lie in [0, weight_bound] (a sample above it
  refutes the claim); betting confidence bounds (Waudby-Smith & Ramdas 2023) on their mean.
  For claims at deployment deltas (1e-6 … 1e-12): register them with ``@register_at_deltas("deploy", "deploy-quick")`` on
  ``def f(suite, delta)``, names ending in `delta_tag` (``expost audit --suite deploy
  [--delta D]``).

Each test has false-alarm level ``alpha_audit`` (default 1e-6) and reports a lower confidence
bound on the audited quantity (probability, mean, eps); the claim is refuted iff the bound
exceeds the claimed value. A `Twin` is the planted bug: a wrong claim about the same runs
(``simulate=None``) or a wrong mechanism (its own simulator); the suite fails unless it is refuted.
Every registered audit must have one.

Rules for simulators: randomness only from the ``rng`` argument; vectorised over the n runs; a
module-level function or a ``functools.partial`` of one (so ``--workers N`` can pickle it).
Runs are drawn in chunks of ``Audit.chunk_size`` with generators from
``audit_seed(seed, name).spawn(chunks)`` (a SeedSequence of the seed and a SHA-256 digest of the
name, the same in every process): results are bit-identical for a seed whatever
``--workers`` is, and an audit draws the same runs alone (``--only``) or in its suite.

Where audits live: this package is the framework (``core``: audits and running them,
``verdict``, ``claims``, ``rare_event``, ``tilting``, ``report``, ``registry``; ``_shared``: the
papers' mechanisms, neighbours and exact losses that audits share; the command is
`expost.cli.audit`). The audits live in two rooms, imported when a suite is built
(`default_registry`): ``expost.audit.paper`` (the papers' claims at their deltas: ``quick``,
``paper``) and ``expost.audit.deploy`` (deployment deltas: ``deploy``, ``deploy-quick``); adding
``expost/audit/paper/apc.py`` with ``@register(...)`` factories is all it takes. A downstream
project registers its own audits in its own module and runs
``expost audit --module its.module --suite its-suite``. Run them from Python with `run_audits` (an `AuditReport`: ``.table()``, ``.to_json()``,
``.exit_code``), or from the shell with ``expost audit [--suite quick|paper] [--only NAME]
[--json FILE] [--seed S] [--workers N]`` (exit 0 all as expected, 1 otherwise, 2 bad usage).
"""

from __future__ import annotations

from expost.audit.claims import DPClaim, EValueClaim, ProbabilityClaim
from expost.audit.core import ALPHA_AUDIT, Audit, Simulator, Twin, audit_seed, run_audit, run_audits
from expost.audit.rare_event import ImportanceClaim, betting_bounds, effective_sample_size
from expost.audit.registry import (
    DEPLOY,
    DEPLOY_DELTAS,
    DEPLOY_QUICK,
    PAPER,
    QUICK,
    REGISTRY,
    Registry,
    default_registry,
    delta_tag,
    register,
    register_at_deltas,
)
from expost.audit.report import AuditReport, AuditResult, TwinResult
from expost.audit.verdict import Claim, Verdict
from expost.confidence import clopper_pearson_lower, clopper_pearson_upper, eps_lower_bound

__all__ = [
    "ALPHA_AUDIT",
    "DEPLOY",
    "DEPLOY_DELTAS",
    "DEPLOY_QUICK",
    "PAPER",
    "QUICK",
    "REGISTRY",
    "Audit",
    "AuditReport",
    "AuditResult",
    "Claim",
    "DPClaim",
    "EValueClaim",
    "ImportanceClaim",
    "ProbabilityClaim",
    "Registry",
    "Simulator",
    "Twin",
    "TwinResult",
    "Verdict",
    "audit_seed",
    "betting_bounds",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "default_registry",
    "delta_tag",
    "effective_sample_size",
    "eps_lower_bound",
    "register",
    "register_at_deltas",
    "run_audit",
    "run_audits",
]
