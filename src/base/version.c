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

#include "backfill.h"

#ifndef BACKFILL_VERSION
#error "BACKFILL_VERSION must be defined (the Makefile takes it from backfill.control)"
#endif

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
	char	   *installed = CatalogInstalledVersion();

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
	char	   *installed = CatalogInstalledVersion();

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
