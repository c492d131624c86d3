/*-------------------------------------------------------------------------
 *
 * version.c
 *	  Which version of the extension's SQL objects this library serves.
 *
 * A package upgrade replaces backfill.so at once, while the catalog tables,
 * views and function declarations stay at the installed version until
 * ALTER EXTENSION backfill UPDATE runs.  In between, a call (a pg_cron tick
 * among them) would run new C against old tables.  Every entry point that
 * reads the catalog therefore first checks that pg_extension's extversion
 * is the version the library was built for (BACKFILL_VERSION, from
 * backfill.control through the Makefile) and otherwise refuses, naming the
 * command that ends the mismatch.  The C symbols of every released script
 * stay exported (t/004_versions.pl), so old declarations reach this check
 * instead of failing to load.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "backfill.h"

#ifndef BACKFILL_VERSION
#error "BACKFILL_VERSION must be defined (the Makefile takes it from backfill.control)"
#endif

/*
 * The TID of backfill's pg_extension row when it was last found, so that
 * the next call (every entry point's and every watch trigger's) fetches
 * that one tuple instead of scanning the name index.
 */
static ItemPointerData extension_tid;
static bool extension_tid_valid = false;

/*
 * ReadExtensionRow
 *		The owner and extversion (palloc'd, NULL if null) of tup, a
 *		pg_extension row.
 */
static void
ReadExtensionRow(Relation rel, HeapTuple tup, Oid *owner, char **version)
{
	bool		isnull;
	Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
								 RelationGetDescr(rel), &isnull);

	*owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	*version = isnull ? NULL : text_to_cstring(DatumGetTextPP(d));
}

/*
 * FetchRememberedRow
 *		Read the tuple at extension_tid if that tuple is visible to the
 *		catalog snapshot and is backfill's row; false otherwise.  The row
 *		is unique by name, so a visible row named backfill is the current
 *		one: after ALTER EXTENSION UPDATE or DROP EXTENSION the remembered
 *		tuple is dead to newer snapshots, and the caller scans again.
 */
static bool
FetchRememberedRow(Relation rel, Oid *owner, char **version)
{
	HeapTupleData tuple;
	Buffer		buf;
	Snapshot	snapshot;
	bool		found = false;

	if (!extension_tid_valid ||
		ItemPointerGetBlockNumber(&extension_tid) >= RelationGetNumberOfBlocks(rel))
		return false;
	snapshot = RegisterSnapshot(GetCatalogSnapshot(ExtensionRelationId));
	tuple.t_self = extension_tid;
	if (heap_fetch(rel, snapshot, &tuple, &buf, false))
	{
		if (strcmp(NameStr(((Form_pg_extension) GETSTRUCT(&tuple))->extname),
				   "backfill") == 0)
		{
			found = true;
			ReadExtensionRow(rel, &tuple, owner, version);
		}
		ReleaseBuffer(buf);
	}
	UnregisterSnapshot(snapshot);
	return found;
}

/*
 * BackfillExtensionRow
 *		See backfill.h: whether extension backfill is installed in this
 *		database, with its owner and extversion (palloc'd; NULL if null).
 *		Every entry point and every catalog statement asks, so the row's
 *		TID is remembered and the next call fetches that one tuple instead
 *		of scanning pg_extension's name index (FetchRememberedRow).
 */
bool
BackfillExtensionRow(Oid *owner, char **version)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found;

	*owner = InvalidOid;
	*version = NULL;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	found = FetchRememberedRow(rel, owner, version);
	if (!found)
	{
		extension_tid_valid = false;
		ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
					F_NAMEEQ, CStringGetDatum("backfill"));
		scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
		tup = systable_getnext(scan);
		if (HeapTupleIsValid(tup))
		{
			found = true;
			ReadExtensionRow(rel, tup, owner, version);
			extension_tid = tup->t_self;
			extension_tid_valid = true;
		}
		systable_endscan(scan);
	}
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * InstalledVersion
 *		extversion of extension backfill in this database, palloc'd; NULL
 *		when the extension is not installed here.
 */
static char *
InstalledVersion(void)
{
	Oid			owner;
	char	   *version;

	(void) BackfillExtensionRow(&owner, &version);
	return version;
}

/*
 * CompareVersions
 *		<0, 0 or >0 as version a is older than, the same as or newer than b,
 *		comparing the dot-separated numbers one by one ("0.10.0" > "0.9.1").
 */
static int
CompareVersions(const char *a, const char *b)
{
	while (*a != '\0' || *b != '\0')
	{
		long		na = strtol(a, (char **) &a, 10);
		long		nb = strtol(b, (char **) &b, 10);

		if (na != nb)
			return na < nb ? -1 : 1;
		if (*a == '.')
			a++;
		else if (*a != '\0')
			return strcmp(a, b);	/* not a plain version: any order */
		if (*b == '.')
			b++;
		else if (*b != '\0')
			return strcmp(a, b);
	}
	return 0;
}

/*
 * CatalogVersionMatches
 *		Whether the installed extension is at the library's version; for the
 *		callers that must not raise (the event trigger).
 */
bool
CatalogVersionMatches(void)
{
	char	   *installed = InstalledVersion();

	return installed != NULL && strcmp(installed, BACKFILL_VERSION) == 0;
}

/*
 * RequireCatalogVersion
 *		55000 unless extension backfill is installed in this database at the
 *		version this library was built for.  Called first by every entry
 *		point that reads or writes the catalog.
 */
void
RequireCatalogVersion(void)
{
	char	   *installed = InstalledVersion();

	if (installed == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"backfill\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION backfill.")));
	if (strcmp(installed, BACKFILL_VERSION) == 0)
		return;
	if (CompareVersions(installed, BACKFILL_VERSION) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"backfill\" is at version %s, but its library is version %s",
						installed, BACKFILL_VERSION),
				 errdetail("The library was upgraded and the extension's SQL objects were not updated to match it."),
				 errhint("Run ALTER EXTENSION backfill UPDATE.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("extension \"backfill\" is at version %s, but its library is version %s",
					installed, BACKFILL_VERSION),
			 errdetail("The library is older than the extension's SQL objects."),
			 errhint("Install the backfill library of version %s.", installed)));
}
