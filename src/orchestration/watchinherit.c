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

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/* What the messages below say of a child's rows, and the fix of a foreign one */
#define TRIGGER_REASON \
	"PostgreSQL fires a table's triggers only for the rows and statements of that table"
#define FOREIGN_REASON \
	"a foreign table cannot carry the triggers that record changes"
#define LEDGER_HINT \
	"Register the target with a ledger that counts those rows too: plan(..., only_chunks => 'stale') then also takes the chunks whose ledger moved."

/*
 * How many inheriting tables watch's NOTICE, and the event trigger's
 * WARNINGs, name; the rest are counted.
 */
#define CHILDREN_NAMED 20

/*
 * TargetSources
 *		The sources target watches, as a list of OIDs: read once, for all
 *		the children of a source (an old inheritance set has thousands).
 *		Caller is connected to SPI.
 */
static List *
TargetSources(Oid target)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT source FROM backfill.watches"
				" WHERE target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	return SpiOidColumn();
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
 *		INHERITS) and that target does not watch, with the watch call of
 *		the first in the hint; and one naming the foreign tables among
 *		them, which cannot be watched (their rows are followed only by a
 *		ledger).  The rows written straight into either are not recorded.
 *		Caller is connected to SPI.
 */
void
WatchNoticeChildren(Oid target, Oid source, const char *column)
{
	StringInfoData tables;
	StringInfoData foreign;
	int			ntables = 0;
	int			nforeign = 0;
	Oid			first = InvalidOid;
	List	   *watched = TargetSources(target);
	ListCell   *lc;

	initStringInfo(&tables);
	initStringInfo(&foreign);
	/* locked: a child dropped meanwhile is left out */
	foreach(lc, find_all_inheritors(source, AccessShareLock, NULL))
	{
		Oid			child = lfirst_oid(lc);
		StringInfo	names = &tables;
		int		   *count = &ntables;

		CHECK_FOR_INTERRUPTS();
		/* another session's temporary table: its own session was told */
		if (child == source || get_rel_relispartition(child) ||
			isOtherTempNamespace(get_rel_namespace(child)) ||
			list_member_oid(watched, child))
			continue;
		if (get_rel_relkind(child) == RELKIND_FOREIGN_TABLE)
		{
			names = &foreign;
			count = &nforeign;
		}
		else if (!OidIsValid(first))
			first = child;
		/* the first few by name (an old inheritance set has thousands) */
		if ((*count)++ < CHILDREN_NAMED)
			appendStringInfo(names, "%s%s", names->len > 0 ? ", " : "",
							 QualifiedRelName(child));
	}
	if (ntables > CHILDREN_NAMED)
		appendStringInfo(&tables, ", and %d more", ntables - CHILDREN_NAMED);
	if (nforeign > CHILDREN_NAMED)
		appendStringInfo(&foreign, ", and %d more", nforeign - CHILDREN_NAMED);
	if (tables.len > 0)
		ereport(NOTICE,
				(errmsg("writes straight into the tables inheriting from %s are not recorded",
						QualifiedRelName(source)),
				 errdetail(TRIGGER_REASON ", so the watch of %s does not see rows inserted into, or updated or deleted straight in: %s.",
						   QualifiedRelName(source), tables.data),
				 errhint("Watch each of them as a source of the target too, for example: %s",
						 WatchCall(target, first, column))));
	if (foreign.len > 0)
		ereport(NOTICE,
				(errmsg("writes into the foreign tables inheriting from %s are not recorded",
						QualifiedRelName(source)),
				 errdetail("A foreign table cannot carry the triggers that record changes: %s.",
						   foreign.data),
				 errhint(LEDGER_HINT)));
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
 * WarnUnwatchedChild
 *		The WARNINGs of WatchNewChildren for one table relid (a table or a
 *		foreign table, not a partition): one for each target watching a
 *		table relid inherits from that does not watch relid, naming the
 *		first such table; none for a watch whose target was dropped without
 *		unregister (it stays in backfill.watches, and naming the target
 *		failed the command: attack review 8).  Only the targets the role
 *		that ran the command may SELECT are named, as backfill.watches
 *		shows it no other: the others (the watches of roles it granted
 *		TRIGGER on its table) are counted in one WARNING that names none
 *		(attack review 9: the WARNING and its hint named them).  With
 *		quiet, nothing is said.  Returns whether some target's watch does
 *		not see relid's rows.  Caller is connected to SPI.
 */
static bool
WarnUnwatchedChild(Oid relid, bool quiet)
{
	char		relkind = get_rel_relkind(relid);
	bool		foreign = relkind == RELKIND_FOREIGN_TABLE;
	List	   *parents;
	Oid			argtypes[2] = {REGCLASSARRAYOID, REGCLASSOID};
	Datum		values[2];
	uint64		k;
	int			hidden = 0;
	Oid			hidden_source = InvalidOid;
	bool		unseen = false;

	if ((relkind != RELKIND_RELATION && !foreign) ||
		get_rel_relispartition(relid) ||
		(parents = InheritedFrom(relid)) == NIL)
		return false;
	values[0] = MakeOidArray(parents, REGCLASSOID);
	values[1] = ObjectIdGetDatum(relid);
	/* one per target: the first of its watched ancestors */
	CatalogExec("SELECT DISTINCT ON (w.target)"
				" w.target, w.source, w.time_column::pg_catalog.text"
				" FROM backfill.watches w"
				" WHERE w.source OPERATOR(pg_catalog.=) ANY ($1)"
				" AND NOT EXISTS (SELECT 1 FROM backfill.watches v"
				"  WHERE v.target OPERATOR(pg_catalog.=) w.target"
				"  AND v.source OPERATOR(pg_catalog.=) $2)"
				" ORDER BY w.target, w.source",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		Oid			target = SpiGetOid(k, 1, &isnull);
		Oid			source = SpiGetOid(k, 2, &isnull);
		char	   *column = SpiGetText(k, 3);
		bool		missing = false;

		CHECK_FOR_INTERRUPTS();
		/* a dropped target records nothing */
		if (get_rel_relkind(target) == '\0')
			continue;
		unseen = true;
		if (quiet)
			continue;
		/* a target the role may not read is not named (backfill.watches) */
		if (pg_class_aclcheck_ext(target, GetUserId(), ACL_SELECT,
								  &missing) != ACLCHECK_OK)
		{
			if (!missing && hidden++ == 0)
				hidden_source = source;
			continue;
		}
		ereport(WARNING,
				(errmsg("writes %s %s are not recorded for %s",
						foreign ? "into" : "straight into",
						QualifiedRelName(relid), QualifiedRelName(target)),
				 errdetail("%s inherits from %s, which %s watches, and %s.",
						   QualifiedRelName(relid), QualifiedRelName(source),
						   QualifiedRelName(target),
						   foreign ? FOREIGN_REASON : TRIGGER_REASON),
				 errhint("%s", foreign ? LEDGER_HINT :
						 psprintf("Watch it as a source of the target too: %s",
								  WatchCall(target, relid, column)))));
	}
	if (hidden > 0)
		ereport(WARNING,
				(errmsg_plural("writes %s %s are not recorded for %d target that you may not read",
							   "writes %s %s are not recorded for %d targets that you may not read",
							   hidden, foreign ? "into" : "straight into",
							   QualifiedRelName(relid), hidden),
				 errdetail("%s inherits from %s, which such a target watches, and %s.",
						   QualifiedRelName(relid),
						   QualifiedRelName(hidden_source),
						   foreign ? FOREIGN_REASON : TRIGGER_REASON),
				 errhint("%s", foreign ?
						 "The owners of those targets may count its rows with a ledger." :
						 "The roles that watch the tables it inherits from may watch it too, with the TRIGGER privilege on it.")));
	return unseen;
}

/*
 * WatchNewChildren
 *		See backfill.h: after a command of the event trigger
 *		backfill_watch_ddl that made a table inherit from others (CREATE
 *		[FOREIGN] TABLE ... INHERITS, ALTER [FOREIGN] TABLE ... INHERIT),
 *		the WARNINGs of WarnUnwatchedChild for each table the command made
 *		or altered and each table that inherits from it (an ALTER TABLE
 *		... INHERIT brings its children along: attack review 8): the rows
 *		written straight into them are not recorded for those targets; the
 *		first CHILDREN_NAMED tables by name, the rest counted in one
 *		WARNING (an ALTER TABLE ... INHERIT of a table with thousands of
 *		children).  A warning, not an error: the command may be another
 *		job's (a partition manager that makes children by INHERITS), which
 *		must not fail.  Caller is connected to SPI.
 */
void
WatchNewChildren(void)
{
	ListCell   *lc;
	int			named = 0;

	foreach(lc, WatchCommandRelations(false))
	{
		ListCell   *lk;

		/* locked (the command holds its own): one dropped meanwhile is left out */
		foreach(lk, find_all_inheritors(lfirst_oid(lc), AccessShareLock, NULL))
		{
			CHECK_FOR_INTERRUPTS();
			if (WarnUnwatchedChild(lfirst_oid(lk), named >= CHILDREN_NAMED))
				named++;
		}
	}
	if (named > CHILDREN_NAMED)
		ereport(WARNING,
				(errmsg_plural("writes straight into %d more table are not recorded",
							   "writes straight into %d more tables are not recorded",
							   named - CHILDREN_NAMED, named - CHILDREN_NAMED),
				 errdetail("They inherit from watched tables, as the tables named above do."),
				 errhint("backfill.watch of a watched table names the tables inheriting from it that its target does not watch.")));
}
