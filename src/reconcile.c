/*-------------------------------------------------------------------------
 *
 * reconcile.c
 *	  STUB: to be implemented.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "backfill.h"

/*
 * LedgerValue
 *		Run the (validated) ledger query for [lo, hi) as the current user,
 *		read-only, and return its single value as numeric.
 *
 * The caller must be connected to SPI.  The result is copied into the
 * memory context that was current before SPI was connected (the upper
 * executor context), so it survives SPI_finish.  More than one row is an
 * error; no row or a NULL gives *isnull.
 */
Datum
LedgerValue(const char *ledger, TimestampTz lo, TimestampTz hi, bool *isnull)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[2];
	Datum		result;
	Oid			typid;

	values[0] = TimestampTzGetDatum(lo);
	values[1] = TimestampTzGetDatum(hi);
	SpiExec(ledger, 2, argtypes, values, NULL, true, 2, SPI_OK_SELECT);
	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("ledger query returned more than one row"),
				 errdetail("The ledger must return one number for the range [$1, $2)."),
				 errhint("Aggregate the ledger, for example SELECT count(*) FROM ledger WHERE ts >= $1 AND ts < $2.")));
	if (SPI_processed == 0 || SPI_tuptable->tupdesc->natts != 1)
	{
		*isnull = true;
		return (Datum) 0;
	}
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
						   isnull);
	if (*isnull)
		return (Datum) 0;
	typid = SPI_gettypeid(SPI_tuptable->tupdesc, 1);
	if (typid != NUMERICOID)
	{
		Oid			castfunc;
		CoercionPathType path;

		path = find_coercion_pathway(NUMERICOID, typid, COERCION_EXPLICIT,
									 &castfunc);
		if (path != COERCION_PATH_FUNC || !OidIsValid(castfunc))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("ledger query must return a number, not type %s",
							format_type_be(typid))));
		result = OidFunctionCall1(castfunc, result);
	}
	return SPI_datumTransfer(result, false, -1);
}

/*
 * LedgerAgrees
 *		|measure - ledger| <= tolerance * |ledger|, all numeric.
 */
bool
LedgerAgrees(Datum measure, Datum ledger, Datum tolerance)
{
	Datum		diff;
	Datum		allowed;

	diff = DirectFunctionCall1(numeric_abs,
							   DirectFunctionCall2(numeric_sub, measure, ledger));
	allowed = DirectFunctionCall2(numeric_mul, tolerance,
								  DirectFunctionCall1(numeric_abs, ledger));
	return DatumGetBool(DirectFunctionCall2(numeric_le, diff, allowed));
}

PG_FUNCTION_INFO_V1(backfill_reconcile);
Datum
backfill_reconcile(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_reconcile")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_check);
Datum
backfill_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_check")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_schedule_check);
Datum
backfill_schedule_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_schedule_check")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_unschedule_check);
Datum
backfill_unschedule_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_unschedule_check")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_run_check);
Datum
backfill_run_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_run_check")));
	PG_RETURN_VOID();
}

