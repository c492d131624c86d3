/*-------------------------------------------------------------------------
 *
 * ledger.c
 *	  The ledger: its figure for a range (the user's query, run as the
 *	  current user), and whether a measure agrees with it within the
 *	  tolerance.  Used by the gate inside each chunk (chunk.c), by
 *	  preview, and by reconcile and check (reconcile.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "backfill.h"

/*
 * LedgerFromResult
 *		The single value of the ledger query's result in SPI_tuptable, as
 *		numeric, copied into the upper executor context.
 */
Datum
LedgerFromResult(bool *isnull)
{
	Datum		result;
	Oid			typid;

	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("ledger query returned more than one row"),
				 errdetail("The ledger must return one number for the range [$1, $2)."),
				 errhint("Aggregate the ledger, for example SELECT count(*) FROM ledger WHERE ts >= $1 AND ts < $2.")));
	if (SPI_processed == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (SPI_tuptable->tupdesc->natts != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("ledger query must return exactly one column")));
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
	MemoryContext cxt = CurrentMemoryContext;
	Oid			argtypes[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[2];
	Datum		result = (Datum) 0;

	values[0] = TimestampTzGetDatum(lo);
	values[1] = TimestampTzGetDatum(hi);
	/* an error raised by the ledger's text says it is the ledger's */
	PG_TRY();
	{
		SpiExec(ledger, 2, argtypes, values, NULL, true, 2, SPI_OK_SELECT);
		result = LedgerFromResult(isnull);
	}
	PG_CATCH();
	{
		ReThrowNamingSetting(cxt, "ledger query", "in the ledger query");
	}
	PG_END_TRY();
	SPI_freetuptable(SPI_tuptable);
	return result;
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

/*
 * LedgerCompare
 *		See backfill.h: LedgerAgrees where a NULL on either side (an
 *		aggregate such as sum() over no rows) counts as 0, as in the gate
 *		(chunk.c): a chunk emptied by a bad source disagrees with a non-zero
 *		ledger, and a ledger with no entries disagrees with a chunk that
 *		has some.
 */
bool
LedgerCompare(Datum measure, bool measure_null, Datum ledger,
			  bool ledger_null, Datum tolerance)
{
	Datum		zero = NumericGetDatum(int64_to_numeric(0));

	return LedgerAgrees(measure_null ? zero : measure,
						ledger_null ? zero : ledger, tolerance);
}
