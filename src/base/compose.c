/*-------------------------------------------------------------------------
 *
 * compose.c
 *	  The statements backfill composes around a target: its columns and
 *	  its time column's type, the condition of a range and its parameters
 *	  in the column's own type, and the composed statements that run user
 *	  text (the source's INSERT, checked against the text's own parse
 *	  tree) or none (the range's DELETE and EXISTS).  The checks of user
 *	  text itself are validate.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/*
 * ColumnAttnum
 *		The attribute number of a user column of target, 0 if none.
 */
AttrNumber
ColumnAttnum(Oid target, const char *name)
{
	AttrNumber	attnum = get_attnum(target, name);

	return attnum > 0 ? attnum : 0;
}

/*
 * TimeColumnType
 *		See backfill.h.  Domains over the allowed types are accepted; the
 *		column's declared type is returned.
 */
Oid
TimeColumnType(Oid target, const char *time_column)
{
	AttrNumber	attnum;
	Oid			type;
	Oid			base;
	char	   *relname = get_rel_name(target);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", target)));
	if (time_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("time column must not be null")));
	attnum = ColumnAttnum(target, time_column);
	if (attnum == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						time_column, relname)));
	type = get_atttype(target, attnum);
	base = getBaseType(type);
	if (base != TIMESTAMPTZOID && base != TIMESTAMPOID && base != DATEOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" has type %s",
						time_column, relname, format_type_be(type)),
				 errhint("The time column must be of type timestamp with time zone, timestamp without time zone or date.")));
	return type;
}

/*
 * QuotedColumn
 *		The quoted name of target's column "name", spelled as the catalog
 *		spells it.
 */
static const char *
QuotedColumn(Oid target, const char *name)
{
	AttrNumber	attnum = ColumnAttnum(target, name);

	if (attnum == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, get_rel_name(target))));
	return quote_identifier(get_attname(target, attnum, false));
}

/*
 * RangeCondition
 *		"<tc> >= $1 AND <tc> < $2" for target's time column, operators
 *		schema-qualified.  $1 and $2 are of the column's own (base) type,
 *		from RangeParams: no TimeZone-dependent cast in the statement, so
 *		Citus can run it on the workers and an index on the column applies.
 */
static char *
RangeCondition(Oid target, const char *time_column)
{
	const char *tc = QuotedColumn(target, time_column);

	return psprintf("%s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<) $2",
					tc, tc);
}

/*
 * BoundInColumnType
 *		A chunk bound as a value of the time column's base type, computed
 *		in the session's TimeZone (the run's, during a chunk), such that
 *		"column >= result" holds exactly for the column values at or after
 *		the bound: for a date, the first day whose midnight is not before
 *		it; for a timestamp, its local time.
 */
static Datum
BoundInColumnType(Oid base, TimestampTz bound)
{
	DateADT		day;

	switch (base)
	{
		case TIMESTAMPOID:
			return DirectFunctionCall1(timestamptz_timestamp,
									   TimestampTzGetDatum(bound));
		case DATEOID:
			day = DatumGetDateADT(DirectFunctionCall1(timestamptz_date,
													  TimestampTzGetDatum(bound)));
			if (DatumGetTimestampTz(DirectFunctionCall1(date_timestamptz,
														DateADTGetDatum(day))) < bound)
				day++;
			return DateADTGetDatum(day);
		default:
			return TimestampTzGetDatum(bound);
	}
}

/*
 * RangeParams
 *		See backfill.h.
 */
void
RangeParams(Oid target, const char *time_column, TimestampTz lo,
			TimestampTz hi, Oid *argtypes, Datum *values)
{
	Oid			base = getBaseType(TimeColumnType(target, time_column));

	argtypes[0] = argtypes[1] = base;
	values[0] = BoundInColumnType(base, lo);
	values[1] = BoundInColumnType(base, hi);
}

/*
 * SourceInsertParams
 *		See backfill.h.
 */
void
SourceInsertParams(Oid target, const char *time_column, TimestampTz lo,
				   TimestampTz hi, Oid *argtypes, Datum *values)
{
	argtypes[0] = argtypes[1] = TIMESTAMPTZOID;
	values[0] = TimestampTzGetDatum(lo);
	values[1] = TimestampTzGetDatum(hi);
	RangeParams(target, time_column, lo, hi, argtypes + 2, values + 2);
}

/*
 * ComposeSourceInsert
 *		The statement that inserts what source yields for [$1, $2) into
 *		target, columns matched by name, every row's time checked by
 *		backfill._in_range against [$3, $4) in the column's own type
 *		(SourceInsertParams).  The composed text is parsed again, and its
 *		subquery must be exactly the source query's parse tree: user text
 *		cannot escape into our statement.
 *
 * The check is in the select list, not in a WHERE: an expression of the
 * select list is computed only for the rows the source returns, never for
 * rows its own WHERE filters out (quals of one scan run in cost order,
 * not in the order written), so no fence against subquery pull-up is
 * needed, and Citus can run the whole INSERT ... SELECT on the workers
 * (_in_range is immutable, and no TimeZone-dependent cast is applied to a
 * source column of the column's own type).
 */
char *
ComposeSourceInsert(Oid target, const char *time_column,
					const SourceQuery *source)
{
	StringInfoData cols;
	StringInfoData scols;
	StringInfoData sql;
	ListCell   *lc;
	List	   *parsetree;
	List	   *alone;
	Node	   *node;
	InsertStmt *ins;
	SelectStmt *sel;
	RangeSubselect *sub;
	const char *tc = QuotedColumn(target, time_column);
	const char *typname;

	switch (getBaseType(TimeColumnType(target, time_column)))
	{
		case DATEOID:
			typname = "pg_catalog.date";
			break;
		case TIMESTAMPOID:
			typname = "pg_catalog.timestamp";
			break;
		default:
			typname = "pg_catalog.timestamptz";
			break;
	}

	initStringInfo(&cols);
	initStringInfo(&scols);
	foreach(lc, source->columns)
	{
		const char *col = QuotedColumn(target, (const char *) lfirst(lc));

		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "", col);
		if (strcmp(col, tc) == 0)
			appendStringInfo(&scols, "%sbackfill._in_range(CAST(s.%s AS %s), $3, $4)",
							 scols.len > 0 ? ", " : "", col, typname);
		else
			appendStringInfo(&scols, "%ss.%s", scols.len > 0 ? ", " : "", col);
	}

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "INSERT INTO %s (%s) SELECT %s FROM (\n%s\n) AS s",
					 QualifiedRelName(target), cols.data, scols.data,
					 source->sql);

	/* nothing may have escaped: reparse and compare with the source alone */
	alone = raw_parser(source->sql, RAW_PARSE_DEFAULT);
	parsetree = raw_parser(sql.data, RAW_PARSE_DEFAULT);
	if (list_length(parsetree) == 1)
		node = linitial_node(RawStmt, parsetree)->stmt;
	else
		node = NULL;
	if (list_length(alone) != 1 || node == NULL || !IsA(node, InsertStmt))
		goto broken;
	ins = (InsertStmt *) node;
	if (ins->withClause != NULL || ins->onConflictClause != NULL ||
		BackfillInsertHasReturning(ins) ||
		ins->selectStmt == NULL || !IsA(ins->selectStmt, SelectStmt))
		goto broken;
	sel = (SelectStmt *) ins->selectStmt;
	if (sel->op != SETOP_NONE || sel->withClause != NULL ||
		list_length(sel->targetList) != list_length(source->columns) ||
		list_length(sel->fromClause) != 1 ||
		!IsA(linitial(sel->fromClause), RangeSubselect) ||
		sel->whereClause != NULL ||
		sel->groupClause != NIL || sel->havingClause != NULL ||
		sel->windowClause != NIL || sel->sortClause != NIL ||
		sel->limitCount != NULL || sel->limitOffset != NULL ||
		sel->lockingClause != NIL || sel->intoClause != NULL ||
		sel->distinctClause != NIL)
		goto broken;
	sub = (RangeSubselect *) linitial(sel->fromClause);
	if (sub->lateral || sub->alias == NULL ||
		strcmp(sub->alias->aliasname, "s") != 0 ||
		!equal(sub->subquery, linitial_node(RawStmt, alone)->stmt))
		goto broken;
	return sql.data;

broken:
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("source query does not fit into the statement that runs it"),
			 errhint("Give one complete SELECT; it must not close parentheses it did not open.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * ComposeRangeDelete
 *		The DELETE of target's rows in [$1, $2), parameters from
 *		RangeParams; no user text in it.
 */
char *
ComposeRangeDelete(Oid target, const char *time_column)
{
	return psprintf("DELETE FROM %s WHERE %s", QualifiedRelName(target),
					RangeCondition(target, time_column));
}

/*
 * ComposeRangeExists
 *		Whether target holds a row in [$1, $2), parameters from RangeParams;
 *		no user text in it.
 */
char *
ComposeRangeExists(Oid target, const char *time_column)
{
	return psprintf("SELECT EXISTS (SELECT FROM %s WHERE %s)",
					QualifiedRelName(target),
					RangeCondition(target, time_column));
}
