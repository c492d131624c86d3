/*-------------------------------------------------------------------------
 *
 * watchinherit.c
 *	  Changed regions: the tables that inherit from a watched table by
 *	  plain INHERITS (not partitions).  PostgreSQL fires a table's INSERT
 *	  triggers only for rows inserted into that table, and its UPDATE,
 *	  DELETE and TRUNCATE triggers only for statements that name it: the
 *	  rows written straight into a child are not seen by its parent's
 *	  watch, although the target's query, reading the parent, reads them.
 *	  A child can be watched as a source of the target on its own; until
 *	  it is, watch (WatchNoticeChildren) and the event trigger
 *	  backfill_watch_ddl, when a command makes a table inherit from a
 *	  watched one (WatchNewChildren), say so, with the call that fixes it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/*
 * TargetWatches
 *		Whether target watches source.  Caller is connected to SPI.
 */
static bool
TargetWatches(Oid target, Oid source)
{
	Oid			argtypes[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2];

	values[0] = ObjectIdGetDatum(target);
	values[1] = ObjectIdGetDatum(source);
	return CatalogExists("SELECT 1 FROM backfill.watches"
						 " WHERE target OPERATOR(pg_catalog.=) $1"
						 " AND source OPERATOR(pg_catalog.=) $2",
						 2, argtypes, values);
}

/*
 * WatchCall
 *		The call that watches source for target by column, as a user
 *		types it (the hint of the messages below).
 */
static char *
WatchCall(Oid target, Oid source, const char *column)
{
	return psprintf("SELECT backfill.watch(%s, %s, %s);",
					quote_literal_cstr(QualifiedRelName(target)),
					quote_literal_cstr(QualifiedRelName(source)),
					quote_literal_cstr(column));
}

/*
 * WatchNoticeChildren
 *		See backfill.h: after watch of source by target on column, a NOTICE
 *		naming the tables that inherit from source (at any depth, by plain
 *		INHERITS; foreign tables too) and that target does not watch: the
 *		rows written straight into them are not recorded.  Caller is
 *		connected to SPI.
 */
void
WatchNoticeChildren(Oid target, Oid source, const char *column)
{
	List	   *children = find_all_inheritors(source, NoLock, NULL);
	StringInfoData names;
	Oid			first = InvalidOid;
	ListCell   *lc;

	initStringInfo(&names);
	foreach(lc, children)
	{
		Oid			child = lfirst_oid(lc);

		CHECK_FOR_INTERRUPTS();
		if (child == source || get_rel_relispartition(child) ||
			TargetWatches(target, child))
			continue;
		/* the example of the hint: a table (a foreign one cannot be watched) */
		if (!OidIsValid(first) && get_rel_relkind(child) == RELKIND_RELATION)
			first = child;
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
						 QualifiedRelName(child));
	}
	if (names.len == 0)
		return;
	ereport(NOTICE,
			(errmsg("writes straight into the tables inheriting from %s are not recorded",
					QualifiedRelName(source)),
			 errdetail("PostgreSQL fires a table's triggers only for the rows and statements of that table, so the watch of %s does not see rows inserted into, or updated or deleted straight in: %s.",
					   QualifiedRelName(source), names.data),
			 OidIsValid(first) ?
			 errhint("Watch each of them as a source of the target too, for example: %s",
					 WatchCall(target, first, column)) :
			 errhint("A foreign table cannot carry the triggers that record changes: register the target with a ledger that counts those rows too.")));
}

/*
 * InheritedFrom
 *		The tables relid inherits from by plain INHERITS, at any depth, as
 *		a list of OIDs, read with a fresh snapshot (not read-only), which
 *		sees what the running command has just made.  Caller is connected
 *		to SPI.
 */
static List *
InheritedFrom(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(relid);
	SpiExecPinned("WITH RECURSIVE up(r) AS ("
				  " SELECT inhparent FROM pg_catalog.pg_inherits"
				  "  WHERE inhrelid OPERATOR(pg_catalog.=) $1"
				  " UNION SELECT i.inhparent FROM pg_catalog.pg_inherits i, up"
				  "  WHERE i.inhrelid OPERATOR(pg_catalog.=) up.r)"
				  " SELECT r FROM up ORDER BY 1",
				  1, argtypes, values, NULL, false, 0, SPI_OK_SELECT);
	return SpiOidColumn();
}

/*
 * WatchNewChildren
 *		See backfill.h: after a command of the event trigger
 *		backfill_watch_ddl that made a table inherit from others (CREATE
 *		TABLE ... INHERITS, ALTER TABLE ... INHERIT), a WARNING for each
 *		watch of a table it now inherits from whose target does not watch
 *		it: the rows written straight into it are not recorded for that
 *		target.  A warning, not an error: the command may be another job's
 *		(a partition manager that makes children by INHERITS), which must
 *		not fail.  Caller is connected to SPI.
 */
void
WatchNewChildren(void)
{
	ListCell   *lc;

	foreach(lc, WatchCommandRelations(false))
	{
		Oid			relid = lfirst_oid(lc);
		List	   *parents;
		Oid			argtypes[2] = {REGCLASSARRAYOID, REGCLASSOID};
		Datum		values[2];
		uint64		k;

		CHECK_FOR_INTERRUPTS();
		if (get_rel_relkind(relid) != RELKIND_RELATION ||
			get_rel_relispartition(relid) ||
			(parents = InheritedFrom(relid)) == NIL)
			continue;
		values[0] = MakeOidArray(parents, REGCLASSOID);
		values[1] = ObjectIdGetDatum(relid);
		CatalogExec("SELECT w.target, w.source, w.time_column::pg_catalog.text"
					" FROM backfill.watches w"
					" WHERE w.source OPERATOR(pg_catalog.=) ANY ($1)"
					" AND NOT EXISTS (SELECT 1 FROM backfill.watches v"
					"  WHERE v.target OPERATOR(pg_catalog.=) w.target"
					"  AND v.source OPERATOR(pg_catalog.=) $2)"
					" ORDER BY 1, 2",
					2, argtypes, values, NULL, SPI_OK_SELECT);
		for (k = 0; k < SPI_processed; k++)
		{
			bool		isnull;
			Oid			target = SpiGetOid(k, 1, &isnull);
			Oid			source = SpiGetOid(k, 2, &isnull);
			char	   *column = SpiGetText(k, 3);

			ereport(WARNING,
					(errmsg("writes straight into %s are not recorded for %s",
							QualifiedRelName(relid), QualifiedRelName(target)),
					 errdetail("%s inherits from %s, which %s watches, and PostgreSQL fires a table's triggers only for the rows and statements of that table.",
							   QualifiedRelName(relid), QualifiedRelName(source),
							   QualifiedRelName(target)),
					 errhint("Watch it as a source of the target too: %s",
							 WatchCall(target, relid, column))));
		}
	}
}
