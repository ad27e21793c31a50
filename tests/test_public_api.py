"""The public surface: ``expost.__all__`` is pinned, resolvable, and is what the API reference lists."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import expost

ROOT = Path(__file__).resolve().parents[1]

PUBLIC = [
    "ZCDP",
    "AboveThreshold",
    "ApproxDP",
    "ApproxDPFilter",
    "AtIndex",
    "BatchTranscript",
    "Boundary",
    "BoundedRangeCost",
    "BrownianCost",
    "BrownianFilter",
    "BrownianLoss",
    "BrownianNoiseReduction",
    "BrownianOdometer",
    "BudgetExceeded",
    "ConcurrentFilter",
    "Cost",
    "DPCost",
    "DoublingMethod",
    "DoublingTranscript",
    "EpsilonGrid",
    "ExPost",
    "ExPostRDP",
    "ExPostCost",
    "ExPostFilter",
    "ExponentialMechanism",
    "ExpostError",
    "FACStitched",
    "FilterOdometer",
    "GaussianCost",
    "GaussianDP",
    "GaussianDPFilter",
    "GaussianLoss",
    "GaussianMechanism",
    "Guarantee",
    "InvalidParameter",
    "LaplaceLoss",
    "LaplaceMechanism",
    "LaplaceNoiseReduction",
    "LaplaceNoiseReductionLoss",
    "Ledger",
    "LedgerCorrupted",
    "LedgerError",
    "LedgerMismatch",
    "LedgerNotFound",
    "LineCrossing",
    "LinearPrivacyBoundary",
    "MemorylessRule",
    "MixtureOdometer",
    "MixturePrivacyBoundary",
    "Never",
    "NormalMixture",
    "NotAStoppingTime",
    "NotCopyable",
    "OpenEpsilonGrid",
    "PLDFilter",
    "PolynomialStitching",
    "PrivacyBoundary",
    "PrivacyFilter",
    "PrivacyLoss",
    "PrivacyLossDistribution",
    "PrivateSession",
    "ProbabilisticDP",
    "PureDP",
    "RDPFilter",
    "ReducedAboveThreshold",
    "RelativeError",
    "Released",
    "RenyiFilter",
    "Round",
    "SkellamLoss",
    "SkellamNoiseReduction",
    "SkellamPrivacyBoundary",
    "StitchedOdometer",
    "StoppingRule",
    "TimeGrid",
    "Transcript",
    "UnifiedFilter",
    "WhenPublicUtility",
    "ZCDPCost",
    "ZCDPFilter",
    "__version__",
    "apc_psi",
    "cks_delta",
    "cks_rho_for_dp",
    "cks_zcdp_to_dp",
    "compose_ex_post",
    "compose_zcdp",
    "dp_to_pdp",
    "dp_to_zcdp",
    "pdp_to_dp",
    "rho_for_dp",
    "stopping",
    "zcdp_to_dp",
    "GeneratorBits",
    "SecureBits",
    "exact",
    "PermuteAndFlip",
]


def test_the_public_surface_is_pinned() -> None:
    assert sorted(expost.__all__) == sorted(PUBLIC)
    assert len(set(expost.__all__)) == len(expost.__all__)


MAX_PUBLIC = 97
"""Issue 28: at most 95 curated top-level names; a new one replaces one or goes in its module.
Issue 42 adds `RDPFilter` (every filter the docs name is importable from ``expost``)."""


def test_the_top_level_stays_curated() -> None:
    assert len(expost.__all__) <= MAX_PUBLIC, f"{len(expost.__all__)} names > {MAX_PUBLIC}"


def test_every_public_name_resolves() -> None:
    assert all(hasattr(expost, name) for name in PUBLIC)
    defined = {n for n in vars(expost) if not n.startswith("_")}
    assert set(PUBLIC) - {"__version__"} <= defined


def test_engine_internals_stay_importable_from_their_modules() -> None:
    from expost.audit import clopper_pearson_lower
    from expost.ledger import LedgerEntry
    from expost.processes import sample_brownian_grid
    from expost.stopping import first_stops

    internals = (clopper_pearson_lower, LedgerEntry, sample_brownian_grid, first_stops)
    assert all(callable(x) for x in internals)
    assert not {x.__name__ for x in internals} & set(expost.__all__)


def test_the_api_reference_is_generated_from_the_public_surface() -> None:
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs/gen_api.py")
    assert spec is not None
    assert spec.loader is not None
    gen_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_api)
    page = (ROOT / "docs/api.md").read_text(encoding="utf-8")
    assert page == gen_api.render(), "docs/api.md is stale: run python docs/gen_api.py docs/api.md"
    listed = {line.removeprefix("::: expost.").strip() for line in page.splitlines()}
    for name in PUBLIC:
        if name not in ("__version__", "stopping", "exact"):
            assert name in listed, name
