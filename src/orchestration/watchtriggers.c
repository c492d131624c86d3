/*-------------------------------------------------------------------------
 *
 * watchtriggers.c
 *	  Changed regions: the triggers of a watched source, which watch.c
 *	  installs and drops and whose work (recording which of the target's
 *	  chunks a write touched) is in watchlog.c; and the event trigger's
 *	  work that keeps them right when the source's partitions or its time
 *	  column change (WatchNewPartitions, WatchRenamedColumn).
 *
 * A watched source carries statement triggers on the table and on each of
 * its partitions, all calling backfill._watch_trigger: UPDATE and DELETE
 * with transition tables, and TRUNCATE.  INSERT is watched row by row
 * instead of through a transition table, which costs more to capture
 * and, on a partitioned source, turns a COPY's multi-row inserts into
 * single-row inserts: one AFTER INSERT row trigger per watched time column
 * on the source (cloned by PostgreSQL to its partitions, present and
 * future), whose WHEN clause backfill._watch_row(NEW.tableoid, NEW.column)
 * (on a partitioned source, whose clones fire on its partitions,
 * backfill._watch_row(source, column, NEW.column)) does the work, loading
 * the source's watches on the first
 * row of a transaction, and is true only for the first row of a statement
 * that noted a chunk (its event writes them at the end of the statement;
 * a statement at the live edge queues none) or for a row whose writer may
 * not load them (its event does: watchlog.c).  Earlier builds also put a
 * BEFORE INSERT statement trigger on it that loaded the watches
 * (backfill_watch_before) and an AFTER INSERT statement trigger
 * (backfill_watch_insert); watch drops them where its caller owns the
 * table, and otherwise they keep working.  PostgreSQL copies row triggers
 * to a new partition but not statement triggers: the event trigger
 * backfill_watch_ddl adds them (WatchNewPartitions).
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "backfill.h"

/* The names of the triggers watch() installs, by event (BEFORE and
 * INSERT: of earlier builds, no longer installed). */
#define WATCH_TRIGGER_BEFORE	"backfill_watch_before"
#define WATCH_TRIGGER_INSERT	"backfill_watch_insert"
#define WATCH_TRIGGER_UPDATE	"backfill_watch_update"
#define WATCH_TRIGGER_DELETE	"backfill_watch_delete"
#define WATCH_TRIGGER_TRUNCATE	"backfill_watch_truncate"

/* The row triggers: this prefix and the column's name. */
#define WATCH_TRIGGER_ROW		"backfill_watch_row_"

/* The tgtype of the row triggers: AFTER INSERT FOR EACH ROW. */
#define WATCH_TYPE_ROW (TRIGGER_TYPE_ROW | TRIGGER_TYPE_INSERT)

/* The transition tables' names inside the trigger's query. */
#define WATCH_NEW_TABLE "backfill_new"
#define WATCH_OLD_TABLE "backfill_old"

/* ----------------------------------------------------------------
 *		installing and dropping
 * ----------------------------------------------------------------
 */

/* The statement triggers watch installs, by name, and their tgtype. */
#define WATCH_STATEMENT_TRIGGERS 3
static const char *const statement_names[WATCH_STATEMENT_TRIGGERS] = {
	WATCH_TRIGGER_UPDATE, WATCH_TRIGGER_DELETE, WATCH_TRIGGER_TRUNCATE
};
static const int statement_types[WATCH_STATEMENT_TRIGGERS] = {
	TRIGGER_TYPE_UPDATE, TRIGGER_TYPE_DELETE, TRIGGER_TYPE_TRUNCATE
};

/* What a row trigger's WHEN clause is: WatchRowQual. */
#define WATCH_QUAL_OTHER	0	/* not the watch's */
#define WATCH_QUAL_NAME		1	/* the column by name (earlier builds) */
#define WATCH_QUAL_ATTNUM	2	/* the column by number (earlier builds: a
								 * restore could renumber the column) */
#define WATCH_QUAL_TABLEOID	3	/* NEW.tableoid and the column (watch's now
								 * on a table) */
#define WATCH_QUAL_PARTITION 4	/* the source, NEW.tableoid and the column
								 * (watch's now on a partitioned table) */

/*
 * WatchRowQual
 *		Whether qual (the nodeToString text of a row trigger's WHEN clause,
 *		of relid's own trigger, not a clone) is exactly the watch's for
 *		column of relid (ReadWatchRowCall): backfill._watch_row(NEW.tableoid,
 *		NEW.column) on a table (WATCH_QUAL_TABLEOID; on a partitioned table
 *		its clones would pass their partition, which is not relid),
 *		backfill._watch_row(relid, NEW.tableoid, NEW.column)
 *		(WATCH_QUAL_PARTITION), or a form earlier builds installed, which
 *		keeps working: backfill._watch_row(relid, attnum, NEW.column)
 *		(WATCH_QUAL_ATTNUM; also with a number that is no longer the
 *		column's, as a restore leaves it when a dropped column stood before
 *		it, but only for relid's owner, whose watch replaces it: it notes
 *		nothing, or the chunks of another watched column's targets, so for
 *		anyone else it is not the watch's, 42710), or
 *		backfill._watch_row(relid, column, NEW.column), the column's name as
 *		a name constant (WATCH_QUAL_NAME; its 64 bytes made the text
 *		PostgreSQL reads back on every statement half again as long); else
 *		WATCH_QUAL_OTHER.
 */
static int
WatchRowQual(const char *qual, Oid relid, const char *column)
{
	WatchRowCall rc;
	AttrNumber	attnum = get_attnum(relid, column);

	if (!ReadWatchRowCall((Node *) stringToNode(qual), &rc) ||
		rc.attnum != attnum)
		return WATCH_QUAL_OTHER;
	if (!OidIsValid(rc.source))
		return get_rel_relkind(relid) == RELKIND_RELATION ?
			WATCH_QUAL_TABLEOID : WATCH_QUAL_OTHER;
	if (rc.source != relid)
		return WATCH_QUAL_OTHER;
	if (rc.coltype == OIDOID)
		return WATCH_QUAL_PARTITION;
	/* a number no longer the column's: the owner's watch replaces it */
	if (rc.coltype == INT2OID &&
		(DatumGetInt16(rc.column) == attnum ||
		 RelationOwnerCheck(relid, GetUserId())))
		return WATCH_QUAL_ATTNUM;
	if (rc.coltype == NAMEOID &&
		strcmp(NameStr(*DatumGetName(rc.column)), column) == 0)
		return WATCH_QUAL_NAME;
	return WATCH_QUAL_OTHER;
}

/*
 * RowQualForm
 *		The form of WHEN clause watch installs on relid's row trigger: the
 *		table's own row (WATCH_QUAL_TABLEOID) on a table, the source and
 *		the row's table (WATCH_QUAL_PARTITION) on a partitioned table.
 */
static int
RowQualForm(Oid relid)
{
	return get_rel_relkind(relid) == RELKIND_RELATION ?
		WATCH_QUAL_TABLEOID : WATCH_QUAL_PARTITION;
}

/* What a relation has under one of the watch's trigger names: TriggerState. */
#define WATCH_TRIGGER_ABSENT	0	/* no trigger of that name */
#define WATCH_TRIGGER_WATCH		1	/* the watch's */
#define WATCH_TRIGGER_UNFIT		2	/* calls _watch_trigger, fires otherwise */
#define WATCH_TRIGGER_OTHER		3	/* calls another function */

/*
 * TriggerState
 *		What relation relid has under the trigger name name: nothing
 *		(WATCH_TRIGGER_ABSENT), a trigger calling another function than
 *		backfill._watch_trigger (WATCH_TRIGGER_OTHER: creating the watch's
 *		fails, the name is taken), or one calling it, which is the watch's
 *		(WATCH_TRIGGER_WATCH) only if it fires when the watch's does: its
 *		timing, level and events (tgtype: type), no column list, the
 *		transition tables of UPDATE and DELETE, enabled (origin or always),
 *		and no WHEN clause, or, for the row trigger of column (not NULL) on
 *		relid itself, exactly the watch's; any other is WATCH_TRIGGER_UNFIT,
 *		since a trigger of the UPDATE's name firing on INSERT would leave
 *		every UPDATE unrecorded.  Its clones are checked on the table they
 *		were made on.  earlier (if not NULL) is set to whether such a row
 *		trigger's WHEN clause is of a form watch no longer installs there
 *		(the column's name or number; the other of the two forms by the
 *		row's table: WatchRowQual, RowQualForm).  type < 0: any trigger of that name calling the
 *		function is the watch's (to drop it).  Caller is connected to SPI.
 */
static int
TriggerState(Oid relid, const char *name, int type, const char *column,
			 bool *earlier)
{
	Oid			argtypes[5] = {OIDOID, TEXTOID, INT4OID, TEXTOID, TEXTOID};
	Datum		values[5];
	char		nulls[6] = "     ";
	bool		isnull;
	bool		calls_watch;
	bool		is_clone;
	bool		fits;
	char	   *qual;
	int			form = WATCH_QUAL_OTHER;

	if (earlier != NULL)
		*earlier = false;
	values[0] = ObjectIdGetDatum(relid);
	values[1] = CStringGetTextDatum(name);
	values[2] = Int32GetDatum(type);
	/* UPDATE and DELETE read transition tables of these names */
	values[3] = CStringGetTextDatum(WATCH_OLD_TABLE);
	values[4] = CStringGetTextDatum(WATCH_NEW_TABLE);
	if (type != TRIGGER_TYPE_UPDATE && type != TRIGGER_TYPE_DELETE)
		nulls[3] = 'n';
	if (type != TRIGGER_TYPE_UPDATE)
		nulls[4] = 'n';
	/* (tgrelid, tgname) is unique: one row at most */
	SpiExecPinned("SELECT tgfoid OPERATOR(pg_catalog.=)"
				  "  'backfill._watch_trigger()'::pg_catalog.regprocedure,"
				  " tgparentid OPERATOR(pg_catalog.<>) 0,"
				  " $3 OPERATOR(pg_catalog.<) 0 OR"
				  " tgtype::pg_catalog.int4 OPERATOR(pg_catalog.=) $3"
				  "  AND tgnargs OPERATOR(pg_catalog.=) 0"
				  "  AND pg_catalog.cardinality(tgattr::pg_catalog.int2[])"
				  "   OPERATOR(pg_catalog.=) 0"
				  "  AND tgenabled OPERATOR(pg_catalog.=) ANY ('{O,A}'::pg_catalog.\"char\"[])"
				  "  AND tgoldtable IS NOT DISTINCT FROM $4::pg_catalog.name"
				  "  AND tgnewtable IS NOT DISTINCT FROM $5::pg_catalog.name,"
				  " tgqual::pg_catalog.text"
				  " FROM pg_catalog.pg_trigger"
				  " WHERE tgrelid OPERATOR(pg_catalog.=) $1"
				  " AND tgname OPERATOR(pg_catalog.=) $2::pg_catalog.name",
				  5, argtypes, values, nulls, false, 1, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return WATCH_TRIGGER_ABSENT;
	calls_watch = SpiGetBool(0, 1, &isnull);
	is_clone = SpiGetBool(0, 2, &isnull);
	fits = SpiGetBool(0, 3, &isnull);
	qual = SpiGetText(0, 4);
	SPI_freetuptable(SPI_tuptable);
	if (!calls_watch)
		return WATCH_TRIGGER_OTHER;
	if (type < 0)
		fits = true;
	else if (fits && !is_clone && column != NULL)
	{
		if (qual != NULL)
			form = WatchRowQual(qual, relid, column);
		fits = form != WATCH_QUAL_OTHER;
	}
	else if (fits && !is_clone)
		fits = qual == NULL;
	if (!fits)
		return WATCH_TRIGGER_UNFIT;
	if (earlier != NULL)
		*earlier = form != WATCH_QUAL_OTHER && form != RowQualForm(relid);
	return WATCH_TRIGGER_WATCH;
}

/*
 * TriggerExists
 *		Whether relation relid has the watch's trigger named name
 *		(TriggerState, with the same arguments).  A trigger of that name
 *		calling another function is not taken for the watch's (creating the
 *		watch's then fails: 42710, the trigger already exists); one that
 *		calls backfill._watch_trigger but is not the watch's is 42710 here.
 *		Caller is connected to SPI.
 */
static bool
TriggerExists(Oid relid, const char *name, int type, const char *column,
			  bool *earlier)
{
	int			state = TriggerState(relid, name, type, column, earlier);

	if (state == WATCH_TRIGGER_UNFIT)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("trigger \"%s\" for relation \"%s\" already exists",
						name, get_rel_name(relid)),
				 errdetail("It calls backfill._watch_trigger() but is not the trigger backfill installs: it fires on other events, at another time, for some columns only, under another condition, or not at all."),
				 errhint("Its table's owner may drop it; then call backfill.watch again.")));
	return state == WATCH_TRIGGER_WATCH;
}

/*
 * RowTriggerName
 *		The name of the row trigger of a column: the prefix and the column,
 *		or, with source, the prefix, source's OID and the column; clipped to
 *		a name's length.
 */
static char *
RowTriggerName(const char *column, Oid source)
{
	char	   *name;

	if (OidIsValid(source))
		name = psprintf(WATCH_TRIGGER_ROW "%u_%s", source, column);
	else
		name = psprintf(WATCH_TRIGGER_ROW "%s", column);
	name[pg_mbcliplen(name, strlen(name), NAMEDATALEN - 1)] = '\0';
	return name;
}

/*
 * InstallRowTriggers
 *		The AFTER INSERT row trigger of source for each time column its
 *		watches use, where missing.  PostgreSQL reads a WHEN clause back
 *		from its text on every statement, so the clause is kept short.  On
 *		a table: WHEN (backfill._watch_row(NEW.tableoid, NEW.column)), no
 *		constant at all (the trigger fires only for the table's own rows).
 *		On a partitioned table: WHEN (backfill._watch_row(source,
 *		NEW.tableoid, NEW.column)); PostgreSQL clones it to the partitions,
 *		present and future, mapping NEW's column to each partition's own
 *		number, so the column is found by its name in the row's table (a
 *		name constant is 64 bytes written as 64 numbers; a number constant,
 *		the source's, is kept by pg_dump while a restore renumbers the
 *		columns when a dropped one stood before), and the source is named,
 *		since a clone's tableoid is its partition.  Created as the caller
 *		on the source only.  The trigger is named after
 *		the column, or, when the source is a partition, after the source's
 *		OID and the column: the row trigger a watched ancestor clones to it,
 *		then or later, takes the column's name (a partition's own trigger of
 *		that name made a later watch of its partitioned table fail).  A
 *		partition that already carries its own trigger of the column's name
 *		(an earlier build's, made before its ancestor was watched) keeps it.
 *		A trigger of a form watch no longer installs there (the column's
 *		name or number) is replaced where the caller owns the source, else
 *		it stays and keeps working (a number a restore left stale notes
 *		nothing: the owner's watch replaces it).  A trigger whose
 *		column no watch uses any more stays: it finds nothing and costs one
 *		call per row.  Caller is connected to SPI.
 */
static void
InstallRowTriggers(Oid source)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	List	   *columns = NIL;
	ListCell   *lc;
	uint64		k;
	bool		partition = get_rel_relispartition(source);
	bool		table = RowQualForm(source) == WATCH_QUAL_TABLEOID;

	values[0] = ObjectIdGetDatum(source);
	CatalogExec("SELECT DISTINCT time_column::pg_catalog.text FROM backfill.watches"
				" WHERE source OPERATOR(pg_catalog.=) $1 ORDER BY 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	for (k = 0; k < SPI_processed; k++)
		columns = lappend(columns, SpiGetText(k, 1));
	SPI_freetuptable(SPI_tuptable);

	foreach(lc, columns)
	{
		char	   *column = (char *) lfirst(lc);
		char	   *name = RowTriggerName(column, partition ? source : InvalidOid);
		AttrNumber	attnum = get_attnum(source, column);
		bool		earlier = false;
		bool		exists;

		CHECK_FOR_INTERRUPTS();
		if (attnum == InvalidAttrNumber)
			elog(ERROR, "backfill: watched column \"%s\" not found", column);
		/* never a clone: only a partition has them, and its name has its OID */
		exists = TriggerExists(source, name, WATCH_TYPE_ROW, column, &earlier);
		if (exists && !earlier)
			continue;
		if (exists)
		{
			/* the form of an earlier build: replaced by its table's owner */
			if (!RelationOwnerCheck(source, GetUserId()))
				continue;
			SpiExecPinned(psprintf("DROP TRIGGER %s ON %s", quote_identifier(name),
								   QualifiedRelName(source)),
						  0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
		}
		SpiExecPinned(table ?
					  psprintf("CREATE TRIGGER %s AFTER INSERT ON %s FOR EACH ROW"
							   " WHEN (backfill._watch_row(NEW.tableoid, NEW.%s))"
							   " EXECUTE FUNCTION backfill._watch_trigger()",
							   quote_identifier(name), QualifiedRelName(source),
							   quote_identifier(column)) :
					  psprintf("CREATE TRIGGER %s AFTER INSERT ON %s FOR EACH ROW"
							   " WHEN (backfill._watch_row('%u'::pg_catalog.regclass,"
							   " NEW.tableoid, NEW.%s))"
							   " EXECUTE FUNCTION backfill._watch_trigger()",
							   quote_identifier(name), QualifiedRelName(source),
							   source, quote_identifier(column)),
					  0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
	}
}

/*
 * PartitionTree
 *		The tables and partitioned tables of relid's partition tree, by
 *		level, as a list of OIDs (foreign partitions cannot carry the
 *		triggers and are left out); with lacking, only the partitions
 *		among them (relid itself when it is one) that lack one of the
 *		watch's statement triggers, read with a fresh snapshot (not
 *		read-only), which sees a partition the running command has just
 *		attached.  Caller is connected to SPI.
 */
static List *
PartitionTree(Oid relid, bool lacking)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(relid);
	SpiExecPinned(lacking ?
				  "SELECT t.relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree($1) t"
				  " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid"
				  " WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'::pg_catalog.\"char\"[])"
				  " AND c.relispartition"
				  " AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger g"
				  "  WHERE g.tgrelid OPERATOR(pg_catalog.=) t.relid"
				  "  AND g.tgname OPERATOR(pg_catalog.=) ANY ('{"
				  WATCH_TRIGGER_UPDATE "," WATCH_TRIGGER_DELETE "," WATCH_TRIGGER_TRUNCATE
				  "}'::pg_catalog.name[])"
				  "  AND g.tgfoid OPERATOR(pg_catalog.=)"
				  "   'backfill._watch_trigger()'::pg_catalog.regprocedure)"
				  "  OPERATOR(pg_catalog.<) 3"
				  " ORDER BY t.level, t.relid" :
				  "SELECT t.relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree($1) t"
				  " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid"
				  " WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'::pg_catalog.\"char\"[])"
				  " ORDER BY t.level, t.relid",
				  1, argtypes, values, NULL, !lacking, 0, SPI_OK_SELECT);
	return SpiOidColumn();
}

/*
 * SourceRelations
 *		The source and, for a partitioned source, every partition below it
 *		(PartitionTree), as a list of OIDs.  Caller is connected to SPI.
 */
static List *
SourceRelations(Oid source)
{
	List	   *rels = PartitionTree(source, false);

	return rels != NIL ? rels : list_make1_oid(source);
}

/*
 * InstallStatementTriggers
 *		The watch's statement triggers on relid (the source or one of its
 *		partitions), where missing, created as the caller (who needs the
 *		TRIGGER privilege): AFTER UPDATE, DELETE (with transition tables)
 *		and TRUNCATE.  The INSERT statement triggers of earlier builds
 *		(BEFORE, which loaded the watches for the row triggers, and AFTER,
 *		with or without transition table) are dropped where the caller
 *		owns the table; else they stay and keep working.  Caller is
 *		connected to SPI.
 */
static void
InstallStatementTriggers(Oid relid)
{
	static const char *const events[WATCH_STATEMENT_TRIGGERS] = {
		"AFTER UPDATE ON %s REFERENCING OLD TABLE AS " WATCH_OLD_TABLE
		" NEW TABLE AS " WATCH_NEW_TABLE,
		"AFTER DELETE ON %s REFERENCING OLD TABLE AS " WATCH_OLD_TABLE,
		"AFTER TRUNCATE ON %s"
	};
	static const char *const earlier[2] = {
		WATCH_TRIGGER_BEFORE, WATCH_TRIGGER_INSERT
	};
	char	   *relname = QualifiedRelName(relid);
	int			i;

	for (i = 0; i < WATCH_STATEMENT_TRIGGERS; i++)
	{
		if (TriggerExists(relid, statement_names[i], statement_types[i],
						  NULL, NULL))
			continue;
		SpiExecPinned(psprintf("CREATE TRIGGER %s %s FOR EACH STATEMENT"
							   " EXECUTE FUNCTION backfill._watch_trigger()",
							   statement_names[i],
							   psprintf(events[i], relname)),
					  0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
	}
	/* the INSERT statement triggers of earlier builds */
	for (i = 0; i < 2; i++)
	{
		if (TriggerExists(relid, earlier[i], -1, NULL, NULL) &&
			RelationOwnerCheck(relid, GetUserId()))
			SpiExecPinned(psprintf("DROP TRIGGER %s ON %s", earlier[i], relname),
						  0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
	}
}

/*
 * MayPutTriggers
 *		Whether the current user owns relid or holds the TRIGGER privilege
 *		on it.
 */
static bool
MayPutTriggers(Oid relid)
{
	return RelationOwnerCheck(relid, GetUserId()) ||
		pg_class_aclcheck(relid, GetUserId(), ACL_TRIGGER) == ACLCHECK_OK;
}

/*
 * WatchCheckPartitionRights
 *		42501 before anything is written when a partition below source
 *		lacks the watch's statement triggers and the caller may not put
 *		them there (another role's partition): named, with the GRANT that
 *		lets the call through, instead of PostgreSQL's error from inside
 *		the CREATE TRIGGER.  Caller is connected to SPI.
 */
void
WatchCheckPartitionRights(Oid source)
{
	ListCell   *lc;

	foreach(lc, PartitionTree(source, true))
	{
		Oid			part = lfirst_oid(lc);

		if (part == source || MayPutTriggers(part))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to watch %s", QualifiedRelName(source)),
				 errdetail("Its partition %s needs the triggers of the watch, and role %s neither owns it nor holds the TRIGGER privilege on it.",
						   QualifiedRelName(part), CurrentUserName()),
				 errhint("Ask the owner of %s to run: GRANT TRIGGER ON %s TO %s;",
						 QualifiedRelName(part), QualifiedRelName(part),
						 quote_identifier(CurrentUserName()))));
	}
}

/*
 * WatchInstallTriggers
 *		The statement triggers on the source and its partitions
 *		(InstallStatementTriggers) and the INSERT row triggers
 *		(InstallRowTriggers).  INSERT is watched row by row, not through a
 *		transition table: a transition table keeps a copy of every row
 *		(spilled to disk past work_mem), and on a partitioned source or a
 *		partition it turns a COPY's multi-row inserts into single-row
 *		inserts (copyfrom.c); on a plain table both cost about the same
 *		(bench/RESULTS.md, turn 7).  The row trigger's WHEN clause loads
 *		the watches itself, for a writer who may insert into the source,
 *		and leaves it to the row's event otherwise (watchlog.c,
 *		RowMayNote): no BEFORE INSERT statement trigger.
 *		Partitions made or attached later get their statement triggers
 *		from the event trigger (WatchNewPartitions).  Caller is connected
 *		to SPI.
 */
void
WatchInstallTriggers(Oid source)
{
	List	   *rels = SourceRelations(source);
	ListCell   *lc;

	foreach(lc, rels)
	{
		CHECK_FOR_INTERRUPTS();
		InstallStatementTriggers(lfirst_oid(lc));
	}
	InstallRowTriggers(source);
}

/*
 * DropRowTriggers
 *		Remove relid's own row triggers calling backfill._watch_trigger (not
 *		the clones of its parent's, which go with them).  Caller owns relid
 *		and is connected to SPI.
 */
static void
DropRowTriggers(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	List	   *names = NIL;
	ListCell   *lc;
	uint64		k;

	values[0] = ObjectIdGetDatum(relid);
	SpiExecPinned("SELECT tgname::pg_catalog.text FROM pg_catalog.pg_trigger"
				  " WHERE tgrelid OPERATOR(pg_catalog.=) $1"
				  " AND tgparentid OPERATOR(pg_catalog.=) 0"
				  " AND tgfoid OPERATOR(pg_catalog.=)"
				  "  'backfill._watch_trigger()'::pg_catalog.regprocedure"
				  " AND (tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 1)"
				  "  OPERATOR(pg_catalog.=) 1",
				  1, argtypes, values, NULL, false, 0, SPI_OK_SELECT);
	for (k = 0; k < SPI_processed; k++)
		names = lappend(names, SpiGetText(k, 1));
	foreach(lc, names)
	{
		CHECK_FOR_INTERRUPTS();
		SpiExecPinned(psprintf("DROP TRIGGER %s ON %s",
							   quote_identifier((char *) lfirst(lc)),
							   QualifiedRelName(relid)),
					  0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
	}
}

/*
 * WatchedAtOrAbove
 *		Whether a watch names relid or one of its partition ancestors:
 *		relid's triggers serve that watch (a watched partition, or a
 *		partition of a watched table).  Caller is connected to SPI.
 */
static bool
WatchedAtOrAbove(Oid relid)
{
	Oid			argtypes[1] = {REGCLASSARRAYOID};
	Datum		values[1];
	List	   *rels = lcons_oid(relid, get_partition_ancestors(relid));

	values[0] = MakeOidArray(rels, REGCLASSOID);
	return CatalogExists("SELECT 1 FROM backfill.watches"
						 " WHERE source OPERATOR(pg_catalog.=) ANY ($1)",
						 1, argtypes, values);
}

/*
 * WatchDropTriggers
 *		Remove the triggers from the source and its partitions when the
 *		caller owns them (a row trigger of a partitioned table goes with
 *		its clones); otherwise they stay, doing nothing (no watch names the
 *		source), and a NOTICE says so.  What another watch still needs
 *		stays: a partition below the source that is watched itself or lies
 *		below another watched table keeps all its triggers, and the source,
 *		when it is a partition of a watched table, keeps its statement
 *		triggers (its own row triggers go; that table's clones stay).
 *		Caller is connected to SPI.
 */
void
WatchDropTriggers(Oid source)
{
	static const char *const names[5] = {
		WATCH_TRIGGER_BEFORE, WATCH_TRIGGER_INSERT, WATCH_TRIGGER_UPDATE,
		WATCH_TRIGGER_DELETE, WATCH_TRIGGER_TRUNCATE
	};
	List	   *rels;
	ListCell   *lc;

	if (get_rel_name(source) == NULL)
		return;
	rels = SourceRelations(source);
	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		bool		needed;
		int			i;

		CHECK_FOR_INTERRUPTS();
		/* a partition that another watch serves keeps everything */
		needed = WatchedAtOrAbove(relid);
		if (needed && relid != source)
			continue;
		if (!RelationOwnerCheck(relid, GetUserId()))
		{
			ereport(NOTICE,
					(errmsg("the triggers of backfill on %s stay in place",
							QualifiedRelName(relid)),
					 errdetail("No target watches the table any more, so they record nothing."),
					 errhint("The owner of the table may drop the triggers named backfill_watch_*.")));
			continue;
		}
		for (i = 0; i < 5 && !needed; i++)
		{
			if (!TriggerExists(relid, names[i], -1, NULL, NULL))
				continue;
			SpiExecPinned(psprintf("DROP TRIGGER %s ON %s", names[i],
								   QualifiedRelName(relid)),
						  0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
		}
		DropRowTriggers(relid);
	}
}

/* ----------------------------------------------------------------
 *		the event trigger's work
 * ----------------------------------------------------------------
 */

/*
 * WatchTriggerNameTaken
 *		The first of the statement triggers' names that relid holds for a
 *		trigger that is not the watch's (TriggerState: it calls another
 *		function, or does not fit), or NULL.  Caller is connected to SPI.
 */
static const char *
WatchTriggerNameTaken(Oid relid)
{
	int			i;

	for (i = 0; i < WATCH_STATEMENT_TRIGGERS; i++)
	{
		int			state = TriggerState(relid, statement_names[i],
										 statement_types[i], NULL, NULL);

		if (state == WATCH_TRIGGER_UNFIT || state == WATCH_TRIGGER_OTHER)
			return statement_names[i];
	}
	return NULL;
}

/*
 * NewPartitionInstallable
 *		Whether the event trigger may install the watch's statement triggers
 *		on part (WatchNewPartitions), else a WARNING saying why and false.
 *		The command that made a partition below a watched table must not
 *		fail for another role's partition below it: its owner could
 *		otherwise make every later ATTACH PARTITION of the partitioned
 *		table's owner, or of a superuser, fail for good, by dropping one of
 *		its triggers and granting TRIGGER on it to PUBLIC while its schema
 *		is closed to others (CREATE TRIGGER then fails on the schema), or
 *		while one of the watch's trigger names on it is taken by another
 *		trigger or by a disabled or altered one (which watch refuses with
 *		42710).  So the role must own part or hold TRIGGER on it, and may
 *		use its schema; and none of the three names may be taken by a
 *		trigger that is not the watch's (WatchTriggerNameTaken), checked
 *		under the lock CREATE TRIGGER takes (ShareRowExclusiveLock), after
 *		the privileges, so that no such trigger comes between.  A partition
 *		dropped meanwhile is passed over.  Found by the attack review of
 *		the event trigger.  Caller is connected to SPI.
 */
static bool
NewPartitionInstallable(Oid part)
{
	Oid			nsp = get_rel_namespace(part);
	char	   *relname;
	const char *taken;

	if (!OidIsValid(nsp))
		return false;
	relname = QualifiedRelName(part);
	if (!MayPutTriggers(part) ||
		NamespaceAclCheck(nsp, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
	{
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("writes straight into partition %s of a watched table are not recorded",
						relname),
				 errdetail("It lacks the statement triggers of backfill.watch, and role %s may not create triggers on it (it needs the TRIGGER privilege on it and USAGE on its schema).",
						   CurrentUserName()),
				 errhint("Its owner may run GRANT TRIGGER ON %s TO a role that watches its partitioned table, which then calls backfill.watch again.",
						 relname)));
		return false;
	}
	LockRelationOid(part, ShareRowExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(part)))
		return false;
	taken = WatchTriggerNameTaken(part);
	if (taken != NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("writes straight into partition %s of a watched table are not recorded",
						relname),
				 errdetail("It lacks the statement triggers of backfill.watch, and its trigger \"%s\" is not the one backfill installs: it calls another function, fires on other events, at another time, for some columns only, under another condition, or not at all.",
						   taken),
				 errhint("Its owner may drop that trigger; then call backfill.watch again for each target that watches its partitioned table.")));
		return false;
	}
	return true;
}

/*
 * WatchCommandRelations
 *		See backfill.h: the relations the DDL command that fired the event trigger made or
 *		altered (pg_event_trigger_ddl_commands, outside extension scripts):
 *		with columns, those whose column it changed (a RENAME COLUMN),
 *		else those it named as a whole.  Caller is connected to SPI.
 */
List *
WatchCommandRelations(bool columns)
{
	SpiExecPinned(columns ?
				  "SELECT DISTINCT objid FROM pg_catalog.pg_event_trigger_ddl_commands()"
				  " WHERE classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
				  " AND objsubid OPERATOR(pg_catalog.>) 0 AND NOT in_extension"
				  " ORDER BY 1" :
				  "SELECT DISTINCT objid FROM pg_catalog.pg_event_trigger_ddl_commands()"
				  " WHERE classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
				  " AND objsubid OPERATOR(pg_catalog.=) 0 AND NOT in_extension"
				  " ORDER BY 1",
				  0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	return SpiOidColumn();
}

/*
 * WatchNewPartitions
 *		See backfill.h: after a CREATE TABLE ... PARTITION OF or an ALTER
 *		TABLE ... ATTACH PARTITION (the event trigger
 *		backfill_watch_ddl), every partition below a table the
 *		command made or altered that lies below a watched source, or is
 *		one, and lacks some of the watch's statement triggers gets them,
 *		created as the role that ran the command.  PostgreSQL copies row
 *		triggers to a new partition but not statement triggers: without
 *		them, the inserts, updates, deletes and truncates made straight
 *		into the partition were not recorded, and nothing said so (a
 *		pg_partman premake makes such partitions every day).  A partition
 *		the role may not put triggers on (it owns the partitioned table and
 *		the new partition, but another partition below it may be
 *		another's) gets a WARNING instead of failing the command.  Caller
 *		is connected to SPI.
 */
void
WatchNewPartitions(void)
{
	ListCell   *lc;

	foreach(lc, WatchCommandRelations(false))
	{
		Oid			relid = lfirst_oid(lc);
		char		relkind = get_rel_relkind(relid);
		ListCell   *lr;

		if (!(relkind == RELKIND_PARTITIONED_TABLE ||
			  (relkind == RELKIND_RELATION && get_rel_relispartition(relid))) ||
			!WatchedAtOrAbove(relid))
			continue;
		foreach(lr, PartitionTree(relid, true))
		{
			CHECK_FOR_INTERRUPTS();
			if (NewPartitionInstallable(lfirst_oid(lr)))
				InstallStatementTriggers(lfirst_oid(lr));
		}
	}
}

/*
 * WatchDroppedColumn
 *		See backfill.h: after ALTER TABLE ... DROP COLUMN column, refused
 *		(an error, which rolls the command back) when a watch of the altered
 *		table, or of a table below it that lost the column with it, uses the
 *		column.  The column's INSERT row trigger depends on it and goes with
 *		a DROP ... CASCADE, and nothing else fires on INSERT: every INSERT
 *		after it, also once a column of that name is added again (a new
 *		number, no trigger), was silently not recorded (attack review 7).
 *		A child of plain INHERITS that keeps its own column (ONLY, or a
 *		local column) keeps its watch.  Caller is connected to SPI.
 */
void
WatchDroppedColumn(const char *column)
{
	Oid			argtypes[2] = {REGCLASSARRAYOID, NAMEOID};
	Datum		values[2];
	ListCell   *lc;

	values[1] = DirectFunctionCall1(namein, CStringGetDatum(column));
	foreach(lc, WatchCommandRelations(false))
	{
		Oid			relid = lfirst_oid(lc);
		ListCell   *ls;

		CHECK_FOR_INTERRUPTS();
		/* locked by the drop, which recursed into those that lost it */
		values[0] = MakeOidArray(find_all_inheritors(relid, NoLock, NULL),
								 REGCLASSOID);
		CatalogExec("SELECT DISTINCT source::pg_catalog.oid FROM backfill.watches"
					" WHERE source OPERATOR(pg_catalog.=) ANY ($1)"
					" AND time_column OPERATOR(pg_catalog.=) $2",
					2, argtypes, values, NULL, SPI_OK_SELECT);
		foreach(ls, SpiOidColumn())
		{
			Oid			source = lfirst_oid(ls);

			if (source != relid && !get_rel_relispartition(source) &&
				get_attnum(source, column) != InvalidAttrNumber)
				continue;
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop column \"%s\" of relation %s: a target watches %s by it",
							column, QualifiedRelName(relid),
							QualifiedRelName(source)),
					 errdetail("Without it the INSERTs into %s would not be recorded.",
							   QualifiedRelName(source)),
					 errhint("Call backfill.unwatch for each target that watches it by that column first.")));
		}
	}
}

/*
 * RenameRowTrigger
 *		Rename source's row trigger of column oldname to the name of
 *		column newname (RowTriggerName: a partition's own carries its OID),
 *		as the caller (who owns source), unless it is missing or the new
 *		name is taken on source; PostgreSQL renames its clones on the
 *		partitions with it.  Caller is connected to SPI.
 */
static void
RenameRowTrigger(Oid source, const char *oldname, const char *newname)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	bool		partition = get_rel_relispartition(source);
	char	   *from = RowTriggerName(oldname, partition ? source : InvalidOid);
	char	   *to = RowTriggerName(newname, partition ? source : InvalidOid);

	if (!TriggerExists(source, from, -1, NULL, NULL))
		return;
	values[0] = ObjectIdGetDatum(source);
	values[1] = CStringGetTextDatum(to);
	SpiExecPinned("SELECT 1 FROM pg_catalog.pg_trigger"
				  " WHERE tgrelid OPERATOR(pg_catalog.=) $1"
				  " AND tgname OPERATOR(pg_catalog.=) $2::pg_catalog.name",
				  2, argtypes, values, NULL, false, 1, SPI_OK_SELECT);
	if (SPI_processed > 0)
		return;
	SpiExecPinned(psprintf("ALTER TRIGGER %s ON %s RENAME TO %s",
						   quote_identifier(from), QualifiedRelName(source),
						   quote_identifier(to)),
				  0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
}

/*
 * WatchRenamedColumn
 *		See backfill.h.  A watch keeps its time column's name
 *		(watches.time_column), which every write to the source looks up:
 *		after ALTER TABLE ... RENAME COLUMN every write failed with 42703
 *		until watch was called again with the new name, and a job that
 *		loads the table stopped.  The column keeps its number (the row
 *		triggers' WHEN clauses give it), so the watches of the renamed
 *		table and of every table that inherits from it, partition or
 *		inheritance child (PostgreSQL renames the column in all of them,
 *		which it has locked, checking that the role owns each), that name
 *		the old name now name the new one, written as the extension owner
 *		(the catalog: the role that renamed the column owns the tables, and
 *		only its column's name changes); every backend reads the watches
 *		again; and the row triggers named after the column follow it.  The
 *		definition's own text, which may name the column, is the user's to
 *		register again.  (The partition tree alone missed the children of
 *		plain INHERITS: their watches kept the old name and every write
 *		into them failed; found by the attack review of the rename.)
 *		Caller is connected to SPI.
 */
void
WatchRenamedColumn(const char *oldname, const char *newname)
{
	Oid			argtypes[3] = {REGCLASSARRAYOID, NAMEOID, NAMEOID};
	Datum		values[3];
	List	   *moved = NIL;
	ListCell   *lc;

	values[1] = DirectFunctionCall1(namein, CStringGetDatum(oldname));
	values[2] = DirectFunctionCall1(namein, CStringGetDatum(newname));
	foreach(lc, WatchCommandRelations(true))
	{
		/* locked by the rename, which renamed the column in each of them */
		values[0] = MakeOidArray(find_all_inheritors(lfirst_oid(lc), NoLock,
													 NULL),
								 REGCLASSOID);
		CatalogExec("UPDATE backfill.watches SET time_column = $3"
					" WHERE source OPERATOR(pg_catalog.=) ANY ($1)"
					" AND time_column OPERATOR(pg_catalog.=) $2"
					" RETURNING source::pg_catalog.oid",
					3, argtypes, values, NULL, SPI_OK_UPDATE_RETURNING);
		moved = list_concat_unique_oid(moved, SpiOidColumn());
	}
	if (moved == NIL)
		return;
	/* every backend reads the watches again */
	InvalidateWatchCache();
	foreach(lc, moved)
	{
		CHECK_FOR_INTERRUPTS();
		RenameRowTrigger(lfirst_oid(lc), oldname, newname);
	}
}
