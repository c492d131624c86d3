/*-------------------------------------------------------------------------
 *
 * guard.c
 *	  The owner-rights guard: every statement that runs with the extension
 *	  owner's rights (CatalogRun, catalog.c) is refused before it runs when
 *	  its analysed tree touches anything that is not PostgreSQL's or the
 *	  extension's own.
 *
 * The rule (doc/security.md, "The guard"): a statement run as the
 * extension owner may read and write only relations of pg_catalog and the
 * extension's own (members of extension backfill, or of pg_cron, whose
 * job table the extension reads and whose functions it calls), whose
 * triggers, constraints, defaults, index expressions, rules and forced
 * policies call only such functions; it may call only functions,
 * operators, aggregates and casts of pg_catalog or of those extensions,
 * and use only types (domains included, so their CHECKs) of pg_catalog,
 * schema backfill or pg_cron's schema.  Of utility statements it may run
 * only LOCK TABLE of those relations (the scheduling-role guard's GRANT
 * and REVOKE are made from C, and fire no event trigger).  So no user's relation, view, trigger, function,
 * operator, cast, domain or type can be reached with the owner's rights,
 * whatever a statement's author forgot: the rule holds by construction,
 * and a statement that breaks it is an internal error naming it.
 *
 * How: while CatalogRun runs a statement (GuardPush ... GuardPop), the
 * post_parse_analyze_hook walks every query analysed in this backend:
 * the statement itself, a cached plan analysed again after an
 * invalidation, and the body of every SQL function it calls.  Outside
 * CatalogRun the hook only passes the query on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/readfuncs.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rowsecurity.h"
#include "tcop/cmdtag.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "backfill.h"

/* statements of CatalogRun being run now (nested: a catalog statement's event trigger) */
static int	guard_depth = 0;

static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;

static bool GuardWalker(Node *node, void *context);

/* What one check knows and what it found. */
typedef struct GuardState
{
	Oid			backfill_ext;	/* extension backfill */
	Oid			cron_ext;		/* extension pg_cron; InvalidOid: none */
	Oid			backfill_nsp;	/* schema backfill */
	Oid			cron_nsp;		/* pg_cron's schema; InvalidOid: none */
	char	   *refusal;		/* the first thing refused; NULL: none */
} GuardState;

/*
 * GuardInit
 *		The extensions and schemas a statement may use.
 */
static void
GuardInit(GuardState *st)
{
	Oid			cron_nsp;

	st->backfill_ext = get_extension_oid("backfill", true);
	st->cron_ext = get_extension_oid("pg_cron", true);
	st->backfill_nsp = get_namespace_oid("backfill", true);
	st->cron_nsp = InvalidOid;
	st->refusal = NULL;
	cron_nsp = get_namespace_oid("cron", true);
	if (OidIsValid(st->cron_ext) && OidIsValid(cron_nsp) &&
		getExtensionOfObject(NamespaceRelationId, cron_nsp) == st->cron_ext)
		st->cron_nsp = cron_nsp;
}

/*
 * Refuse
 *		Record the first refusal: "what" (a kind of object) and its name.
 */
static void
Refuse(GuardState *st, const char *what, const char *name)
{
	if (st->refusal == NULL)
		st->refusal = psprintf("%s %s", what, name);
}

/*
 * OwnObject
 *		Whether object (classid, objid) is a member of extension backfill
 *		or of pg_cron.
 */
static bool
OwnObject(GuardState *st, Oid classid, Oid objid)
{
	Oid			ext = getExtensionOfObject(classid, objid);

	return OidIsValid(ext) &&
		(ext == st->backfill_ext || ext == st->cron_ext);
}

/*
 * AllowedNamespace
 *		pg_catalog, schema backfill, or pg_cron's schema.
 */
static bool
AllowedNamespace(GuardState *st, Oid nsp)
{
	return nsp == PG_CATALOG_NAMESPACE ||
		(OidIsValid(nsp) && (nsp == st->backfill_nsp || nsp == st->cron_nsp));
}

/*
 * CheckRelation
 *		A relation of pg_catalog, or a member of backfill or pg_cron.
 */
static void
CheckRelation(GuardState *st, Oid relid)
{
	if (get_rel_namespace(relid) == PG_CATALOG_NAMESPACE ||
		OwnObject(st, RelationRelationId, relid))
		return;
	Refuse(st, "relation", QualifiedRelName(relid));
}

/*
 * CheckFunction
 *		A function (or aggregate, or a cast's function) of pg_catalog, or a
 *		member of backfill or pg_cron.
 */
static void
CheckFunction(GuardState *st, Oid funcid)
{
	if (!OidIsValid(funcid) ||
		get_func_namespace(funcid) == PG_CATALOG_NAMESPACE ||
		OwnObject(st, ProcedureRelationId, funcid))
		return;
	Refuse(st, "function", format_procedure_qualified(funcid));
}

/*
 * CheckNodeString
 *		An expression stored as text in the catalog (a constraint, a
 *		default, an index expression or predicate), walked as the guard
 *		walks a query.  Nothing is evaluated.
 */
static void
CheckNodeString(GuardState *st, const char *text)
{
	if (text != NULL && st->refusal == NULL)
		(void) GuardWalker((Node *) stringToNode(text), st);
}

/*
 * CheckWrittenRelation
 *		The code PostgreSQL runs when a statement writes relation relid
 *		(the extension's own has nothing but its own; whatever a superuser
 *		attached would run with the owner's rights): its triggers'
 *		functions, its CHECK constraints, defaults and generated columns,
 *		its indexes' expressions and predicates, and its rules.  Each is
 *		walked as the statement is, whether or not its text is analysed
 *		again in this statement (a plan cached before runs unanalysed).
 */
static void
CheckWrittenRelation(GuardState *st, Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	TupleConstr *constr;
	List	   *indexes;
	ListCell   *lc;
	int			i;

	if (!RelationIsValid(rel))
		return;
	for (i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
		CheckFunction(st, rel->trigdesc->triggers[i].tgfoid);
	constr = RelationGetDescr(rel)->constr;
	for (i = 0; constr != NULL && i < constr->num_check; i++)
		CheckNodeString(st, constr->check[i].ccbin);
	for (i = 0; constr != NULL && i < constr->num_defval; i++)
		CheckNodeString(st, constr->defval[i].adbin);
	for (i = 0; rel->rd_rules != NULL && i < rel->rd_rules->numLocks; i++)
	{
		RewriteRule *rule = rel->rd_rules->rules[i];

		if (st->refusal == NULL)
			(void) GuardWalker(rule->qual, st);
		foreach(lc, rule->actions)
		{
			if (st->refusal == NULL)
				(void) GuardWalker((Node *) lfirst(lc), st);
		}
	}
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID,
										  ObjectIdGetDatum(lfirst_oid(lc)));
		bool		isnull;
		Datum		d;

		if (!HeapTupleIsValid(tup))
			continue;
		d = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indexprs, &isnull);
		if (!isnull)
			CheckNodeString(st, TextDatumGetCString(d));
		d = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indpred, &isnull);
		if (!isnull)
			CheckNodeString(st, TextDatumGetCString(d));
		ReleaseSysCache(tup);
	}
	list_free(indexes);
	RelationClose(rel);
}

/*
 * CheckForcedPolicies
 *		The policies of a relation with row-level security forced on its
 *		owner (the extension's own tables do not force it; a superuser
 *		who did would have their quals run as the owner).
 */
static void
CheckForcedPolicies(GuardState *st, Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	ListCell   *lc;

	if (!RelationIsValid(rel))
		return;
	if (rel->rd_rel->relrowsecurity && rel->rd_rel->relforcerowsecurity &&
		rel->rd_rsdesc != NULL)
	{
		foreach(lc, rel->rd_rsdesc->policies)
		{
			RowSecurityPolicy *policy = (RowSecurityPolicy *) lfirst(lc);

			if (st->refusal == NULL)
				(void) GuardWalker((Node *) policy->qual, st);
			if (st->refusal == NULL)
				(void) GuardWalker((Node *) policy->with_check_qual, st);
		}
	}
	RelationClose(rel);
}

/*
 * CheckOperator
 *		An operator of pg_catalog (or a member of backfill or pg_cron)
 *		whose function passes CheckFunction.
 */
static void
CheckOperator(GuardState *st, Oid opno)
{
	HeapTuple	tup;
	Oid			nsp;
	Oid			code;

	if (!OidIsValid(opno))
		return;
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "backfill: cache lookup failed for operator %u", opno);
	nsp = ((Form_pg_operator) GETSTRUCT(tup))->oprnamespace;
	code = ((Form_pg_operator) GETSTRUCT(tup))->oprcode;
	ReleaseSysCache(tup);
	if (nsp != PG_CATALOG_NAMESPACE &&
		!OwnObject(st, OperatorRelationId, opno))
		Refuse(st, "operator", format_operator_qualified(opno));
	else
		CheckFunction(st, code);
}

/*
 * CheckType
 *		A type (a domain: and so its CHECK constraints; an array: its
 *		element's) of pg_catalog, schema backfill or pg_cron's schema,
 *		where only a superuser can create one.
 */
static void
CheckType(GuardState *st, Oid typid)
{
	HeapTuple	tup;
	Oid			nsp;

	if (!OidIsValid(typid))
		return;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "backfill: cache lookup failed for type %u", typid);
	nsp = ((Form_pg_type) GETSTRUCT(tup))->typnamespace;
	ReleaseSysCache(tup);
	if (AllowedNamespace(st, nsp))
		return;
	Refuse(st, "type", format_type_be_qualified(typid));
}

/*
 * CheckSortGroup
 *		The operators a sort, grouping or DISTINCT clause compares with.
 */
static void
CheckSortGroup(GuardState *st, List *clauses)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);

		CheckOperator(st, sgc->eqop);
		CheckOperator(st, sgc->sortop);
	}
}

/*
 * CheckRangeVars
 *		The relations a utility statement names, each by CheckRelation.
 */
static void
CheckRangeVars(GuardState *st, List *relations)
{
	ListCell   *lc;

	foreach(lc, relations)
	{
		RangeVar   *rv = lfirst_node(RangeVar, lc);
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);

		if (!OidIsValid(relid))
			Refuse(st, "relation", rv->relname);
		else
			CheckRelation(st, relid);
	}
}

/*
 * CheckUtility
 *		Of utility statements only LOCK TABLE of relations that pass
 *		CheckRelation (the extension's grants are made from C: DoGrant in
 *		catalog.c, which fires no event trigger).
 */
static void
CheckUtility(GuardState *st, Node *stmt)
{
	if (IsA(stmt, LockStmt))
		CheckRangeVars(st, ((LockStmt *) stmt)->relations);
	else
		Refuse(st, "utility statement",
			   GetCommandTagName(CreateCommandTag(stmt)));
}

/*
 * CheckQuery
 *		GuardWalker on a query.  A utility statement: CheckUtility, and
 *		nothing below it is walked.  Else the code run on the relation it
 *		writes (CheckWrittenRelation), the operators of its sort, grouping,
 *		DISTINCT and window clauses, then its range table (each entry
 *		before what it holds) and every expression, by GuardWalker.
 *		Returns the walk's result: true when refused.
 */
static bool
CheckQuery(GuardState *st, Query *q)
{
	ListCell   *lc;

	if (q->commandType == CMD_UTILITY)
	{
		CheckUtility(st, q->utilityStmt);
		return st->refusal != NULL;
	}
	if (q->resultRelation > 0)
		CheckWrittenRelation(st, rt_fetch(q->resultRelation,
										  q->rtable)->relid);
	CheckSortGroup(st, q->sortClause);
	CheckSortGroup(st, q->groupClause);
	CheckSortGroup(st, q->distinctClause);
	foreach(lc, q->windowClause)
	{
		WindowClause *wc = lfirst_node(WindowClause, lc);

		CheckSortGroup(st, wc->partitionClause);
		CheckSortGroup(st, wc->orderClause);
	}
	return query_tree_walker(q, GuardWalker, st,
							 QTW_EXAMINE_RTES_BEFORE);
}

/*
 * CheckRangeTblEntry
 *		GuardWalker on a range table entry: a relation by CheckRelation,
 *		then its forced policies (CheckForcedPolicies); a TABLESAMPLE's
 *		handler by CheckFunction.  Returns true when refused; what the
 *		entry holds (a subquery, functions, VALUES, a TABLESAMPLE's
 *		arguments) is walked next by query_tree_walker, which called
 *		GuardWalker on it.
 */
static bool
CheckRangeTblEntry(GuardState *st, RangeTblEntry *rte)
{
	if (rte->rtekind == RTE_RELATION)
	{
		CheckRelation(st, rte->relid);
		if (st->refusal == NULL)
			CheckForcedPolicies(st, rte->relid);
	}
	if (rte->tablesample != NULL)
		CheckFunction(st, rte->tablesample->tsmhandler);
	return st->refusal != NULL;
}

/*
 * GuardWalker
 *		Walk a query tree (query_tree_walker, range tables first) and every
 *		expression in it, refusing what the rule does not allow; stops at
 *		the first refusal.  Every node passes here first (NULL, an earlier
 *		refusal, the stack depth); a query and a range table entry are
 *		checked by CheckQuery and CheckRangeTblEntry, which return the
 *		walk's result, every other node kind below, before its children.
 */
static bool
GuardWalker(Node *node, void *context)
{
	GuardState *st = (GuardState *) context;

	if (node == NULL)
		return false;
	if (st->refusal != NULL)
		return true;
	check_stack_depth();

	switch (nodeTag(node))
	{
		case T_Query:
			return CheckQuery(st, (Query *) node);
		case T_RangeTblEntry:
			return CheckRangeTblEntry(st, (RangeTblEntry *) node);
		case T_SetOperationStmt:
			CheckSortGroup(st, ((SetOperationStmt *) node)->groupClauses);
			break;
		case T_Var:
		case T_Const:
		case T_Param:
		case T_GroupingFunc:
		case T_FieldSelect:
		case T_FieldStore:
		case T_RelabelType:
		case T_CoerceViaIO:
		case T_ArrayCoerceExpr:
		case T_ConvertRowtypeExpr:
		case T_CollateExpr:
		case T_CaseExpr:
		case T_CaseTestExpr:
		case T_ArrayExpr:
		case T_RowExpr:
		case T_CoalesceExpr:
		case T_MinMaxExpr:
		case T_CoerceToDomain:
		case T_CoerceToDomainValue:
		case T_SetToDefault:
		case T_SubscriptingRef:
			CheckType(st, exprType(node));
			if (IsA(node, SubscriptingRef))
				CheckType(st, ((SubscriptingRef *) node)->refcontainertype);
			if (IsA(node, CoerceViaIO))
				CheckType(st, exprType((Node *) ((CoerceViaIO *) node)->arg));
			if (IsA(node, ArrayCoerceExpr))
				CheckType(st, exprType((Node *) ((ArrayCoerceExpr *) node)->arg));
			if (IsA(node, ConvertRowtypeExpr))
				CheckType(st, exprType((Node *) ((ConvertRowtypeExpr *) node)->arg));
			break;
		case T_Aggref:
			CheckFunction(st, ((Aggref *) node)->aggfnoid);
			CheckType(st, ((Aggref *) node)->aggtype);
			break;
		case T_WindowFunc:
			CheckFunction(st, ((WindowFunc *) node)->winfnoid);
			CheckType(st, ((WindowFunc *) node)->wintype);
			break;
		case T_FuncExpr:
			CheckFunction(st, ((FuncExpr *) node)->funcid);
			CheckType(st, ((FuncExpr *) node)->funcresulttype);
			break;
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			CheckOperator(st, ((OpExpr *) node)->opno);
			CheckFunction(st, ((OpExpr *) node)->opfuncid);
			CheckType(st, ((OpExpr *) node)->opresulttype);
			break;
		case T_ScalarArrayOpExpr:
			CheckOperator(st, ((ScalarArrayOpExpr *) node)->opno);
			CheckFunction(st, ((ScalarArrayOpExpr *) node)->opfuncid);
			CheckFunction(st, ((ScalarArrayOpExpr *) node)->hashfuncid);
			CheckFunction(st, ((ScalarArrayOpExpr *) node)->negfuncid);
			break;
		case T_RowCompareExpr:
			{
				ListCell   *lc;

				foreach(lc, ((RowCompareExpr *) node)->opnos)
					CheckOperator(st, lfirst_oid(lc));
			}
			break;
		case T_NextValueExpr:
			CheckRelation(st, ((NextValueExpr *) node)->seqid);
			break;
		default:
			break;
	}
	if (st->refusal != NULL)
		return true;
	return expression_tree_walker(node, GuardWalker, st);
}

/*
 * GuardRefusal
 *		See backfill.h.
 */
char *
GuardRefusal(Query *query)
{
	GuardState	st;

	GuardInit(&st);
	(void) GuardWalker((Node *) query, &st);
	return st.refusal;
}

/*
 * GuardHook
 *		post_parse_analyze_hook: inside CatalogRun, refuse a query that
 *		breaks the rule (an internal error naming it and what it touches).
 */
static void
GuardHook(ParseState *pstate, Query *query,
		  BACKFILL_JUMBLE_CONST JumbleState *jstate)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);
	if (guard_depth > 0)
	{
		char	   *refusal = GuardRefusal(query);

		if (refusal != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("backfill refused to run a statement with the extension owner's rights"),
					 errdetail("It uses %s, which the guard allows to no statement run as the owner: %s",
							   refusal,
							   pstate->p_sourcetext ? pstate->p_sourcetext : "?"),
					 errhint("Either backfill has a bug (please report it), or someone changed the extension's objects: a trigger added to its tables, an object dropped from it with ALTER EXTENSION ... DROP.")));
	}
}

/*
 * GuardInstall
 *		See backfill.h: called once, by _PG_init.
 */
void
GuardInstall(void)
{
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = GuardHook;
}

/*
 * GuardPush
 *		See backfill.h.
 */
int
GuardPush(void)
{
	return guard_depth++;
}

/*
 * GuardPop
 *		See backfill.h: safe on an error path.
 */
void
GuardPop(int depth)
{
	guard_depth = depth;
}
