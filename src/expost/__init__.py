"""expost: accuracy-first differential privacy.

Noise-reduction mechanisms with ex-post guarantees, fully adaptive privacy filters and
odometers, symbolic proofs of every closed form and statistical audits of every claim.
The math and its sources are in THEORY.md; ``expost prove`` checks the closed forms.
"""

from expost.errors import BudgetExceeded, ExpostError, InvalidParameter, NotAStoppingTime
from expost.guarantees import (
    ZCDP,
    ApproxDP,
    ExPost,
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

__version__ = "0.1.0"

__all__ = [
    "ZCDP",
    "ApproxDP",
    "BudgetExceeded",
    "ExPost",
    "ExpostError",
    "Guarantee",
    "InvalidParameter",
    "NotAStoppingTime",
    "ProbabilisticDP",
    "PureDP",
    "__version__",
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
]
