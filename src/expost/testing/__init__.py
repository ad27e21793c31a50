"""Testing tools for projects built on `expost`: statistical assertions, black-box privacy
audits of any mechanism and Hypothesis strategies.

The assertions (`assert_ex_post`, `assert_e_value`, `assert_dp_lower_bound_below`) and the
black-box audits (`audit_mechanism`, `assert_private`; adapters for OpenDP and diffprivlib in
`expost.testing.adapters`) need only numpy and scipy. The strategies (`guarantees`, `time_grids`, `eps_grids`, `stopping_rules`,
`adaptive_analysts`) need ``hypothesis`` (the ``test`` extra) and are imported on first use.
``import expost`` does not import this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from expost.testing.assertions import (
    assert_dp_lower_bound_below,
    assert_e_value,
    assert_ex_post,
)
from expost.testing.blackbox import BlackBoxResult, Witness, assert_private, audit_mechanism
from expost.testing.neighbours import statdp_pairs

if TYPE_CHECKING:
    from expost.testing.strategies import (
        AdaptiveAnalyst,
        AdaptiveStep,
        BrownianRequest,
        Request,
        ZCDPRequest,
        adaptive_analysts,
        eps_grids,
        guarantees,
        stopping_rules,
        time_grids,
    )

__all__ = [
    "AdaptiveAnalyst",
    "AdaptiveStep",
    "BlackBoxResult",
    "BrownianRequest",
    "Request",
    "Witness",
    "ZCDPRequest",
    "adaptive_analysts",
    "assert_dp_lower_bound_below",
    "assert_e_value",
    "assert_ex_post",
    "assert_private",
    "audit_mechanism",
    "eps_grids",
    "guarantees",
    "statdp_pairs",
    "stopping_rules",
    "time_grids",
]

_LAZY = frozenset(__all__) - {
    "BlackBoxResult",
    "Witness",
    "assert_dp_lower_bound_below",
    "assert_e_value",
    "assert_ex_post",
    "assert_private",
    "audit_mechanism",
    "statdp_pairs",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module("expost.testing.strategies"), name)
    raise AttributeError(f"module 'expost.testing' has no attribute {name!r}")
