"""The open cost model: costs as data that carry what is known of their mechanism.

`expost.costs.model` (the representations a filter prices by, and their derivations),
`expost.costs.pairs` (dominating pairs for `PLDFilter`), `expost.costs.wrappers`
(`PoissonSampled`, `Composed`, `PairCost`), `expost.filters.kinds` (the table of kinds the ledger
codec, the PostgreSQL checks and the filters' acceptance derive from) and
`expost.costs.domination` (domination decided by computation). The built-in costs live in
`expost.filters.costs`.
"""

from expost.costs.model import REPRESENTATIONS, Mechanism
from expost.costs.wrappers import Composed, PairCost, PoissonSampled

__all__ = ["REPRESENTATIONS", "Composed", "Mechanism", "PairCost", "PoissonSampled"]
