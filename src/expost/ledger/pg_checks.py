"""What the PostgreSQL server checks in a session ledger's records: the SQL of its pure functions.

``expost.check_cost`` (a cost's type, fields and numbers: the limits of `expost.ledger.limits`,
so that every client decodes it and prices it to a finite value in bounded time),
``expost.price`` (a round's price in each filter's unit, exact decimals), ``expost.within``
(a budget's check on the running totals) and ``expost.settles`` (a settlement fits its
reservation). `expost.ledger.pg_schema` installs them; docs/sharing-a-budget.md says why each
rule is what it is. The kinds the server knows — their fields, which are positive, which must
have delta 0, and the kind each is priced as — come from the table of kinds
(`expost.filters.kinds.KINDS`, column ``server``); a kind without one is refused by the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from expost.filters.kinds import KINDS
from expost.ledger.limits import (
    BELOW,
    LARGEST_NUMBER,
    MAX_DIGITS,
    POSITIVE_FIELDS,
    SMALLEST_NUMBER,
)

__all__ = ["CHECKS", "PART_ADVICE", "PRICED_FILTERS", "PRICED_PARTS", "part_fault", "parts_sql"]

PRICED_FILTERS: Final = (
    "ZCDPFilter",
    "UnifiedFilter",
    "BrownianFilter",
    "ApproxDPFilter",
    "ExPostFilter",
    "GaussianDPFilter",
    "ConcurrentFilter",
)
"""The filters whose rounds the server prices: a session ledger of any other is refused at its
creation (an `RDPFilter`'s price is a minimum over orders that the server does not compute)."""

PRICED_PARTS: Final = {
    "ConcurrentFilter": {"zcdp": ("ZCDPFilter", "UnifiedFilter"), "ex_post": ("ExPostFilter",)}
}
"""The parts a composite filter may hold (`ConcurrentFilter` validates the same): the server
prices its ``zcdp`` part as a zCDP filter and its ``ex_post`` part as an `ExPostFilter`, and no
client can build one with another part (a `PLDFilter` or a Rényi filter), so a ledger describing
one is refused at its creation on every backend and by ``expost.create_ledger``."""

PART_ADVICE: Final = "use a PLDFilter, RDPFilter or RenyiFilter on its own, in a SQLite file"


def part_fault(description: object) -> str | None:
    """Why the filter ``description`` (a ledger configuration's ``filter``) holds a part that
    no client could build and the server would not price, or None."""
    if not isinstance(description, Mapping):
        return None
    for part, allowed in PRICED_PARTS.get(str(description.get("type")), {}).items():
        held = description.get(part)
        kind = held.get("type") if isinstance(held, Mapping) else held
        if kind not in allowed:
            return (
                f"a {description['type']}'s {part} part must be {' or '.join(allowed)}, "
                f"not {kind}: {PART_ADVICE}"
            )
    return None


def parts_sql(config: str) -> str:
    """The PL/pgSQL that raises `part_fault`'s refusal for the configuration ``config`` (an SQL
    jsonb expression) in ``expost.create_ledger``."""
    checks = []
    for composite, parts in PRICED_PARTS.items():
        for part, allowed in parts.items():
            kind = f"({config} -> 'filter' -> '{part}' ->> 'type')"
            checks.append(
                f"""IF {config} -> 'filter' ->> 'type' = '{composite}'
            AND NOT coalesce({kind} = ANY ('{{{",".join(allowed)}}}'::text[]), false) THEN
            RAISE EXCEPTION 'expost: a {composite}''s {part} part must be {" or ".join(allowed)}, not %: {PART_ADVICE}',
                coalesce({kind}, 'missing') USING ERRCODE = '0A000';
        END IF;"""
            )
    return "\n        ".join(checks)


_BELOW_SQL: Final = " ".join(
    f"OR k = '{field}' AND n {'>=' if excluded else '>'} {bound!r}"
    for field, (bound, excluded) in BELOW.items()
)
"""The bounds of `expost.ledger.limits.BELOW` (what `number_fault` checks on the Python side)."""


_SERVED: Final = tuple(k for k in KINDS.values() if k.server is not None)
_ALLOWED: Final = "\n        ".join(
    f"WHEN '{k.name}' THEN '{{{','.join(k.fields)}}}'" for k in _SERVED
)  # the fields of each kind the server knows
_POSITIVE: Final = ", ".join(
    sorted({f"'{f}'" for k in _SERVED for f in k.positive} | {f"'{f}'" for f in POSITIVE_FIELDS})
)  # never 0: the kinds' positive fields and `expost.ledger.limits`'s
_ZERO_DELTA: Final = ", ".join(f"'{k.name}'" for k in _SERVED if k.zero_delta)
_PRICED_AS: Final = " ".join(
    f"WHEN '{k.name}' THEN '{k.server}'" for k in _SERVED if k.server not in (k.name, "of")
)  # a kind priced as another by every filter the server knows
_WRAPPERS: Final = ", ".join(f"'{k.name}'" for k in _SERVED if k.server == "of")
_INNER: Final = ", ".join(f"'{k.name}'" for k in _SERVED if k.server != "of")

_CHECK_COST: Final = rf"""
CREATE OR REPLACE FUNCTION expost.check_cost(c jsonb) RETURNS void LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t text := c->>'type';
    allowed text[];
    k text;
    v jsonb;
    n numeric;
BEGIN
    IF jsonb_typeof(c) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'expost: a cost must be a JSON object, not %', c;
    END IF;
    allowed := CASE t
        {_ALLOWED} END;
    IF allowed IS NULL THEN
        RAISE EXCEPTION 'expost: unknown cost type in %', c;
    END IF;
    IF NOT (c ? allowed[1]) THEN
        RAISE EXCEPTION 'expost: cost % lacks %', c, allowed[1];
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(c) LOOP
        CONTINUE WHEN k = 'type';
        IF NOT k = ANY (allowed) THEN
            RAISE EXCEPTION 'expost: cost % has an unknown field %', c, k;
        END IF;
        IF k = 'of' THEN  -- a wrapper (PoissonSampled) of one cost the server prices
            IF jsonb_typeof(v) IS DISTINCT FROM 'object' OR NOT (v->>'type' IN ({_INNER})) THEN
                RAISE EXCEPTION 'expost: cost % wraps no cost the server prices', c;
            END IF;
            PERFORM expost.check_cost(v);
            CONTINUE;
        END IF;
        CONTINUE WHEN jsonb_typeof(v) = 'null'
            AND (k = 'eps_max' OR k = 'bound' AND t = 'BrownianCost');
        IF jsonb_typeof(v) <> 'number' THEN
            RAISE EXCEPTION 'expost: cost % has an invalid %', c, k;
        END IF;
        n := (v::text)::numeric;
        -- what the client decodes to a finite double other than 0 (ledger.limits), and prices
        IF n < 0 OR n > {LARGEST_NUMBER!r} OR n > 0 AND n < {SMALLEST_NUMBER!r}
            OR length(rtrim(ltrim(replace(n::text, '.', ''), '0'), '0')) > {MAX_DIGITS}
            {_BELOW_SQL}
            OR k IN ({_POSITIVE}) AND n = 0
        THEN
            RAISE EXCEPTION 'expost: cost % has an invalid % (numbers: 0 or in [%, %], at most % significant digits)',
                c, k, {SMALLEST_NUMBER!r}, {LARGEST_NUMBER!r}, {MAX_DIGITS};
        END IF;
    END LOOP;
    IF t IN ({_ZERO_DELTA})
            AND coalesce((c->>'delta')::numeric, 0) <> 0
        OR t = 'BrownianCost' AND c->>'bound' IS NULL AND coalesce((c->>'delta')::numeric, 0) <> 0
    THEN  -- the cost classes' own checks (zero_delta in the table, BrownianCost)
        RAISE EXCEPTION 'expost: cost % has an invalid delta', c;
    END IF;
END $$"""

_PRICE: Final = rf"""
CREATE OR REPLACE FUNCTION expost.price(f jsonb, w jsonb, OUT rho numeric, OUT delta numeric,
    OUT eps numeric, OUT eps_delta numeric) LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ft text := f->>'type';
    -- a wrapper is priced as the cost it wraps (subsampling is a post-processing for every
    -- filter the server knows), some kinds as another (the table's column server)
    c jsonb := CASE WHEN w->>'type' IN ({_WRAPPERS}) THEN w->'of' ELSE w END;
    t text := CASE c->>'type' {_PRICED_AS} ELSE c->>'type' END;
    d numeric := coalesce((c->>'delta')::numeric, 0);
    e numeric := coalesce((c->>'eps')::numeric, (c->>'eps_max')::numeric);
    s numeric := coalesce((c->>'sensitivity')::numeric, 1);
    -- an ex-post round's eps: ExPostCost its bound, a Brownian one its boundary's bound
    bound numeric := CASE WHEN t IN ('ExPostCost', 'BrownianCost') THEN (c->>'bound')::numeric
                          WHEN t IN ('DPCost', 'BoundedRangeCost') THEN e END;
BEGIN
    rho := 0; delta := 0; eps := 0; eps_delta := 0;
    IF ft = 'ExPostFilter' OR ft = 'ConcurrentFilter' AND t = 'ExPostCost' THEN
        eps := bound;  -- ExPostFilter._rate (APC Lemma B.2)
        eps_delta := CASE WHEN t = 'BoundedRangeCost' THEN 0 ELSE d END;
    ELSIF ft = 'GaussianDPFilter' THEN  -- gdp_price, only its closed forms (mu² = 2·rho)
        rho := CASE t WHEN 'GaussianCost' THEN 2 * (c->>'rho')::numeric
                      WHEN 'BrownianCost' THEN s * s / (c->>'time')::numeric END;
    ELSIF ft = 'BrownianFilter' AND t <> 'BrownianCost'
        OR ft = 'ApproxDPFilter' AND t IN ('ZCDPCost', 'GaussianCost') THEN
        rho := NULL;
    ELSIF ft IN ('ZCDPFilter', 'UnifiedFilter', 'BrownianFilter', 'ApproxDPFilter',
                 'ConcurrentFilter') THEN  -- zcdp_price; ApproxDPFilter: BR as eps-DP
        rho := CASE t
            WHEN 'ZCDPCost' THEN (c->>'rho')::numeric WHEN 'GaussianCost' THEN (c->>'rho')::numeric
            WHEN 'BrownianCost' THEN s * s / (2 * (c->>'time')::numeric)
            WHEN 'DPCost' THEN e * e / 2
            WHEN 'BoundedRangeCost' THEN e * e / CASE ft WHEN 'ApproxDPFilter' THEN 2 ELSE 8 END
            WHEN 'ExPostCost' THEN e * e / 2 END;
        delta := CASE WHEN t IN ('ZCDPCost', 'GaussianCost', 'DPCost') THEN d ELSE 0 END;
    ELSE
        RAISE EXCEPTION 'expost: the server cannot price rounds of a % ledger', ft;
    END IF;
    IF rho IS NULL OR eps IS NULL THEN
        RAISE EXCEPTION 'expost: the server cannot charge % to a % ledger%', c, ft,
            CASE ft WHEN 'GaussianDPFilter' THEN ' (on PostgreSQL it prices only GaussianCost'
                || ' and BrownianCost, whose mu² it computes exactly)' ELSE '' END;
    END IF;
END $$"""

_WITHIN: Final = r"""
CREATE OR REPLACE FUNCTION expost.within(f jsonb, rho numeric, delta numeric, eps numeric,
    eps_delta numeric) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ft text := f->>'type';
    slack CONSTANT numeric := 1.000000001;  -- relative, for decimal sums against binary ones
    z jsonb := CASE ft WHEN 'ConcurrentFilter' THEN f->'zcdp' ELSE f END;
    x jsonb := CASE ft WHEN 'ConcurrentFilter' THEN f->'ex_post' ELSE f END;
    e numeric;
    ell numeric;
BEGIN
    IF ft IN ('ZCDPFilter', 'UnifiedFilter', 'BrownianFilter', 'ConcurrentFilter') THEN
        RETURN rho <= (z->>'rho')::numeric * slack
            AND (delta = 0 OR ft <> 'BrownianFilter' AND delta <= (z->>'delta')::numeric * slack)
            AND (ft <> 'ConcurrentFilter' OR eps <= (x->>'eps')::numeric * slack
                 AND eps_delta <= (x->>'delta')::numeric * slack);
    ELSIF ft = 'ExPostFilter' THEN
        RETURN eps <= (x->>'eps')::numeric * slack AND eps_delta <= (x->>'delta')::numeric * slack;
    ELSIF ft = 'GaussianDPFilter' THEN
        RETURN rho <= (f->>'mu')::numeric * (f->>'mu')::numeric * slack AND delta = 0;
    ELSIF ft = 'ApproxDPFilter' THEN  -- rho* = (eps / (sqrt(ell + eps) + sqrt(ell)))², FAC Thm 2
        e := (f->>'eps')::numeric;
        ell := -ln((f->>'delta_second')::numeric);
        RETURN rho <= (e / (sqrt(ell + e) + sqrt(ell))) ^ 2 * slack
            AND delta <= (f->>'delta_prime')::numeric * slack;
    END IF;
    RAISE EXCEPTION 'expost: the server cannot price rounds of a % ledger', ft;
END $$"""

_SETTLES: Final = r"""
CREATE OR REPLACE FUNCTION expost.settles(s jsonb, r jsonb, mechanism text) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        -- stopped at a time of its grid: none below the smallest (APC Def 4.4), so priced at
        -- most its reservation; the same mechanism (sensitivity, boundary's presence, delta)
        WHEN r->>'type' = 'BrownianCost' THEN s->>'type' = 'BrownianCost'
            AND (s->>'time')::numeric >= (r->>'time')::numeric
            AND coalesce((s->>'sensitivity')::numeric, 1) = coalesce((r->>'sensitivity')::numeric, 1)
            AND (s->>'bound' IS NULL) = (r->>'bound' IS NULL)
            AND coalesce((s->>'delta')::numeric, 0) <= coalesce((r->>'delta')::numeric, 0)
        -- an ex-post round: its pure-DP worst case is fixed by its grid (BNR Prop 4.2); its
        -- bound is checked against the budget only (a boundary ψ need not be monotone)
        WHEN r->>'type' = 'ExPostCost' THEN s->>'type' = 'ExPostCost'
            AND (s->>'eps_max')::numeric IS NOT DISTINCT FROM (r->>'eps_max')::numeric
            AND coalesce((s->>'delta')::numeric, 0) <= coalesce((r->>'delta')::numeric, 0)
        -- the doubling method pays for the tries it made: at most its reservation
        WHEN mechanism = 'doubling' AND r->>'type' IN ('ZCDPCost', 'GaussianCost') THEN
            s->>'type' = r->>'type'
            AND (s->>'rho')::numeric <= (r->>'rho')::numeric
            AND coalesce((s->>'delta')::numeric, 0) <= coalesce((r->>'delta')::numeric, 0)
        -- every other round has one price, known before it runs: settled at exactly it
        ELSE s = r
    END
$$"""


CHECKS: Final = (_CHECK_COST, _PRICE, _WITHIN, _SETTLES)
"""The statements that create (or replace) the check functions."""
