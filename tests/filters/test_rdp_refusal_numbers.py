"""`RDPFilter`'s refusal quotes one quantity at one order (issue 41, item 8).

The text of `BudgetExceeded` is parsed: "already spent eps_alpha=S, this round asks for
eps_alpha=A, only eps_alpha=R remains (... at α=a ... B_α=B ...)". At the quoted order a: S is
the rounds' Σ ε_a rounded up (ZCDP rounds: ε_a = a·rho, summed here in exact rationals), S + A >
B (the round does not fit there), and R = B − S rounded down (the largest float at most B − S,
or 0): what remains is what the budget leaves after what was spent, on the safe side. The
planted twin — the previous text, which quoted the session's spent (the split of delta over the
orders included) beside B_α − Σ ε_a — fails the same check.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest

from expost.errors import BudgetExceeded
from expost.filters import RDPFilter, ZCDPCost

QUOTE = re.compile(
    r"already spent eps_alpha=(\S+), this round asks for eps_alpha=(\S+), only eps_alpha=(\S+)"
    r" remains \(Rényi accounting at α=(\S+), .*? of budget B_α=(\S+) = "
)


def parse(err: BudgetExceeded) -> tuple[float, float, float, float, float]:
    """(spent, asked, remaining, α, B_α) as the message prints them."""
    found = QUOTE.search(str(err))
    assert found is not None, str(err)
    s, a, r, alpha, b = (float(x) for x in found.groups())
    return s, a, r, alpha, b


def check_quote(spent: float, asked: float, remaining: float, budget: float) -> None:
    """spent + asked > budget, remaining = budget − spent rounded down (module docstring)."""
    assert Fraction(spent) + Fraction(asked) > Fraction(budget)
    left = Fraction(budget) - Fraction(spent)
    assert Fraction(remaining) <= max(left, Fraction(0))
    assert remaining == 0.0 or Fraction(math.nextafter(remaining, math.inf)) > left


CASES = [
    (1.0, 1e-6, [], 2.0),
    (2.0, 1e-5, [0.05], 1.0),
    (3.0, 1e-6, [0.01, 0.02, 0.03], 0.4),
    (0.5, 1e-9, [0.0005] * 4, 0.05),
    (8.0, 1e-3, [0.3, 0.1], 1.6),
]


@pytest.mark.parametrize(("eps", "delta", "rhos", "ask"), CASES)
def test_a_refusal_quotes_spent_asked_and_remaining_at_one_order(
    eps: float, delta: float, rhos: list[float], ask: float
) -> None:
    f = RDPFilter(eps, delta)
    for rho in rhos:
        f = f.spend(ZCDPCost(rho))
    with pytest.raises(BudgetExceeded) as info:
        f.check(ZCDPCost(ask))
    spent, asked, remaining, alpha, budget = parse(info.value)
    assert (spent, asked, remaining) == (
        info.value.spent,
        info.value.requested,
        info.value.remaining,
    )
    assert alpha == f.best_order
    i = f.orders.index(alpha)
    assert budget == f.budgets[i]
    exact = sum((Fraction(alpha) * Fraction(rho) for rho in rhos), Fraction(0))
    assert Fraction(spent) >= exact  # rounded up ...
    assert spent == 0.0 or Fraction(math.nextafter(spent, 0.0)) < exact  # ... by one step at most
    assert Fraction(asked) >= Fraction(alpha) * Fraction(ask)
    check_quote(spent, asked, remaining, budget)


def test_planted_twin_the_session_spent_beside_the_order_remaining_is_caught() -> None:
    """The previous quote: ``spent`` the session's (Σ ε_α plus the split of delta), beside
    B_α − Σ ε_α: remaining is not budget − spent."""
    f = RDPFilter(2.0, 1e-5).spend(ZCDPCost(0.05))
    i = f.orders.index(f.best_order)
    with pytest.raises(AssertionError):
        check_quote(f.spent, f.prices(ZCDPCost(1.0))[i], f.remaining, f.budgets[i])
