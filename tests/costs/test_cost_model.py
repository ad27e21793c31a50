"""The cost model (`expost.costs`): representations rounded to the safe side against exact
references, the table of kinds driving the codec, the server check and the refusals, wrappers.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from expost.costs import Composed, PairCost, PoissonSampled
from expost.errors import InvalidParameter
from expost.filters import (
    BoundedRangeCost,
    BrownianCost,
    DPCost,
    ExPostCost,
    GaussianCost,
    GaussianDPFilter,
    LaplaceCost,
    PLDFilter,
    RenyiFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.filters.costs import DiscreteLaplaceCost
from expost.filters.kinds import KINDS, accepting, decode_cost, encode_cost, refusal
from expost.ledger.pg_checks import CHECKS

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(40)


def _pmf(n: int) -> list[float]:
    x = RNG.random(n) + 0.05
    return list(x / x.sum())


PAIRS = [(_pmf(3), _pmf(3)) for _ in range(20)] + [(_pmf(7), _pmf(7)) for _ in range(10)]


@pytest.mark.parametrize(("p", "q"), PAIRS[:10])
def test_a_pmf_pairs_levels_are_never_below_the_exact_ones(p: list[float], q: list[float]) -> None:
    """PairCost.dp: max |log p/q| rounded up; rdp(α): the larger direction's Rényi divergence,
    rounded up — both against 50-digit mpmath on the same floats, within 1e-12 relative.
    Twin: the plain float log is below the exact value for some pair (so the audit can fail)."""
    cost = PairCost.from_pmfs(p, q)
    with mp.workdps(50):
        exact = max(abs(mp.log(mp.mpf(a) / mp.mpf(b))) for a, b in zip(cost.p, cost.q, strict=True))
        for alpha in (1.5, 2.0, 8.0):
            a = mp.mpf(alpha)

            def div(x: Any, y: Any, a: Any = a) -> Any:
                s = sum(mp.mpf(u) ** a * mp.mpf(v) ** (1 - a) for u, v in zip(x, y, strict=True))
                return mp.log(s) / (a - 1)

            want = max(div(cost.p, cost.q), div(cost.q, cost.p))
            got = cost.rdp(alpha)
            assert got is not None
            assert want <= got <= want * (1 + 1e-12) + 1e-300
    d = cost.dp()
    assert d is not None
    assert exact <= d[0] <= exact * (1 + 1e-12)


def test_the_pmf_level_audit_has_teeth() -> None:
    below = 0
    with mp.workdps(50):
        for p, q in PAIRS:
            for a, b in zip(p, q, strict=True):
                below += mp.mpf(abs(math.log(a / b))) < abs(mp.log(mp.mpf(a) / mp.mpf(b)))
    assert below > 0  # the twin: an unrounded float log undercuts somewhere


def test_composed_sums_are_rounded_up_exactly() -> None:
    parts = [DPCost(0.1), LaplaceCost(0.2), BoundedRangeCost(0.3), DPCost(0.07, 1e-9)]
    c = Composed(parts)
    d = c.dp()
    assert d is not None
    eps, delta = d
    assert Fraction(eps) >= sum(Fraction(x) for x in (0.1, 0.2, 0.3, 0.07))
    assert Fraction(delta) >= Fraction(1e-9)
    z = c.zcdp()
    assert z is not None
    rhos = [p.zcdp() for p in parts]
    assert Fraction(z[0]) >= sum((Fraction(r[0]) for r in rhos if r is not None), Fraction(0))
    assert c.gdp() is None  # a part with delta > 0 has no mu
    assert float(sum(Fraction(x) for x in (0.1, 0.2, 0.3, 0.07))) <= eps  # twin: the float sum
    g = Composed([GaussianCost.from_sigma(2.0), GaussianCost.from_sigma(3.0)])
    assert Fraction(g.gdp()) >= Fraction(1, 4) + Fraction(1, 9)  # type: ignore[arg-type]


def test_a_subsample_inherits_the_unsampled_prices_and_subsamples_the_pair() -> None:
    inner = LaplaceCost(0.5)
    c = PoissonSampled(inner, 0.1)
    assert c.zcdp() == inner.zcdp()
    assert c.dp() == inner.dp()
    assert c.gdp() == inner.gdp()
    assert c.pair().rate == 0.1  # type: ignore[union-attr]
    twice = PoissonSampled(c, 0.5)
    assert Fraction(twice.pair().rate) >= Fraction(0.1) * Fraction(0.5)  # type: ignore[union-attr]
    assert ZCDPFilter(1.0).price(c) == ZCDPFilter(1.0).price(inner)


def test_the_discrete_laplace_round_is_priced_at_its_own_pair() -> None:
    """The mechanism added in three source files: a ledger record, (Δ/scale)-DP, and its pair
    (for Δ = 1 the loss takes ±1/scale only: the count is randomised response's)."""
    c = DiscreteLaplaceCost(20.0, 1)
    assert decode_cost(encode_cost(c)) == c
    assert c.dp() == (0.05, 0.0)
    assert PLDFilter(2.0, 1e-5, c).budget == PLDFilter(2.0, 1e-5, DPCost(0.05)).budget
    wide = DiscreteLaplaceCost(5.0, 3)
    assert PLDFilter(2.0, 1e-5, wide).budget >= PLDFilter(2.0, 1e-5, DPCost(0.6)).budget


@pytest.mark.parametrize(
    "cost",
    [
        ZCDPCost(0.1, 1e-9),
        GaussianCost.from_sigma(1.5),
        GaussianCost(0.2),
        DPCost(0.1, 1e-7),
        LaplaceCost(0.1),
        DiscreteLaplaceCost(3.0, 2),
        BoundedRangeCost(0.2),
        BrownianCost(4.0, 2.0),
        ExPostCost(0.1, 0.0, 0.3),
        PoissonSampled(GaussianCost.from_sigma(1.0), 0.01),
        Composed([LaplaceCost(0.1), GaussianCost.from_sigma(2.0)]),
        PairCost.from_pmfs([0.5, 0.5], [0.25, 0.75]),
    ],
)
def test_every_kind_round_trips_through_its_record(cost: Any) -> None:
    record = encode_cost(cost)
    assert decode_cost(record) == cost
    assert set(record) - {"type"} <= set(KINDS[record["type"]].fields)


def test_a_refusal_names_the_representation_and_the_filters_that_could() -> None:
    with pytest.raises(InvalidParameter) as info:
        GaussianDPFilter(1.0).price(ZCDPCost(0.1))
    text = str(info.value)
    assert "Gaussian-DP mu" in text
    assert "RenyiFilter" in text
    assert "ZCDPFilter" in text
    assert "GaussianDPFilter" not in text.split("could price it")[1]
    rule = refusal("RenyiFilter", BrownianCost(1.0), "rdp")
    assert accepting("rdp") in rule


def test_the_docs_table_of_kinds_is_the_table() -> None:
    page = (ROOT / "docs" / "your-own-mechanism.md").read_text(encoding="utf-8")
    rows = {
        m[0]: m
        for m in re.findall(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", page, re.MULTILINE)
    }
    listed = {name for name, k in KINDS.items() if not k.legacy}
    assert set(rows) == listed
    for name in listed:
        kind = KINDS[name]
        _, fields, carries, server = rows[name]
        assert [f.strip() for f in fields.split(",")] == list(kind.fields)
        assert [c.strip() for c in carries.split(",")] == list(kind.carries)
        want = (
            "refused"
            if kind.server is None
            else ("as the cost it wraps" if kind.server == "of" else f"as {kind.server}")
        )
        assert server.strip() == want


def test_the_server_check_lists_exactly_the_kinds_it_prices() -> None:
    sql = CHECKS[0]
    for name, kind in KINDS.items():
        assert (f"WHEN '{name}' THEN" in sql) == (kind.server is not None), name


def test_filters_price_every_kind_that_carries_their_representation() -> None:
    """One planned round of each kind: the filter accepts it exactly when the cost answers the
    representation the filter prices by."""
    costs: list[Any] = [
        LaplaceCost(0.1),
        PairCost.from_pmfs([0.5, 0.5], [0.4, 0.6]),
        BrownianCost(9.0),
    ]
    for cost in costs:
        assert RenyiFilter(2.0, 1e-5, 8.0).accepts(cost) == (cost.rdp(8.0) is not None)
        assert ZCDPFilter(1.0).accepts(cost) == (cost.zcdp() is not None)
        assert GaussianDPFilter(1.0).accepts(cost) == (cost.gdp() is not None)
