"""expost: accuracy-first differential privacy.

Noise-reduction mechanisms with ex-post guarantees, fully adaptive privacy filters and
odometers, symbolic proofs of every closed form and statistical audits of every claim.
The math and its sources are in THEORY.md and the docs' theory map; ``expost prove``
checks the closed forms.

``__all__`` is the curated surface a user of the README, the tutorial and the docs needs.
Engine internals (batch engines, path samplers, the audit machinery) stay importable from
their modules: ``expost.processes``, ``expost.stopping``, ``expost.audit``, ``expost.testing``.

``import expost`` loads only the error types (`expost.errors`): every other name, and every
submodule (``expost.filters``), is imported on first use (`__getattr__`, PEP 562), so a script
pays for what it uses, and ``import expost`` stays below 2.5× ``import numpy``
(benchmarks/bench_import.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from expost.errors import (
    BudgetExceeded,
    ExpostError,
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
    LedgerNotFound,
    NotAStoppingTime,
    NotCopyable,
)

if TYPE_CHECKING:  # what the names below are, for type checkers; at run time: `__getattr__`
    from expost import exact, stopping
    from expost.boundaries import (
        Boundary,
        FACStitched,
        LinearPrivacyBoundary,
        LineCrossing,
        MixturePrivacyBoundary,
        NormalMixture,
        PolynomialStitching,
        PrivacyBoundary,
        apc_psi,
    )
    from expost.ex_post_rdp import ExPostRDP
    from expost.exact import GeneratorBits, SecureBits
    from expost.filters import (
        ApproxDPFilter,
        BoundedRangeCost,
        BrownianCost,
        BrownianFilter,
        ConcurrentFilter,
        Cost,
        DPCost,
        ExPostCost,
        ExPostFilter,
        GaussianCost,
        GaussianDPFilter,
        PLDFilter,
        PrivacyFilter,
        RDPFilter,
        RenyiFilter,
        UnifiedFilter,
        ZCDPCost,
        ZCDPFilter,
    )
    from expost.grids import EpsilonGrid, OpenEpsilonGrid, TimeGrid
    from expost.guarantees import (
        ZCDP,
        ApproxDP,
        ExPost,
        GaussianDP,
        Guarantee,
        ProbabilisticDP,
        PureDP,
        cks_delta,
        cks_rho_for_dp,
        cks_zcdp_to_dp,
        compose_ex_post,
        compose_zcdp,
        dp_to_pdp,
        dp_to_zcdp,
        pdp_to_dp,
        rho_for_dp,
        zcdp_to_dp,
    )
    from expost.ledger import Ledger
    from expost.loss import (
        BrownianLoss,
        GaussianLoss,
        LaplaceLoss,
        LaplaceNoiseReductionLoss,
        PrivacyLoss,
    )
    from expost.mechanisms import (
        AboveThreshold,
        BatchTranscript,
        BrownianNoiseReduction,
        DoublingMethod,
        DoublingTranscript,
        ExponentialMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        LaplaceNoiseReduction,
        ReducedAboveThreshold,
        SkellamNoiseReduction,
        Transcript,
    )
    from expost.mechanisms.permute_and_flip import PermuteAndFlip
    from expost.odometers import (
        BrownianOdometer,
        FilterOdometer,
        MixtureOdometer,
        StitchedOdometer,
    )
    from expost.pld import PrivacyLossDistribution
    from expost.session import PrivateSession, Round
    from expost.skellam.boundary import SkellamPrivacyBoundary
    from expost.skellam.loss import SkellamLoss
    from expost.stopping import (
        AtIndex,
        MemorylessRule,
        Never,
        RelativeError,
        Released,
        StoppingRule,
        WhenPublicUtility,
    )

__version__ = "0.1.0"

_LAZY: dict[str, tuple[str, ...]] = {
    "expost.boundaries": (
        "Boundary",
        "FACStitched",
        "LinearPrivacyBoundary",
        "LineCrossing",
        "MixturePrivacyBoundary",
        "NormalMixture",
        "PolynomialStitching",
        "PrivacyBoundary",
        "apc_psi",
    ),
    "expost.ex_post_rdp": ("ExPostRDP",),
    "expost.exact": ("GeneratorBits", "SecureBits"),
    "expost.filters": (
        "ApproxDPFilter",
        "BoundedRangeCost",
        "BrownianCost",
        "BrownianFilter",
        "ConcurrentFilter",
        "Cost",
        "DPCost",
        "ExPostCost",
        "ExPostFilter",
        "GaussianCost",
        "GaussianDPFilter",
        "PLDFilter",
        "PrivacyFilter",
        "RDPFilter",
        "RenyiFilter",
        "UnifiedFilter",
        "ZCDPCost",
        "ZCDPFilter",
    ),
    "expost.grids": ("EpsilonGrid", "OpenEpsilonGrid", "TimeGrid"),
    "expost.guarantees": (
        "ZCDP",
        "ApproxDP",
        "ExPost",
        "GaussianDP",
        "Guarantee",
        "ProbabilisticDP",
        "PureDP",
        "cks_delta",
        "cks_rho_for_dp",
        "cks_zcdp_to_dp",
        "compose_ex_post",
        "compose_zcdp",
        "dp_to_pdp",
        "dp_to_zcdp",
        "pdp_to_dp",
        "rho_for_dp",
        "zcdp_to_dp",
    ),
    "expost.ledger": ("Ledger",),
    "expost.loss": (
        "BrownianLoss",
        "GaussianLoss",
        "LaplaceLoss",
        "LaplaceNoiseReductionLoss",
        "PrivacyLoss",
    ),
    "expost.mechanisms": (
        "AboveThreshold",
        "BatchTranscript",
        "BrownianNoiseReduction",
        "DoublingMethod",
        "DoublingTranscript",
        "ExponentialMechanism",
        "GaussianMechanism",
        "LaplaceMechanism",
        "LaplaceNoiseReduction",
        "ReducedAboveThreshold",
        "SkellamNoiseReduction",
        "Transcript",
    ),
    "expost.mechanisms.permute_and_flip": ("PermuteAndFlip",),
    "expost.odometers": (
        "BrownianOdometer",
        "FilterOdometer",
        "MixtureOdometer",
        "StitchedOdometer",
    ),
    "expost.pld": ("PrivacyLossDistribution",),
    "expost.session": ("PrivateSession", "Round"),
    "expost.skellam.boundary": ("SkellamPrivacyBoundary",),
    "expost.skellam.loss": ("SkellamLoss",),
    "expost.stopping": (
        "AtIndex",
        "MemorylessRule",
        "Never",
        "RelativeError",
        "Released",
        "StoppingRule",
        "WhenPublicUtility",
    ),
}
"""Module → the public names it defines, loaded on first use (the block above, for checkers;
tests/test_import.py checks that the two agree)."""

_HOME = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name (or a submodule: ``expost.filters``) loaded on first use (PEP 562), so that
    ``import expost`` loads neither numpy nor the library until something is used."""
    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
    elif not name.startswith("__"):
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
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
    "ExPostCost",
    "ExPostFilter",
    "ExPostRDP",
    "ExponentialMechanism",
    "ExpostError",
    "FACStitched",
    "FilterOdometer",
    "GaussianCost",
    "GaussianDP",
    "GaussianDPFilter",
    "GaussianLoss",
    "GaussianMechanism",
    "GeneratorBits",
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
    "PermuteAndFlip",
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
    "SecureBits",
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
    "exact",
    "pdp_to_dp",
    "rho_for_dp",
    "stopping",
    "zcdp_to_dp",
]
