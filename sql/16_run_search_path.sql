-- A hostile search_path changes nothing: operators, functions and tables
-- planted ahead of pg_catalog are never picked up by the run engine's own
-- statements (which run partly as the extension owner).
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 1601, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 1601, false) IS NOT NULL AS seq_set;
CREATE SCHEMA evil;
CREATE TABLE evil.captured (what text);
CREATE FUNCTION evil.cap_int8eq(a bigint, b bigint) RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('int8 ='); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE FUNCTION evil.cap_int4eq(a int, b int) RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('int4 ='); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE FUNCTION evil.cap_int4pl(a int, b int) RETURNS int LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('int4 +'); RETURN a OPERATOR(pg_catalog.+) b; END $$;
CREATE FUNCTION evil.cap_texteq(a text, b text) RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('text ='); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE FUNCTION evil.cap_textne(a text, b text) RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('text <>'); RETURN a OPERATOR(pg_catalog.<>) b; END $$;
CREATE FUNCTION evil.cap_oideq(a oid, b oid) RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('oid ='); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE FUNCTION evil.cap_tslt(a timestamptz, b timestamptz) RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('timestamptz <'); RETURN a OPERATOR(pg_catalog.<) b; END $$;
CREATE FUNCTION evil.cap_tsgt(a timestamptz, b timestamptz) RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('timestamptz >'); RETURN a OPERATOR(pg_catalog.>) b; END $$;
CREATE FUNCTION evil.count() RETURNS bigint LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('count()'); RETURN 0; END $$;
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO evil.captured VALUES ('unnest'); END $$;
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.cap_int8eq);
CREATE OPERATOR evil.= (LEFTARG = int, RIGHTARG = int, FUNCTION = evil.cap_int4eq);
CREATE OPERATOR evil.+ (LEFTARG = int, RIGHTARG = int, FUNCTION = evil.cap_int4pl);
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.cap_texteq);
CREATE OPERATOR evil.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.cap_textne);
CREATE OPERATOR evil.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = evil.cap_oideq);
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.cap_tslt);
CREATE OPERATOR evil.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.cap_tsgt);
GRANT USAGE ON SCHEMA evil TO PUBLIC;
GRANT INSERT ON evil.captured TO PUBLIC;

CREATE SCHEMA sp;
CREATE TABLE sp.raw (ts timestamptz, v int);
INSERT INTO sp.raw SELECT '2024-05-01'::timestamptz + i * interval '6 hours', i
  FROM generate_series(0, 11) i;
CREATE TABLE sp.daily (day timestamptz, n int);

SET search_path = evil, pg_catalog, public;
-- tables named like the catalog's, ahead of it
CREATE TEMP TABLE runs (run_id bigint);
CREATE TEMP TABLE chunks (run_id bigint);
CREATE TEMP TABLE targets (target regclass);
CREATE TEMP TABLE definitions (target regclass);
-- the user's own text is written defensively; the engine's must be too
SELECT backfill.register('sp.daily', 'day',
    $q$SELECT pg_catalog.date_trunc('day', ts) AS day, pg_catalog.count(*)::int AS n FROM sp.raw
        WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2 GROUP BY 1$q$,
    measure => 'pg_catalog.sum(n)');
SELECT backfill.plan('sp.daily', '2024-05-01', '2024-05-04') AS r \gset
CALL backfill.run(:r);
CALL backfill.run(:r);
SELECT * FROM backfill.preview('sp.daily', '2024-05-01', '2024-05-02');
SELECT backfill.plan('sp.daily', '2024-05-04', '2024-05-05') AS r2 \gset
SELECT backfill.cancel(:r2);
SELECT backfill.unregister('sp.daily');
RESET search_path;

SELECT count(*) AS captured FROM evil.captured;
SELECT (SELECT count(*) FROM pg_temp.runs) + (SELECT count(*) FROM pg_temp.chunks)
     + (SELECT count(*) FROM pg_temp.targets) + (SELECT count(*) FROM pg_temp.definitions)
       AS temp_rows;
SELECT status FROM backfill.runs WHERE run_id IN (:r, :r2) ORDER BY run_id;
SELECT * FROM sp.daily ORDER BY day;

DROP SCHEMA sp CASCADE;
DROP SCHEMA evil CASCADE;
