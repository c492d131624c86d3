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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"
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
