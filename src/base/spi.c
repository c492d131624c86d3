/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  A thin layer over SPI, in the style of pg_repack's pgut-spi: connect
 *	  and finish wrappers that cannot be ignored, every statement states
 *	  the result it expects (a different result is reported with the
 *	  statement that produced it), and typed readers of one result row.
 *	  The parameters of catalog statements are built by CatalogArgs
 *	  (catalog.c).
 *
 * It is also the one place that pins search_path for the extension's own
 * statements (SpiPinSearchPath): every statement the extension writes
 * itself and runs without user text -- the catalog statements of
 * CatalogExec (catalog.c) and the reads of system and pg_cron tables that
 * run as the caller (SpiExecPinned) -- runs with search_path
 * 'pg_catalog, pg_temp', so that no implicit operator (IS DISTINCT FROM,
 * IN, LIKE, CASE) or unqualified name in them can resolve to an object in
 * a user's schema.  Statements that carry user text, or that act on the
 * user's own table (whose triggers and defaults are the user's code), run
 * through SpiExec under the author gate (identity.c) instead.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "executor/tstoreReceiver.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/*
 * SpiConnect / SpiConnectNonatomic / SpiFinish
 *		SPI_connect (nonatomic: for a procedure that commits) and
 *		SPI_finish; a failure is an internal error, never ignored.
 */
void
SpiConnect(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "backfill: SPI_connect failed: %s",
			 SPI_result_code_string(rc));
}

void
SpiConnectNonatomic(void)
{
	int			rc = SPI_connect_ext(SPI_OPT_NONATOMIC);

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "backfill: SPI_connect failed: %s",
			 SPI_result_code_string(rc));
}

void
SpiFinish(void)
{
	int			rc = SPI_finish();

	if (rc != SPI_OK_FINISH)
		elog(ERROR, "backfill: SPI_finish failed: %s",
			 SPI_result_code_string(rc));
}

/*
 * SpiExec
 *		Execute sql with parameters; the result code must be "expected".
 *
 * Errors raised by the statement itself propagate unchanged (they carry the
 * user's SQLSTATE); only an unexpected SPI result code is an internal error.
 */
int
SpiExec(const char *sql, int nargs, Oid *argtypes, Datum *values,
		const char *nulls, bool read_only, long count, int expected)
{
	int			rc;

	rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls,
							   read_only, count);
	if (rc != expected)
		elog(ERROR, "backfill: statement returned %s, expected %s: %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expected),
			 sql);
	return rc;
}

/*
 * SpiExecDestOpt
 *		SpiExecDest, read-only (the caller's snapshot) or not.
 */
static int
SpiExecDestOpt(const char *sql, int nargs, Oid *argtypes, Datum *values,
			   const char *nulls, DestReceiver *dest, bool read_only,
			   int expected)
{
	SPIExecuteOptions options;
	ParamListInfo params = NULL;
	int			rc;
	int			i;

	if (nargs > 0)
	{
		params = makeParamList(nargs);
		for (i = 0; i < nargs; i++)
		{
			ParamExternData *prm = &params->params[i];

			prm->isnull = (nulls != NULL && nulls[i] == 'n');
			prm->value = prm->isnull ? (Datum) 0 : values[i];
			prm->pflags = PARAM_FLAG_CONST;
			prm->ptype = argtypes[i];
		}
	}
	memset(&options, 0, sizeof(options));
	options.params = params;
	options.read_only = read_only;
	options.dest = dest;
	rc = SPI_execute_extended(sql, &options);
	if (rc != expected)
		elog(ERROR, "backfill: statement returned %s, expected %s: %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expected),
			 sql);
	return rc;
}

/*
 * SpiExecDest
 *		SpiExec whose result rows go to "dest" (SPI_execute_extended)
 *		instead of SPI_tuptable, so that a result of any size streams into
 *		a tuplestore that spills to disk; SPI_processed counts them.
 */
int
SpiExecDest(const char *sql, int nargs, Oid *argtypes, Datum *values,
			const char *nulls, DestReceiver *dest, int expected)
{
	return SpiExecDestOpt(sql, nargs, argtypes, values, nulls, dest, false,
						  expected);
}

/*
 * SpiExecPinnedDest
 *		SpiExecDest of one of the extension's own reads (no user text, no
 *		user table) as the current user, read-only (the caller's
 *		snapshot), with search_path pinned as SpiExecPinned does: a read of
 *		the catalog under its row-level security whose rows the caller's
 *		receiver takes one at a time.
 */
int
SpiExecPinnedDest(const char *sql, int nargs, Oid *argtypes, Datum *values,
				  const char *nulls, DestReceiver *dest, int expected)
{
	int			nest = SpiPinSearchPath();
	volatile int rc = 0;

	PG_TRY();
	{
		rc = SpiExecDestOpt(sql, nargs, argtypes, values, nulls, dest, true,
							expected);
	}
	PG_FINALLY();
	{
		SpiUnpinSearchPath(nest);
	}
	PG_END_TRY();
	return rc;
}

/*
 * SpiRowStore
 *		A tuplestore for a statement's rows (spilling to disk beyond
 *		work_mem) and the DestReceiver that fills it, values detoasted (a
 *		row deleted by the same statement must not be read back through
 *		the table's TOAST).  The caller destroys the receiver with
 *		dest->rDestroy and ends the store with tuplestore_end.
 */
DestReceiver *
SpiRowStore(Tuplestorestate **store)
{
	return SpiRowStoreSized(store, work_mem);
}

/*
 * SpiRowStoreSized
 *		SpiRowStore holding up to "kbytes" in memory before it spills.
 */
DestReceiver *
SpiRowStoreSized(Tuplestorestate **store, int kbytes)
{
	DestReceiver *dest = CreateDestReceiver(DestTuplestore);

	*store = tuplestore_begin_heap(false, false, kbytes);
	SetTuplestoreDestReceiverParams(dest, *store, CurrentMemoryContext, true,
									NULL, NULL);
	return dest;
}

/*
 * SpiRegisterRows
 *		Make the rows of "store", described by "desc", readable by the
 *		next statements of the current SPI connection as the relation
 *		"name" (an ephemeral named relation, as a trigger's transition
 *		table); it goes with SPI_finish or SpiUnregisterRows.
 */
void
SpiRegisterRows(const char *name, TupleDesc desc, Tuplestorestate *store)
{
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
	int			rc;

	enr->md.name = pstrdup(name);
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = (double) tuplestore_tuple_count(store);
	enr->reldata = store;
	rc = SPI_register_relation(enr);
	if (rc != SPI_OK_REL_REGISTER)
		elog(ERROR, "backfill: could not register rows \"%s\": %s", name,
			 SPI_result_code_string(rc));
}

/*
 * SpiUnregisterRows
 *		Forget the rows SpiRegisterRows registered as "name".
 */
void
SpiUnregisterRows(const char *name)
{
	int			rc = SPI_unregister_relation(name);

	if (rc != SPI_OK_REL_UNREGISTER)
		elog(ERROR, "backfill: could not unregister rows \"%s\": %s", name,
			 SPI_result_code_string(rc));
}

/*
 * SpiPinSearchPath
 *		Open a GUC nest level in which search_path is 'pg_catalog, pg_temp'
 *		and return it; SpiUnpinSearchPath closes it.  The value is set with
 *		GUC_ACTION_SAVE at the new level, so a SET LOCAL search_path of the
 *		caller is shadowed, not lost.
 */
int
SpiPinSearchPath(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("search_path", BACKFILL_PINNED_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	return nest;
}

/*
 * SpiUnpinSearchPath
 *		Close the nest level of SpiPinSearchPath as on abort: the caller's
 *		search_path is back, and nothing set inside survives.  Safe in an
 *		error path before the (sub)transaction is rolled back: the abort
 *		then finds the level already gone.
 */
void
SpiUnpinSearchPath(int nest)
{
	AtEOXact_GUC(false, nest);
}

/*
 * SpiExecPinned
 *		SpiExec of one of the extension's own statements (no user text, no
 *		user table), as the current user, with search_path pinned to
 *		'pg_catalog, pg_temp' for the statement (restored on success and on
 *		error).  The SQL must still be schema-qualified; the pin makes an
 *		implicit operator in it (IS DISTINCT FROM, IN, CASE, LIKE) resolve
 *		in pg_catalog whatever the caller's search_path.
 */
int
SpiExecPinned(const char *sql, int nargs, Oid *argtypes, Datum *values,
			  const char *nulls, bool read_only, long count, int expected)
{
	int			nest = SpiPinSearchPath();
	volatile int rc = 0;

	PG_TRY();
	{
		rc = SpiExec(sql, nargs, argtypes, values, nulls, read_only, count,
					 expected);
	}
	PG_FINALLY();
	{
		SpiUnpinSearchPath(nest);
	}
	PG_END_TRY();
	return rc;
}

/*
 * SpiGetDatumCopy
 *		Column col of result row "row", copied into the current memory
 *		context; switch to a longer-lived one first when the value must
 *		outlive SPI_finish or a transaction end.
 */
Datum
SpiGetDatumCopy(int row, int col, bool *isnull)
{
	Datum		d;
	Oid			typid;
	int16		typlen;
	bool		typbyval;

	d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col,
					  isnull);
	if (*isnull)
		return (Datum) 0;
	typid = SPI_gettypeid(SPI_tuptable->tupdesc, col);
	get_typlenbyval(typid, &typlen, &typbyval);
	return datumCopy(d, typbyval, typlen);
}

/*
 * SpiGetBool / SpiGetInt64 / SpiGetInt32 / SpiGetOid
 *		Typed readers; the column must already have that type.
 */
bool
SpiGetBool(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, isnull);

	return *isnull ? false : DatumGetBool(d);
}

int64
SpiGetInt64(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, isnull);

	return *isnull ? 0 : DatumGetInt64(d);
}

int32
SpiGetInt32(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, isnull);

	return *isnull ? 0 : DatumGetInt32(d);
}

Oid
SpiGetOid(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, isnull);

	return *isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * SpiOidColumn
 *		The first column of every row of the last result, as a list of
 *		OIDs in row order (NULLs left out); the result is freed.
 */
List *
SpiOidColumn(void)
{
	List	   *oids = NIL;
	uint64		k;

	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		Oid			oid = SpiGetOid(k, 1, &isnull);

		if (!isnull)
			oids = lappend_oid(oids, oid);
	}
	SPI_freetuptable(SPI_tuptable);
	return oids;
}

/*
 * SpiGetText
 *		Column col as text in the current memory context, NULL for NULL.
 */
char *
SpiGetText(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	if (isnull)
		return NULL;
	if (SPI_gettypeid(SPI_tuptable->tupdesc, col) == TEXTOID)
		return TextDatumGetCString(d);
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}
