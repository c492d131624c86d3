/*-------------------------------------------------------------------------
 *
 * util.c
 *	  The one text form of the values and names that messages and composed
 *	  SQL print: a timestamptz, a numeric, and a relation's quoted,
 *	  schema-qualified name; and one-dimensional arrays for statement
 *	  parameters (MakeArray); and the length limit of a text argument
 *	  (RequireMaxLength).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "backfill.h"

/*
 * TimestampText
 *		A timestamptz in ISO form, in a fresh palloc'd string
 *		(timestamptz_to_str reuses one static buffer, so two calls in one
 *		message would collide).
 */
char *
TimestampText(TimestampTz t)
{
	return pstrdup(timestamptz_to_str(t));
}

/*
 * NumericText
 *		A numeric Datum as text, "NULL" for a null.
 */
char *
NumericText(Datum d, bool isnull)
{
	if (isnull)
		return pstrdup("NULL");
	return DatumGetCString(DirectFunctionCall1(numeric_out, d));
}

/*
 * QualifiedRelName
 *		The quoted, schema-qualified name of a relation, from its OID, for
 *		messages and generated SQL; 42P01 when it does not exist.
 */
char *
QualifiedRelName(Oid relid)
{
	char	   *rel = get_rel_name(relid);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  rel);
}

/*
 * MakeArray
 *		A one-dimensional array of n elements of type elemtype.
 */
Datum
MakeArray(Datum *elems, bool *nulls, int n, Oid elemtype)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			dims[1];
	int			lbs[1];

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	dims[0] = n;
	lbs[0] = 1;
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
											  elemtype, typlen, typbyval,
											  typalign));
}

/*
 * MakeOidArray
 *		A one-dimensional array of the OIDs of a list, as elements of type
 *		elemtype (oid, regclass, ...).
 */
Datum
MakeOidArray(List *oids, Oid elemtype)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, oids)
		elems[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	return MakeArray(elems, NULL, n, elemtype);
}

/*
 * RequireMaxLength
 *		Raise 22001 "<name> is too long" when text (may be NULL) has more
 *		than max characters.  Checked before the text is stored, parsed or
 *		quoted in a message, so a text of any size costs one scan at most.
 */
void
RequireMaxLength(const char *text, const char *name, int max)
{
	size_t		bytes;
	int			chars;

	if (text == NULL)
		return;
	bytes = strlen(text);
	if (bytes <= (size_t) max)
		return;
	chars = bytes > (size_t) MaxAllocSize ? INT_MAX :
		pg_mbstrlen_with_len(text, (int) bytes);
	if (chars > max)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("%s is too long", name),
				 errdetail("It has %d characters; at most %d are allowed.",
						   chars, max)));
}

/*
 * RowsText
 *		A count of rows and what was done to them, in the singular for one
 *		row: "1 row deleted", "3 rows inserted".  palloc'd.
 */
char *
RowsText(int64 n, const char *done)
{
	return psprintf("%lld %s %s", (long long) n, n == 1 ? "row" : "rows",
					done);
}
