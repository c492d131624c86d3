/*-------------------------------------------------------------------------
 *
 * lineage.c
 *	  SQL entry point of the rule of lineage (doc/lineage.md, "Which run
 *	  wins"): backfill._lineage_pieces, which backfill.lineage() reads.  The
 *	  rule is orchestration/lineage.c's (LineagePieces).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill__lineage_pieces);

/* The columns of _lineage_pieces. */
#define PIECE_COLUMNS 10

/*
 * backfill__lineage_pieces
 *		_lineage_pieces(target, range_start, range_end) -> setof (piece_start,
 *		piece_end, run_id, settled_status, definition_version, executed_by,
 *		cleared, finished_at, latest_status, reasons): the pieces of
 *		LineagePieces, read as the caller (the catalog's row-level security
 *		applies, so a caller sees the history of the tables it may read).
 *		STRICT.
 */
Datum
backfill__lineage_pieces(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Piece	   *pieces;
	int			np;
	int			i;

	CitusRequireCoordinator();
	RequireCatalogVersion();

	SpiConnect();
	np = LineagePieces(PG_GETARG_OID(0), PG_GETARG_TIMESTAMPTZ(1),
					   PG_GETARG_TIMESTAMPTZ(2), false, &pieces);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (i = 0; i < np; i++)
	{
		Piece	   *p = &pieces[i];
		Datum		values[PIECE_COLUMNS];
		bool		nulls[PIECE_COLUMNS];
		bool		won = p->settled != CHUNK_NONE;
		NameData	executor;

		CHECK_FOR_INTERRUPTS();
		memset(nulls, true, sizeof(nulls));
		values[0] = TimestampTzGetDatum(p->lo);
		values[1] = TimestampTzGetDatum(p->hi);
		nulls[0] = nulls[1] = false;
		if (won)
		{
			values[2] = Int64GetDatum(p->run_id);
			values[3] = CStringGetTextDatum(ChunkStatusName(p->settled));
			values[4] = Int32GetDatum(p->version);
			values[6] = BoolGetDatum(p->cleared);
			nulls[2] = nulls[3] = nulls[4] = nulls[6] = false;
			if (p->executed_by != NULL)
			{
				namestrcpy(&executor, p->executed_by);
				values[5] = NameGetDatum(&executor);
				nulls[5] = false;
			}
			if (!p->finished_null)
			{
				values[7] = TimestampTzGetDatum(p->finished_at);
				nulls[7] = false;
			}
			if (p->nreasons > 0)
			{
				Datum	   *texts = palloc(sizeof(Datum) * p->nreasons);
				int			k;

				for (k = 0; k < p->nreasons; k++)
					texts[k] = CStringGetTextDatum(p->reasons[k]);
				values[9] = MakeArray(texts, NULL, p->nreasons, TEXTOID);
				nulls[9] = false;
			}
		}
		if (p->latest != CHUNK_NONE)
		{
			values[8] = CStringGetTextDatum(ChunkStatusName(p->latest));
			nulls[8] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	SpiFinish();
	return (Datum) 0;
}
