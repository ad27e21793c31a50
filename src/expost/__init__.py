"""expost: accuracy-first differential privacy.

Noise-reduction mechanisms with ex-post guarantees, fully adaptive privacy filters and
odometers, symbolic proofs of every closed form and statistical audits of every claim.
The math and its sources are in THEORY.md and the docs' theory map; ``expost prove``
checks the closed forms.

``__all__`` is the curated surface a user of the README, the tutorial and the docs needs.
Engine internals (batch engines, path samplers, the audit machinery) stay importable from
their modules: ``expost.processes``, ``expost.stopping``, ``expost.audit``, ``expost.testing``.
"""

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
from expost.errors import (
    BudgetExceeded,
    ExpostError,
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
    NotAStoppingTime,
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
    "LineCrossing",
    "LinearPrivacyBoundary",
    "MemorylessRule",
    "MixtureOdometer",
    "MixturePrivacyBoundary",
    "Never",
    "NormalMixture",
    "NotAStoppingTime",
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
