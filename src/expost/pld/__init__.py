"""Privacy loss distributions, safe-sided, for both neighbour directions (THEORY §12).

`PrivacyLossDistribution` discretises each direction's exact PLD by connect-the-dots
(`expost.pld.discretise`), composes by convolution with a bounded floating-point error
(`expost.pld.convolution`, `expost.pld.discrete`) and reports upper bounds on δ(ε) and ε(δ);
`max_rounds` counts how many rounds of one PLD a budget admits (`expost.pld.counting`).
"""

from expost.pld.counting import compose_rounds, max_rounds
from expost.pld.distribution import PrivacyLossDistribution

__all__ = ["PrivacyLossDistribution", "compose_rounds", "max_rounds"]
