"""The PostgreSQL ledger's server side: schema ``expost``, its tables, and the functions clients call.

An administrator (the role that runs `expost ledger init`, or ``create=True``) installs the
schema once and owns it; clients get USAGE on the schema and EXECUTE on four SECURITY DEFINER
functions (`client_grants`), and no privilege on the tables:

- ``expost.header(name)``: the ledger's id, format, schema version and configuration;
- ``expost.read_rounds(name, from)``: its rounds from ``from`` on (never the settle tokens);
- ``expost.lock_ledger(name, id)``: the ledger's row lock, held to the end of the transaction;
- ``expost.append_round(name, id, kind, record, token)``: one round, validated, under that
  lock; returns (id, created, token).

What the server enforces: rounds are only appended (no client can UPDATE, DELETE, TRUNCATE,
DROP or disable a trigger: it owns nothing), ids are consecutive and stamped with the server's
clock, every record and configuration is a JSON object (CHECK constraints: an invalid one is
refused, not stored), a ledger is created only by a role allowed to run
``expost.create_ledger`` and never replaced (its name is its key, its random id fixed). In a
session ledger (format ``expost-session/…``) only ``reserve`` and ``settle`` entries with the
session's record shape and known cost types are accepted; reservations are numbered in order;
a settlement needs the secret token the server returned to the reserving client, settles an
open reservation exactly once, and is not above it on the fields where a request is the worst
case (rho, eps, delta, eps_max; a Brownian time not below). For every filter kind it decides
admission itself, from the recorded configuration (``expost.price``, ``expost.within``): it
prices each round as the filter does, in exact decimals of the recorded numbers (within about
1e-16 relative of the filter's doubles), keeps running totals in each entry (rho and delta; the
ex-post part's eps and delta), and refuses an entry that takes one past the budget with a
relative slack of 1e-9, so it never refuses what the filter admits:
zCDP-family (``zcdp_price``), ``ApproxDPFilter`` (eps²/2 against rho*(eps, delta'') of FAC Thm 2,
computed with numeric ln and sqrt), ``ExPostFilter`` (APC Lemma B.2: bounds and deltas summed),
``ConcurrentFilter`` (both parts), ``GaussianDPFilter`` (mu² = 2·rho or Δ²/t; its pure-DP prices
need Φ⁻¹, so those rounds are refused on this backend). A cost the filter does not accept is
refused. What it trusts: the realised cost a client reports for its own round.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CLIENT_FUNCTIONS", "INSTALL", "SCHEMA_VERSION", "client_grants"]

# 3: every filter kind's budget enforced; 4: LaplaceCost, SubsampledGaussianCost priced
SCHEMA_VERSION: Final = 4
_SAFE: Final = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"

CLIENT_FUNCTIONS: Final = (
    "expost.header(text)",
    "expost.read_rounds(text, integer)",
    "expost.lock_ledger(text, uuid)",
    "expost.append_round(text, uuid, text, text, uuid)",
)
"""The functions a client role needs (with their argument types, as GRANT names them)."""

_TABLES: Final = (
    """CREATE TABLE expost.ledgers (
        name text PRIMARY KEY CHECK (name ~ '^[a-z_][a-z0-9_]{0,62}$'),
        ledger_id uuid NOT NULL UNIQUE,
        format text NOT NULL CHECK (format = 'expost-ledger'),
        schema_version integer NOT NULL,
        config text NOT NULL CHECK (jsonb_typeof(config::jsonb) = 'object'),
        created double precision NOT NULL)""",
    """CREATE TABLE expost.rounds (
        ledger text NOT NULL REFERENCES expost.ledgers,
        id integer NOT NULL CHECK (id >= 0),
        kind text NOT NULL CHECK (kind <> ''),
        record text NOT NULL CHECK (jsonb_typeof(record::jsonb) = 'object'),
        created double precision NOT NULL,
        round integer CHECK (round >= 0),
        token uuid,
        spent_rho numeric,
        spent_delta numeric,
        spent_eps numeric,
        spent_eps_delta numeric,
        PRIMARY KEY (ledger, id))""",
    "CREATE UNIQUE INDEX rounds_reserved ON expost.rounds (ledger, round) WHERE kind = 'reserve'",
    "CREATE UNIQUE INDEX rounds_settled ON expost.rounds (ledger, round) WHERE kind = 'settle'",
    """CREATE FUNCTION expost.append_only() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'expost ledger tables are append-only'; END $$""",
    *(
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE"
        f" ON expost.{table} FOR EACH STATEMENT EXECUTE FUNCTION expost.append_only()"
        for table in ("ledgers", "rounds")
    ),
)

_CHECK_COST: Final = r"""
CREATE FUNCTION expost.check_cost(c jsonb) RETURNS void LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t text := c->>'type';
    allowed text[];
    k text;
    v jsonb;
BEGIN
    IF jsonb_typeof(c) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'expost: a cost must be a JSON object, not %', c;
    END IF;
    allowed := CASE t
        WHEN 'ZCDPCost' THEN '{rho,delta}' WHEN 'GaussianCost' THEN '{rho,delta}'
        WHEN 'DPCost' THEN '{eps,delta}' WHEN 'BoundedRangeCost' THEN '{eps}'
        WHEN 'LaplaceCost' THEN '{eps,delta}'
        WHEN 'SubsampledGaussianCost' THEN '{rho,delta,sampling_prob}'
        WHEN 'BrownianCost' THEN '{time,sensitivity,bound,delta}'
        WHEN 'ExPostCost' THEN '{bound,delta,eps_max}' END;
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
        CONTINUE WHEN jsonb_typeof(v) = 'null'
            AND (k = 'eps_max' OR k = 'bound' AND t = 'BrownianCost');
        IF jsonb_typeof(v) <> 'number' OR (v::text)::numeric < 0
            OR k = 'delta' AND (v::text)::numeric >= 1
            OR k = 'sampling_prob' AND NOT (v::text)::numeric BETWEEN 1e-300 AND 1
            OR k IN ('rho', 'eps', 'time', 'sensitivity', 'eps_max') AND (v::text)::numeric <= 0
            -- a double: finite, and not rounded to 0 (the client would fail to decode it)
            OR (v::text)::numeric > 1e308
            OR (v::text)::numeric > 0 AND (v::text)::numeric < 1e-300 THEN
            RAISE EXCEPTION 'expost: cost % has an invalid %', c, k;
        END IF;
    END LOOP;
    IF t IN ('GaussianCost', 'SubsampledGaussianCost', 'LaplaceCost')
        AND coalesce((c->>'delta')::numeric, 0) <> 0
        OR t = 'BrownianCost' AND c->>'bound' IS NULL AND coalesce((c->>'delta')::numeric, 0) <> 0
    THEN  -- the cost classes' own checks (GaussianCost and its kin, BrownianCost)
        RAISE EXCEPTION 'expost: cost % has an invalid delta', c;
    END IF;
END $$"""

_PRICE: Final = r"""
CREATE FUNCTION expost.price(f jsonb, c jsonb, OUT rho numeric, OUT delta numeric,
    OUT eps numeric, OUT eps_delta numeric) LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ft text := f->>'type';
    -- priced as their parents by every filter here (costs.py: subclasses)
    t text := CASE c->>'type' WHEN 'LaplaceCost' THEN 'DPCost'
        WHEN 'SubsampledGaussianCost' THEN 'GaussianCost' ELSE c->>'type' END;
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
CREATE FUNCTION expost.within(f jsonb, rho numeric, delta numeric, eps numeric,
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

_AT_MOST: Final = r"""
CREATE FUNCTION expost.at_most(s jsonb, r jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT (s->>'type' = r->>'type' OR s->>'type' = 'GaussianCost' AND r->>'type' = 'ZCDPCost')
        AND coalesce((s->>'rho')::numeric <= (r->>'rho')::numeric, true)
        AND coalesce((s->>'eps')::numeric <= (r->>'eps')::numeric, true)
        AND coalesce((s->>'delta')::numeric, 0) <= coalesce((r->>'delta')::numeric, 0)
        AND coalesce((s->>'time')::numeric >= (r->>'time')::numeric, true)
        AND coalesce((s->>'sampling_prob')::numeric <= (r->>'sampling_prob')::numeric, true)
        AND coalesce((s->>'sensitivity')::numeric, 1) = coalesce((r->>'sensitivity')::numeric, 1)
        AND (r->>'eps_max' IS NULL
             OR coalesce((s->>'eps_max')::numeric <= (r->>'eps_max')::numeric, false))
$$"""

_READ: Final = (
    f"""CREATE FUNCTION expost.header(p_name text)
    RETURNS TABLE (ledger_id uuid, format text, schema_version integer, config text)
    LANGUAGE sql STABLE {_SAFE} AS $$
        SELECT l.ledger_id, l.format, l.schema_version, l.config
        FROM expost.ledgers l WHERE l.name = p_name $$""",
    f"""CREATE FUNCTION expost.read_rounds(p_name text, p_from integer)
    RETURNS TABLE (id integer, kind text, record text, created double precision)
    LANGUAGE sql STABLE {_SAFE} AS $$
        SELECT r.id, r.kind, r.record, r.created FROM expost.rounds r
        WHERE r.ledger = p_name AND r.id >= p_from ORDER BY r.id $$""",
    f"""CREATE FUNCTION expost.lock_ledger(p_name text, p_id uuid) RETURNS void
    LANGUAGE plpgsql {_SAFE} AS $$
    BEGIN
        PERFORM 1 FROM expost.ledgers l WHERE l.name = p_name AND l.ledger_id = p_id FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'expost: no ledger % with id %', p_name, p_id USING ERRCODE = 'P0002';
        END IF;
    END $$""",
    f"""CREATE FUNCTION expost.create_ledger(p_name text, p_config text) RETURNS uuid
    LANGUAGE plpgsql {_SAFE} AS $$
    DECLARE v_id uuid := gen_random_uuid();
    BEGIN
        INSERT INTO expost.ledgers VALUES (p_name, v_id, 'expost-ledger', {SCHEMA_VERSION},
            p_config, extract(epoch FROM clock_timestamp()));
        RETURN v_id;
    END $$""",
)

_APPEND: Final = f"""
CREATE FUNCTION expost.append_round(p_name text, p_id uuid, p_kind text, p_record text,
    p_token uuid DEFAULT NULL)
RETURNS TABLE (id integer, created double precision, token uuid)
LANGUAGE plpgsql {_SAFE} AS $$
#variable_conflict use_column
DECLARE
    v_config jsonb;
    v_rec jsonb;
    v_next integer;
    v_round integer;
    v_token uuid;
    v_reserved jsonb;
    v_reserve_token uuid;
    v_spent_rho numeric := 0;
    v_spent_delta numeric := 0;
    v_spent_eps numeric := 0;
    v_spent_eps_delta numeric := 0;
    v_rho numeric := 0;
    v_delta numeric := 0;
    v_eps numeric := 0;
    v_eps_delta numeric := 0;
    v_filter jsonb := NULL;
    v_now double precision := extract(epoch FROM clock_timestamp());
BEGIN
    SELECT l.config::jsonb INTO v_config FROM expost.ledgers l
        WHERE l.name = p_name AND l.ledger_id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'expost: no ledger % with id %', p_name, p_id USING ERRCODE = 'P0002';
    END IF;
    v_rec := p_record::jsonb;
    IF jsonb_typeof(v_rec) <> 'object' OR coalesce(p_kind, '') = '' THEN
        RAISE EXCEPTION 'expost: a round is a non-empty kind and a JSON object';
    END IF;
    -- the last entry: the next id, and the charge so far (a running total: O(1) per round)
    SELECT r.id + 1, coalesce(r.spent_rho, 0), coalesce(r.spent_delta, 0),
            coalesce(r.spent_eps, 0), coalesce(r.spent_eps_delta, 0)
        INTO v_next, v_spent_rho, v_spent_delta, v_spent_eps, v_spent_eps_delta
        FROM expost.rounds r WHERE r.ledger = p_name ORDER BY r.id DESC LIMIT 1;
    v_next := coalesce(v_next, 0);
    v_spent_rho := coalesce(v_spent_rho, 0);
    v_spent_delta := coalesce(v_spent_delta, 0);
    v_spent_eps := coalesce(v_spent_eps, 0);
    v_spent_eps_delta := coalesce(v_spent_eps_delta, 0);
    IF coalesce(v_config->>'format', '') LIKE 'expost-session/%' THEN
        IF p_kind NOT IN ('reserve', 'settle') THEN
            RAISE EXCEPTION 'expost: a session ledger takes reserve and settle entries, not %',
                p_kind;
        END IF;
        IF jsonb_typeof(v_rec->'round') IS DISTINCT FROM 'number'
            OR (v_rec->>'round') !~ '^[0-9]{{1,9}}$' THEN
            RAISE EXCEPTION 'expost: a session entry needs a round number, not %', v_rec;
        END IF;
        v_round := (v_rec->>'round')::integer;
        PERFORM expost.check_cost(v_rec->'cost');
        v_filter := v_config->'filter';
        SELECT p.rho, p.delta, p.eps, p.eps_delta INTO v_rho, v_delta, v_eps, v_eps_delta
            FROM expost.price(v_filter, v_rec->'cost') p;
        IF p_kind = 'reserve' THEN
            IF (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(v_rec) k)
                <> '{{cost,mechanism,round}}' OR jsonb_typeof(v_rec->'mechanism') <> 'string' THEN
                RAISE EXCEPTION 'expost: a reserve entry is round, mechanism and cost: %', v_rec;
            END IF;
            IF v_round <> (SELECT coalesce(max(r.round) + 1, 0) FROM expost.rounds r
                           WHERE r.ledger = p_name AND r.kind = 'reserve') THEN
                RAISE EXCEPTION 'expost: reservation of round % is out of order', v_round;
            END IF;
            v_token := gen_random_uuid();
        ELSE
            IF (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(v_rec) k)
                <> '{{cost,round}}' THEN
                RAISE EXCEPTION 'expost: a settle entry is round and cost: %', v_rec;
            END IF;
            SELECT r.record::jsonb -> 'cost', r.token INTO v_reserved, v_reserve_token
                FROM expost.rounds r
                WHERE r.ledger = p_name AND r.kind = 'reserve' AND r.round = v_round;
            IF NOT FOUND OR p_token IS NULL OR v_reserve_token IS DISTINCT FROM p_token THEN
                RAISE EXCEPTION 'expost: no reservation of round % for this token', v_round
                    USING ERRCODE = '42501';
            END IF;
            IF EXISTS (SELECT 1 FROM expost.rounds r
                       WHERE r.ledger = p_name AND r.kind = 'settle' AND r.round = v_round) THEN
                RAISE EXCEPTION 'expost: round % is already settled', v_round;
            END IF;
            IF NOT expost.at_most(v_rec->'cost', v_reserved) THEN
                RAISE EXCEPTION 'expost: settlement % of round % is above its reservation %',
                    v_rec->'cost', v_round, v_reserved;
            END IF;
        END IF;
    END IF;
    IF v_reserved IS NOT NULL THEN  -- a settlement: the round's charge moves to it
        SELECT v_rho - p.rho, v_delta - p.delta, v_eps - p.eps, v_eps_delta - p.eps_delta
            INTO v_rho, v_delta, v_eps, v_eps_delta
            FROM expost.price(v_filter, v_reserved) p;
    END IF;
    v_spent_rho := v_spent_rho + v_rho;
    v_spent_delta := v_spent_delta + v_delta;
    v_spent_eps := v_spent_eps + v_eps;
    v_spent_eps_delta := v_spent_eps_delta + v_eps_delta;
    IF v_filter IS NOT NULL AND NOT expost.within(v_filter, v_spent_rho, v_spent_delta,
                                                   v_spent_eps, v_spent_eps_delta) THEN
        RAISE EXCEPTION 'expost: % % of round % exceeds the budget %',
            p_kind, v_rec->'cost', v_round, v_filter;
    END IF;
    INSERT INTO expost.rounds VALUES (p_name, v_next, p_kind, p_record, v_now, v_round, v_token,
        v_spent_rho, v_spent_delta, v_spent_eps, v_spent_eps_delta);
    RETURN QUERY SELECT v_next, v_now, v_token;
END $$"""

INSTALL: Final = (
    "CREATE SCHEMA expost",
    "REVOKE ALL ON SCHEMA expost FROM PUBLIC",
    *_TABLES,
    _CHECK_COST,
    _PRICE,
    _WITHIN,
    _AT_MOST,
    *_READ,
    _APPEND,
    "REVOKE ALL ON ALL TABLES IN SCHEMA expost FROM PUBLIC",
    "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA expost FROM PUBLIC",
)
"""The statements that install the schema (run once, by its owner, in one transaction)."""


def client_grants(role: str) -> tuple[str, ...]:
    """The GRANT statements that let ``role`` (an SQL identifier, quoted here) use every ledger
    of the database as a session client, and nothing more."""
    quoted = '"' + role.replace('"', '""') + '"'
    return (
        f"GRANT USAGE ON SCHEMA expost TO {quoted}",
        *(f"GRANT EXECUTE ON FUNCTION {f} TO {quoted}" for f in CLIENT_FUNCTIONS),
    )
