/*-------------------------------------------------------------------------
 *
 * validate.c
 *	  Checks of user SQL (source, measure, ledger and horizon queries) and
 *	  of the caller's privileges on a target, and the evaluation of the
 *	  source horizon (SourceHorizon).  The statements composed around a
 *	  target (the time column's type, a range's condition, the source's
 *	  INSERT) are compose.c's.
 *
 * User text is parsed and analysed before anything runs: a source, ledger
 * or horizon must be exactly one plain read-only query (SELECT, VALUES,
 * TABLE, WITH ... SELECT), and a measure exactly one aggregate expression.
 * When user text is placed inside a statement of ours, the composed
 * statement is parsed again and its user part must be the very parse tree
 * of the text alone, so no text can close our parentheses and append
 * statements or clauses of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parser.h"
#include "parser/scansup.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "tcop/utility.h"
#include "utils/syscache.h"

#include "backfill.h"

/* The alias under which a measure sees the deleted or inserted rows. */
#define MEASURE_ROWS_ALIAS "backfill_rows"

/* State of the error context callback used while parsing user text. */
typedef struct UserTextContext
{
	const char *text;			/* the text being parsed */
} UserTextContext;

/*
 * UserTextErrorCallback
 *		Report a syntax error position inside the user's text, not inside
 *		the statement that called us (as SPI does for its queries).
 */
static void
UserTextErrorCallback(void *arg)
{
	UserTextContext *ctx = (UserTextContext *) arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(ctx->text);
	}
}

/*
 * ParseUserText
 *		raw_parser() with error positions pointing into text.
 */
static List *
ParseUserText(const char *text)
{
	ErrorContextCallback errcb;
	UserTextContext ctx;
	List	   *result;

	ctx.text = text;
	errcb.callback = UserTextErrorCallback;
	errcb.arg = &ctx;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	result = raw_parser(text, RAW_PARSE_DEFAULT);
	error_context_stack = errcb.previous;
	return result;
}

/*
 * AnalyseUserStmt
 *		parse_analyze_fixedparams() with error positions inside text.
 */
static Query *
AnalyseUserStmt(RawStmt *raw, const char *text, const Oid *params, int nparams)
{
	ErrorContextCallback errcb;
	UserTextContext ctx;
	Query	   *query;

	ctx.text = text;
	errcb.callback = UserTextErrorCallback;
	errcb.arg = &ctx;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	query = parse_analyze_fixedparams(raw, text, params, nparams, NULL);
	error_context_stack = errcb.previous;
	return query;
}

/*
 * StatementText
 *		The text of one raw statement of "text": from stmt_location for
 *		stmt_len bytes (0 = to the end), without surrounding blanks.  A
 *		trailing semicolon is outside stmt_len already.
 */
static char *
StatementText(const char *text, RawStmt *raw)
{
	int			start = raw->stmt_location > 0 ? raw->stmt_location : 0;
	int			len = raw->stmt_len > 0 ? raw->stmt_len : (int) strlen(text) - start;

	while (len > 0 && scanner_isspace(text[start]))
	{
		start++;
		len--;
	}
	while (len > 0 && scanner_isspace(text[start + len - 1]))
		len--;
	return pnstrdup(text + start, len);
}

/*
 * CheckRawSelect
 *		Reject the shapes of a SelectStmt that are not plain reads: SELECT
 *		INTO, FOR UPDATE/SHARE, and CTEs that are not SELECTs, at any level
 *		of set operations and WITH clauses.
 */
static void
CheckRawSelect(SelectStmt *stmt, const char *what)
{
	ListCell   *lc;

	if (stmt == NULL)
		return;
	if (stmt->intoClause != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s must not be SELECT INTO", what),
				 errdetail("The %s only reads; it must not create a table.", what)));
	if (stmt->lockingClause != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s must not use a locking clause", what),
				 errdetail("The %s only reads; FOR UPDATE and FOR SHARE take row locks.", what)));
	if (stmt->withClause != NULL)
	{
		foreach(lc, stmt->withClause->ctes)
		{
			CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

			if (!IsA(cte->ctequery, SelectStmt))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%s must not contain a data-modifying statement in WITH", what),
						 errdetail("WITH query \"%s\" is not a SELECT.", cte->ctename)));
			CheckRawSelect((SelectStmt *) cte->ctequery, what);
		}
	}
	CheckRawSelect(stmt->larg, what);
	CheckRawSelect(stmt->rarg, what);
}

/*
 * CheckQueryReadOnly
 *		query_tree_walker callback: every (sub)query must be a plain SELECT
 *		without row locks or data-modifying CTEs, over relations the
 *		current user may read (42501 otherwise).
 */
static bool
CheckQueryReadOnly(Node *node, void *context)
{
	const char *what = (const char *) context;

	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;

		if (q->commandType != CMD_SELECT || q->utilityStmt != NULL ||
			q->hasModifyingCTE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s must be a read-only query", what)));
		if (q->rowMarks != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s must not use a locking clause", what),
					 errdetail("The %s only reads; FOR UPDATE and FOR SHARE take row locks.", what)));
		/* the caller's SELECT rights, now rather than mid-run */
		(void) CheckQueryPermissions(q);
		return query_tree_walker(q, CheckQueryReadOnly, context, 0);
	}
	return expression_tree_walker(node, CheckQueryReadOnly, context);
}

/*
 * ParseReadOnlySelect
 *		Parse text as exactly one plain reading query and return its raw
 *		statement; *stmt_text gets the statement's own text.
 */
static RawStmt *
ParseReadOnlySelect(const char *text, const char *what, char **stmt_text)
{
	List	   *parsetree;
	RawStmt    *raw;

	if (text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	parsetree = ParseUserText(text);
	if (list_length(parsetree) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s is empty", what)));
	if (list_length(parsetree) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s must be a single statement", what),
				 errdetail("It contains %d statements.", list_length(parsetree)),
				 errhint("Remove the semicolons between statements; combine reads with WITH or subqueries.")));
	raw = linitial_node(RawStmt, parsetree);
	if (!IsA(raw->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s must be a SELECT, VALUES or TABLE query", what),
				 errdetail("The statement given is %s; the %s may only read.",
						   CreateCommandName(raw->stmt), what)));
	CheckRawSelect((SelectStmt *) raw->stmt, what);
	*stmt_text = StatementText(text, raw);
	return raw;
}

/*
 * AnalyseReadOnlySelect
 *		Parse and analyse text as one read-only query with nparams
 *		timestamptz parameters.
 */
static Query *
AnalyseReadOnlySelect(const char *text, const char *what, int nparams,
					  char **stmt_text)
{
	Oid			params[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	RawStmt    *raw;
	Query	   *query;

	raw = ParseReadOnlySelect(text, what, stmt_text);
	query = AnalyseUserStmt(raw, text, params, nparams);
	CheckQueryReadOnly((Node *) query, (void *) what);
	return query;
}

/*
 * ParamWalker
 *		Whether a query tree refers to an external parameter ($1 or $2),
 *		sub-queries included.
 */
static bool
ParamWalker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, ParamWalker, context, 0);
	return expression_tree_walker(node, ParamWalker, context);
}

/*
 * ValidateSourceQuery
 *		See backfill.h.  Also checks that each source column can be
 *		assigned to the target column of the same name, and that the
 *		source composes safely into the INSERT that runs it.
 */
SourceQuery *
ValidateSourceQuery(const char *sql, Oid target, const char *time_column)
{
	SourceQuery *result;
	Query	   *query;
	ListCell   *lc;
	List	   *columns = NIL;
	StringInfoData missing;
	char	   *relname;
	bool		have_time = false;
	int			nmissing = 0;

	RequireMaxLength(sql, "source query", BACKFILL_MAX_QUERY);
	if (time_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("time column must not be null")));
	result = palloc0(sizeof(SourceQuery));
	query = AnalyseReadOnlySelect(sql, "source query", 2, &result->sql);
	relname = get_rel_name(target);
	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", target)));

	initStringInfo(&missing);
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		AttrNumber	attnum;
		ListCell   *lc2;

		if (tle->resjunk)
			continue;
		foreach(lc2, columns)
		{
			if (strcmp((char *) lfirst(lc2), tle->resname) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("source query returns column \"%s\" more than once",
								tle->resname),
						 errhint("Columns are matched to the target by name; give each output column its own name.")));
		}
		columns = lappend(columns, pstrdup(tle->resname));

		attnum = ColumnAttnum(target, tle->resname);
		if (attnum == 0)
		{
			appendStringInfo(&missing, "%s\"%s\"", nmissing > 0 ? ", " : "",
							 tle->resname);
			nmissing++;
			continue;
		}
		if (strcmp(tle->resname, time_column) == 0)
			have_time = true;
		if (get_attgenerated(target, attnum) != '\0')
			ereport(ERROR,
					(errcode(ERRCODE_GENERATED_ALWAYS),
					 errmsg("source query supplies generated column \"%s\"",
							tle->resname),
					 errdetail("Column \"%s\" of relation \"%s\" is a generated column.",
							   tle->resname, relname),
					 errhint("Leave the column out of the source query; it is computed on insert.")));
		else
		{
			HeapTuple	atttup;
			Form_pg_attribute att;
			Oid			srctype = exprType((Node *) tle->expr);

			atttup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(target),
									 Int16GetDatum(attnum));
			if (!HeapTupleIsValid(atttup))
				elog(ERROR, "cache lookup failed for attribute %d of relation %u",
					 attnum, target);
			att = (Form_pg_attribute) GETSTRUCT(atttup);
			if (att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
				ereport(ERROR,
						(errcode(ERRCODE_GENERATED_ALWAYS),
						 errmsg("source query supplies identity column \"%s\"",
								tle->resname),
						 errdetail("Column \"%s\" of relation \"%s\" is an identity column defined as GENERATED ALWAYS.",
								   tle->resname, relname),
						 errhint("Leave the column out of the source query so that the inserted rows get new values.")));
			if (!can_coerce_type(1, &srctype, &att->atttypid, COERCION_ASSIGNMENT))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column \"%s\" is of type %s but the source query returns type %s",
								tle->resname, format_type_be(att->atttypid),
								format_type_be(srctype)),
						 errhint("Cast the source column to the target column's type.")));
			ReleaseSysCache(atttup);
		}
	}
	if (nmissing > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg_plural("source column %s does not exist in relation \"%s\"",
							   "source columns %s do not exist in relation \"%s\"",
							   nmissing, missing.data, relname),
				 errhint("Columns are matched to the target by name; rename or drop them in the source query.")));
	if (!have_time)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("source query does not return the time column \"%s\"",
						time_column),
				 errhint("Every source row needs its time so that it can be checked against the range; add the column to the select list.")));
	result->columns = columns;
	result->uses_range = query_tree_walker(query, ParamWalker, NULL, 0);

	/* prove that the composed INSERT runs exactly this query */
	(void) ComposeSourceInsert(target, time_column, result);
	return result;
}

/*
 * ReThrowNamingSetting
 *		See backfill.h.  Called in a PG_CATCH block whose PG_TRY began in
 *		memory context cxt: the error being handled is raised again with
 *		"prefix: " before its message, so that it names the setting whose
 *		text raised it, unless the message names it already (it begins
 *		with "what": the checks of this file), or the error is not the
 *		text's doing (ClassifyFailure: a cancel, a lock, resources).  A
 *		hint that names the alias under which a measure reads its rows
 *		(backfill_rows) names the bare column instead.
 */
void
ReThrowNamingSetting(MemoryContext cxt, const char *what, const char *prefix)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	if (edata->message == NULL ||
		strncmp(edata->message, what, strlen(what)) == 0 ||
		ClassifyFailure(edata->sqlerrcode, true) != CAUSE_DEFINITION)
		PG_RE_THROW();
	FlushErrorState();
	edata->message = psprintf("%s: %s", prefix, edata->message);
	if (edata->hint != NULL)
	{
		const char *alias = MEASURE_ROWS_ALIAS ".";
		char	   *at = strstr(edata->hint, alias);

		if (at != NULL)
			edata->hint = psprintf("%.*s%s", (int) (at - edata->hint),
								   edata->hint, at + strlen(alias));
	}
	ReThrowError(edata);
}

/*
 * ParseMeasure
 *		Parse measure alone, as "SELECT (<measure>)", and return its
 *		expression's raw parse tree.
 */
static Node *
ParseMeasure(const char *measure)
{
	char	   *text;
	List	   *parsetree;
	SelectStmt *stmt;

	text = psprintf("SELECT (\n%s\n)", measure);
	parsetree = ParseUserText(text);
	if (list_length(parsetree) != 1 ||
		!IsA(linitial_node(RawStmt, parsetree)->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("measure must be a single expression"),
				 errhint("Give an aggregate over the target's columns, for example sum(amount).")));
	stmt = (SelectStmt *) linitial_node(RawStmt, parsetree)->stmt;
	if (stmt->op != SETOP_NONE || list_length(stmt->targetList) != 1 ||
		stmt->distinctClause != NIL || stmt->intoClause != NULL ||
		stmt->fromClause != NIL || stmt->whereClause != NULL ||
		stmt->groupClause != NIL || stmt->havingClause != NULL ||
		stmt->windowClause != NIL || stmt->valuesLists != NIL ||
		stmt->sortClause != NIL || stmt->limitOffset != NULL ||
		stmt->limitCount != NULL || stmt->lockingClause != NIL ||
		stmt->withClause != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("measure must be a single expression"),
				 errhint("Give an aggregate over the target's columns, for example sum(amount).")));
	return linitial_node(ResTarget, stmt->targetList)->val;
}

/*
 * ComposeMeasureSelect
 *		See backfill.h.  The one composition of a measure into SQL, for
 *		chunks, reconcile and check alike: the measure's text stands alone
 *		on its lines inside its parentheses (so a trailing "--" comment
 *		ends at the line break), and the rows it reads are always named
 *		MEASURE_ROWS_ALIAS, as when it was validated.  lead (may be NULL)
 *		is the output column before the measure; from is the relation
 *		read, NULL for the MEASURE_ROWS_ALIAS CTE itself; tail (may be
 *		NULL) follows the FROM clause.  The measure must parse on its own
 *		as one expression in the same wrapper (ParseMeasure), and the text
 *		returned is proven here: parsed again, it is one SELECT whose last
 *		output is CAST of exactly the measure's own parse tree, so the
 *		measure cannot escape its parentheses.
 */
char *
ComposeMeasureSelect(const char *lead, const char *measure, const char *from,
					 const char *tail)
{
	Node	   *alone = ParseMeasure(measure);
	char	   *sql;
	List	   *parsetree;
	SelectStmt *stmt;
	ResTarget  *rt;

	sql = psprintf("SELECT %s%sCAST((\n%s\n) AS pg_catalog.numeric) FROM %s%s%s%s",
				   lead ? lead : "", lead ? ", " : "", measure,
				   from ? from : MEASURE_ROWS_ALIAS,
				   from ? " AS " MEASURE_ROWS_ALIAS : "",
				   tail ? " " : "", tail ? tail : "");

	/* nothing may have escaped: reparse and compare with the measure alone */
	parsetree = raw_parser(sql, RAW_PARSE_DEFAULT);
	if (list_length(parsetree) != 1 ||
		!IsA(linitial_node(RawStmt, parsetree)->stmt, SelectStmt))
		goto broken;
	stmt = (SelectStmt *) linitial_node(RawStmt, parsetree)->stmt;
	if (stmt->op != SETOP_NONE || stmt->withClause != NULL ||
		list_length(stmt->targetList) != (lead ? 2 : 1) ||
		list_length(stmt->fromClause) != 1)
		goto broken;
	rt = llast_node(ResTarget, stmt->targetList);
	if (!IsA(rt->val, TypeCast) || !equal(((TypeCast *) rt->val)->arg, alone))
		goto broken;
	return sql;

broken:
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("measure does not fit into the statement that computes it"),
			 errhint("Give one aggregate expression, for example sum(amount).")));
	return NULL;				/* keep compiler quiet */
}

/*
 * ValidateMeasure
 *		See backfill.h.  The measure is one aggregate expression over the
 *		target's columns (unqualified), of a type assignable to numeric,
 *		without subqueries, window functions or set-returning functions.
 */
char *
ValidateMeasure(const char *measure, Oid target)
{
	MemoryContext cxt = CurrentMemoryContext;
	Query	   *volatile query = NULL;
	TargetEntry *tle;
	Oid			type;
	Oid			numeric = NUMERICOID;
	size_t		len;

	if (measure == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("measure must not be null")));
	RequireMaxLength(measure, "measure", BACKFILL_MAX_MEASURE);
	while (scanner_isspace(*measure))
		measure++;
	len = strlen(measure);
	while (len > 0 && scanner_isspace(measure[len - 1]))
		len--;
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("measure is empty"),
				 errhint("Give an aggregate over the target's columns, for example sum(amount).")));
	measure = pnstrdup(measure, len);

	/* an error of PostgreSQL's in the measure names the measure */
	PG_TRY();
	{
		char	   *text;
		List	   *parsetree;

		(void) ParseMeasure(measure);

		text = psprintf("SELECT (\n%s\n) FROM %s AS %s", measure,
						QualifiedRelName(target), MEASURE_ROWS_ALIAS);
		parsetree = ParseUserText(text);
		if (list_length(parsetree) != 1)
			elog(ERROR, "measure parsed into %d statements", list_length(parsetree));
		query = AnalyseUserStmt(linitial_node(RawStmt, parsetree), text, NULL, 0);
	}
	PG_CATCH();
	{
		ReThrowNamingSetting(cxt, "measure", "invalid measure");
	}
	PG_END_TRY();
	if (query->hasSubLinks)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("measure must not contain a subquery"),
				 errhint("Give an aggregate over the target's columns, for example sum(amount).")));
	if (query->hasWindowFuncs)
		ereport(ERROR,
				(errcode(ERRCODE_WINDOWING_ERROR),
				 errmsg("measure must not contain a window function")));
	if (query->hasTargetSRFs)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("measure must not contain a set-returning function")));
	if (!query->hasAggs)
		ereport(ERROR,
				(errcode(ERRCODE_GROUPING_ERROR),
				 errmsg("measure must be an aggregate"),
				 errdetail("The measure summarises all rows of a chunk in one number."),
				 errhint("Use an aggregate such as count(*) or sum(amount).")));
	tle = linitial_node(TargetEntry, query->targetList);
	type = exprType((Node *) tle->expr);
	if (!can_coerce_type(1, &type, &numeric, COERCION_ASSIGNMENT))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("measure must return a number, not type %s",
						format_type_be(type))));
	return (char *) measure;
}

/*
 * CheckSingleColumn
 *		The analysed query returns exactly one column; return its type.
 */
static Oid
CheckSingleColumn(Query *query, const char *what, const char *wanted)
{
	ListCell   *lc;
	TargetEntry *col = NULL;
	int			n = 0;

	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk)
			continue;
		col = tle;
		n++;
	}
	if (n != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s must return exactly one column", what),
				 errdetail("It returns %d columns.", n),
				 errhint("Return %s.", wanted)));
	return exprType((Node *) col->expr);
}

/*
 * ValidateLedger
 *		See backfill.h: one read-only query over $1, $2 (timestamptz)
 *		returning one column of a type assignable to numeric.
 */
char *
ValidateLedger(const char *ledger)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *volatile text = NULL;
	Query	   *volatile query = NULL;
	Oid			type;
	Oid			numeric = NUMERICOID;

	RequireMaxLength(ledger, "ledger query", BACKFILL_MAX_QUERY);
	/* an error of PostgreSQL's in the ledger query names it */
	PG_TRY();
	{
		char	   *stmt_text;

		query = AnalyseReadOnlySelect(ledger, "ledger query", 2, &stmt_text);
		text = stmt_text;
	}
	PG_CATCH();
	{
		ReThrowNamingSetting(cxt, "ledger query", "invalid ledger query");
	}
	PG_END_TRY();
	type = CheckSingleColumn(query, "ledger query", "one number for the range [$1, $2)");
	if (!can_coerce_type(1, &type, &numeric, COERCION_ASSIGNMENT))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("ledger query must return a number, not type %s",
						format_type_be(type)),
				 errhint("Return one number for the range [$1, $2), for example SELECT sum(amount) FROM ledger WHERE ts >= $1 AND ts < $2.")));
	return text;
}

/*
 * ValidateHorizon
 *		See backfill.h: one read-only query without parameters returning
 *		one column of type timestamptz, timestamp or date.
 */
char *
ValidateHorizon(const char *horizon)
{
	char	   *text;
	Query	   *query;
	Oid			type;

	RequireMaxLength(horizon, "horizon query", BACKFILL_MAX_QUERY);
	query = AnalyseReadOnlySelect(horizon, "horizon query", 0, &text);
	type = getBaseType(CheckSingleColumn(query, "horizon query",
										 "the earliest time the source can produce, as timestamptz"));
	if (type != TIMESTAMPTZOID && type != TIMESTAMPOID && type != DATEOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("horizon query must return a timestamptz, not type %s",
						format_type_be(type)),
				 errhint("The horizon is the earliest time the source can produce; return timestamp with time zone, timestamp or date.")));
	return text;
}

/*
 * RelkindName
 *		A relkind as a user reads it.
 */
static const char *
RelkindName(char relkind)
{
	switch (relkind)
	{
		case RELKIND_VIEW:
			return "a view";
		case RELKIND_MATVIEW:
			return "a materialized view";
		case RELKIND_FOREIGN_TABLE:
			return "a foreign table";
		case RELKIND_SEQUENCE:
			return "a sequence";
		case RELKIND_INDEX:
		case RELKIND_PARTITIONED_INDEX:
			return "an index";
		case RELKIND_COMPOSITE_TYPE:
			return "a composite type";
		case RELKIND_TOASTVALUE:
			return "a TOAST table";
	}
	return "not a table";
}

/*
 * CheckTargetKind
 *		See backfill.h: 42P01 when target is gone, 42809 unless it is a
 *		table or a partitioned table (a view, say: PostgreSQL 15 still
 *		turns an empty table into a view by CREATE RULE "_RETURN", keeping
 *		its OID, and a view's query is its owner's code).
 */
void
CheckTargetKind(Oid target)
{
	char		relkind = get_rel_relkind(target);
	char	   *relname = get_rel_name(target);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", target)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", relname),
				 errdetail("\"%s\" is %s; a backfill target must be a table or a partitioned table.",
						   relname, RelkindName(relkind))));
}

/*
 * CheckTargetPrivileges
 *		See backfill.h.  The target must be a plain or partitioned table on
 *		which the current user holds SELECT, INSERT and DELETE, and without
 *		row-level security applying to the current user: a DELETE under RLS
 *		silently skips the rows the user cannot see, so the range would end
 *		up holding old and new rows side by side.
 */
void
CheckTargetPrivileges(Oid target)
{
	char	   *relname = get_rel_name(target);
	Oid			userid = GetUserId();
	StringInfoData missing;
	int			nmissing = 0;

	CheckTargetKind(target);

	initStringInfo(&missing);
	if (pg_class_aclcheck(target, userid, ACL_SELECT) != ACLCHECK_OK)
		appendStringInfo(&missing, "%sSELECT", nmissing++ > 0 ? ", " : "");
	if (pg_class_aclcheck(target, userid, ACL_INSERT) != ACLCHECK_OK)
		appendStringInfo(&missing, "%sINSERT", nmissing++ > 0 ? ", " : "");
	if (pg_class_aclcheck(target, userid, ACL_DELETE) != ACLCHECK_OK)
		appendStringInfo(&missing, "%sDELETE", nmissing++ > 0 ? ", " : "");
	if (nmissing > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", relname),
				 errdetail("A backfill needs SELECT, INSERT and DELETE on the target; role \"%s\" lacks %s.",
						   GetUserNameFromId(userid, false), missing.data)));

	if (check_enable_rls(target, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security is enabled for table %s", relname),
				 errdetail("Under row-level security a DELETE silently skips the rows role \"%s\" cannot see, so a replaced range could keep old rows next to new ones.",
						   GetUserNameFromId(userid, false)),
				 errhint("Run the backfill as the table owner or as a role with BYPASSRLS.")));
}

/*
 * CheckSelectPrivilege
 *		The caller must be able to read the target (42501), which must
 *		still exist (42P01).
 */
void
CheckSelectPrivilege(Oid relid)
{
	AclResult	aclresult;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target table with OID %u does not exist", relid)));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * SourceHorizon
 *		See backfill.h.  The one horizon evaluator, for plan and check:
 *		now() - retention, or the horizon query's value run as the calling
 *		user and converted to timestamptz (a domain over timestamptz, a
 *		timestamp or a date included: any type with an explicit cast).
 *		Caller is connected to SPI.
 */
bool
SourceHorizon(Interval *retention, const char *horizon_sql,
			  TimestampTz *horizon)
{
	Datum		d;
	Oid			typid;
	bool		isnull;

	if (retention != NULL)
	{
		*horizon = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
														   IntervalPGetDatum(retention)));
		return true;
	}
	if (horizon_sql == NULL)
		return false;

	SpiExec(horizon_sql, 0, NULL, NULL, NULL, true, 2, SPI_OK_SELECT);
	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("horizon query returned more than one row"),
				 errhint("Return one value, the earliest time from which the source is complete.")));
	/* no row or NULL: no horizon */
	isnull = true;
	d = (Datum) 0;
	if (SPI_processed == 1)
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
						  &isnull);
	if (isnull)
	{
		SPI_freetuptable(SPI_tuptable);
		return false;
	}
	typid = getBaseType(SPI_gettypeid(SPI_tuptable->tupdesc, 1));
	if (typid != TIMESTAMPTZOID)
	{
		Oid			castfunc;

		if (find_coercion_pathway(TIMESTAMPTZOID, typid, COERCION_EXPLICIT,
								  &castfunc) != COERCION_PATH_FUNC)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("horizon query must return a timestamptz, not type %s",
							format_type_be(typid))));
		d = OidFunctionCall1(castfunc, d);
	}
	*horizon = DatumGetTimestampTz(d);
	SPI_freetuptable(SPI_tuptable);
	return true;
}
