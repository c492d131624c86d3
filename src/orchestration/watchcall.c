/*-------------------------------------------------------------------------
 *
 * watchcall.c
 *	  Changed regions: the forms of backfill._watch_row, the WHEN clause of
 *	  a watched source's INSERT row trigger.  What a WHEN clause read back
 *	  from its text is (ReadWatchRowCall: for watchtriggers.c, which
 *	  installs the triggers, and watchevent.c, whose row events read it),
 *	  and what a call site passes (WatchCallForm: the column by number, by
 *	  name, or, in _watch_row(NEW.tableoid, NEW.column) and
 *	  _watch_row(source, NEW.tableoid, NEW.column), the column the call's
 *	  expression names; WatchValueTime: the row's time as
 *	  timestamptz) for watchlog.c, which does the call's work; and where a
 *	  watch's time column stands in a relation written (WatchedColumn).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/*
 * IsNewTableOid
 *		Whether node (an argument of a WHEN clause read back from its text)
 *		is exactly NEW.tableoid.
 */
static bool
IsNewTableOid(Node *node)
{
	Var		   *tab = (Var *) node;

	return IsA(node, Var) && tab->varno == PRS2_NEW_VARNO &&
		tab->varattno == TableOidAttributeNumber &&
		tab->varlevelsup == 0 && tab->vartype == OIDOID;
}

/*
 * ReadWatchRowCall
 *		See backfill.h: whether node (a row trigger's WHEN clause, read back
 *		from its text) is exactly a call of backfill._watch_row and nothing
 *		around it: a regclass constant (the source), an int2 or a name
 *		constant (the column by number or by name) or NEW.tableoid (the
 *		column is the one NEW's column names in the row's table: coltype
 *		OIDOID, no column in *out), and a column of NEW of the call's time
 *		type or a domain over it (an implicit cast from another type is not
 *		the watch's); or NEW.tableoid and such a column (the source is then
 *		the trigger's own table, InvalidOid in *out, and the column that
 *		column's number); its parts in *out.
 */
bool
ReadWatchRowCall(Node *node, WatchRowCall *out)
{
	FuncExpr   *call = (FuncExpr *) node;
	Node	   *value;
	Var		   *var;
	int			nargs;

	if (!IsA(node, FuncExpr))
		return false;
	nargs = list_length(call->args);
	if ((nargs != 2 && nargs != 3) ||
		get_func_namespace(call->funcid) != get_namespace_oid("backfill", true) ||
		strcmp(get_func_name(call->funcid), "_watch_row") != 0)
		return false;
	value = strip_implicit_coercions((Node *) llast(call->args));
	var = (Var *) value;
	if (!IsA(value, Var) || var->varno != PRS2_NEW_VARNO ||
		var->varattno <= 0 || var->varlevelsup != 0 ||
		getBaseType(var->vartype) != exprType((Node *) llast(call->args)))
		return false;
	if (nargs == 2)
	{
		if (!IsNewTableOid((Node *) linitial(call->args)))
			return false;
		out->source = InvalidOid;
		out->coltype = INT2OID;
		out->column = Int16GetDatum(var->varattno);
	}
	else
	{
		Const	   *src = (Const *) linitial(call->args);
		Const	   *col = (Const *) lsecond(call->args);

		if (!IsA(src, Const) || src->constisnull ||
			src->consttype != REGCLASSOID)
			return false;
		out->source = DatumGetObjectId(src->constvalue);
		if (IsNewTableOid((Node *) col))
		{
			/* the row's table names the column: the caller knows it */
			out->coltype = OIDOID;
			out->column = (Datum) 0;
		}
		else if (IsA(col, Const) && !col->constisnull &&
				 (col->consttype == INT2OID || col->consttype == NAMEOID))
		{
			out->coltype = col->consttype;
			out->column = col->constvalue;
		}
		else
			return false;
	}
	out->call = call;
	out->attnum = var->varattno;
	return true;
}

/*
 * CallTimeColumn
 *		The number of the column a _watch_row call passes as its time (its
 *		last argument), read from the call's expression (flinfo->fn_expr):
 *		in a WHEN clause NEW's column in the trigger's table (a clone's is
 *		its partition's); InvalidAttrNumber when the call passes no column
 *		(a direct call with a value: it notes nothing).
 */
static AttrNumber
CallTimeColumn(FmgrInfo *flinfo)
{
	FuncExpr   *call = (FuncExpr *) flinfo->fn_expr;
	Var		   *arg;

	if (call == NULL || !IsA(call, FuncExpr) ||
		list_length(call->args) != flinfo->fn_nargs)
		return InvalidAttrNumber;
	arg = (Var *) strip_implicit_coercions((Node *) llast(call->args));
	if (!IsA(arg, Var) || arg->varattno <= 0 || arg->varlevelsup != 0)
		return InvalidAttrNumber;
	return arg->varattno;
}

/*
 * WatchCallForm
 *		See backfill.h: the form of a _watch_row call site (flinfo): the
 *		type of its column argument (*coltype: INT2OID, the column's number,
 *		NAMEOID, its name, or OIDOID, the row's table, in which the call's
 *		column names it) and of its time (*argtype: TIMESTAMPTZOID,
 *		TIMESTAMPOID or DATEOID), from the call's expression, which matches
 *		its signature (else from the signature); for the two-argument form
 *		(NEW.tableoid, NEW.column: *by_table) *coltype is INT2OID.  For
 *		that form and OIDOID *attnum is the number of the column the call
 *		passes (CallTimeColumn), else InvalidAttrNumber.
 */
void
WatchCallForm(FmgrInfo *flinfo, Oid *coltype, Oid *argtype, bool *by_table,
			  AttrNumber *attnum)
{
	bool		table = flinfo->fn_nargs == 2;
	Oid			col = table ? INT2OID : get_fn_expr_argtype(flinfo, 1);
	Oid			arg = get_fn_expr_argtype(flinfo, table ? 1 : 2);

	if ((col != INT2OID && col != NAMEOID && col != OIDOID) ||
		(arg != TIMESTAMPTZOID && arg != TIMESTAMPOID && arg != DATEOID))
	{
		Oid		   *argtypes;
		int			nargs;

		(void) get_func_signature(flinfo->fn_oid, &argtypes, &nargs);
		if (nargs == 2 && argtypes[0] == OIDOID)
		{
			table = true;
			col = INT2OID;
			arg = argtypes[1];
		}
		else if (nargs == 3 && (argtypes[1] == INT2OID ||
								argtypes[1] == NAMEOID || argtypes[1] == OIDOID))
		{
			table = false;
			col = argtypes[1];
			arg = argtypes[2];
		}
		else
			arg = InvalidOid;
		if (arg != TIMESTAMPTZOID && arg != TIMESTAMPOID && arg != DATEOID)
			elog(ERROR, "backfill._watch_row takes a regclass, an int2, a name or an oid, and a time, or an oid and a time");
	}
	*coltype = col;
	*argtype = arg;
	*by_table = table;
	*attnum = table || col == OIDOID ? CallTimeColumn(flinfo) : InvalidAttrNumber;
}

/*
 * WatchSourceColumn
 *		See backfill.h: the number in source of the column named as column
 *		attnum of relation rel is, for a call of the form _watch_row(source,
 *		NEW.tableoid, NEW.column) whose row's table is rel (a clone's WHEN
 *		clause is mapped to its partition, so attnum is the partition's);
 *		InvalidAttrNumber when rel has no such live column or source none
 *		of its name (a direct call's), which no watch's column matches.  A
 *		restore renumbers columns, never renames them; a rename keeps both
 *		numbers, so the answer holds for the session (the name it went
 *		through may not: attack review 8).
 */
AttrNumber
WatchSourceColumn(Oid source, Oid rel, AttrNumber attnum)
{
	HeapTuple	tuple;
	Form_pg_attribute att;
	AttrNumber	colnum = InvalidAttrNumber;

	if (attnum <= 0)
		return InvalidAttrNumber;
	tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(rel),
							Int16GetDatum(attnum));
	if (!HeapTupleIsValid(tuple))
		return InvalidAttrNumber;
	att = (Form_pg_attribute) GETSTRUCT(tuple);
	if (!att->attisdropped)
		colnum = get_attnum(source, NameStr(att->attname));
	ReleaseSysCache(tuple);
	return colnum;
}

/*
 * WatchedColumnGone
 *		See backfill.h: 42703 for watch w whose time column is gone or no
 *		longer of a time type (renamed, dropped), so that writes fail
 *		rather than silently record nothing.
 */
void
WatchedColumnGone(WatchEntry *w)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("watched column \"%s\" of relation %s does not exist",
					w->time_column, QualifiedRelName(w->source)),
			 errdetail("A target watches this table by that column (of a time type); its changes cannot be recorded."),
			 errhint("Run backfill.watch again with the column's new name, or backfill.unwatch.")));
}

/*
 * WatchedColumn
 *		See backfill.h: the attribute number of w's time column in rel (the source or one
 *		of its partitions) and its base type; 42703 when the column is
 *		gone or no longer of a time type (renamed, dropped), so that
 *		writes fail rather than silently record nothing.
 */
AttrNumber
WatchedColumn(Relation rel, WatchEntry *w, Oid *basetype)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	AttrNumber	attnum = InvalidAttrNumber;
	int			k;

	/* where it stands in the source, as in most partitions; else a scan */
	k = w->attnum - 1;
	if (k >= 0 && k < tupdesc->natts &&
		!TupleDescAttr(tupdesc, k)->attisdropped &&
		strcmp(NameStr(TupleDescAttr(tupdesc, k)->attname), w->time_column) == 0)
		attnum = w->attnum;
	for (k = 0; k < tupdesc->natts && attnum == InvalidAttrNumber; k++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, k);

		if (!att->attisdropped && strcmp(NameStr(att->attname), w->time_column) == 0)
			attnum = att->attnum;
	}
	*basetype = attnum == InvalidAttrNumber ? InvalidOid :
		getBaseType(TupleDescAttr(tupdesc, attnum - 1)->atttypid);
	if (*basetype != TIMESTAMPTZOID && *basetype != TIMESTAMPOID &&
		*basetype != DATEOID)
		WatchedColumnGone(w);
	return attnum;
}

/*
 * WatchValueTime
 *		See backfill.h: a row's time value (of type argtype) as
 *		timestamptz, a timestamp or date read in zone tz; false for a value
 *		out of timestamptz's range.  The session's zone is swapped only
 *		around conversions that cannot raise an error.
 */
bool
WatchValueTime(Datum value, Oid argtype, pg_tz *tz, TimestampTz *t)
{
	int			overflow = 0;
	pg_tz	   *save = session_timezone;

	if (argtype == TIMESTAMPTZOID)
		*t = DatumGetTimestampTz(value);
	else
	{
		session_timezone = tz;
		if (argtype == TIMESTAMPOID)
			*t = BackfillTimestampToTimestamptz(DatumGetTimestamp(value), &overflow);
		else
			*t = BackfillDateToTimestamptz(DatumGetDateADT(value), &overflow);
		session_timezone = save;
	}
	return overflow == 0 && !TIMESTAMP_NOT_FINITE(*t);
}
