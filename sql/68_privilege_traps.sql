-- Look-alike operators and functions in a user's schema, first on the
-- search_path (issue 15, item 1).  An attacker who holds only CREATE on its
-- own schema plants, for the common types, an operator for every
-- comparison, arithmetic, || and LIKE operator of pg_catalog, and functions
-- and aggregates with common names (now, count, sum, lower, format, ...).
-- Each trap notes (trap, current_user, session_user) in a log and returns
-- pg_catalog's answer, so nothing else changes; a trap that runs as a
-- superuser also tries ALTER ROLE ... SUPERUSER, the escalation the issue
-- describes.
--
-- Phase 1: the attacker, with search_path = 'regress_trap, pg_catalog,
-- public', drives every function and procedure of schema backfill on its
-- own tables, the pg_cron tick path included, and reads every view and
-- table.  A trap that fired as anyone but the attacker fails the test.  The
-- functions driven are listed below and compared with pg_proc by
-- regprocedure, so a new entry point fails this test until it is driven.
--
-- Phase 2: an innocent role with the attacker's schema first on its
-- search_path, and registered text that is itself fully qualified, plans,
-- runs and reads its own target: no trap fires at all, so every statement
-- the extension writes itself is pinned or qualified.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 6800, false) IS NOT NULL AS ids_fixed;

CREATE ROLE regress_trap_attacker;
CREATE ROLE regress_trap_innocent;
-- parallel chunks' background workers connect as the caller (issue 19)
ALTER ROLE regress_trap_attacker LOGIN;
GRANT USAGE ON SCHEMA cron TO regress_trap_attacker;
CREATE SCHEMA regress_trap AUTHORIZATION regress_trap_attacker;
CREATE SCHEMA regress_inn AUTHORIZATION regress_trap_innocent;

-- The log of fired traps (anyone may append).
CREATE SCHEMA regress_trap_log;
GRANT USAGE ON SCHEMA regress_trap_log TO PUBLIC;
CREATE TABLE regress_trap_log.fired (trap text, cur name, sess name,
                                     PRIMARY KEY (trap, cur, sess));
GRANT SELECT, INSERT ON regress_trap_log.fired TO PUBLIC;

-------------------------------------------------------------------------
-- The traps, planted by the attacker.
-------------------------------------------------------------------------
SET SESSION AUTHORIZATION regress_trap_attacker;
SET search_path = pg_catalog;
GRANT USAGE ON SCHEMA regress_trap TO PUBLIC;

CREATE FUNCTION regress_trap.note(trap text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO regress_trap_log.fired VALUES (trap, current_user, session_user)
        ON CONFLICT DO NOTHING;
    -- what the issue's operator did, whenever it runs with more rights
    IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r
         WHERE r.rolname OPERATOR(pg_catalog.=) current_user) THEN
        BEGIN
            EXECUTE 'ALTER ROLE regress_trap_attacker SUPERUSER';
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END IF;
END
$$;

-- Operators: every binary operator of pg_catalog named below whose two
-- argument types are common ones, plus comparisons of the OID alias types
-- (regclass, ...), which pg_catalog only compares through oid: an exact
-- match elsewhere on the path would win over it.
DO $$
DECLARE
    o record;
    n int := 0;
    fn text;
BEGIN
    FOR o IN
        SELECT op.oprname AS name,
               pg_catalog.format_type(op.oprleft, NULL) AS l,
               pg_catalog.format_type(op.oprright, NULL) AS r,
               pg_catalog.format_type(op.oprresult, NULL) AS res
          FROM pg_catalog.pg_operator op
         WHERE op.oprnamespace OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.regnamespace
           AND op.oprkind OPERATOR(pg_catalog.=) 'b'
           AND op.oprname OPERATOR(pg_catalog.=) ANY ('{=,<>,<,<=,>,>=,+,-,*,/,%,&,||,~~,!~~,~~*,!~~*}')
           AND op.oprleft OPERATOR(pg_catalog.=) ANY ('{text,name,int2,int4,int8,numeric,float8,oid,timestamptz,timestamp,date,interval,bool,bytea}'::pg_catalog.regtype[])
           AND op.oprright OPERATOR(pg_catalog.=) ANY ('{text,name,int2,int4,int8,numeric,float8,oid,timestamptz,timestamp,date,interval,bool,bytea}'::pg_catalog.regtype[])
        UNION ALL
        SELECT c.op, t.t, t.t, 'boolean'
          FROM pg_catalog.unnest('{=,<>,<,<=,>,>=}'::pg_catalog.text[]) AS c(op),
               pg_catalog.unnest('{regclass,regrole,regnamespace,regproc,regprocedure,regtype}'::pg_catalog.text[]) AS t(t)
         ORDER BY 1, 2, 3
    LOOP
        n := n OPERATOR(pg_catalog.+) 1;
        fn := pg_catalog.format('regress_trap.op_%s', n);
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION %s(a %s, b %s) RETURNS %s LANGUAGE plpgsql '
            'SET search_path = pg_catalog, pg_temp AS %L',
            fn, o.l, o.r, o.res,
            pg_catalog.format('BEGIN PERFORM regress_trap.note(%L); '
                              'RETURN a OPERATOR(pg_catalog.%s) b; END',
                              pg_catalog.format('%s(%s,%s)', o.name, o.l, o.r), o.name));
        EXECUTE pg_catalog.format(
            'CREATE OPERATOR regress_trap.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)',
            o.name, o.l, o.r, fn);
    END LOOP;
END
$$;
SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 150 AS many_operators
  FROM pg_catalog.pg_operator WHERE oprnamespace OPERATOR(pg_catalog.=) 'regress_trap'::pg_catalog.regnamespace;

-- Functions with common names.
CREATE FUNCTION regress_trap.now() RETURNS timestamptz
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('now()'); RETURN pg_catalog.now(); END$$;
CREATE FUNCTION regress_trap.clock_timestamp() RETURNS timestamptz
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('clock_timestamp()'); RETURN pg_catalog.clock_timestamp(); END$$;
CREATE FUNCTION regress_trap.lower(t text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('lower(text)'); RETURN pg_catalog.lower(t); END$$;
CREATE FUNCTION regress_trap.upper(t text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('upper(text)'); RETURN pg_catalog.upper(t); END$$;
CREATE FUNCTION regress_trap.length(t text) RETURNS int
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('length(text)'); RETURN pg_catalog.length(t); END$$;
CREATE FUNCTION regress_trap.format(f text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('format(text)'); RETURN pg_catalog.format(f); END$$;
CREATE FUNCTION regress_trap.format(f text, a text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('format(text,text)'); RETURN pg_catalog.format(f, a); END$$;
CREATE FUNCTION regress_trap.format(f text, a text, b text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('format(text,text,text)'); RETURN pg_catalog.format(f, a, b); END$$;
CREATE FUNCTION regress_trap.concat(a text, b text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('concat(text,text)'); RETURN pg_catalog.concat(a, b); END$$;
CREATE FUNCTION regress_trap.quote_ident(t text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('quote_ident(text)'); RETURN pg_catalog.quote_ident(t); END$$;
CREATE FUNCTION regress_trap.date_trunc(u text, t timestamptz) RETURNS timestamptz
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('date_trunc(text,timestamptz)'); RETURN pg_catalog.date_trunc(u, t); END$$;
CREATE FUNCTION regress_trap.to_char(t timestamptz, f text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('to_char(timestamptz,text)'); RETURN pg_catalog.to_char(t, f); END$$;
CREATE FUNCTION regress_trap.round(x numeric, d int) RETURNS numeric
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('round(numeric,int)'); RETURN pg_catalog.round(x, d); END$$;
CREATE FUNCTION regress_trap.abs(x numeric) RETURNS numeric
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('abs(numeric)'); RETURN pg_catalog.abs(x); END$$;
CREATE FUNCTION regress_trap.cardinality(a anyarray) RETURNS int
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('cardinality(anyarray)'); RETURN pg_catalog.cardinality(a); END$$;
CREATE FUNCTION regress_trap.array_length(a anyarray, d int) RETURNS int
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('array_length(anyarray,int)'); RETURN pg_catalog.array_length(a, d); END$$;
CREATE FUNCTION regress_trap.unnest(a anyarray) RETURNS SETOF anyelement
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('unnest(anyarray)'); RETURN QUERY SELECT pg_catalog.unnest(a); END$$;
CREATE FUNCTION regress_trap.pg_backend_pid() RETURNS int
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('pg_backend_pid()'); RETURN pg_catalog.pg_backend_pid(); END$$;
CREATE FUNCTION regress_trap.current_database() RETURNS name
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('current_database()'); RETURN pg_catalog.current_database(); END$$;
CREATE FUNCTION regress_trap.has_table_privilege(t oid, p text) RETURNS bool
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('has_table_privilege(oid,text)'); RETURN pg_catalog.has_table_privilege(t, p); END$$;
CREATE FUNCTION regress_trap.encode(b bytea, f text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('encode(bytea,text)'); RETURN pg_catalog.encode(b, f); END$$;
CREATE FUNCTION regress_trap.sha256(b bytea) RETURNS bytea
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('sha256(bytea)'); RETURN pg_catalog.sha256(b); END$$;
CREATE FUNCTION regress_trap.convert_to(t text, e name) RETURNS bytea
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('convert_to(text,name)'); RETURN pg_catalog.convert_to(t, e); END$$;
CREATE FUNCTION regress_trap.current_setting(n text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('current_setting(text)'); RETURN pg_catalog.current_setting(n); END$$;

-- Aggregates with common names, each step noted.
CREATE FUNCTION regress_trap.count_star_step(s int8) RETURNS int8
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('count(*)'); RETURN s OPERATOR(pg_catalog.+) 1; END$$;
CREATE AGGREGATE regress_trap.count(*) (sfunc = regress_trap.count_star_step,
                                        stype = int8, initcond = '0');
CREATE FUNCTION regress_trap.count_step(s int8, x anyelement) RETURNS int8
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('count(anyelement)');
       RETURN CASE WHEN x IS NULL THEN s ELSE s OPERATOR(pg_catalog.+) 1 END; END$$;
CREATE AGGREGATE regress_trap.count(anyelement) (sfunc = regress_trap.count_step,
                                                 stype = int8, initcond = '0');
CREATE FUNCTION regress_trap.sum4_step(s int8, x int4) RETURNS int8
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('sum(integer)');
       RETURN CASE WHEN x IS NULL THEN s ELSE COALESCE(s, 0) OPERATOR(pg_catalog.+) x END; END$$;
CREATE AGGREGATE regress_trap.sum(int4) (sfunc = regress_trap.sum4_step, stype = int8);
CREATE FUNCTION regress_trap.sum8_step(s numeric, x int8) RETURNS numeric
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('sum(bigint)');
       RETURN CASE WHEN x IS NULL THEN s ELSE COALESCE(s, 0) OPERATOR(pg_catalog.+) x END; END$$;
CREATE AGGREGATE regress_trap.sum(int8) (sfunc = regress_trap.sum8_step, stype = numeric);
CREATE FUNCTION regress_trap.sumn_step(s numeric, x numeric) RETURNS numeric
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('sum(numeric)');
       RETURN CASE WHEN x IS NULL THEN s ELSE COALESCE(s, 0) OPERATOR(pg_catalog.+) x END; END$$;
CREATE AGGREGATE regress_trap.sum(numeric) (sfunc = regress_trap.sumn_step, stype = numeric);
CREATE FUNCTION regress_trap.max_step(s timestamptz, x timestamptz) RETURNS timestamptz
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('max(timestamptz)');
       RETURN GREATEST(s, x); END$$;
CREATE AGGREGATE regress_trap.max(timestamptz) (sfunc = regress_trap.max_step, stype = timestamptz);
CREATE FUNCTION regress_trap.min_step(s timestamptz, x timestamptz) RETURNS timestamptz
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('min(timestamptz)');
       RETURN LEAST(s, x); END$$;
CREATE AGGREGATE regress_trap.min(timestamptz) (sfunc = regress_trap.min_step, stype = timestamptz);
CREATE FUNCTION regress_trap.string_agg_step(s text, x text, d text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('string_agg(text,text)');
       RETURN CASE WHEN x IS NULL THEN s WHEN s IS NULL THEN x
                   ELSE s OPERATOR(pg_catalog.||) d OPERATOR(pg_catalog.||) x END; END$$;
CREATE AGGREGATE regress_trap.string_agg(text, text) (sfunc = regress_trap.string_agg_step, stype = text);
CREATE FUNCTION regress_trap.array_agg_step(s anyarray, x anyelement) RETURNS anyarray
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('array_agg(anyelement)');
       RETURN pg_catalog.array_append(s, x); END$$;
CREATE AGGREGATE regress_trap.array_agg(anyelement) (sfunc = regress_trap.array_agg_step,
                                                     stype = anyarray);

-- The attacker's own tables.
CREATE TABLE regress_trap.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO regress_trap.src
SELECT t, 1 FROM pg_catalog.generate_series('2026-03-01 00:00+00'::timestamptz,
                                            '2026-03-10 23:00+00', '1 hour') AS t;
CREATE TABLE regress_trap.daily (day timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE regress_trap.monthly (month timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE regress_trap.gone (ts timestamptz NOT NULL, v int NOT NULL);

-- Last, types: a domain named like each common type, whose check notes a
-- cast to it (an unqualified type name in a statement).
CREATE FUNCTION regress_trap.dom_note(t text) RETURNS bool
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS
$$BEGIN PERFORM regress_trap.note('domain ' OPERATOR(pg_catalog.||) t); RETURN true; END$$;
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY '{text,name,oid,regclass,regrole,int2,int4,int8,float8,bool,bytea,timestamptz,date,jsonb}'::text[]
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE DOMAIN regress_trap.%I AS pg_catalog.%I CHECK (regress_trap.dom_note(%L))',
            t, t, t);
    END LOOP;
END
$$;
RESET SESSION AUTHORIZATION;

-------------------------------------------------------------------------
-- Phase 1: the attacker drives every entry point, the traps first on its
-- path.
-------------------------------------------------------------------------
SET SESSION AUTHORIZATION regress_trap_attacker;
SET search_path = regress_trap, pg_catalog, public;
SET client_min_messages = warning;

-- primitives
SELECT count(*) AS chunks FROM backfill.split_range('2026-03-01', '2026-03-04', '1 day');
SELECT backfill.in_quiet_hours('22:00-06:00', 'UTC', '2026-03-01 23:00+00') AS quiet;
SELECT backfill._in_range('2026-03-01 10:00+00'::timestamptz, '2026-03-01', '2026-03-02') IS NOT NULL AS tz,
       backfill._in_range('2026-03-01 10:00'::timestamp, '2026-03-01', '2026-03-02') IS NOT NULL AS ts,
       backfill._in_range('2026-03-01'::date, '2026-03-01', '2026-03-02') IS NOT NULL AS d;

-- targets: register (twice: the second compares with the stored version),
-- set_strategy, depend and undepend
SELECT backfill.register('regress_trap.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS total
        FROM regress_trap.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v1', measure => 'sum(total)',
    ledger => $$SELECT sum(v) FROM regress_trap.src WHERE ts >= $1 AND ts < $2$$,
    source_horizon => $$SELECT least(now(), '2026-01-01 00:00+00'::timestamptz)$$) AS version;
SELECT backfill.register('regress_trap.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS total
        FROM regress_trap.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v1', measure => 'sum(total)',
    ledger => $$SELECT sum(v) FROM regress_trap.src WHERE ts >= $1 AND ts < $2$$,
    source_horizon => $$SELECT least(now(), '2026-01-01 00:00+00'::timestamptz)$$) AS same_version;
SELECT backfill.register('regress_trap.monthly', 'month',
    $$SELECT date_trunc('month', day) AS month, sum(total)::int AS total
        FROM regress_trap.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$,
    chunk => '1 month') AS version;
SELECT backfill.set_strategy('regress_trap.daily', 'delete') AS previous;
SELECT backfill.depend('regress_trap.monthly', 'regress_trap.daily') AS added;
SELECT backfill.undepend('regress_trap.monthly', 'regress_trap.daily') AS removed;
SELECT backfill.depend('regress_trap.monthly', 'regress_trap.daily') AS added;
-- the definitions as code: every target, and one
SELECT pg_catalog.length(backfill.export_definitions()) > 0 AS exported;

-- runs: preview, plan, run (probe, rest), backfill, reconcile, check,
-- changes, lineage, the chart, cancel
SELECT rows_inserted, after_value, ledger_value
  FROM backfill.preview('regress_trap.daily', '2026-03-01', '2026-03-03');
SELECT backfill.plan('regress_trap.daily', '2026-03-01', '2026-03-03', note => 'trap run') AS r1 \gset
CALL backfill.run(:r1);
CALL backfill.run(:r1);
CALL backfill.backfill('regress_trap.daily', '2026-03-03', '2026-03-04');
SELECT chunk_no, verdict FROM backfill.reconcile(:r1);
SELECT chunk_no, verdict FROM backfill.check('regress_trap.daily', '2026-03-01', '2026-03-04');
SELECT chunk_no, delta FROM backfill.changes(:r1);
SELECT range_start, range_end, state FROM backfill.lineage('regress_trap.daily');
SELECT * FROM backfill.lineage_chart('regress_trap.daily', '2026-03-01', '2026-03-05');
SELECT backfill.plan('regress_trap.daily', '2026-03-10', '2026-03-11') AS r3 \gset
SELECT backfill.cancel(:r3) AS cancelled;
-- parallel chunks (issue 19): the chunks run in background workers as the
-- attacker, the tick path with parallel too
SELECT backfill.plan('regress_trap.daily', '2026-03-11', '2026-03-14', probe => false) AS r4 \gset
CALL backfill.run(:r4, max_chunks => 2, parallel => 2);
SELECT count(*) FILTER (WHERE executed_via = 'worker') AS by_workers
  FROM backfill.chunks WHERE run_id = :r4;
CALL backfill.backfill('regress_trap.daily', '2026-03-14', '2026-03-16', parallel => 2);
SELECT backfill.schedule(:r4, '0 0 30 2 *', chunks_per_tick => 2, parallel => 2) > 0 AS scheduled;
SET application_name = 'pg_cron';
CALL backfill.run(:r4, max_chunks => 2, parallel => 2);
RESET application_name;
SELECT status FROM backfill.runs WHERE run_id = :r4;
-- replan (issue 17): a run, then a group, planned again and cancelled
SELECT backfill.plan('regress_trap.daily', '2026-03-11', '2026-03-12') AS r4 \gset
SELECT backfill.replan(:r4) AS r5 \gset
SELECT backfill.cancel(:r5) AS cancelled;
SELECT backfill.plan('regress_trap.daily', '2026-03-12', '2026-03-13', cascade => true) AS g3 \gset
SELECT backfill.replan_group(:g3) AS g4 \gset
SELECT backfill.cancel_group(:g4) AS cancelled;
SELECT backfill.cron_eta('*/5 * * * *', 2, '22:00-06:00', 'UTC', 10,
                         '2026-03-01 12:00+00') AS eta;

-- pg_cron: schedule, unschedule, and the tick path: a tick refused for lack
-- of INSERT notes runs.last_error (the statement of the issue), then ticks
-- finish the run (the last one parks its job)
SELECT backfill.plan('regress_trap.daily', '2026-03-04', '2026-03-07', probe => false) AS r2 \gset
SELECT backfill.schedule(:r2, '0 0 30 2 *') > 0 AS scheduled;
SELECT backfill.unschedule(:r2) AS unscheduled;
SELECT backfill.schedule(:r2, '0 0 30 2 *', chunks_per_tick => 2) > 0 AS scheduled;
REVOKE INSERT ON regress_trap.daily FROM regress_trap_attacker;
SET application_name = 'pg_cron';
CALL backfill.run(:r2, max_chunks => 2);
RESET application_name;
SELECT last_error FROM backfill.progress WHERE run_id = :r2;
GRANT INSERT ON regress_trap.daily TO regress_trap_attacker;
SET application_name = 'pg_cron';
CALL backfill.run(:r2, max_chunks => 2);
CALL backfill.run(:r2, max_chunks => 2);
RESET application_name;
SELECT status, last_error FROM backfill.runs WHERE run_id = :r2;

-- standing checks, run by hand and as a tick
SELECT backfill.schedule_check('regress_trap.daily', '0 0 30 2 *', '3 days') > 0 AS scheduled;
SELECT check_id AS c FROM backfill.checks WHERE target = 'regress_trap.daily'::regclass \gset
SELECT backfill.run_check(:c) AS failing;
SET application_name = 'pg_cron';
SELECT backfill.run_check(:c) AS failing;
RESET application_name;
-- the failing pg_cron ticks of the caller's jobs, as progress reads them
-- (pg_cron's log read as the extension owner): none here
SELECT count(*) AS failing_ticks FROM backfill._tick_failures();
SELECT backfill.unschedule_check(:c) AS unscheduled;

-- a cascading plan: a group run, reconciled; another scheduled, cancelled
SELECT backfill.plan('regress_trap.daily', '2026-03-07', '2026-03-09', probe => false,
                     cascade => true) AS g1 \gset
CALL backfill.run_group(:g1, parallel => 2);
SELECT target, chunk_no, verdict FROM backfill.reconcile_group(:g1);
SELECT backfill.plan('regress_trap.daily', '2026-03-09', '2026-03-10', probe => false,
                     cascade => true) AS g2 \gset
SELECT backfill.schedule_group(:g2, '0 0 30 2 *', parallel => 2) AS scheduled;
SELECT backfill.unschedule_group(:g2) AS unscheduled;
SELECT backfill.cancel_group(:g2) AS cancelled;

-- changed regions: watch, the trigger on every kind of write (its catalog
-- write as the extension owner; the chunk is recorded once, by the first
-- of the three transactions), a stale plan and its run, unwatch
SELECT backfill.watch('regress_trap.daily', 'regress_trap.src', 'ts') AS watching;
INSERT INTO regress_trap.src VALUES ('2026-03-02 05:00+00', 1);
UPDATE regress_trap.src SET v = v + 1 WHERE ts = '2026-03-02 05:00+00';
DELETE FROM regress_trap.src WHERE ts = '2026-03-02 05:00+00';
SELECT chunk_start FROM backfill.changed_regions
 WHERE target = 'regress_trap.daily'::regclass ORDER BY 1;
SELECT backfill.plan('regress_trap.daily', '2026-03-01', '2026-03-04',
                     only_chunks => 'stale', probe => false) AS r4 \gset
SELECT chunk_no, reason IS NOT NULL AS has_reason FROM backfill.chunks WHERE run_id = :r4;
CALL backfill.run(:r4);
SELECT count(*) AS still_logged FROM backfill.changed_regions
 WHERE target = 'regress_trap.daily'::regclass;
SELECT count(*) >= 0 AS read FROM backfill.watches;
-- a refresh job: scheduled, a late change, a tick that rebuilds its chunk
-- (client_min_messages is warning here), unscheduled
SELECT backfill.schedule_refresh('regress_trap.daily', '0 0 30 2 *',
                                 lookback => '10 years', cascade => false) AS rf \gset
-- the definitions as code, its watch and its refresh job too
SELECT pg_catalog.length(backfill.export_definitions('{regress_trap.daily}')) > 0 AS exported;
INSERT INTO regress_trap.src VALUES ('2026-03-02 05:00+00', 1);
CALL backfill._refresh_tick(:rf);
SELECT last_message LIKE 'run % done: 1 of 1 chunks done' AS refreshed
  FROM backfill.refreshes WHERE refresh_id = :rf;
DELETE FROM regress_trap.src WHERE ts = '2026-03-02 05:00+00' AND v = 1;
SELECT backfill.unschedule_refresh(:rf) AS unscheduled;
-- partitions made after watch get the statement triggers from the event
-- trigger (_watch_ddl), run as the role that ran the command: the
-- attacker, with its traps first on its path; then a superuser, with the
-- attacker's schema first on its own path, makes a partition of the
-- attacker's watched table (a trap run here would be noted as the
-- superuser's, and make the attacker one)
CREATE TABLE regress_trap.psrc (ts pg_catalog.timestamptz NOT NULL, v pg_catalog.int4 NOT NULL)
    PARTITION BY RANGE (ts);
SELECT backfill.watch('regress_trap.daily', 'regress_trap.psrc', 'ts') AS watching_partitioned;
CREATE TABLE regress_trap.psrc_1 PARTITION OF regress_trap.psrc
    FOR VALUES FROM ('2026-03-01 00:00+00') TO ('2026-03-02 00:00+00');
CREATE TABLE regress_trap.psrc_2 (ts pg_catalog.timestamptz NOT NULL, v pg_catalog.int4 NOT NULL);
ALTER TABLE regress_trap.psrc ATTACH PARTITION regress_trap.psrc_2
    FOR VALUES FROM ('2026-03-02 00:00+00') TO ('2026-03-03 00:00+00');
RESET SESSION AUTHORIZATION;
CREATE TABLE regress_trap.psrc_3 PARTITION OF regress_trap.psrc
    FOR VALUES FROM ('2026-03-03 00:00+00') TO ('2026-03-04 00:00+00');
-- and renames the watched column, there and back: the event trigger's
-- catalog write as the extension owner and its ALTER TRIGGER as the
-- superuser meet no trap
-- (the superuser's own query in between runs with its path reset)
ALTER TABLE regress_trap.psrc RENAME COLUMN ts TO ts_renamed;
RESET search_path;
SELECT time_column FROM backfill.watches WHERE source = 'regress_trap.psrc'::regclass;
SET search_path = regress_trap, pg_catalog, public;
ALTER TABLE regress_trap.psrc RENAME COLUMN ts_renamed TO ts;
RESET search_path;
SELECT c.relname, pg_catalog.count(t.tgname) AS watch_triggers
  FROM pg_catalog.pg_class c
  LEFT JOIN pg_catalog.pg_trigger t ON t.tgrelid = c.oid AND t.tgname LIKE 'backfill\_watch\_%'
 WHERE c.relname IN ('psrc_1', 'psrc_2', 'psrc_3')
   AND c.relnamespace = 'regress_trap'::pg_catalog.regnamespace
 GROUP BY 1 ORDER BY 1;
ALTER TABLE regress_trap.psrc_3 OWNER TO regress_trap_attacker;
SET SESSION AUTHORIZATION regress_trap_attacker;
SET search_path = regress_trap, pg_catalog, public;
INSERT INTO regress_trap.psrc_3 VALUES ('2026-03-03 05:00+00', 1);
DELETE FROM regress_trap.psrc_3;
SELECT chunk_start FROM backfill.changed_regions
 WHERE target = 'regress_trap.daily'::regclass AND source = 'regress_trap.psrc_3'::regclass
 ORDER BY 1;
DROP TABLE regress_trap.psrc;
SELECT backfill.unwatch('regress_trap.daily') AS unwatched;

-- replace_range, lock_target, cleanup_jobs (superusers only)
SELECT rows_deleted, rows_inserted
  FROM backfill.replace_range('regress_trap.daily', 'day', '2026-03-01', '2026-03-02',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS total
        FROM regress_trap.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
BEGIN;
SELECT backfill.lock_target('regress_trap.daily');
COMMIT;
SELECT * FROM backfill.cleanup_jobs();

-- undo: a kept run (its archive created), diff as a multiset and by key,
-- revert and its run, revert of the revert, purge by age and by keep_for.
-- The target's total is of the attacker's domain named int4, whose check
-- must never run with the extension owner's rights.
CREATE TABLE regress_trap.kept (day timestamptz NOT NULL, total regress_trap.int4 NOT NULL);
SELECT backfill.register('regress_trap.kept', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS total
        FROM regress_trap.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    keep_replaced => true) AS version;
SELECT backfill.plan('regress_trap.kept', '2026-03-01', '2026-03-03', probe => false) AS k1 \gset
CALL backfill.run(:k1);
SELECT count(*) AS diff_rows FROM backfill.diff(:k1);
SELECT backfill.register('regress_trap.kept', 'day',
    $$SELECT date_trunc('day', ts) AS day, (sum(v) * 2)::int AS total
        FROM regress_trap.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    keep_replaced => true, keep_for => '1 day', key => '{day}') AS version;
SELECT backfill.plan('regress_trap.kept', '2026-03-01', '2026-03-03', probe => false,
                     keep_replaced => true) AS k2 \gset
CALL backfill.run(:k2);
SELECT count(*) AS diff_rows FROM backfill.diff(:k2, 1);
SELECT backfill.revert(:k2) AS k3 \gset
CALL backfill.run(:k3);
CALL backfill.run(:k3);
SELECT backfill.revert(:k3) AS k4 \gset
CALL backfill.run(:k4);
CALL backfill.run(:k4);
SELECT backfill.purge_archive('regress_trap.kept', '0 seconds') AS purged;
SELECT backfill.purge_archive() AS expired;
SELECT count(*) >= 0 AS read FROM backfill.archives;
SELECT count(*) >= 0 AS read FROM backfill.archived_chunks;
SELECT count(*) >= 0 AS read FROM backfill.archive_usage;
-- kept leaves (issue 20): a partitioned target of the attacker's domain,
-- replaced by swap, keeps its leaves' files; diff, revert and purge read
-- and drop them
CREATE TABLE regress_trap.kept_p (day pg_catalog.timestamptz NOT NULL, total regress_trap.int4 NOT NULL)
    PARTITION BY RANGE (day);
CREATE TABLE regress_trap.kept_p1 PARTITION OF regress_trap.kept_p
    FOR VALUES FROM ('2026-03-01') TO ('2026-03-02');
CREATE TABLE regress_trap.kept_p2 PARTITION OF regress_trap.kept_p
    FOR VALUES FROM ('2026-03-02') TO ('2026-03-03');
SELECT backfill.register('regress_trap.kept_p', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS total
        FROM regress_trap.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    keep_replaced => true) AS version;
SELECT backfill.set_strategy('regress_trap.kept_p', 'swap') AS previous;
SELECT backfill.plan('regress_trap.kept_p', '2026-03-01', '2026-03-03', probe => false) AS kp1 \gset
CALL backfill.run(:kp1);
SELECT backfill.plan('regress_trap.kept_p', '2026-03-01', '2026-03-03', probe => false) AS kp2 \gset
CALL backfill.run(:kp2);
SELECT count(*) AS kept_leaves FROM backfill.archived_leaves WHERE run_id = :kp2;
SELECT chunk_no, strategy FROM backfill.chunks WHERE run_id = :kp2 ORDER BY chunk_no;
SELECT count(*) AS diff_rows FROM backfill.diff(:kp2);
SELECT backfill.revert(:kp2) AS kp3 \gset
CALL backfill.run(:kp3);
CALL backfill.run(:kp3);
SELECT backfill.purge_archive('regress_trap.kept_p', '0 seconds') AS purged;
SELECT count(*) >= 0 AS read FROM backfill.archived_leaves;

-- every view and catalog table
SELECT count(*) >= 0 AS read FROM backfill.targets;
SELECT count(*) >= 0 AS read FROM backfill.definitions;
SELECT count(*) >= 0 AS read FROM backfill.runs;
SELECT count(*) >= 0 AS read FROM backfill.chunks;
SELECT count(*) >= 0 AS read FROM backfill.checks;
SELECT count(*) >= 0 AS read FROM backfill.check_results;
SELECT count(*) >= 0 AS read FROM backfill.dependencies;
SELECT count(*) >= 0 AS read FROM backfill.history;
SELECT count(*) >= 0 AS read FROM backfill.progress;
SELECT count(*) >= 0 AS read FROM backfill.alerts;
SELECT count(*) >= 0 AS read FROM backfill.group_progress;
SELECT count(*) >= 0 AS read FROM backfill.scheduled_jobs;
SELECT count(*) >= 0 AS read FROM backfill.changed_regions;
SELECT count(*) >= 0 AS read FROM backfill.progress_brief;
SELECT count(*) >= 0 AS read FROM backfill.history_brief;

-- unregister: of a dropped table by OID, then the pipeline
SELECT backfill.register('regress_trap.gone', 'ts',
    $$SELECT ts, v FROM regress_trap.src WHERE ts >= $1 AND ts < $2$$) AS version;
SELECT 'regress_trap.gone'::regclass::oid AS gone \gset
DROP TABLE regress_trap.gone;
SELECT backfill.unregister(:gone);
-- the guard's question is a superuser's only
SELECT backfill._owner_guard('SELECT 1');
SELECT backfill.unregister('regress_trap.monthly');
SELECT backfill.unregister('regress_trap.daily');
SELECT backfill.unregister('regress_trap.kept');
RESET client_min_messages;
RESET search_path;
RESET SESSION AUTHORIZATION;

-- No trap ran as anyone but its creator (the superuser's would be here,
-- with the escalation), and the attacker is no superuser.
SELECT trap, cur, sess FROM regress_trap_log.fired
 WHERE cur <> 'regress_trap_attacker' ORDER BY 1, 2, 3;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_trap_attacker';
-- The traps were live: the attacker's own text met them, as the attacker.
SELECT trap FROM regress_trap_log.fired
 WHERE cur = 'regress_trap_attacker'
   AND trap IN ('>=(timestamp with time zone,timestamp with time zone)',
                'date_trunc(text,timestamptz)', 'sum(integer)', 'count(*)',
                '=(regclass,regclass)', 'domain regclass', 'now()')
 ORDER BY 1;

-- Every function and procedure of schema backfill was driven above, and
-- every view and table read: the lists, compared with the catalog.
CREATE TEMP TABLE driven (fn regprocedure);
INSERT INTO driven VALUES
    ('backfill._owner_guard(text)'),
    ('backfill.split_range(timestamptz,timestamptz,interval)'),
    ('backfill.replace_range(regclass,name,timestamptz,timestamptz,text,text)'),
    ('backfill._in_range(timestamptz,timestamptz,timestamptz)'),
    ('backfill._in_range(timestamp,timestamp,timestamp)'),
    ('backfill._in_range(date,date,date)'),
    ('backfill.register(regclass,name,text,text,interval,interval,text,text,text,numeric,boolean,boolean,interval,name[],boolean)'),
    -- definitions as code (issue 29)
    ('backfill.export_definitions(regclass[])'),
    ('backfill.unregister(regclass,boolean)'),
    ('backfill.plan(regclass,timestamptz,timestamptz,interval,text,boolean,boolean,boolean,text,boolean,boolean)'),
    ('backfill.run(bigint,integer,integer)'),
    ('backfill.backfill(regclass,timestamptz,timestamptz,interval,text,integer,bigint)'),
    ('backfill.replan(bigint)'),
    ('backfill.cron_eta(text,integer,text,text,bigint,timestamptz)'),
    ('backfill.replan_group(bigint)'),
    ('backfill.cancel(bigint)'),
    ('backfill.preview(regclass,timestamptz,timestamptz)'),
    ('backfill.lineage(regclass,timestamptz,timestamptz)'),
    -- the one rule of lineage: read by lineage, lineage_chart and only_chunks
    ('backfill._lineage_pieces(regclass,timestamptz,timestamptz)'),
    ('backfill.changes(bigint)'),
    ('backfill.reconcile(bigint,boolean)'),
    ('backfill."check"(regclass,timestamptz,timestamptz)'),
    ('backfill.schedule_check(regclass,text,interval)'),
    ('backfill.unschedule_check(bigint)'),
    ('backfill.run_check(bigint)'),
    ('backfill._tick_failures()'),
    ('backfill.schedule(bigint,text,integer,text,integer)'),
    ('backfill.unschedule(bigint)'),
    ('backfill.cleanup_jobs()'),
    ('backfill.lock_target(regclass)'),
    ('backfill.in_quiet_hours(text,text,timestamptz)'),
    ('backfill.set_strategy(regclass,text)'),
    ('backfill.depend(regclass,regclass)'),
    ('backfill.undepend(regclass,regclass)'),
    ('backfill.run_group(bigint,integer,integer)'),
    ('backfill.cancel_group(bigint)'),
    ('backfill.schedule_group(bigint,text,integer,text,integer)'),
    ('backfill.unschedule_group(bigint)'),
    ('backfill.lineage_chart(regclass,timestamptz,timestamptz)'),
    ('backfill.reconcile_group(bigint)'),
    -- the event trigger of DROP OWNED and REVOKE: fired by the REVOKE above
    ('backfill._job_guard()'),
    -- undo
    ('backfill.revert(bigint)'),
    ('backfill.diff(bigint,integer)'),
    ('backfill.purge_archive(regclass,interval)'),
    -- changed regions; the trigger fired by the writes to regress_trap.src
    ('backfill.watch(regclass,regclass,name,interval)'),
    ('backfill.unwatch(regclass,regclass)'),
    ('backfill._watch_trigger()'),
    -- the event trigger of new partitions: fired by the CREATE TABLE and
    -- ATTACH PARTITION of the attacker and of a superuser above
    ('backfill._watch_ddl()'),
    -- the trigger of backfill.changed_regions: fired by the builds above
    -- that consume recorded changes (the refresh tick's)
    ('backfill._recorded_signal()'),
    -- the WHEN clause of the INSERT row triggers: run by the writes above,
    -- and called directly in phase 2
    ('backfill._watch_row(regclass,name,timestamptz)'),
    ('backfill._watch_row(regclass,name,timestamp)'),
    ('backfill._watch_row(regclass,name,date)'),
    ('backfill._watch_row(regclass,int2,timestamptz)'),
    ('backfill._watch_row(regclass,int2,timestamp)'),
    ('backfill._watch_row(regclass,int2,date)'),
    ('backfill._watch_row(oid,timestamptz)'),
    ('backfill._watch_row(oid,timestamp)'),
    ('backfill._watch_row(oid,date)'),
    ('backfill._watch_row(regclass,oid,timestamptz)'),
    ('backfill._watch_row(regclass,oid,timestamp)'),
    ('backfill._watch_row(regclass,oid,date)'),
    ('backfill.schedule_refresh(regclass,text,text,interval,boolean,boolean)'),
    ('backfill.unschedule_refresh(bigint)'),
    ('backfill._refresh_tick(bigint)');
SELECT p.oid::regprocedure AS not_driven
  FROM pg_proc p WHERE p.pronamespace = 'backfill'::regnamespace
EXCEPT SELECT fn FROM driven
ORDER BY 1;
CREATE TEMP TABLE read_rels (rel regclass);
INSERT INTO read_rels VALUES
    ('backfill.targets'), ('backfill.definitions'), ('backfill.runs'),
    ('backfill.chunks'), ('backfill.checks'), ('backfill.check_results'),
    ('backfill.dependencies'), ('backfill.history'), ('backfill.progress'),
    ('backfill.alerts'), ('backfill.group_progress'), ('backfill.scheduled_jobs'),
    ('backfill.archives'), ('backfill.archived_chunks'), ('backfill.archive_usage'),
    ('backfill.archived_leaves'),
    ('backfill.watches'), ('backfill.changed_regions'), ('backfill.refreshes'),
    ('backfill.progress_brief'), ('backfill.history_brief');
SELECT c.oid::regclass AS not_read
  FROM pg_class c
 WHERE c.relnamespace = 'backfill'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
EXCEPT SELECT rel FROM read_rels
ORDER BY 1;

-------------------------------------------------------------------------
-- Phase 2: an innocent role, the attacker's schema first on its path,
-- fully qualified text of its own: nothing fires at all.
-------------------------------------------------------------------------
SET SESSION AUTHORIZATION regress_trap_innocent;
SET search_path = pg_catalog;
CREATE TABLE regress_inn.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO regress_inn.src
SELECT t, 2 FROM pg_catalog.generate_series('2026-03-01 00:00+00'::timestamptz,
                                            '2026-03-05 23:00+00', '1 hour') AS t;
CREATE TABLE regress_inn.daily (day timestamptz NOT NULL, total int NOT NULL);
SET search_path = regress_trap, pg_catalog, public;
SELECT backfill.register('regress_inn.daily', 'day',
    $$SELECT pg_catalog.date_trunc('day', ts) AS day, pg_catalog.sum(v)::pg_catalog.int4 AS total
        FROM regress_inn.src
       WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2 GROUP BY 1$$,
    definition => 'qualified', measure => 'pg_catalog.sum(total)',
    ledger => $$SELECT pg_catalog.sum(v) FROM regress_inn.src
                 WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$) AS version;
SELECT backfill.plan('regress_inn.daily', '2026-03-01', '2026-03-04', note => 'innocent') AS i1 \gset
SET client_min_messages = warning;
CALL backfill.run(:i1);
CALL backfill.run(:i1);
RESET client_min_messages;
SELECT chunk_no, status, verdict FROM backfill.reconcile(:i1);
SELECT chunk_no, verdict FROM backfill.check('regress_inn.daily', '2026-03-01', '2026-03-05');
SELECT rows_deleted, rows_inserted FROM backfill.preview('regress_inn.daily', '2026-03-04', '2026-03-05');
SELECT chunk_no, delta FROM backfill.changes(:i1);
SELECT range_start, range_end, state, label FROM backfill.lineage('regress_inn.daily');
SELECT * FROM backfill.lineage_chart('regress_inn.daily', '2026-03-01', '2026-03-05');
SELECT chunk_no FROM backfill.split_range('2026-03-01', '2026-03-03', '1 day');
SELECT backfill.in_quiet_hours('22:00-06:00', 'UTC', '2026-03-01 12:00+00') AS quiet;
SELECT target, status FROM backfill.history WHERE run_id OPERATOR(pg_catalog.=) :i1 LIMIT 1;
SELECT run_id FROM backfill.progress WHERE run_id OPERATOR(pg_catalog.=) :i1;
SELECT verdict FROM backfill.alerts LIMIT 0;
SELECT runs FROM backfill.group_progress LIMIT 0;
SELECT kind FROM backfill.scheduled_jobs LIMIT 0;
SELECT status FROM backfill.runs WHERE run_id OPERATOR(pg_catalog.=) :i1;
-- a watched source: the trigger's own statements meet no trap either
SELECT backfill.watch('regress_inn.daily', 'regress_inn.src', 'ts') AS watching;
SELECT pg_catalog.length(backfill.export_definitions()) OPERATOR(pg_catalog.>) 0 AS exported;
INSERT INTO regress_inn.src VALUES ('2026-03-02 05:00+00', 1);
UPDATE regress_inn.src SET v = 3 WHERE ts OPERATOR(pg_catalog.=) '2026-03-03 05:00+00';
SELECT chunk_start FROM backfill.changed_regions
 WHERE target OPERATOR(pg_catalog.=) 'regress_inn.daily'::pg_catalog.regclass ORDER BY 1;
-- The attacker calls the WHEN function of the INSERT row triggers directly
-- on the innocent's watched partitioned source, in a transaction that
-- also writes a watched partitioned table of its own: false, no watch
-- lock taken on the innocent's target, nothing recorded for it (it reads
-- only what the before-INSERT trigger of a source the caller writes
-- loaded).
CREATE TABLE regress_inn.psrc (ts pg_catalog.timestamptz NOT NULL) PARTITION BY RANGE (ts);
CREATE TABLE regress_inn.psrc_03 PARTITION OF regress_inn.psrc
    FOR VALUES FROM ('2026-03-01 00:00+00') TO ('2026-04-01 00:00+00');
CREATE TABLE regress_inn.pdaily (day pg_catalog.timestamptz NOT NULL, n pg_catalog.int4 NOT NULL);
SELECT backfill.register('regress_inn.pdaily', 'day',
    $$SELECT $1 AS day, pg_catalog.count(*)::pg_catalog.int4 AS n FROM regress_inn.psrc
       WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$) AS p_version;
SELECT backfill.watch('regress_inn.pdaily', 'regress_inn.psrc', 'ts') AS watching;
SET client_min_messages = warning;
CALL backfill.backfill('regress_inn.pdaily', '2026-03-01', '2026-03-04');
RESET client_min_messages;
RESET SESSION AUTHORIZATION;
-- the superuser's own steps: not on the innocent's path, whose first
-- schema is the attacker's (its domain regclass would run its trap as the
-- superuser, which makes the attacker a superuser)
SET search_path = pg_catalog;
SELECT 'regress_inn.psrc'::regclass::oid AS inn_src,
       'regress_inn.pdaily'::regclass::oid AS inn_daily,
       'regress_inn.src'::regclass::oid AS inn_plain,
       'regress_inn.daily'::regclass::oid AS inn_plain_daily \gset
-- the attacker may name the innocent's tables (USAGE on the schema) but
-- holds no right on any of them
GRANT USAGE ON SCHEMA regress_inn TO regress_trap_attacker;
CREATE TABLE regress_trap.own (ts timestamptz NOT NULL) PARTITION BY RANGE (ts);
CREATE TABLE regress_trap.own_03 PARTITION OF regress_trap.own
    FOR VALUES FROM ('2026-03-01 00:00+00') TO ('2026-04-01 00:00+00');
CREATE TABLE regress_trap.own_daily (day timestamptz NOT NULL, n int);
ALTER TABLE regress_trap.own OWNER TO regress_trap_attacker;
ALTER TABLE regress_trap.own_03 OWNER TO regress_trap_attacker;
ALTER TABLE regress_trap.own_daily OWNER TO regress_trap_attacker;
SET SESSION AUTHORIZATION regress_trap_attacker;
SELECT backfill.register('regress_trap.own_daily', 'day',
    $$SELECT $1 AS day, pg_catalog.count(*)::pg_catalog.int4 AS n FROM regress_trap.own
       WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$) AS own_version;
SELECT backfill.watch('regress_trap.own_daily', 'regress_trap.own', 'ts') AS watching;
BEGIN;
INSERT INTO regress_trap.own VALUES ('2026-03-01 05:00+00');
SELECT backfill._watch_row(:'inn_src', 'ts', '2026-03-01 05:00+00'::pg_catalog.timestamptz) AS tz,
       backfill._watch_row(:'inn_src', 'ts', '2026-03-01 05:00'::pg_catalog.timestamp) AS ts,
       backfill._watch_row(:'inn_src', 'ts', '2026-03-01'::pg_catalog.date) AS d;
-- the same by the column's number (the form earlier builds installed on a
-- partitioned source)
SELECT backfill._watch_row(:'inn_src', '1'::pg_catalog.int2, '2026-03-01 05:00+00'::pg_catalog.timestamptz) AS tz,
       backfill._watch_row(:'inn_src', '1'::pg_catalog.int2, '2026-03-01 05:00'::pg_catalog.timestamp) AS ts,
       backfill._watch_row(:'inn_src', '1'::pg_catalog.int2, '2026-03-01'::pg_catalog.date) AS d;
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
-- and on the innocent's plain watched source: a call by a role that may
-- not insert into the source loads nothing (it is true: the row's event,
-- which fires only once a statement's rights were checked, would load them
-- for a row trigger's call) and takes no watch lock
SELECT backfill._watch_row(:'inn_plain', '1'::pg_catalog.int2, '2026-03-01 05:00+00'::pg_catalog.timestamptz) AS plain_tz,
       backfill._watch_row(:'inn_plain', 'ts', '2026-03-01 05:00+00'::pg_catalog.timestamptz) AS plain_by_name;
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
-- RowExclusiveLock is no proof of a write: PREPARE (like CREATE FUNCTION
-- with a SQL body, or CREATE RULE) analyses an INSERT, which locks the
-- table in RowExclusiveLock, and checks no privilege (EXECUTE would).  A
-- role without any right on the innocent's source holds the lock that way:
-- the direct call must still load nothing, take no watch lock (which would
-- stall the innocent's chunk builds for as long as this transaction stays
-- open) and note nothing (which the attacker's own INSERT below would
-- write into the innocent's log).
SELECT pg_catalog.has_table_privilege('regress_inn.src', 'INSERT') AS may_insert;
PREPARE regress_trap_ins AS
    INSERT INTO regress_inn.src VALUES ('2026-03-01 05:00+00'::pg_catalog.timestamptz, 1);
SELECT mode FROM pg_catalog.pg_locks
 WHERE relation OPERATOR(pg_catalog.=) :'inn_plain'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
SELECT backfill._watch_row(:'inn_plain', '1'::pg_catalog.int2, '2026-03-01 05:00+00'::pg_catalog.timestamptz) AS prepared_tz,
       backfill._watch_row(:'inn_plain', 'ts', '2026-03-01 07:00+00'::pg_catalog.timestamptz) AS prepared_by_name;
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
DEALLOCATE regress_trap_ins;
-- a row trigger of the attacker's own table calling backfill's trigger
-- function, whose WHEN clause names the innocent's source: its row event
-- (which notes the row as its WHEN clause names it) loads and notes
-- nothing of the innocent's either
CREATE TABLE regress_trap.decoy (ts pg_catalog.timestamptz NOT NULL);
CREATE TRIGGER decoy_row AFTER INSERT ON regress_trap.decoy FOR EACH ROW
    WHEN (backfill._watch_row(:'inn_plain'::pg_catalog.regclass, '1'::pg_catalog.int2, NEW.ts))
    EXECUTE FUNCTION backfill._watch_trigger();
INSERT INTO regress_trap.decoy VALUES ('2026-03-01 08:00+00');
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
-- the form watch installs on a table, _watch_row(NEW.tableoid,
-- NEW.column), the column's number read from the call's expression:
-- called directly with the innocent's source as the table and a column of
-- the attacker's own table (at the number of the innocent's time column)
-- or a value, and as the WHEN clause of a row trigger of that form on the
-- attacker's own table (whose tableoid is its own), it loads and notes
-- nothing of the innocent's and takes no watch lock
SELECT backfill._watch_row(:'inn_plain'::pg_catalog.oid, d.ts) AS by_table_tz,
       backfill._watch_row(:'inn_plain'::pg_catalog.oid, d.ts::pg_catalog.timestamp) AS by_table_ts,
       backfill._watch_row(:'inn_plain'::pg_catalog.oid, d.ts::pg_catalog.date) AS by_table_d,
       backfill._watch_row(:'inn_plain'::pg_catalog.oid,
                           '2026-03-01 09:00+00'::pg_catalog.timestamptz) AS by_table_value
  FROM regress_trap.decoy d;
CREATE TRIGGER decoy_by_table AFTER INSERT ON regress_trap.decoy FOR EACH ROW
    WHEN (backfill._watch_row(NEW.tableoid, NEW.ts))
    EXECUTE FUNCTION backfill._watch_trigger();
INSERT INTO regress_trap.decoy VALUES ('2026-03-01 09:00+00');
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
DROP TRIGGER decoy_by_table ON regress_trap.decoy;
-- the form watch installs on a partitioned table, _watch_row(source,
-- NEW.tableoid, NEW.column), the column found by its name in the table
-- passed: called directly with the innocent's partitioned source and the
-- attacker's own table (whose column ts has the name of the innocent's
-- time column), and as the WHEN clause of a row trigger of that form on
-- the attacker's own table, it loads and notes nothing of the innocent's
-- and takes no watch lock: the rights are checked on the source's column
-- of that name
SELECT backfill._watch_row(:'inn_src'::pg_catalog.regclass, d.tableoid, d.ts) AS by_part_tz,
       backfill._watch_row(:'inn_src'::pg_catalog.regclass, d.tableoid,
                           d.ts::pg_catalog.timestamp) AS by_part_ts,
       backfill._watch_row(:'inn_src'::pg_catalog.regclass, d.tableoid,
                           d.ts::pg_catalog.date) AS by_part_d,
       backfill._watch_row(:'inn_src'::pg_catalog.regclass, d.tableoid,
                           '2026-03-01 09:00+00'::pg_catalog.timestamptz) AS by_part_value
  FROM regress_trap.decoy d;
CREATE TRIGGER decoy_by_part AFTER INSERT ON regress_trap.decoy FOR EACH ROW
    WHEN (backfill._watch_row(:'inn_src'::pg_catalog.regclass, NEW.tableoid, NEW.ts))
    EXECUTE FUNCTION backfill._watch_trigger();
INSERT INTO regress_trap.decoy VALUES ('2026-03-01 09:00+00');
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
DROP TRIGGER decoy_by_part ON regress_trap.decoy;
-- One call site whose source changes from row to row (a direct call may
-- pass any source on each row): the rights checked for the attacker's own
-- table on the first row are not rights on the innocent's source on the
-- second, once a second call site (loading another table of the
-- attacker's) made the first set itself up again.  It loads nothing of
-- the innocent's, takes no watch lock and notes nothing (which the
-- attacker's own INSERT below would write into the innocent's log), in
-- the form watch installs on a table and in the int2 form alike.
CREATE TABLE regress_trap.plain_a (ts pg_catalog.timestamptz NOT NULL);
CREATE TABLE regress_trap.plain_b (ts pg_catalog.timestamptz NOT NULL);
SELECT s.n, backfill._watch_row(s.src, s.ts) AS first_site,
       backfill._watch_row(s.other, s.ts) AS second_site
  FROM (VALUES ('2026-03-01 10:00+00'::pg_catalog.timestamptz, 1,
                'regress_trap.plain_a'::pg_catalog.regclass::pg_catalog.oid,
                'regress_trap.plain_b'::pg_catalog.regclass::pg_catalog.oid),
               ('2026-03-01 10:00+00'::pg_catalog.timestamptz, 2,
                :'inn_plain'::pg_catalog.oid,
                'regress_trap.plain_b'::pg_catalog.regclass::pg_catalog.oid))
       s(ts, n, src, other);
SELECT s.n, backfill._watch_row(s.src::pg_catalog.regclass, '1'::pg_catalog.int2, s.ts) AS first_site,
       backfill._watch_row(s.other::pg_catalog.regclass, '1'::pg_catalog.int2, s.ts) AS second_site
  FROM (VALUES ('2026-03-01 11:00+00'::pg_catalog.timestamptz, 1,
                'regress_trap.plain_b'::pg_catalog.regclass::pg_catalog.oid,
                'regress_trap.own_03'::pg_catalog.regclass::pg_catalog.oid),
               ('2026-03-01 11:00+00'::pg_catalog.timestamptz, 2,
                :'inn_plain'::pg_catalog.oid,
                'regress_trap.own_03'::pg_catalog.regclass::pg_catalog.oid))
       s(ts, n, src, other);
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
-- the AFTER UPDATE statement trigger of the attacker's own watched table
-- writes whatever this transaction noted, for any target
UPDATE regress_trap.own SET ts = ts WHERE false;
INSERT INTO regress_trap.own VALUES ('2026-03-01 06:00+00');
COMMIT;
SELECT backfill.unregister('regress_trap.own_daily') AS own_unregistered;
RESET SESSION AUTHORIZATION;
SELECT pg_catalog.count(*) AS recorded_by_the_attacker FROM backfill.changed_regions
 WHERE target OPERATOR(pg_catalog.=) 'regress_inn.pdaily'::pg_catalog.regclass;
SELECT pg_catalog.count(*) AS recorded_by_the_attacker_plain FROM backfill.changed_regions
 WHERE target OPERATOR(pg_catalog.=) 'regress_inn.daily'::pg_catalog.regclass
   AND chunk_start OPERATOR(pg_catalog.=) '2026-03-01 00:00+00'::pg_catalog.timestamptz;
-- The innocent lets the attacker insert recent rows only (from March 3),
-- through a view WITH CHECK OPTION over its watched source, and grants it
-- INSERT on the source's v column (not on its time column, which has no
-- default: no row can be written that way).  The attacker's INSERT through
-- the view loads the source's watches for the transaction (by its row
-- events).  Neither a direct call of the WHEN function then, nor the WHEN
-- clause (or the row event) of a row trigger of the attacker's own table
-- naming the innocent's source, notes a chunk the attacker could not write
-- a row into (March 1 and 2): only March 3, the view's row, is recorded.
-- (The decoy's WHEN clause may not note, so it is true, and its row event
-- must not note the row by the WHEN clause's text either: the innocent's
-- source is not the decoy's nor one of its partitioned tables.)
-- Before, the direct call with INSERT on v also took the innocent's watch
-- lock in a transaction that wrote nothing.
DELETE FROM backfill.changed_regions
 WHERE target OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.regclass;
CREATE VIEW regress_inn.recent AS SELECT ts, v FROM regress_inn.src
 WHERE ts OPERATOR(pg_catalog.>=) '2026-03-03 00:00+00'::timestamptz
  WITH CHECK OPTION;
ALTER VIEW regress_inn.recent OWNER TO regress_trap_innocent;
GRANT INSERT ON regress_inn.recent TO regress_trap_attacker;
GRANT INSERT (v) ON regress_inn.src TO regress_trap_attacker;
SET SESSION AUTHORIZATION regress_trap_attacker;
BEGIN;
SELECT backfill._watch_row(:'inn_plain', '1'::pg_catalog.int2, '2026-03-01 05:00+00'::pg_catalog.timestamptz) AS column_v_only;
-- nor does a call passing the column v itself, on which it holds INSERT
-- (no watch uses it: no row could choose its time), by its number or, in
-- the tableoid form, as the column at v's number of a table of its own
SELECT backfill._watch_row(:'inn_plain', '2'::pg_catalog.int2, '2026-03-01 05:00+00'::pg_catalog.timestamptz) AS column_v_passed;
CREATE TABLE regress_trap.at_v (a pg_catalog.int4, v pg_catalog.timestamptz);
INSERT INTO regress_trap.at_v VALUES (1, '2026-03-01 05:00+00');
SELECT backfill._watch_row(:'inn_plain'::pg_catalog.oid, t.v) AS column_v_by_table
  FROM regress_trap.at_v t;
SELECT pg_catalog.count(*) AS innocent_watch_locks FROM pg_catalog.pg_locks
 WHERE locktype OPERATOR(pg_catalog.=) 'advisory'
   AND objid OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.oid
   AND pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid();
INSERT INTO regress_inn.recent VALUES ('2026-03-03 05:00+00', 1);
SELECT backfill._watch_row(:'inn_plain', '1'::pg_catalog.int2, '2026-03-01 06:00+00'::pg_catalog.timestamptz) AS after_view,
       backfill._watch_row(:'inn_plain', 'ts', '2026-03-01 07:00+00'::pg_catalog.timestamptz) AS after_view_by_name;
INSERT INTO regress_trap.decoy VALUES ('2026-03-02 05:00+00');
INSERT INTO regress_inn.recent VALUES ('2026-03-03 06:00+00', 1);
COMMIT;
RESET SESSION AUTHORIZATION;
SELECT chunk_start FROM backfill.changed_regions
 WHERE target OPERATOR(pg_catalog.=) :'inn_plain_daily'::pg_catalog.regclass ORDER BY 1;
REVOKE INSERT (v) ON regress_inn.src FROM regress_trap_attacker;
-- One call site whose column changes from row to row (the int2 form takes
-- it as an argument): the attacker may insert into the innocent's watched
-- column b only.  The rights checked for b on the first row are not
-- rights on a, another watched column, on the second, once a second call
-- site (loading a table of the attacker's own) made the first set itself
-- up again: nothing of a's target is noted, which the attacker's own
-- watched UPDATE would write.
SET SESSION AUTHORIZATION regress_trap_innocent;
CREATE TABLE regress_inn.two (a pg_catalog.timestamptz NOT NULL
                                DEFAULT '2026-03-09 00:00+00', b pg_catalog.timestamptz);
CREATE TABLE regress_inn.two_a (day pg_catalog.timestamptz NOT NULL, n pg_catalog.int8);
CREATE TABLE regress_inn.two_b (LIKE regress_inn.two_a);
SELECT backfill.register('regress_inn.two_a', 'day',
    $$SELECT $1 AS day, pg_catalog.count(*) AS n FROM regress_inn.two
       WHERE a OPERATOR(pg_catalog.>=) $1 AND a OPERATOR(pg_catalog.<) $2$$) AS two_a_version;
SELECT backfill.register('regress_inn.two_b', 'day',
    $$SELECT $1 AS day, pg_catalog.count(*) AS n FROM regress_inn.two
       WHERE b OPERATOR(pg_catalog.>=) $1 AND b OPERATOR(pg_catalog.<) $2$$) AS two_b_version;
SET client_min_messages = warning;
SELECT backfill.watch('regress_inn.two_a', 'regress_inn.two', 'a') AS watching_a;
SELECT backfill.watch('regress_inn.two_b', 'regress_inn.two', 'b') AS watching_b;
CALL backfill.backfill('regress_inn.two_a', '2026-03-01 00:00+00', '2026-03-10 00:00+00') \gset two_a_
CALL backfill.backfill('regress_inn.two_b', '2026-03-01 00:00+00', '2026-03-10 00:00+00') \gset two_b_
RESET client_min_messages;
GRANT USAGE ON SCHEMA regress_inn TO regress_trap_attacker;
GRANT INSERT (b) ON regress_inn.two TO regress_trap_attacker;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_trap_attacker;
CREATE TABLE regress_trap.mine (ts pg_catalog.timestamptz NOT NULL);
CREATE TABLE regress_trap.mine_daily (day pg_catalog.timestamptz NOT NULL, n pg_catalog.int8);
SELECT backfill.register('regress_trap.mine_daily', 'day',
    $$SELECT $1 AS day, pg_catalog.count(*) AS n FROM regress_trap.mine
       WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$) AS mine_version;
SET client_min_messages = warning;
SELECT backfill.watch('regress_trap.mine_daily', 'regress_trap.mine', 'ts') AS watching_mine;
RESET client_min_messages;
BEGIN;
SELECT c.n, backfill._watch_row('regress_inn.two'::pg_catalog.regclass, c.col,
                                '2026-03-02 05:00+00'::pg_catalog.timestamptz) AS noted,
       backfill._watch_row('regress_trap.mine'::pg_catalog.regclass, '1'::pg_catalog.int2,
                           '2026-03-02 05:00+00'::pg_catalog.timestamptz) AS second_site
  FROM (VALUES (1, '2'::pg_catalog.int2), (2, '1'::pg_catalog.int2)) c(n, col);
UPDATE regress_trap.mine SET ts = ts WHERE false;
COMMIT;
SELECT backfill.unregister('regress_trap.mine_daily') AS mine_unregistered;
RESET SESSION AUTHORIZATION;
SELECT target, chunk_start FROM backfill.changed_regions
 WHERE target OPERATOR(pg_catalog.=) ANY ('{regress_inn.two_a,regress_inn.two_b}'::pg_catalog.regclass[])
 ORDER BY 1, 2;
SET SESSION AUTHORIZATION regress_trap_innocent;
SELECT backfill.unregister('regress_inn.two_a') AS two_a_unregistered,
       backfill.unregister('regress_inn.two_b') AS two_b_unregistered;
DROP TABLE regress_inn.two, regress_inn.two_a, regress_inn.two_b;
RESET SESSION AUTHORIZATION;
DROP TABLE regress_trap.mine, regress_trap.mine_daily;
DROP VIEW regress_inn.recent;
REVOKE USAGE ON SCHEMA regress_inn FROM regress_trap_attacker;
SET SESSION AUTHORIZATION regress_trap_innocent;
SET search_path = regress_trap, pg_catalog, public;
-- the innocent's own write into its partitioned source is recorded
INSERT INTO regress_inn.psrc VALUES ('2026-03-02 05:00+00');
SELECT chunk_start FROM backfill.changed_regions
 WHERE target OPERATOR(pg_catalog.=) 'regress_inn.pdaily'::pg_catalog.regclass;
SELECT backfill.unregister('regress_inn.pdaily');
SELECT backfill.unwatch('regress_inn.daily') AS unwatched;
SELECT backfill.unregister('regress_inn.daily');
RESET search_path;
RESET SESSION AUTHORIZATION;
-- The WARNING of the event trigger after CREATE TABLE ... INHERITS and
-- ALTER TABLE ... INHERIT names the targets that watch a parent of the
-- new child: only those the role that ran the command may read
-- (backfill.watches shows it no other).  The attacker owns a table that
-- the innocent watches for a target of its own (the attacker granted it
-- SELECT and TRIGGER); the rows of the attacker's children of that table
-- are not recorded for the innocent's target, and the attacker is told so
-- without learning the target (attack review 9: it was named, with the
-- watch call, in the WARNING and its hint).
SET SESSION AUTHORIZATION regress_trap_attacker;
CREATE TABLE regress_trap.shared (ts pg_catalog.timestamptz NOT NULL);
CREATE TABLE regress_trap.shared_late (ts pg_catalog.timestamptz NOT NULL);
GRANT SELECT, TRIGGER ON regress_trap.shared TO regress_trap_innocent;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_trap_innocent;
SET search_path = pg_catalog;
CREATE TABLE regress_inn.secret_daily (day pg_catalog.timestamptz NOT NULL, n pg_catalog.int8);
SELECT backfill.register('regress_inn.secret_daily', 'day',
    $$SELECT $1 AS day, pg_catalog.count(*) AS n FROM regress_trap.shared
       WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$) AS secret_version;
SELECT backfill.watch('regress_inn.secret_daily', 'regress_trap.shared', 'ts',
                      settle => '0') AS watching_shared;
RESET search_path;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_trap_attacker;
SET search_path = pg_catalog;
SELECT pg_catalog.count(*) AS watches_seen FROM backfill.watches
 WHERE source OPERATOR(pg_catalog.=) 'regress_trap.shared'::pg_catalog.regclass;
\set VERBOSITY default
CREATE TABLE regress_trap.shared_kid () INHERITS (regress_trap.shared);
ALTER TABLE regress_trap.shared_late INHERIT regress_trap.shared;
\set VERBOSITY terse
DROP TABLE regress_trap.shared_kid, regress_trap.shared_late;
RESET search_path;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_trap_innocent;
SELECT backfill.unwatch('regress_inn.secret_daily') AS secret_unwatched;
SELECT backfill.unregister('regress_inn.secret_daily') AS secret_unregistered;
DROP TABLE regress_inn.secret_daily;
RESET SESSION AUTHORIZATION;
DROP TABLE regress_trap.shared;
SELECT trap, cur FROM regress_trap_log.fired
 WHERE sess = 'regress_trap_innocent' ORDER BY 1, 2;
-- and since phase 1, no trap ran as anyone but the attacker, who is still
-- no superuser
SELECT trap, cur, sess FROM regress_trap_log.fired
 WHERE cur <> 'regress_trap_attacker' ORDER BY 1, 2, 3;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_trap_attacker';

-- Clean up: the attacker's parked and leftover jobs, its grants, its roles.
SELECT count(*) >= 0 AS swept FROM backfill.cleanup_jobs();
SELECT count(*) AS jobs_left FROM cron.job WHERE username = 'regress_trap_attacker';
SET client_min_messages = warning;
DROP SCHEMA regress_trap CASCADE;
DROP SCHEMA regress_inn CASCADE;
DROP SCHEMA regress_trap_log CASCADE;
DROP OWNED BY regress_trap_attacker, regress_trap_innocent;
DROP ROLE regress_trap_attacker, regress_trap_innocent;
RESET client_min_messages;
