/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reads and writes of backfill's own catalog tables, as the extension
 *	  owner (CatalogExec), and the parameters of those statements
 *	  (CatalogArgs).
 *
 * Users hold no write privileges on backfill.targets, definitions, runs,
 * chunks or check_results.  The C code writes them as the extension owner,
 * for exactly one statement at a time, in a security-restricted context,
 * with search_path pinned to 'pg_catalog, pg_temp', and records the real
 * user as a parameter.  This is the pattern pg_cron uses for its job
 * table.
 *
 * CatalogRun (behind CatalogExec) is the only code that switches to the
 * extension owner; the owner is looked up here and nowhere else
 * (ExtensionOwner is static).
 * t/037_privilege_lint.pl fails the build's tests when a user switch or
 * the owner lookup appears anywhere but here and in the author gate
 * (identity.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "backfill.h"

/*
 * The TID of backfill's pg_extension row when it was last found: every
 * entry point (its version check) and every catalog statement (its owner)
 * asks for that row, so the next call fetches that one tuple instead of
 * scanning pg_extension's name index.
 */
static ItemPointerData extension_tid;
static bool extension_tid_valid = false;

/*
 * FetchRememberedExtension
 *		A copy of the tuple at extension_tid if that tuple is visible to
 *		the catalog snapshot and is backfill's row; NULL otherwise.  The
 *		row is unique by name, so a visible row named backfill is the
 *		current one: after ALTER EXTENSION UPDATE or DROP EXTENSION the
 *		remembered tuple is dead to newer snapshots, and the caller scans.
 */
static HeapTuple
FetchRememberedExtension(Relation rel)
{
	HeapTupleData tuple;
	Buffer		buf;
	Snapshot	snapshot;
	HeapTuple	copy = NULL;

	if (!extension_tid_valid ||
		ItemPointerGetBlockNumber(&extension_tid) >= RelationGetNumberOfBlocks(rel))
		return NULL;
	snapshot = RegisterSnapshot(GetCatalogSnapshot(ExtensionRelationId));
	tuple.t_self = extension_tid;
	if (heap_fetch(rel, snapshot, &tuple, &buf, false))
	{
		if (strcmp(NameStr(((Form_pg_extension) GETSTRUCT(&tuple))->extname),
				   "backfill") == 0)
			copy = heap_copytuple(&tuple);
		ReleaseBuffer(buf);
	}
	UnregisterSnapshot(snapshot);
	return copy;
}

/*
 * ExtensionRow
 *		A copy of backfill's pg_extension row in this database (NULL when
 *		the extension is not installed here), and, when version is not
 *		NULL, its extversion (palloc'd; NULL if null).  The row's TID is
 *		remembered for the next call (FetchRememberedExtension).
 */
static HeapTuple
ExtensionRow(char **version)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (version != NULL)
		*version = NULL;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	tup = FetchRememberedExtension(rel);
	if (tup == NULL)
	{
		extension_tid_valid = false;
		ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
					F_NAMEEQ, CStringGetDatum("backfill"));
		scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
		tup = systable_getnext(scan);
		if (HeapTupleIsValid(tup))
		{
			tup = heap_copytuple(tup);
			extension_tid = tup->t_self;
			extension_tid_valid = true;
		}
		else
			tup = NULL;
		systable_endscan(scan);
	}
	if (tup != NULL && version != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			*version = text_to_cstring(DatumGetTextPP(d));
	}
	table_close(rel, AccessShareLock);
	return tup;
}

/*
 * CatalogInstalledVersion
 *		See backfill.h: extversion of extension backfill in this database
 *		(palloc'd), NULL when it is not installed here (ExtensionRow).
 */
char *
CatalogInstalledVersion(void)
{
	char	   *version;
	HeapTuple	tup = ExtensionRow(&version);

	if (tup != NULL)
		heap_freetuple(tup);
	return version;
}

/*
 * The extension's owner as ExtensionOwner last read it, and the local id
 * of the (top-level) transaction that read it.
 */
static Oid	extension_owner = InvalidOid;
static LocalTransactionId extension_owner_lxid = InvalidLocalTransactionId;

#if PG_VERSION_NUM >= 170000
#define BACKFILL_MY_LXID (MyProc->vxid.lxid)
#else
#define BACKFILL_MY_LXID (MyProc->lxid)
#endif

/*
 * ExtensionOwner
 *		The role that owns the backfill extension (and its catalog tables).
 *		Private to this file: only CatalogExec switches to it.  It runs for
 *		every catalog statement (so for every transaction that the watch
 *		trigger logs), so the owner is read once per transaction
 *		(ExtensionRow fetches the remembered row: a table open and a size
 *		lookup) and remembered for the transaction's other statements.
 *		Within a transaction the owner changes only by DDL in that very
 *		transaction (DROP and CREATE EXTENSION, REASSIGN OWNED), which
 *		needs the owner's rights already: the remembered owner never lends
 *		rights that the transaction's own user did not have.
 */
static Oid
ExtensionOwner(void)
{
	HeapTuple	tup;
	Oid			owner;

	if (OidIsValid(extension_owner) &&
		extension_owner_lxid == BACKFILL_MY_LXID &&
		extension_owner_lxid != InvalidLocalTransactionId)
		return extension_owner;
	tup = ExtensionRow(NULL);
	if (tup == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"backfill\" does not exist")));
	owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	heap_freetuple(tup);
	if (!OidIsValid(owner))
		elog(ERROR, "backfill: could not find the owner of extension \"backfill\"");
	extension_owner = owner;
	extension_owner_lxid = BACKFILL_MY_LXID;
	return owner;
}

/*
 * Saved plans of catalog statements.  The run engine executes the same few
 * statements for every chunk; parsing and planning them once per backend
 * keeps the bookkeeping of a chunk small.  The plan cache re-plans on its
 * own when a table changes; the search_path is always the pinned one, so
 * a plan never depends on the caller's.  Statements beyond the first CATALOG_PLANS are executed
 * unsaved, so SQL that is built per call can never grow the cache.
 */
#define CATALOG_PLANS 64

typedef struct CatalogPlan
{
	char	   *sql;
	int			nargs;
	Oid		   *argtypes;
	int			options;		/* cursor options it was prepared with */
	SPIPlanPtr	plan;
} CatalogPlan;

static CatalogPlan catalog_plans[CATALOG_PLANS];
static int	n_catalog_plans = 0;

/*
 * CatalogPlanFor
 *		The saved plan of (sql, argtypes), prepared on first use with the
 *		given cursor options (0, or CURSOR_OPT_GENERIC_PLAN); NULL when the
 *		cache is full.  Caller is connected to SPI.
 */
static SPIPlanPtr
CatalogPlanFor(const char *sql, int nargs, Oid *argtypes, int options)
{
	CatalogPlan *entry;
	SPIPlanPtr	plan;
	int			i;

	for (i = 0; i < n_catalog_plans; i++)
	{
		entry = &catalog_plans[i];
		if (entry->nargs == nargs && entry->options == options &&
			(nargs == 0 ||
			 memcmp(entry->argtypes, argtypes, sizeof(Oid) * nargs) == 0) &&
			strcmp(entry->sql, sql) == 0)
			return entry->plan;
	}
	if (n_catalog_plans >= CATALOG_PLANS)
		return NULL;

	plan = SPI_prepare_cursor(sql, nargs, argtypes, options);
	if (plan == NULL)
		elog(ERROR, "backfill: could not prepare statement (%s): %s",
			 SPI_result_code_string(SPI_result), sql);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "backfill: could not save plan: %s", sql);

	entry = &catalog_plans[n_catalog_plans];
	entry->sql = MemoryContextStrdup(TopMemoryContext, sql);
	entry->nargs = nargs;
	entry->options = options;
	entry->argtypes = NULL;
	if (nargs > 0)
	{
		entry->argtypes = MemoryContextAlloc(TopMemoryContext,
											 sizeof(Oid) * nargs);
		memcpy(entry->argtypes, argtypes, sizeof(Oid) * nargs);
	}
	entry->plan = plan;
	n_catalog_plans++;
	return plan;
}

/* A GRANT or REVOKE of SELECT on one of the extension's relations. */
typedef struct CatalogGrantSpec
{
	const char *relname;		/* a relation of schema backfill */
	const char *rolename;
	bool		grant;			/* false: REVOKE */
} CatalogGrantSpec;

/*
 * DoGrant
 *		The GRANT or REVOKE of spec, from C (ExecuteGrantStmt): no SQL is
 *		parsed and no event trigger fires, so no code of anyone's runs with
 *		the owner's rights.  Called by CatalogRun, as the owner.
 */
static void
DoGrant(const CatalogGrantSpec *spec)
{
	GrantStmt  *stmt = makeNode(GrantStmt);
	AccessPriv *priv = makeNode(AccessPriv);
	RoleSpec   *grantee = makeNode(RoleSpec);

	priv->priv_name = pstrdup("select");
	grantee->roletype = ROLESPEC_CSTRING;
	grantee->rolename = pstrdup(spec->rolename);
	grantee->location = -1;
	stmt->is_grant = spec->grant;
	stmt->targtype = ACL_TARGET_OBJECT;
	stmt->objtype = OBJECT_TABLE;
	stmt->objects = list_make1(makeRangeVar(pstrdup("backfill"),
											pstrdup(spec->relname), -1));
	stmt->privileges = list_make1(priv);
	stmt->grantees = list_make1(grantee);
	stmt->grant_option = false;
	stmt->grantor = NULL;
	stmt->behavior = DROP_RESTRICT;
	ExecuteGrantStmt(stmt);
	CommandCounterIncrement();
}

/*
 * CatalogRun
 *		Run one catalog statement as the extension owner: the one function
 *		of the extension that switches to the owner's rights.
 *
 * The caller must be connected to SPI.  The statement must reference only
 * schema-qualified objects; it runs in a security-restricted operation
 * with search_path pinned to 'pg_catalog, pg_temp' (SpiPinSearchPath), so
 * that an implicit operator in it (IS DISTINCT FROM, IN, CASE, LIKE) can
 * only resolve to pg_catalog's, never to a look-alike in the caller's
 * schemas run with the owner's rights.  User id, security context and
 * search_path are restored on error as well as on success, before the
 * error reaches a caller that may catch it in a subtransaction.  With
 * "save", the statement's plan is kept for the rest of the session (see
 * CatalogPlanFor, prepared with cursor options "options"); statements
 * whose text varies per call are run unsaved.  With "dest", the result
 * rows go there (SpiExecDest), unsaved.  With "grant" (and no sql), the
 * GRANT or REVOKE it describes is done from C (DoGrant) instead of a
 * statement.  The owner-rights guard (guard.c)
 * is on meanwhile: every query analysed, this statement and any SQL
 * function body it runs, is refused when it touches anything that is not
 * pg_catalog's or the extension's own.
 */
static int
CatalogRun(const char *sql, int nargs, Oid *argtypes, Datum *values,
		   const char *nulls, int expected, bool save, int options,
		   DestReceiver *dest, const CatalogGrantSpec *grant)
{
	Oid			owner = ExtensionOwner();
	Oid			save_userid;
	int			save_sec_context;
	int			nest;
	int			guard;
	volatile int rc = 0;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	nest = SpiPinSearchPath();
	guard = GuardPush();
	SetUserIdAndSecContext(owner,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		SPIPlanPtr	plan = save ? CatalogPlanFor(sql, nargs, argtypes,
												options) : NULL;

		if (grant != NULL)
			DoGrant(grant);
		else if (dest != NULL)
			rc = SpiExecDest(sql, nargs, argtypes, values, nulls, dest,
							 expected);
		else if (plan == NULL)
			rc = SpiExec(sql, nargs, argtypes, values, nulls, false, 0,
						 expected);
		else
		{
			rc = SPI_execute_plan(plan, values, nulls, false, 0);
			if (rc != expected)
				elog(ERROR, "backfill: statement returned %s, expected %s: %s",
					 SPI_result_code_string(rc),
					 SPI_result_code_string(expected), sql);
		}
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec_context);
		GuardPop(guard);
		SpiUnpinSearchPath(nest);
	}
	PG_END_TRY();
	return rc;
}

/*
 * CatalogExec
 *		Run one catalog statement as the extension owner (CatalogRun), its
 *		plan saved for the session.
 */
int
CatalogExec(const char *sql, int nargs, Oid *argtypes, Datum *values,
			const char *nulls, int expected)
{
	return CatalogRun(sql, nargs, argtypes, values, nulls, expected, true, 0,
					  NULL, NULL);
}

/*
 * CatalogGrantSelect
 *		See backfill.h: GRANT (or REVOKE) SELECT on backfill.<relname> to
 *		role "rolename", as the extension owner (CatalogRun), from C.
 */
void
CatalogGrantSelect(const char *relname, const char *rolename, bool grant)
{
	CatalogGrantSpec spec;

	spec.relname = relname;
	spec.rolename = rolename;
	spec.grant = grant;
	(void) CatalogRun(NULL, 0, NULL, NULL, NULL, 0, false, 0, NULL, &spec);
}

/*
 * CatalogCronQuery
 *		See backfill.h: one statement on pg_cron's tables and functions
 *		(schema-qualified, $n text parameters cast where they are used),
 *		run as the extension owner: here with CatalogRun when crondb is
 *		NULL (pg_cron serves this database), else in database crondb by
 *		the relay's background worker (cronrelay.c), connected there as
 *		the same owner, with search_path pinned and the owner-rights guard
 *		on as here.  Its rows, every column as text, in the caller's
 *		memory context.  With "error" not NULL, a failure of the relay or
 *		of the statement there returns NULL and the error in *error
 *		instead of raising it (here, errors are always raised).  Caller is
 *		connected to SPI.
 */
CronRows *
CatalogCronQuery(const char *crondb, const char *sql, int nparams,
				 const char **params, ErrorData **error)
{
	CronRows   *rows;
	Oid		   *types;
	Datum	   *values;
	char	   *nulls;
	int			i;
	uint64		r;

	if (crondb != NULL)
	{
		Oid			dbid = get_database_oid(crondb, true);

		if (!OidIsValid(dbid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_DATABASE),
					 errmsg("database \"%s\" named by cron.database_name does not exist",
							crondb),
					 errhint("Set cron.database_name to the database where pg_cron is installed, and restart the server.")));
		return CronRelayRun(dbid, ExtensionOwner(), sql, nparams, params,
							error);
	}

	types = palloc(sizeof(Oid) * (nparams + 1));
	values = palloc(sizeof(Datum) * (nparams + 1));
	nulls = palloc(nparams + 1);
	for (i = 0; i < nparams; i++)
	{
		types[i] = TEXTOID;
		values[i] = params[i] ? CStringGetTextDatum(params[i]) : (Datum) 0;
		nulls[i] = params[i] ? ' ' : 'n';
	}
	nulls[nparams] = '\0';
	(void) CatalogRun(sql, nparams, types, values, nulls, SPI_OK_SELECT, true,
					  0, NULL, NULL);
	rows = palloc0(sizeof(CronRows));
	rows->nrows = (int) SPI_processed;
	rows->ncols = SPI_tuptable->tupdesc->natts;
	rows->values = palloc0(sizeof(char *) *
						   ((Size) rows->nrows * rows->ncols + 1));
	for (r = 0; r < SPI_processed; r++)
	{
		CHECK_FOR_INTERRUPTS();
		for (i = 0; i < rows->ncols; i++)
			rows->values[r * rows->ncols + i] =
				SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
							 i + 1);
	}
	SPI_freetuptable(SPI_tuptable);
	return rows;
}

/*
 * OpenPlainIndexes
 *		See backfill.h: a ResultRelInfo of rel with its indexes open, in a
 *		new executor state (*estate), for writing rows from C; NULL, having
 *		opened nothing, when an index is on an expression or has a
 *		predicate (evaluating those would run code).  The caller ends with
 *		ExecCloseIndices and FreeExecutorState.
 */
ResultRelInfo *
OpenPlainIndexes(Relation rel, EState **estate)
{
	ResultRelInfo *rri;
	int			i;

	*estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];

		if (ii->ii_Expressions != NIL || ii->ii_Predicate != NIL)
		{
			ExecCloseIndices(rri);
			FreeExecutorState(*estate);
			*estate = NULL;
			return NULL;
		}
	}
	return rri;
}

/*
 * FiresOnInsert
 *		Whether an INSERT into a table with triggers td fires any of them
 *		(a row or statement trigger, a constraint trigger, a transition
 *		table).  A trigger of other events only (backfill_recorded_signal
 *		of backfill.changed_regions: DELETE, UPDATE) does not
 *		fire: the rows may still be appended without SQL, which runs none
 *		anyway (the attack review of the recorded memory: that trigger had
 *		sent every append of the log through an INSERT as the owner).
 */
static bool
FiresOnInsert(const TriggerDesc *td)
{
	return td != NULL &&
		(td->trig_insert_before_row || td->trig_insert_after_row ||
		 td->trig_insert_instead_row || td->trig_insert_before_statement ||
		 td->trig_insert_after_statement || td->trig_insert_new_table);
}

/*
 * AppendableTable
 *		Whether CatalogAppendRows may write rel, with ncols values a row,
 *		without running SQL: a plain table with exactly those columns (none
 *		dropped), no trigger that an INSERT fires (FiresOnInsert), no rule
 *		and no row security forced on its owner.
 */
static bool
AppendableTable(Relation rel, int ncols)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	if (rel->rd_rel->relkind != RELKIND_RELATION || FiresOnInsert(rel->trigdesc) ||
		rel->rd_rules != NULL || rel->rd_rel->relforcerowsecurity ||
		desc->natts != ncols)
		return false;
	for (i = 0; i < ncols; i++)
	{
		if (TupleDescAttr(desc, i)->attisdropped)
			return false;
	}
	return true;
}

/*
 * CatalogAppendRows
 *		Append nrows rows to the extension's table backfill.<relname>
 *		without running SQL: values and nulls hold ncols entries per row,
 *		row after row, in the order of the table's columns.  The rows go
 *		into the heap and every index in the caller's (sub)transaction,
 *		WAL-logged, as an INSERT would put them, without its parsing,
 *		planning, executor start and switch to the extension owner with
 *		search_path pinned, which cost more than the write for the hottest
 *		catalog write: the watch trigger's rows, one per writing
 *		transaction.  No name is resolved outside schema backfill and no
 *		user code runs: a table with a trigger an INSERT fires, a rule, row
 *		security forced on its owner, a column not given, or an index on an
 *		expression or with a predicate is not written (false: the caller
 *		then writes the rows with CatalogExec).  The caller guarantees the table's CHECK
 *		constraints; a null in a NOT NULL column is an internal error.
 */
bool
CatalogAppendRows(const char *relname, int ncols, int nrows,
				  const Datum *values, const bool *nulls)
{
	Oid			relid = get_relname_relid(relname,
										  get_namespace_oid("backfill", false));
	Relation	rel;
	TupleDesc	desc;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	int			i;
	int			r;

	if (!OidIsValid(relid))
		elog(ERROR, "backfill: table backfill.%s is missing", relname);
	rel = table_open(relid, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	if (!AppendableTable(rel, ncols) ||
		(rri = OpenPlainIndexes(rel, &estate)) == NULL)
	{
		table_close(rel, NoLock);
		return false;
	}

	slot = table_slot_create(rel, NULL);
	for (r = 0; r < nrows; r++)
	{
		CHECK_FOR_INTERRUPTS();
		ExecClearTuple(slot);
		for (i = 0; i < ncols; i++)
		{
			slot->tts_values[i] = values[r * ncols + i];
			slot->tts_isnull[i] = nulls[r * ncols + i];
			if (slot->tts_isnull[i] && TupleDescAttr(desc, i)->attnotnull)
				elog(ERROR, "backfill: null in column %d of backfill.%s",
					 i + 1, relname);
		}
		ExecStoreVirtualTuple(slot);
		table_tuple_insert(rel, slot, GetCurrentCommandId(true), 0, NULL);
		if (rri->ri_NumIndices > 0)
			list_free(InsertIndexEntries(rri, slot, estate));
		ResetPerTupleExprContext(estate);
	}
	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return true;
}

/*
 * CatalogArgsInit
 *		Start the parameters of a catalog statement: none yet.
 */
void
CatalogArgsInit(CatalogArgs *args)
{
	args->n = 0;
	args->nulls[0] = '\0';
}

/*
 * CatalogArg
 *		Add the next parameter, $n (returned): a value of "type", SQL NULL
 *		when isnull.
 */
int
CatalogArg(CatalogArgs *args, Oid type, Datum value, bool isnull)
{
	if (args->n >= CATALOG_MAX_ARGS)
		elog(ERROR, "backfill: more than %d parameters in a catalog statement",
			 CATALOG_MAX_ARGS);
	args->types[args->n] = type;
	args->values[args->n] = isnull ? (Datum) 0 : value;
	args->nulls[args->n] = isnull ? 'n' : ' ';
	args->n++;
	args->nulls[args->n] = '\0';
	return args->n;
}

/*
 * CatalogArgText
 *		Add the next parameter as text; a NULL pointer is SQL NULL.
 */
int
CatalogArgText(CatalogArgs *args, const char *text)
{
	return CatalogArg(args, TEXTOID,
					  text ? CStringGetTextDatum(text) : (Datum) 0,
					  text == NULL);
}

/*
 * CatalogCheckParams
 *		The highest $n of a statement, which must be the number of its
 *		parameters (else an internal error naming it).
 */
static void
CatalogCheckParams(const char *sql, const CatalogArgs *args)
{
	const char *p;
	int			highest = 0;

	for (p = sql; *p; p++)
	{
		if (*p == '$' && isdigit((unsigned char) p[1]))
		{
			int			k = atoi(p + 1);

			highest = Max(highest, k);
		}
	}
	if (highest != args->n)
		elog(ERROR, "backfill: statement uses $%d but is given %d parameters: %s",
			 highest, args->n, sql);
}

/*
 * CatalogExecArgs
 *		CatalogExec with the parameters of args.  The statement must use
 *		them all: its highest $n must be args->n, else it is an internal
 *		error naming the statement (a parameter added or dropped on one
 *		side only).
 */
int
CatalogExecArgs(const char *sql, const CatalogArgs *args, int expected)
{
	CatalogCheckParams(sql, args);
	return CatalogExec(sql, args->n, (Oid *) args->types,
					   (Datum *) args->values, args->nulls, expected);
}

/*
 * CatalogExecArgsOnce
 *		CatalogExecArgs, never cached: for a statement that reads rows
 *		registered on the SPI connection (SpiRegisterRows), whose plan
 *		depends on them.
 */
int
CatalogExecArgsOnce(const char *sql, const CatalogArgs *args, int expected)
{
	CatalogCheckParams(sql, args);
	return CatalogRun(sql, args->n, (Oid *) args->types,
					  (Datum *) args->values, args->nulls, expected, false, 0,
					  NULL, NULL);
}

/*
 * CatalogExecArgsInto
 *		CatalogExecArgs whose result rows go to "dest" (a tuplestore,
 *		SpiRowStore) instead of SPI_tuptable.
 */
int
CatalogExecArgsInto(const char *sql, const CatalogArgs *args,
					DestReceiver *dest, int expected)
{
	CatalogCheckParams(sql, args);
	return CatalogRun(sql, args->n, (Oid *) args->types,
					  (Datum *) args->values, args->nulls, expected, false, 0,
					  dest, NULL);
}

/*
 * CatalogExists
 *		Whether a catalog query (as CatalogExec) returns a row; the result
 *		is freed.
 */
bool
CatalogExists(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	bool		found;

	CatalogExec(sql, nargs, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * CurrentUserName
 *		The name of the role whose privileges are in effect now.
 */
char *
CurrentUserName(void)
{
	return GetUserNameFromId(GetUserId(), false);
}

/*
 * RoleCanLogin
 *		See backfill.h: whether role may log in (pg_cron starts a job's
 *		ticks as its role; a parallel worker connects as the caller's
 *		current role; PostgreSQL refuses a role without LOGIN).
 */
bool
RoleCanLogin(Oid role)
{
	HeapTuple	tuple;
	bool		canlogin;

	tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	if (!HeapTupleIsValid(tuple))
		return false;
	canlogin = ((Form_pg_authid) GETSTRUCT(tuple))->rolcanlogin;
	ReleaseSysCache(tuple);
	return canlogin;
}

/*
 * WatchesRelid
 *		See backfill.h: the OID of backfill.watches, InvalidOid when there
 *		is none (the extension is not installed, or is being dropped).
 */
Oid
WatchesRelid(void)
{
	Oid			nsp = get_namespace_oid("backfill", true);

	return OidIsValid(nsp) ? get_relname_relid("watches", nsp) : InvalidOid;
}

