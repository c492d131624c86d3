/*-------------------------------------------------------------------------
 *
 * preview.c
 *	  preview's engine part (PreviewRange): the replacement of a range
 *	  with the target's current definition, as its author, always rolled
 *	  back.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/*
 * PreviewRange
 *		See backfill.h: what replacing [lo, hi) of target with its current
 *		definition would do, computed as the definition's author in an
 *		internal subtransaction that is always rolled back, so nothing
 *		changes.  The figures are in the caller's memory context.  Caller
 *		is connected to SPI; [lo, hi) has passed CheckRangeBounds.
 */
void
PreviewRange(Oid target, TimestampTz lo, TimestampTz hi, PreviewResult *out)
{
	MemoryContext cxt;
	ResourceOwner owner = CurrentResourceOwner;
	Definition *def;
	char	   *time_column;
	char	   *measure;
	char	   *ledger;
	char	   *source;
	Oid			author;
	int32		version;
	ReplaceResult rr;
	volatile Datum ledger_value = (Datum) 0;
	volatile bool ledger_null = true;

	CheckTargetPrivileges(target);

	cxt = CurrentMemoryContext;
	def = LoadDefinition(target, 0);
	time_column = def->time_column;
	measure = def->measure;
	ledger = def->ledger;
	source = def->source;
	author = def->author;
	version = def->version;
	CheckAuthor(author, target, version);
	memset(&rr, 0, sizeof(rr));

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		AuthorGate	gate;
		ReplaceRequest req = {.target = target,.time_column = time_column,
			.lo = lo,.hi = hi,.source = source,.strategy = STRATEGY_DELETE,
		.measure = measure};

		/* as the author; the rollback below restores the caller */
		SpiExecPinned("SET CONSTRAINTS ALL IMMEDIATE", 0, NULL, NULL, NULL,
					  false, 0, SPI_OK_UTILITY);
		AuthorGateEnter(&gate, author, target, version,
						GetConfigOption("search_path", false, false),
						GetConfigOption("TimeZone", false, false));
		CheckTargetPrivileges(target);
		ReplaceRange(&req, &rr);
		if (ledger != NULL)
		{
			bool		isnull;
			Datum		lv = LedgerValue(ledger, lo, hi, &isnull);

			ledger_value = lv;
			ledger_null = isnull;
		}
		AuthorGateLeave(&gate);
	}
	PG_CATCH();
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;

	out->rr = rr;
	out->ledger_value = ledger_value;
	out->ledger_null = ledger_null;
}
