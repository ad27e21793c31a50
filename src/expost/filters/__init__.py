"""Privacy filters: stop a fully adaptive interaction before its budget can be exceeded.

Costs (`expost.filters.costs`) describe rounds; each filter prices the costs it accepts in
its own unit (`expost.filters.base`), one module per family: `zcdp` (FAC Thm 1, APC Thm 5,
APC Lemma 6.2), `dp` (FAC Thm 2), `ex_post` (APC Lemma B.2), `concurrent` (APC Thm 2), `gaussian_dp`
(Smith–Thakurta 2022, beyond the papers), `rdp` (Feldman–Zrnic 2021 with realised ex-post RDP
costs, THEORY §11), `renyi` (one order fixed in advance, Canonne–Kamath–Steinke, THEORY §12),
`pld` (counting rounds of one mechanism by its privacy loss distribution, THEORY §12).
"""

from expost.filters.base import Filter, Price, PrivacyFilter
from expost.filters.concurrent import ConcurrentFilter
from expost.filters.costs import (
    BoundedRangeCost,
    BrownianCost,
    Cost,
    DPCost,
    ExPostCost,
    GaussianCost,
    LaplaceCost,
    SubsampledGaussianCost,
    ZCDPCost,
)
from expost.filters.dp import ApproxDPFilter
from expost.filters.ex_post import ExPostFilter
from expost.filters.gaussian_dp import GaussianDPFilter
from expost.filters.pld import PLDFilter
from expost.filters.rdp import RDPFilter
from expost.filters.renyi import RenyiFilter
from expost.filters.zcdp import BrownianFilter, Conversion, UnifiedFilter, ZCDPFilter

__all__ = [
    "ApproxDPFilter",
    "BoundedRangeCost",
    "BrownianCost",
    "BrownianFilter",
    "ConcurrentFilter",
    "Conversion",
    "Cost",
    "DPCost",
    "ExPostCost",
    "ExPostFilter",
    "Filter",
    "GaussianCost",
    "GaussianDPFilter",
    "LaplaceCost",
    "PLDFilter",
    "Price",
    "PrivacyFilter",
    "RDPFilter",
    "RenyiFilter",
    "SubsampledGaussianCost",
    "UnifiedFilter",
    "ZCDPCost",
    "ZCDPFilter",
]
