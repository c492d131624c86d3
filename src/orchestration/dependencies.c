/*-------------------------------------------------------------------------
 *
 * dependencies.c
 *	  Dependencies between registered targets: depend, undepend, what
 *	  unregister removes with a target, and the order of the targets
 *	  built from a target (DownstreamOrder), for cascading plans.
 *
 * A dependency (downstream, upstream) says that downstream is built from
 * upstream.  The dependencies never form a cycle: depend refuses the one
 * edge that would close one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "backfill.h"

/*
 * LockDependencies
 *		Serialize changes of the dependency graph (a cycle check must see
 *		every edge committed before its insert).  A table lock, taken as the
 *		extension owner; users cannot take it.  Caller is connected to SPI.
 */
static void
LockDependencies(void)
{
	CatalogExec("LOCK TABLE backfill.dependencies IN SHARE ROW EXCLUSIVE MODE",
				0, NULL, NULL, NULL, SPI_OK_UTILITY);
}

/*
 * RefuseUnregisteredUpstream
 *		depend's upstream must be a registered target (42704).  A table
 *		that is not registered is often a source that other jobs fill,
 *		which watch is for: the error says so, with the call.  Said only to a
 *		caller who may read the table (the catalog's rows of a table are
 *		visible to those alone); anyone else meets the privilege check of
 *		the upstream first, as before.  Caller is connected to SPI.
 */
static void
RefuseUnregisteredUpstream(Oid down, Oid up)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	if (get_rel_name(up) == NULL ||
		pg_class_aclcheck(up, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return;
	values[0] = ObjectIdGetDatum(up);
	if (CatalogExists("SELECT 1 FROM backfill.targets"
					  " WHERE target OPERATOR(pg_catalog.=) $1",
					  1, argtypes, values))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("table %s is not registered for backfill",
					QualifiedRelName(up)),
			 errdetail("depend links two registered targets: a cascading plan of %s then rebuilds %s after it.",
					   QualifiedRelName(up), QualifiedRelName(down)),
			 errhint("If %s is a source that other jobs fill, watch it instead: SELECT backfill.watch(%s, %s, '<its time column>') records the chunks of %s its writes touch. To rebuild it with backfill too, register it first.",
					 QualifiedRelName(up),
					 quote_literal_cstr(QualifiedRelName(down)),
					 quote_literal_cstr(QualifiedRelName(up)),
					 QualifiedRelName(down))));
}

/*
 * AddDependency
 *		See backfill.h: depend(downstream, upstream) -> true when added,
 *		false when it was already declared.  Both must be registered, and
 *		the caller must be allowed to plan both: rewrite them (as for
 *		register) and have the privileges of the author of each one's
 *		current definition (CheckAuthor), as a cascading plan over them
 *		will need.  So a role that merely writes someone's table cannot
 *		hang a target of its own under it and make that planner's cascades
 *		fail.  A dependency that would close a cycle is refused (42P17)
 *		with the cycle in the detail.
 */
bool
AddDependency(Oid down, Oid up)
{
	Oid			argtypes[3] = {REGCLASSOID, REGCLASSOID, TEXTOID};
	Datum		values[3];
	bool		added;
	Definition *def_down;
	Definition *def_up;

	CheckTargetPrivileges(down);
	RefuseUnregisteredUpstream(down, up);
	CheckTargetPrivileges(up);

	LockDependencies();
	/* both must be registered (42704) */
	def_down = LoadDefinition(down, 0);
	def_up = LoadDefinition(up, 0);

	/* a planner of both: the upstream's first, whose cascades it changes */
	CheckAuthor(def_up->author, up, def_up->version);
	CheckAuthor(def_down->author, down, def_down->version);

	/* the path downstream -> ... -> upstream that the new edge would close */
	values[0] = ObjectIdGetDatum(down);
	values[1] = ObjectIdGetDatum(up);
	CatalogExec("WITH RECURSIVE walk(node, path) AS ("
				"  SELECT $1::pg_catalog.oid, ARRAY[$1::pg_catalog.oid]"
				"  UNION ALL"
				"  SELECT d.downstream::pg_catalog.oid,"
				"   w.path OPERATOR(pg_catalog.||) d.downstream::pg_catalog.oid"
				"  FROM walk w JOIN backfill.dependencies d"
				"   ON d.upstream::pg_catalog.oid OPERATOR(pg_catalog.=) w.node"
				"  WHERE w.node OPERATOR(pg_catalog.<>) $2::pg_catalog.oid"
				"   AND NOT d.downstream::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (w.path))"
				" SELECT path FROM walk WHERE node OPERATOR(pg_catalog.=) $2::pg_catalog.oid"
				" ORDER BY pg_catalog.array_length(path, 1) LIMIT 1",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		bool		isnull;
		ArrayType  *arr = DatumGetArrayTypeP(SpiGetDatumCopy(0, 1, &isnull));
		Datum	   *elems;
		int			nelems;
		StringInfoData cycle;
		int			i;

		deconstruct_array(arr, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &elems, NULL, &nelems);
		initStringInfo(&cycle);
		appendStringInfoString(&cycle, QualifiedRelName(up));
		for (i = 0; i < nelems; i++)
			appendStringInfo(&cycle, " -> %s",
							 QualifiedRelName(DatumGetObjectId(elems[i])));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("dependency of %s on %s would create a cycle",
						QualifiedRelName(down), QualifiedRelName(up)),
				 errdetail("The cycle would be %s.", cycle.data),
				 errhint("A target cannot be built, directly or through others, from itself.")));
	}
	SPI_freetuptable(SPI_tuptable);

	values[2] = CStringGetTextDatum(CurrentUserName());
	CatalogExec("INSERT INTO backfill.dependencies (downstream, upstream, created_by)"
				" VALUES ($1, $2, $3::pg_catalog.name)"
				" ON CONFLICT (downstream, upstream) DO NOTHING",
				3, argtypes, values, NULL, SPI_OK_INSERT);
	added = SPI_processed > 0;
	return added;
}

/*
 * MayPlan
 *		Whether the caller may plan target: the table exists, the caller
 *		holds SELECT, INSERT and DELETE on it, and it has the privileges of
 *		the author of its current definition.  Caller is connected to SPI.
 */
static bool
MayPlan(Oid target)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		isnull;
	Oid			author = InvalidOid;

	if (get_rel_name(target) == NULL ||
		pg_class_aclmask(target, GetUserId(), ACL_SELECT | ACL_INSERT | ACL_DELETE,
						 ACLMASK_ALL) != (ACL_SELECT | ACL_INSERT | ACL_DELETE))
		return false;
	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT d.author FROM backfill.targets t JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		author = SpiGetOid(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return OidIsValid(author) &&
		SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(author)) &&
		has_privs_of_role(GetUserId(), author);
}

/*
 * RemoveDependency
 *		See backfill.h: undepend(downstream, upstream) -> true when
 *		removed, false when there was no such dependency.  Allowed to a
 *		role that may rewrite both tables (those that still exist), and to
 *		a planner of either one (MayPlan): the planner of an upstream can
 *		always detach a dependent it cannot plan, which would otherwise
 *		make its cascading plans fail.  Caller is connected to SPI.
 */
bool
RemoveDependency(Oid down, Oid up)
{
	Oid			argtypes[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2];
	bool		removed;

	if (!superuser() && !MayPlan(up) && !MayPlan(down))
	{
		if (get_rel_name(down) != NULL)
			CheckTargetPrivileges(down);
		if (get_rel_name(up) != NULL)
			CheckTargetPrivileges(up);
		if (get_rel_name(down) == NULL && get_rel_name(up) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to remove a dependency between dropped tables"),
					 errhint("Unregister the dropped tables with backfill.unregister, which removes their dependencies.")));
	}

	LockDependencies();
	values[0] = ObjectIdGetDatum(down);
	values[1] = ObjectIdGetDatum(up);
	CatalogExec("DELETE FROM backfill.dependencies"
				" WHERE downstream OPERATOR(pg_catalog.=) $1"
				" AND upstream OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_DELETE);
	removed = SPI_processed > 0;
	return removed;
}

/*
 * PipelineForgetTarget
 *		Unregister's part (see backfill.h).  The dependencies of the target
 *		on others go with it; the targets built from it keep their
 *		registrations, only the dependencies are removed (with cascade).
 */
void
PipelineForgetTarget(Oid target, const char *name, bool cascade)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *dependents;

	LockDependencies();
	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT pg_catalog.string_agg(t.target_name, ', ' ORDER BY t.target_name)"
				" FROM backfill.dependencies d JOIN backfill.targets t"
				"  ON t.target OPERATOR(pg_catalog.=) d.downstream"
				" WHERE d.upstream OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	dependents = SpiGetText(0, 1);
	SPI_freetuptable(SPI_tuptable);
	if (dependents != NULL && !cascade)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot unregister table %s because other targets depend on it", name),
				 errdetail("Targets built from it: %s.", dependents),
				 errhint("Remove the dependencies with backfill.undepend, or call backfill.unregister(target, cascade => true) to remove them with it.")));

	CatalogExec("DELETE FROM backfill.dependencies"
				" WHERE downstream OPERATOR(pg_catalog.=) $1"
				" OR upstream OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);
	if (dependents != NULL)
		ereport(NOTICE,
				(errmsg("removed the dependencies of %s on %s", dependents, name)));
}

/*
 * DownstreamOrder
 *		The target and every target built from it, directly or not, in an
 *		order where each comes after all its upstream targets (ties by
 *		name).  *edges receives the dependencies among them.  Caller is
 *		connected to SPI.
 */
List *
DownstreamOrder(Oid root, Edges *edges)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	List	   *nodes = list_make1_oid(root);
	List	   *order = NIL;
	int			i;
	int			n;

	values[0] = ObjectIdGetDatum(root);
	CatalogExec("WITH RECURSIVE down(t) AS ("
				"  SELECT $1::pg_catalog.regclass"
				"  UNION SELECT d.downstream FROM backfill.dependencies d"
				"   JOIN down ON d.upstream OPERATOR(pg_catalog.=) down.t)"
				" SELECT d.downstream::pg_catalog.oid, d.upstream::pg_catalog.oid"
				" FROM backfill.dependencies d"
				" WHERE d.upstream OPERATOR(pg_catalog.=) ANY (SELECT t FROM down)",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	edges->n = n;
	edges->down = palloc(sizeof(Oid) * Max(n, 1));
	edges->up = palloc(sizeof(Oid) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		edges->down[i] = SpiGetOid(i, 1, &isnull);
		edges->up[i] = SpiGetOid(i, 2, &isnull);
		nodes = list_append_unique_oid(nodes, edges->down[i]);
	}
	SPI_freetuptable(SPI_tuptable);

	/* Kahn's algorithm; the graph has no cycle (depend refuses them) */
	while (list_length(order) < list_length(nodes))
	{
		ListCell   *lc;
		Oid			best = InvalidOid;
		char	   *best_name = NULL;

		CHECK_FOR_INTERRUPTS();
		foreach(lc, nodes)
		{
			Oid			cand = lfirst_oid(lc);
			bool		ready = true;
			char	   *name;
			int			e;

			if (list_member_oid(order, cand))
				continue;
			for (e = 0; e < edges->n; e++)
			{
				if (edges->down[e] == cand && !list_member_oid(order, edges->up[e]))
				{
					ready = false;
					break;
				}
			}
			if (!ready)
				continue;
			name = QualifiedRelName(cand);
			if (best_name == NULL || strcmp(name, best_name) < 0)
			{
				best = cand;
				best_name = name;
			}
		}
		if (!OidIsValid(best))
			elog(ERROR, "backfill: the dependencies of %s form a cycle",
				 QualifiedRelName(root));
		order = lappend_oid(order, best);
	}
	return order;
}
