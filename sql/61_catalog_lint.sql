-- Catalog lint (checklist S6, S12): the extension's objects as PostgreSQL
-- records them.  regress_hard_lint.findings(schema) lists every offence;
-- it must find nothing in schema backfill, and each check is shown to
-- fire on a deliberately bad object in a scratch schema.
--   secdef_unpinned   SECURITY DEFINER without search_path=pg_catalog, pg_temp
--   secdef            any SECURITY DEFINER (our rule: none at all)
--   proc_set_clause   a procedure with a SET clause or SECURITY DEFINER: it
--                     could not COMMIT (2D000)
--   public_write      a write grant on a table or sequence to anyone but
--                     its owner
--   no_rls            a table without row-level security
--   write_policy      an RLS policy for anything but SELECT
--   view_definer      a view without security_invoker
--   unqualified_call  a SQL or PL/pgSQL body calling a function without a
--                     schema (heuristic: identifier followed by "(")
--   unqualified_rel   ... naming a relation without a schema after
--                     FROM / JOIN / UPDATE / INSERT INTO / DELETE FROM
--   unqualified_op    ... using an operator outside OPERATOR(schema.op)
CREATE SCHEMA regress_hard_lint;

-- A function body with comments, literals and quoted identifiers removed.
CREATE FUNCTION regress_hard_lint.code(body text) RETURNS text
LANGUAGE sql IMMUTABLE AS $f$
  SELECT lower(
    regexp_replace(
      regexp_replace(
        regexp_replace(
          regexp_replace(
            regexp_replace(body, '--[^\n]*', ' ', 'g'),      -- line comments
            '/\*.*?\*/', ' ', 'g'),                           -- block comments
          '(\$[a-zA-Z_]*\$).*?\1', ' $$ ', 'g'),             -- dollar quotes
        '''([^'']|'''')*''', ' ''lit'' ', 'g'),                -- literals
      '"([^"]|"")*"', ' q ', 'g'))                            -- "quoted"
$f$;

-- Words that may precede "(" without being function calls.
CREATE FUNCTION regress_hard_lint.not_a_call(word text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $f$
  SELECT word = ANY ('{all,and,any,array,as,between,by,case,cast,coalesce,
    distinct,else,elsif,exists,extract,filter,from,greatest,grouping,if,in,
    into,is,join,lateral,least,loop,materialized,not,nullif,on,operator,or,over,
    overlay,partition,perform,position,query,raise,return,returning,row,
    rows,select,set,some,substring,table,then,trim,union,using,values,when,
    where,while,with,within,normalize}'::text[])
$f$;

CREATE FUNCTION regress_hard_lint.findings(nsp regnamespace)
RETURNS TABLE (check_name text, object text)
LANGUAGE sql STABLE AS $f$
  -- functions and procedures
  SELECT 'secdef_unpinned', p.oid::regprocedure::text
    FROM pg_proc p
   WHERE p.pronamespace = nsp AND p.prosecdef
     AND NOT coalesce(p.proconfig @> '{"search_path=pg_catalog, pg_temp"}', false)
  UNION ALL
  SELECT 'secdef', p.oid::regprocedure::text
    FROM pg_proc p WHERE p.pronamespace = nsp AND p.prosecdef
  UNION ALL
  SELECT 'proc_set_clause', p.oid::regprocedure::text
    FROM pg_proc p
   WHERE p.pronamespace = nsp AND p.prokind = 'p'
     AND (p.proconfig IS NOT NULL OR p.prosecdef)
  -- tables, sequences, views
  UNION ALL
  SELECT 'public_write', c.oid::regclass::text || ' ' || a.privilege_type || ' to ' ||
         CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
    FROM pg_class c, aclexplode(c.relacl) a
   WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'S')
     AND a.grantee <> c.relowner
     AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE',
                              'REFERENCES', 'TRIGGER', 'USAGE')
  UNION ALL
  SELECT 'no_rls', c.oid::regclass::text
    FROM pg_class c
   WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p') AND NOT c.relrowsecurity
  UNION ALL
  SELECT 'write_policy', c.oid::regclass::text || ' ' || pol.polname
    FROM pg_policy pol JOIN pg_class c ON c.oid = pol.polrelid
   WHERE c.relnamespace = nsp AND pol.polcmd <> 'r'
  UNION ALL
  SELECT 'view_definer', c.oid::regclass::text
    FROM pg_class c
   WHERE c.relnamespace = nsp AND c.relkind = 'v'
     AND NOT coalesce(array_to_string(c.reloptions, ',')
                      ~* '(^|,)security_invoker=(true|on|yes|1)(,|$)', false)
  -- bodies of SQL and PL/pgSQL functions (not BEGIN ATOMIC ones, which
  -- are parsed at creation)
  UNION ALL
  SELECT DISTINCT 'unqualified_call', p.oid::regprocedure::text || ' ' || m[1] || '('
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang,
         regexp_matches(regress_hard_lint.code(p.prosrc),
                        '(?:^|[^.\w$])([a-z_][a-z0-9_$]*)\s*\(', 'g') m
   WHERE p.pronamespace = nsp AND l.lanname IN ('sql', 'plpgsql')
     AND p.prosqlbody IS NULL
     AND NOT regress_hard_lint.not_a_call(m[1])
  UNION ALL
  SELECT DISTINCT 'unqualified_rel', p.oid::regprocedure::text || ' ' || m[2]
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang,
         regexp_matches(regexp_replace(regress_hard_lint.code(p.prosrc),
                                       'extract\s*\(\s*\w+\s+from', 'extract(', 'g'),
                        '(?:^|\W)(from|join|update|insert\s+into|delete\s+from)\s+([a-z_][a-z0-9_$]*)(?![\w$]*\s*[.(])', 'g') m
   WHERE p.pronamespace = nsp AND l.lanname IN ('sql', 'plpgsql')
     AND p.prosqlbody IS NULL
     AND NOT regress_hard_lint.not_a_call(m[2])
     -- names of CTEs defined in the same body are not relations
     AND NOT EXISTS (SELECT FROM regexp_matches(regress_hard_lint.code(p.prosrc),
                        '([a-z_][a-z0-9_$]*)\s+as\s+(?:not\s+)?(?:materialized\s+)?\(', 'g') cte
                      WHERE cte[1] = m[2])
  UNION ALL
  SELECT DISTINCT 'unqualified_op', p.oid::regprocedure::text || ' ' || m[1]
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang,
         regexp_matches(
           regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
             regress_hard_lint.code(p.prosrc),
             'operator\s*\([^)]*\)', ' ', 'g'),   -- OPERATOR(schema.op)
             '\m(errcode|message|detail|hint|column|constraint|datatype|table|schema)\s*=', ' ', 'g'),
                                                  -- RAISE ... USING option = value
             ':=|=>|::', ' ', 'g'),               -- assignment, named args, casts
             '\(\s*\*\s*\)|\.\*', ' ', 'g'),      -- count(*), t.*
             '(select|,)\s*\*', '\1 ', 'g'),      -- SELECT *, a, *
           '([-=<>!~+*/|&^%#@?]+)', 'g') m
   WHERE p.pronamespace = nsp AND l.lanname IN ('sql', 'plpgsql')
     AND p.prosqlbody IS NULL
$f$;

-- The extension's functions and relations all live in schema backfill, so
-- checking that schema checks all of them.
SELECT classid::regclass, objid
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill')
   AND d.deptype = 'e'
   AND NOT ((d.classid = 'pg_proc'::regclass AND
             (SELECT pronamespace FROM pg_proc WHERE oid = d.objid) = 'backfill'::regnamespace)
         OR (d.classid = 'pg_class'::regclass AND
             (SELECT relnamespace FROM pg_class WHERE oid = d.objid) = 'backfill'::regnamespace)
         OR d.classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass));

-- The extension: no findings at all.
SELECT * FROM regress_hard_lint.findings('backfill') ORDER BY 1, 2;

-- Positive controls: one bad object per check (and one clean function that
-- must not be reported) in a scratch schema.
CREATE SCHEMA regress_hard_bad;
CREATE FUNCTION regress_hard_bad.definer_unpinned() RETURNS int
  LANGUAGE sql SECURITY DEFINER AS 'SELECT 1';
CREATE FUNCTION regress_hard_bad.definer_pinned() RETURNS int
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS 'SELECT 1';
CREATE PROCEDURE regress_hard_bad.proc_with_set()
  LANGUAGE sql SET work_mem = '64MB' AS 'SELECT 1';
CREATE TABLE regress_hard_bad.writable (a int);
GRANT SELECT, INSERT ON regress_hard_bad.writable TO PUBLIC;
CREATE TABLE regress_hard_bad.protected (a int);
ALTER TABLE regress_hard_bad.protected ENABLE ROW LEVEL SECURITY;
CREATE POLICY reader ON regress_hard_bad.protected FOR SELECT USING (true);
CREATE POLICY writer ON regress_hard_bad.protected FOR UPDATE USING (true);
CREATE VIEW regress_hard_bad.definer_view AS SELECT 1 AS one;
CREATE VIEW regress_hard_bad.invoker_view WITH (security_invoker = true) AS SELECT 1 AS one;
CREATE FUNCTION regress_hard_bad.calls_now() RETURNS timestamptz
  LANGUAGE sql STABLE AS 'SELECT now()';
CREATE FUNCTION regress_hard_bad.counts() RETURNS bigint
  LANGUAGE sql STABLE AS 'SELECT count(*) FROM pg_catalog.pg_class';
CREATE FUNCTION regress_hard_bad.reads_table() RETURNS bigint
  LANGUAGE sql STABLE AS 'SELECT pg_catalog.count(*) FROM pg_class';
CREATE FUNCTION regress_hard_bad.compares(a int) RETURNS boolean
  LANGUAGE sql IMMUTABLE AS 'SELECT a >= 0';
CREATE FUNCTION regress_hard_bad.plpgsql_call(t text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    -- lower(t) in a comment and 'upper(t)' in a literal are not calls
    RETURN format('%s', t);
END
$$;
CREATE FUNCTION regress_hard_bad.plpgsql_clean(t text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF t IS NULL THEN
        RAISE EXCEPTION 't must not be null'
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass a value.';
    END IF;
    RETURN pg_catalog.upper(t);
END
$$;
CREATE FUNCTION regress_hard_bad.clean(t timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
    -- count(*) FROM runs in a comment does not count
    WITH recent AS (SELECT c.oid FROM pg_catalog.pg_class c
                     WHERE c.oid OPERATOR(pg_catalog.>) 16384::pg_catalog.oid)
    SELECT pg_catalog.count(*) FROM recent
     WHERE t OPERATOR(pg_catalog.<) pg_catalog.now()
       AND EXTRACT(epoch FROM t) OPERATOR(pg_catalog.>) 0
$$;
SELECT * FROM regress_hard_lint.findings('regress_hard_bad') ORDER BY 1, 2;

DROP SCHEMA regress_hard_bad CASCADE;
DROP SCHEMA regress_hard_lint CASCADE;
