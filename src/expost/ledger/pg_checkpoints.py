"""Checkpoints of a PostgreSQL session ledger: the table, and the functions that write and read it.

A client writes a checkpoint (its replay's state, `expost.ledger.replay.Replay.state`) only
through ``expost.write_checkpoint`` (SECURITY DEFINER, under the ledger's lock), which stores it
only if the server can confirm what it claims: it covers every entry so far (and more than the
latest checkpoint); its settled prefix (``rounds``) and its ``tail`` together are the ledger's
reservations; every round of the prefix is settled; each tail round's request and settle are the
ledger's own records of that round; and its exact sums are at least what the server itself
charged the prefix (its running total at the last entry less the tail's charges, each priced
by ``expost.price``), less a relative 1e-12 for the binary partials against exact decimals (a
round's float price is the nearest-or-above double of the exact decimal one, off by a few units
in the last place: 1e-12 is thousands of them). A least-privileged client cannot write the
table in any other way. An open reads the latest checkpoint (``expost.read_checkpoints``) and
the entries after it (``expost.read_rounds``); docs/session.md, "Checkpoints: long-lived
ledgers", says what it trusts.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CHECKPOINT_FUNCTIONS", "CHECKPOINT_TABLE", "MAX_CHECKPOINT_CHARS"]

MAX_CHECKPOINT_CHARS: Final = 4_000_000
"""The longest checkpoint the server stores (a tail of 2,048 rounds of the longest costs)."""

_SAFE: Final = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"
_SLACK: Final = "(1 - 1e-12)"

CHECKPOINT_TABLE: Final = (
    """CREATE TABLE IF NOT EXISTS expost.checkpoints (
        ledger text NOT NULL REFERENCES expost.ledgers,
        entry integer NOT NULL CHECK (entry > 0),
        state text NOT NULL,
        PRIMARY KEY (ledger, entry))""",
    "REVOKE ALL ON expost.checkpoints FROM PUBLIC",
    "DROP TRIGGER IF EXISTS checkpoints_append_only ON expost.checkpoints",
    (
        "CREATE TRIGGER checkpoints_append_only BEFORE UPDATE OR DELETE OR TRUNCATE"
        " ON expost.checkpoints FOR EACH STATEMENT EXECUTE FUNCTION expost.append_only()"
    ),
)
"""The table (made by an install, and by the upgrade of a schema without one): append-only."""

_PART_COVERS: Final = f"""
CREATE OR REPLACE FUNCTION expost.part_covers(p jsonb, amount numeric, delta numeric)
RETURNS boolean LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT jsonb_typeof(p) = 'object' AND jsonb_typeof(p->'amounts') = 'array'
        AND jsonb_typeof(p->'deltas') = 'array'
        AND (SELECT coalesce(sum((x #>> '{{}}')::numeric), 0)
             FROM jsonb_array_elements(p->'amounts') x) >= amount * {_SLACK}
        AND (SELECT coalesce(sum((x #>> '{{}}')::numeric), 0)
             FROM jsonb_array_elements(p->'deltas') x) >= delta * {_SLACK}
$$"""

_COVERS: Final = """
CREATE OR REPLACE FUNCTION expost.covers(f jsonb, s jsonb, rho numeric, delta numeric,
    eps numeric, eps_delta numeric)
RETURNS boolean LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE f->>'type'  -- the filter's sums in its unit: eps for ex-post, else rho (or mu²)
        WHEN 'ConcurrentFilter' THEN expost.part_covers(s->'zcdp', rho, delta)
            AND expost.part_covers(s->'ex_post', eps, eps_delta)
        WHEN 'ExPostFilter' THEN expost.part_covers(s, eps, eps_delta)
        ELSE expost.part_covers(s, rho, delta) END
$$"""

_WRITE: Final = f"""
CREATE OR REPLACE FUNCTION expost.write_checkpoint(p_name text, p_id uuid, p_entry integer,
    p_state text) RETURNS void
LANGUAGE plpgsql {_SAFE} AS $$
DECLARE
    v_config jsonb;
    v_state jsonb;
    v_next integer;
    v_rounds integer;
    v_before integer;
    v_reserved integer;
    v_rho numeric; v_delta numeric; v_eps numeric; v_eps_delta numeric;
    t_rho numeric; t_delta numeric; t_eps numeric; t_eps_delta numeric;
BEGIN
    IF length(p_state) > {MAX_CHECKPOINT_CHARS} THEN
        RAISE EXCEPTION 'expost: a checkpoint has at most {MAX_CHECKPOINT_CHARS} characters'
            USING ERRCODE = '54000';
    END IF;
    PERFORM expost.take_lock(p_name);
    SELECT l.config::jsonb INTO v_config FROM expost.ledgers l
        WHERE l.name = p_name AND l.ledger_id = p_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'expost: no ledger % with id %', p_name, p_id USING ERRCODE = 'P0002';
    END IF;
    IF coalesce(v_config->>'format', '') NOT LIKE 'expost-session/%' THEN
        RAISE EXCEPTION 'expost: only a session ledger takes checkpoints';
    END IF;
    v_state := p_state::jsonb;
    IF jsonb_typeof(v_state) IS DISTINCT FROM 'object'
        OR v_state->>'format' IS DISTINCT FROM 'expost-checkpoint/1'
        OR jsonb_typeof(v_state->'rounds') IS DISTINCT FROM 'number'
        OR (v_state->>'rounds') !~ '^[0-9]{{1,9}}$'
        OR jsonb_typeof(v_state->'tail') IS DISTINCT FROM 'array'
        OR jsonb_typeof(v_state->'sums') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'expost: a checkpoint is a replay state (expost-checkpoint/1)';
    END IF;
    v_rounds := (v_state->>'rounds')::integer;
    -- it covers every entry so far, and more than the latest checkpoint
    SELECT r.id + 1, r.spent_rho, r.spent_delta, r.spent_eps, r.spent_eps_delta
        INTO v_next, v_rho, v_delta, v_eps, v_eps_delta
        FROM expost.rounds r WHERE r.ledger = p_name ORDER BY r.id DESC LIMIT 1;
    SELECT (c.state::jsonb->>'rounds')::integer INTO v_before FROM expost.checkpoints c
        WHERE c.ledger = p_name ORDER BY c.entry DESC LIMIT 1;
    IF v_next IS NULL OR p_entry IS DISTINCT FROM v_next OR v_before > v_rounds
        OR EXISTS (SELECT 1 FROM expost.checkpoints c
                   WHERE c.ledger = p_name AND c.entry >= p_entry) THEN
        RAISE EXCEPTION 'expost: a checkpoint covers every entry (%), after the latest', v_next;
    END IF;
    -- its prefix and tail are the ledger's reservations; every round of the prefix is settled
    SELECT coalesce(max(r.round) + 1, 0) INTO v_reserved FROM expost.rounds r
        WHERE r.ledger = p_name AND r.kind = 'reserve';
    IF v_rounds + jsonb_array_length(v_state->'tail') <> v_reserved
        OR (SELECT count(*) FROM expost.rounds r WHERE r.ledger = p_name AND r.kind = 'settle'
            AND r.round >= coalesce(v_before, 0) AND r.round < v_rounds)
           <> v_rounds - coalesce(v_before, 0) THEN
        RAISE EXCEPTION 'expost: the checkpoint''s rounds are not the ledger''s (% reserved)',
            v_reserved;
    END IF;
    -- each tail round is the ledger's: its request, and its settle or null
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(v_state->'tail') WITH ORDINALITY t(e, i)
               LEFT JOIN expost.rounds q ON q.ledger = p_name AND q.kind = 'reserve'
                   AND q.round = v_rounds + t.i - 1
               LEFT JOIN expost.rounds s ON s.ledger = p_name AND s.kind = 'settle'
                   AND s.round = v_rounds + t.i - 1
               WHERE jsonb_typeof(t.e) IS DISTINCT FROM 'array' OR jsonb_array_length(t.e) <> 2
                   OR q.record IS NULL OR q.record::jsonb -> 'cost' IS DISTINCT FROM t.e -> 0
                   OR s.record::jsonb -> 'cost'
                      IS DISTINCT FROM nullif(t.e -> 1, 'null'::jsonb)) THEN
        RAISE EXCEPTION 'expost: the checkpoint''s open rounds are not the ledger''s';
    END IF;
    -- its sums: at least what the server charged the prefix (the total less the tail's charges)
    SELECT coalesce(sum(p.rho), 0), coalesce(sum(p.delta), 0), coalesce(sum(p.eps), 0),
            coalesce(sum(p.eps_delta), 0)
        INTO t_rho, t_delta, t_eps, t_eps_delta
        FROM jsonb_array_elements(v_state->'tail') t(e),
            expost.price(v_config->'filter', coalesce(nullif(t.e -> 1, 'null'::jsonb), t.e -> 0)) p;
    IF NOT expost.covers(v_config->'filter', v_state->'sums', coalesce(v_rho, 0) - t_rho,
                         coalesce(v_delta, 0) - t_delta, coalesce(v_eps, 0) - t_eps,
                         coalesce(v_eps_delta, 0) - t_eps_delta) THEN
        RAISE EXCEPTION 'expost: the checkpoint''s sums are below what the ledger charged'
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO expost.checkpoints VALUES (p_name, p_entry, p_state);
END $$"""

_READ: Final = (
    f"""CREATE OR REPLACE FUNCTION expost.read_checkpoints(p_name text, p_latest boolean)
    RETURNS TABLE (entry integer, state text) LANGUAGE sql STABLE {_SAFE} AS $$
        SELECT c.entry, c.state FROM (
            SELECT c.entry, c.state FROM expost.checkpoints c WHERE c.ledger = p_name
            ORDER BY c.entry DESC LIMIT CASE WHEN p_latest THEN 1 END) c
        ORDER BY c.entry $$""",
    f"""CREATE OR REPLACE FUNCTION expost.read_rounds(p_name text, p_from integer, p_to integer)
    RETURNS TABLE (id integer, kind text, record text, created double precision)
    LANGUAGE sql STABLE {_SAFE} AS $$
        SELECT r.id, r.kind, r.record, r.created FROM expost.rounds r
        WHERE r.ledger = p_name AND r.id >= p_from AND r.id < p_to ORDER BY r.id $$""",
)

CHECKPOINT_FUNCTIONS: Final = (_PART_COVERS, _COVERS, _WRITE, *_READ)
"""The functions of the checkpoints (CREATE OR REPLACE: an install and an upgrade run them)."""
