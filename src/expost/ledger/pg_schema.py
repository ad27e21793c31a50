"""The PostgreSQL ledger's server side: schema ``expost``, its tables, and the functions clients call.

An administrator (the role that runs `expost ledger init`, or ``create=True``) installs the
schema once and owns it; clients get USAGE on the schema and EXECUTE on seven SECURITY DEFINER
functions (`client_grants`), and no privilege on the tables:

- ``expost.header(name)``: the ledger's id, format, schema version and configuration;
- ``expost.read_rounds(name, from)``: its rounds from ``from`` on (never the settle tokens);
- ``expost.lock_ledger(name, id)``: the ledger's lock, held to the end of the transaction;
- ``expost.append_round(name, id, kind, record, token)``: one round, validated, under that
  lock; returns (id, created, token);
- ``expost.read_rounds(name, from, to)``, ``expost.read_checkpoints(name, latest)`` and
  ``expost.write_checkpoint(name, id, entry, state)``: checkpoints, written only if the server
  confirms them (`expost.ledger.pg_checkpoints`).

What the server enforces: rounds are only appended (no client can UPDATE, DELETE, TRUNCATE,
DROP or disable a trigger: it owns nothing), ids are consecutive and stamped with the server's
clock, every record and configuration is a JSON object within the size limits of
`expost.ledger.limits` (checked before it is parsed), a ledger is created only by a role
allowed to run ``expost.create_ledger`` (never one whose rounds the server cannot price: an
`RDPFilter`'s) and never replaced (its name is its key, its random id fixed); only the owner
deletes one, and only without rounds (``expost.drop_empty_ledger``). In a session ledger
(format ``expost-session/…``) only ``reserve`` and ``settle`` entries with the session's record
shape, known cost types and numbers every client decodes and prices exactly are accepted
(``expost.check_cost``, `expost.ledger.pg_checks`); reservations are numbered in order; a
settlement needs the secret token the server returned to the reserving client (or settles a
stale round at exactly its reservation: `expost.ledger.limits.STALE_ROUNDS`), settles an open
reservation exactly once (a reservation is refused while the round `MAX_OPEN_ROUNDS` before it is
open), and stays within it (``expost.settles``: a fixed-price round at
exactly its reservation). For every filter kind it decides admission itself (``expost.price``,
``expost.within``), in exact decimals of the recorded numbers, against running totals kept in
each entry, with a relative slack of 1e-9 so it never refuses what the filter admits.

The lock (``expost.take_lock``) is a transaction-level advisory lock. Any role can take that key
too (at session level, kept with keep-alives), so a client that has waited the hold limit
(``expost.settings.hold_limit_s``, `HOLD_LIMIT_S` seconds unless the owner updates it: a table
row, not a custom parameter, which a least-privileged owner could not set on PostgreSQL 15+)
ends every backend that held the lock through its whole wait (what it saw in ``pg_locks``, never
the holder's transaction or query start, which keep-alives refresh); so no connection holds a
ledger past that limit (docs/sharing-a-budget.md, "How the PostgreSQL ledger locks").
What it trusts: the realised cost a client reports for its own round, within those rules.
"""

from __future__ import annotations

from typing import Final

from expost.ledger.limits import (
    HOLD_LIMIT_S,
    MAX_CONFIG_CHARS,
    MAX_NAME_CHARS,
    MAX_OPEN_ROUNDS,
    MAX_RECORD_CHARS,
    STALE_ROUNDS,
)
from expost.ledger.pg_checkpoints import CHECKPOINT_FUNCTIONS, CHECKPOINT_TABLE
from expost.ledger.pg_checks import CHECKS, PRICED_FILTERS, parts_sql

__all__ = [
    "CLIENT_FUNCTIONS",
    "FUNCTIONS",
    "INSTALL",
    "SCHEMA_VERSION",
    "SERVER_VERSION",
    "UPGRADE",
    "client_grants",
]

SCHEMA_VERSION: Final = 3  # 3: every filter kind's budget enforced (the tables and records)
SERVER_VERSION: Final = 6  # 6: checkpoints (`expost.ledger.pg_checkpoints`); stale rounds settled
_SAFE: Final = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"
_LOCK_CLASS: Final = 0x65787074  # "expt": the first key of a ledger's advisory lock

CLIENT_FUNCTIONS: Final = (
    "expost.header(text)",
    "expost.read_rounds(text, integer)",
    "expost.lock_ledger(text, uuid)",
    "expost.append_round(text, uuid, text, text, uuid)",
    "expost.read_rounds(text, integer, integer)",
    "expost.read_checkpoints(text, boolean)",
    "expost.write_checkpoint(text, uuid, integer, text)",
)
"""The functions a client role needs (with their argument types, as GRANT names them)."""

_SETTINGS: Final = (
    # the database's settings, changed by the schema's owner (UPDATE): no custom parameter, so
    # no GRANT SET ON PARAMETER (PostgreSQL 15+) and no superuser needed
    f"""CREATE TABLE IF NOT EXISTS expost.settings (
        one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row),
        hold_limit_s numeric NOT NULL DEFAULT {HOLD_LIMIT_S}
            CHECK (hold_limit_s > 0 AND hold_limit_s <= 86400))""",
    "INSERT INTO expost.settings DEFAULT VALUES ON CONFLICT DO NOTHING",
    "REVOKE ALL ON expost.settings FROM PUBLIC",
)

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
    *_SETTINGS,
    "CREATE UNIQUE INDEX rounds_reserved ON expost.rounds (ledger, round) WHERE kind = 'reserve'",
    "CREATE UNIQUE INDEX rounds_settled ON expost.rounds (ledger, round) WHERE kind = 'settle'",
)

_TRIGGERS: Final = tuple(
    f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE"
    f" ON expost.{table} FOR EACH STATEMENT EXECUTE FUNCTION expost.append_only()"
    for table in ("ledgers", "rounds")
)

_HELD: Final = f"""l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
                AND l.database = (SELECT d.oid FROM pg_database d
                                  WHERE d.datname = current_database())
                AND l.classid = {_LOCK_CLASS}::oid AND l.objid = v_key::oid AND l.objsubid = 2"""
"""Which rows of pg_locks are the ledger's lock held by another backend."""

_LOCK: Final = f"""
CREATE OR REPLACE FUNCTION expost.take_lock(p_name text) RETURNS void
LANGUAGE plpgsql {_SAFE} AS $$
DECLARE
    v_key integer := hashtext(p_name) & 2147483647;
    v_limit interval := make_interval(secs => coalesce(
        (SELECT s.hold_limit_s FROM expost.settings s), {HOLD_LIMIT_S}));
    v_caller text := current_setting('lock_timeout');  -- the caller's wait, restored after
    v_deadline timestamptz := CASE WHEN v_caller::interval > '0' THEN
                                   clock_timestamp() + v_caller::interval END;
    v_wait interval;
    v_seen integer[];  -- the backends that held it when this wait began
    v_since timestamptz;
    v_pid integer;
BEGIN
    IF pg_try_advisory_xact_lock({_LOCK_CLASS}, v_key) THEN  -- free (and no one queued)
        RETURN;
    END IF;
    LOOP
        v_wait := greatest(least(v_limit, coalesce(v_deadline - clock_timestamp(), v_limit)),
                           interval '1 millisecond');
        SELECT array_agg(l.pid), clock_timestamp() INTO v_seen, v_since
            FROM pg_locks l WHERE {_HELD};
        PERFORM set_config('lock_timeout',
                           ceil(extract(epoch FROM v_wait) * 1000)::bigint::text, true);
        BEGIN
            PERFORM pg_advisory_xact_lock({_LOCK_CLASS}, v_key);  -- the fair queue
            PERFORM set_config('lock_timeout', v_caller, true);
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
        -- Whoever held the lock when this wait began and holds it still, a whole hold limit
        -- later, has held it that long, whatever it did meanwhile (idled in its transaction,
        -- sent keep-alives, held the key at session level): it loses its connection, and its
        -- work rolls back. Only what this waiter saw counts, never how the holder looks (its
        -- transaction's or last query's start, which keep-alives refresh).
        IF clock_timestamp() - v_since >= v_limit THEN
            FOR v_pid IN SELECT l.pid FROM pg_locks l WHERE {_HELD} AND l.pid = ANY (v_seen)
            LOOP
                BEGIN
                    PERFORM pg_terminate_backend(v_pid);
                EXCEPTION WHEN insufficient_privilege THEN
                    RAISE EXCEPTION 'expost: ledger % is held past the % limit, and the owner of schema expost may not end other backends (GRANT pg_signal_backend TO it)',
                        p_name, v_limit USING ERRCODE = '42501';
                END;
            END LOOP;
        END IF;
        IF v_deadline IS NOT NULL AND clock_timestamp() >= v_deadline THEN
            PERFORM set_config('lock_timeout', v_caller, true);
            RAISE EXCEPTION 'expost: ledger % was busy for the whole lock_timeout (%); a holder past the hold limit (%) is ended only if the owner of schema expost may end other backends (pg_signal_backend)',
                p_name, v_caller, v_limit USING ERRCODE = '55P03';
        END IF;
    END LOOP;
END $$"""

_READ: Final = (
    """CREATE OR REPLACE FUNCTION expost.append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'ledgers'
                AND current_setting('expost.dropping_empty', true) = 'on' THEN
            RETURN NULL;  -- expost.drop_empty_ledger: a ledger without rounds
        END IF;
        RAISE EXCEPTION 'expost ledger tables are append-only';
    END $$""",
    f"""CREATE OR REPLACE FUNCTION expost.server_version() RETURNS integer LANGUAGE sql
    IMMUTABLE AS $$ SELECT {SERVER_VERSION} $$""",
    f"""CREATE OR REPLACE FUNCTION expost.header(p_name text)
    RETURNS TABLE (ledger_id uuid, format text, schema_version integer, config text)
    LANGUAGE sql STABLE {_SAFE} AS $$
        SELECT l.ledger_id, l.format, l.schema_version, l.config
        FROM expost.ledgers l WHERE l.name = p_name $$""",
    f"""CREATE OR REPLACE FUNCTION expost.read_rounds(p_name text, p_from integer)
    RETURNS TABLE (id integer, kind text, record text, created double precision)
    LANGUAGE sql STABLE {_SAFE} AS $$
        SELECT r.id, r.kind, r.record, r.created FROM expost.rounds r
        WHERE r.ledger = p_name AND r.id >= p_from ORDER BY r.id $$""",
    f"""CREATE OR REPLACE FUNCTION expost.lock_ledger(p_name text, p_id uuid) RETURNS void
    LANGUAGE plpgsql {_SAFE} AS $$
    BEGIN
        PERFORM expost.take_lock(p_name);
        PERFORM 1 FROM expost.ledgers l WHERE l.name = p_name AND l.ledger_id = p_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'expost: no ledger % with id %', p_name, p_id USING ERRCODE = 'P0002';
        END IF;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION expost.create_ledger(p_name text, p_config text) RETURNS uuid
    LANGUAGE plpgsql {_SAFE} AS $$
    DECLARE
        v_id uuid := gen_random_uuid();
        v_filter text;
    BEGIN
        IF length(p_config) > {MAX_CONFIG_CHARS} THEN
            RAISE EXCEPTION 'expost: a configuration has at most {MAX_CONFIG_CHARS} characters'
                USING ERRCODE = '54000';
        END IF;
        v_filter := p_config::jsonb -> 'filter' ->> 'type';
        IF p_config::jsonb ->> 'format' LIKE 'expost-session/%'
                AND NOT coalesce(v_filter = ANY ('{{{",".join(PRICED_FILTERS)}}}'::text[]), false)
        THEN
            RAISE EXCEPTION 'expost: the server cannot price rounds of a % ledger (it prices {", ".join(PRICED_FILTERS)}): keep it in a SQLite file', v_filter
                USING ERRCODE = '0A000';
        END IF;
        {parts_sql("p_config::jsonb")}
        INSERT INTO expost.ledgers VALUES (p_name, v_id, 'expost-ledger', {SCHEMA_VERSION},
            p_config, extract(epoch FROM clock_timestamp()));
        RETURN v_id;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION expost.drop_empty_ledger(p_name text) RETURNS void
    LANGUAGE plpgsql {_SAFE} AS $$
    DECLARE v_gone integer;
    BEGIN
        PERFORM expost.take_lock(p_name);
        IF EXISTS (SELECT 1 FROM expost.rounds r WHERE r.ledger = p_name) THEN
            RAISE EXCEPTION 'expost: ledger % holds rounds: it is kept', p_name
                USING ERRCODE = '55000';
        END IF;
        PERFORM set_config('expost.dropping_empty', 'on', true);
        DELETE FROM expost.ledgers l WHERE l.name = p_name;
        GET DIAGNOSTICS v_gone = ROW_COUNT;
        PERFORM set_config('expost.dropping_empty', '', true);
        IF v_gone = 0 THEN
            RAISE EXCEPTION 'expost: no ledger %', p_name USING ERRCODE = 'P0002';
        END IF;
    END $$""",
)

_APPEND: Final = f"""
CREATE OR REPLACE FUNCTION expost.append_round(p_name text, p_id uuid, p_kind text, p_record text,
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
    v_mechanism text;
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
    IF length(p_record) > {MAX_RECORD_CHARS} OR length(p_kind) > {MAX_NAME_CHARS} THEN
        RAISE EXCEPTION 'expost: a record has at most {MAX_RECORD_CHARS} characters and a kind at most {MAX_NAME_CHARS}, not % and %',
            length(p_record), length(p_kind) USING ERRCODE = '54000';
    END IF;
    PERFORM expost.take_lock(p_name);
    SELECT l.config::jsonb INTO v_config FROM expost.ledgers l
        WHERE l.name = p_name AND l.ledger_id = p_id;
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
                <> '{{cost,mechanism,round}}' OR jsonb_typeof(v_rec->'mechanism') <> 'string'
                OR length(v_rec->>'mechanism') > {MAX_NAME_CHARS} THEN
                RAISE EXCEPTION 'expost: a reserve entry is round, mechanism and cost: %', v_rec;
            END IF;
            IF v_round <> (SELECT coalesce(max(r.round) + 1, 0) FROM expost.rounds r
                           WHERE r.ledger = p_name AND r.kind = 'reserve') THEN
                RAISE EXCEPTION 'expost: reservation of round % is out of order', v_round;
            END IF;
            IF v_round >= {MAX_OPEN_ROUNDS} AND NOT EXISTS (SELECT 1 FROM expost.rounds r
                WHERE r.ledger = p_name AND r.kind = 'settle'
                    AND r.round = v_round - {MAX_OPEN_ROUNDS}) THEN
                RAISE EXCEPTION 'expost: round % is open while % later rounds were reserved: settle it (at its reservation, as any client may) before reserving round %',
                    v_round - {MAX_OPEN_ROUNDS}, {MAX_OPEN_ROUNDS}, v_round USING ERRCODE = '54000';
            END IF;
            v_token := gen_random_uuid();
        ELSE
            IF (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(v_rec) k)
                <> '{{cost,round}}' THEN
                RAISE EXCEPTION 'expost: a settle entry is round and cost: %', v_rec;
            END IF;
            SELECT r.record::jsonb -> 'cost', r.record::jsonb ->> 'mechanism', r.token
                INTO v_reserved, v_mechanism, v_reserve_token
                FROM expost.rounds r
                WHERE r.ledger = p_name AND r.kind = 'reserve' AND r.round = v_round;
            -- the token's holder settles its round; anyone settles a stale round (open while
            -- {STALE_ROUNDS} later ones were reserved) at exactly its reservation (no charge moves)
            IF NOT FOUND OR (p_token IS NULL OR v_reserve_token IS DISTINCT FROM p_token)
                AND NOT (v_rec->'cost' = v_reserved AND v_round + {STALE_ROUNDS} <= (
                    SELECT max(r.round) FROM expost.rounds r
                    WHERE r.ledger = p_name AND r.kind = 'reserve')) THEN
                RAISE EXCEPTION 'expost: no reservation of round % for this token', v_round
                    USING ERRCODE = '42501';
            END IF;
            IF EXISTS (SELECT 1 FROM expost.rounds r
                       WHERE r.ledger = p_name AND r.kind = 'settle' AND r.round = v_round) THEN
                RAISE EXCEPTION 'expost: round % is already settled', v_round;
            END IF;
            IF NOT expost.settles(v_rec->'cost', v_reserved, v_mechanism) THEN
                RAISE EXCEPTION 'expost: settlement % of round % does not fit its reservation % (%)',
                    v_rec->'cost', v_round, v_reserved, v_mechanism USING ERRCODE = '22023';
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

FUNCTIONS: Final = (*_READ[:2], *CHECKS, _LOCK, *_READ[2:], _APPEND, *CHECKPOINT_FUNCTIONS)
"""Every function of the schema, as CREATE OR REPLACE statements: an install runs them, and an
upgrade of a schema made by an earlier release runs them again (`UPGRADE`)."""

_VERSION_FOR_ALL: Final = "GRANT EXECUTE ON FUNCTION expost.server_version() TO PUBLIC"

INSTALL: Final = (
    "CREATE SCHEMA expost",
    "REVOKE ALL ON SCHEMA expost FROM PUBLIC",
    *_TABLES,
    *CHECKPOINT_TABLE[:2],
    *FUNCTIONS,
    *_TRIGGERS,
    *CHECKPOINT_TABLE[2:],
    "REVOKE ALL ON ALL TABLES IN SCHEMA expost FROM PUBLIC",
    "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA expost FROM PUBLIC",
    _VERSION_FOR_ALL,
)
"""The statements that install the schema (run once, by its owner, in one transaction)."""

UPGRADE: Final = (
    "DROP FUNCTION IF EXISTS expost.at_most(jsonb, jsonb)",
    *_SETTINGS,
    *CHECKPOINT_TABLE[:2],
    *FUNCTIONS,
    *CHECKPOINT_TABLE[2:],
    "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA expost FROM PUBLIC",
    _VERSION_FOR_ALL,
)
"""The statements that bring a schema of an earlier `SERVER_VERSION` to this one (its owner, in
one transaction): the tables and the rounds stay, every function is replaced; the grants of the
client functions stay (their signatures are unchanged), ``expost.settings`` is created if
missing (with the default hold limit), else kept, and ``expost.checkpoints`` if missing (a
client role needs the grants of the functions new to this version: `client_grants` again)."""


def client_grants(role: str) -> tuple[str, ...]:
    """The GRANT statements that let ``role`` (an SQL identifier, quoted here) use every ledger
    of the database as a session client, and nothing more."""
    quoted = '"' + role.replace('"', '""') + '"'
    return (
        f"GRANT USAGE ON SCHEMA expost TO {quoted}",
        *(f"GRANT EXECUTE ON FUNCTION {f} TO {quoted}" for f in CLIENT_FUNCTIONS),
    )
