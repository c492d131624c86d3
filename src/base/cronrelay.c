/*-------------------------------------------------------------------------
 *
 * cronrelay.c
 *	  The relay to pg_cron's database: one fixed statement on pg_cron's
 *	  tables and functions, run in the database pg_cron serves
 *	  (cron.database_name) when that is not this one, by a background
 *	  worker connected there as the extension owner.
 *
 * pg_cron keeps its jobs in one database per cluster.  When backfill is
 * installed in another one, its jobs are still pg_cron's rows there
 * (created with cron.schedule_in_database, so that they run here, as the
 * scheduling role), and no SQL of this database can read or write them.
 * A background worker can connect to any database of the cluster: the
 * relay starts one, hands it the statement and its text parameters in
 * dynamic shared memory, and reads back, through a message queue, the
 * result rows (every column as text) or the error, exactly as pg_cron
 * reads back the outcome of its own background workers.  The worker's
 * transaction commits before it answers: what it did stays, whatever the
 * caller's transaction does afterwards (doc/scheduling.md says what that
 * means for each call).
 *
 * Only CatalogCronQuery (catalog.c) calls the relay, with the extension
 * owner, so the worker has in pg_cron's database the rights CatalogExec
 * has here, and the same rules: search_path pinned to 'pg_catalog,
 * pg_temp', the statement schema-qualified with $n parameters, and the
 * owner-rights guard on (guard.c: in that database the statement may use
 * only pg_catalog's objects and pg_cron's).  t/037_privilege_lint.pl
 * checks that this worker is the only place besides the parallel chunk
 * worker that connects a background worker, and that it pins and guards.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "libpq/pqformat.h"
#include "libpq/pqmq.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "backfill.h"

#define RELAY_MAGIC			0x42464352	/* "BFCR" */
#define RELAY_KEY_REQUEST	1
#define RELAY_KEY_QUEUE		2
#define RELAY_QUEUE_SIZE	16384

/* The reply of a worker that succeeded: its rows, after its commit. */
#define RELAY_MSG_ROWS		'T'

/* What the caller hands the worker, in bgw_extra. */
typedef struct RelayArgs
{
	Oid			database;
	Oid			role;
} RelayArgs;

StaticAssertDecl(sizeof(RelayArgs) <= BGW_EXTRALEN,
				 "RelayArgs must fit in bgw_extra");

PGDLLEXPORT void backfill_cron_relay(Datum main_arg);

/*
 * RelayPack
 *		The request as one block of shared memory: the number of
 *		parameters, the statement, then each parameter as a flag ('n' for
 *		NULL, 'v' for a value) followed by its text, each string ending in
 *		a zero byte.
 */
static StringInfo
RelayPack(const char *sql, int nparams, const char **params)
{
	StringInfo	buf = makeStringInfo();
	int			i;

	appendBinaryStringInfo(buf, (char *) &nparams, sizeof(int));
	appendBinaryStringInfo(buf, sql, strlen(sql) + 1);
	for (i = 0; i < nparams; i++)
	{
		appendStringInfoChar(buf, params[i] == NULL ? 'n' : 'v');
		if (params[i] != NULL)
			appendBinaryStringInfo(buf, params[i], strlen(params[i]) + 1);
	}
	return buf;
}

/*
 * RelayRows
 *		Parse the reply of a worker (RELAY_MSG_ROWS, its type byte read)
 *		into CronRows, in the current memory context.
 */
static CronRows *
RelayRows(StringInfo msg)
{
	CronRows   *rows = palloc0(sizeof(CronRows));
	int			i;

	rows->nrows = pq_getmsgint(msg, 4);
	rows->ncols = pq_getmsgint(msg, 4);
	if (rows->nrows < 0 || rows->ncols < 0 || rows->ncols > 100)
		elog(ERROR, "backfill: malformed reply of the pg_cron relay");
	rows->values = palloc0(sizeof(char *) * ((Size) rows->nrows * rows->ncols + 1));
	for (i = 0; i < rows->nrows * rows->ncols; i++)
	{
		int			len = pq_getmsgint(msg, 4);

		if (len >= 0)
		{
			const char *data = pq_getmsgbytes(msg, len);

			rows->values[i] = palloc(len + 1);
			memcpy(rows->values[i], data, len);
			rows->values[i][len] = '\0';
		}
	}
	pq_getmsgend(msg);
	return rows;
}

/*
 * RelayFailed
 *		An error of the relay itself (no worker could be started, or it
 *		ended without an answer) as ErrorData, for a caller that takes
 *		errors back instead of raising them.
 */
static ErrorData *
RelayFailed(int sqlerrcode, const char *message, const char *hint)
{
	ErrorData  *edata = palloc0(sizeof(ErrorData));

	edata->elevel = ERROR;
	edata->sqlerrcode = sqlerrcode;
	edata->message = pstrdup(message);
	edata->hint = hint ? pstrdup(hint) : NULL;
	return edata;
}

/*
 * CronRelayRun
 *		See backfill.h: run sql (schema-qualified, $n text parameters, one
 *		SELECT) in database "database" as role "role" in a background
 *		worker; its result rows, every column as text.  When the worker
 *		cannot be started or its statement fails: with "error" NULL, the
 *		error is raised here (the worker's own, with its SQLSTATE); else
 *		NULL is returned and *error says why.  Waits for the worker to
 *		exit, serving interrupts; a caller that is cancelled meanwhile
 *		terminates it.
 */
CronRows *
CronRelayRun(Oid database, Oid role, const char *sql, int nparams,
			 const char **params, ErrorData **error)
{
	StringInfo	request = RelayPack(sql, nparams, params);
	shm_toc_estimator e;
	Size		size;
	dsm_segment *seg;
	shm_toc    *toc;
	char	   *space;
	shm_mq	   *mq;
	shm_mq_handle *volatile mqh = NULL;
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	RelayArgs	args;
	CronRows   *volatile rows = NULL;
	ErrorData  *volatile edata = NULL;

	shm_toc_initialize_estimator(&e);
	shm_toc_estimate_chunk(&e, request->len);
	shm_toc_estimate_chunk(&e, RELAY_QUEUE_SIZE);
	shm_toc_estimate_keys(&e, 2);
	size = shm_toc_estimate(&e);

	seg = dsm_create(size, 0);
	toc = shm_toc_create(RELAY_MAGIC, dsm_segment_address(seg), size);
	space = shm_toc_allocate(toc, request->len);
	memcpy(space, request->data, request->len);
	shm_toc_insert(toc, RELAY_KEY_REQUEST, space);
	mq = shm_mq_create(shm_toc_allocate(toc, RELAY_QUEUE_SIZE), RELAY_QUEUE_SIZE);
	shm_toc_insert(toc, RELAY_KEY_QUEUE, mq);
	shm_mq_set_receiver(mq, MyProc);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "backfill");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "backfill_cron_relay");
	snprintf(worker.bgw_name, BGW_MAXLEN, "backfill pg_cron relay for PID %d",
			 MyProcPid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "backfill pg_cron relay");
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	worker.bgw_notify_pid = MyProcPid;
	args.database = database;
	args.role = role;
	memcpy(worker.bgw_extra, &args, sizeof(args));

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		dsm_detach(seg);
		edata = RelayFailed(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
							"no background worker slot is free to reach pg_cron's database",
							"Raise max_worker_processes in postgresql.conf (pg_cron's ticks and backfill's relay to pg_cron's database each take one) and restart the server.");
		if (error != NULL)
		{
			*error = edata;
			return NULL;
		}
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("%s", edata->message),
				 errhint("%s", edata->hint)));
	}

	PG_TRY();
	{
		mqh = shm_mq_attach(mq, seg, handle);
		for (;;)
		{
			Size		nbytes;
			void	   *data;
			StringInfoData msg;
			char		msgtype;

			CHECK_FOR_INTERRUPTS();
			if (shm_mq_receive(mqh, &nbytes, &data, false) != SHM_MQ_SUCCESS)
				break;			/* the worker has gone */
			initStringInfo(&msg);
			appendBinaryStringInfo(&msg, data, nbytes);
			msgtype = pq_getmsgbyte(&msg);
			if (msgtype == 'E' && edata == NULL)
			{
				ErrorData  *ed = palloc0(sizeof(ErrorData));

				pq_parse_errornotice(&msg, ed);
				ed->elevel = ERROR;
				edata = ed;
			}
			else if (msgtype == RELAY_MSG_ROWS && rows == NULL)
				rows = RelayRows(&msg);
			/* notices of the worker ('N') are dropped */
			pfree(msg.data);
		}
		(void) WaitForBackgroundWorkerShutdown(handle);
	}
	PG_CATCH();
	{
		(void) TerminateBackgroundWorker(handle);
		dsm_detach(seg);
		PG_RE_THROW();
	}
	PG_END_TRY();
	dsm_detach(seg);

	if (rows != NULL && edata == NULL)
		return rows;
	if (edata == NULL)
		edata = RelayFailed(ERRCODE_CONNECTION_FAILURE,
							"the background worker that reaches pg_cron's database ended without an answer",
							"The server log says why.");
	if (error != NULL)
	{
		*error = edata;
		return NULL;
	}
	ThrowErrorData(edata);
	pg_unreachable();
}

/*
 * RelayReply
 *		The rows of the statement just run (SPI_tuptable), every column as
 *		text, packed as the caller's RelayRows reads them, in memory that
 *		outlives the transaction.
 */
static StringInfo
RelayReply(void)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	StringInfo	buf = makeStringInfo();	/* grows where it was made */
	TupleDesc	desc = SPI_tuptable->tupdesc;
	uint64		r;
	int			c;

	MemoryContextSwitchTo(old);
	if (SPI_processed > (uint64) 100000)
		elog(ERROR, "backfill: the pg_cron relay returned too many rows");
	pq_sendint32(buf, (int32) SPI_processed);
	pq_sendint32(buf, desc->natts);
	for (r = 0; r < SPI_processed; r++)
	{
		CHECK_FOR_INTERRUPTS();
		for (c = 1; c <= desc->natts; c++)
		{
			char	   *value = SPI_getvalue(SPI_tuptable->vals[r], desc, c);

			if (value == NULL)
				pq_sendint32(buf, -1);
			else
			{
				pq_sendint32(buf, (int32) strlen(value));
				pq_sendbytes(buf, value, strlen(value));
				pfree(value);
			}
		}
	}
	return buf;
}

/*
 * backfill_cron_relay
 *		The main of the relay's background worker (bgw_main_arg: the
 *		dynamic shared memory segment; bgw_extra: RelayArgs): send every
 *		message, errors included, to the caller's queue; connect to
 *		pg_cron's database as the role given (the extension owner, from
 *		CatalogCronQuery); run the one statement with search_path pinned
 *		and the owner-rights guard on; commit; answer with its rows; exit.
 *		An error anywhere, connecting included, reaches the caller as an
 *		error message and ends the worker.
 */
void
backfill_cron_relay(Datum main_arg)
{
	RelayArgs	args;
	dsm_segment *seg;
	shm_toc    *toc;
	shm_mq	   *mq;
	shm_mq_handle *mqh;
	char	   *p;
	char	   *sql;
	int			nparams;
	int			i;
	Oid		   *types;
	Datum	   *values;
	char	   *nulls;
	int			nest;
	int			guard;
	StringInfo	reply;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	CurrentResourceOwner = ResourceOwnerCreate(NULL, "backfill pg_cron relay");
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill: could not map the pg_cron relay's shared memory")));
	toc = shm_toc_attach(RELAY_MAGIC, dsm_segment_address(seg));
	if (toc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill: bad magic number in the pg_cron relay's shared memory")));
	mq = shm_toc_lookup(toc, RELAY_KEY_QUEUE, false);
	shm_mq_set_sender(mq, MyProc);
	mqh = shm_mq_attach(mq, seg, NULL);
	pq_redirect_to_shm_mq(seg, mqh);

	/* the request, copied out of shared memory */
	p = shm_toc_lookup(toc, RELAY_KEY_REQUEST, false);
	memcpy(&nparams, p, sizeof(int));
	p += sizeof(int);
	sql = MemoryContextStrdup(TopMemoryContext, p);
	p += strlen(p) + 1;
	types = MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * (nparams + 1));
	values = MemoryContextAlloc(TopMemoryContext, sizeof(Datum) * (nparams + 1));
	nulls = MemoryContextAllocZero(TopMemoryContext, nparams + 1);
	for (i = 0; i < nparams; i++)
	{
		types[i] = TEXTOID;
		if (*p++ == 'n')
		{
			nulls[i] = 'n';
			values[i] = (Datum) 0;
		}
		else
		{
			nulls[i] = ' ';
			values[i] = PointerGetDatum(MemoryContextStrdup(TopMemoryContext, p));
			p += strlen(p) + 1;
		}
	}

	BackgroundWorkerInitializeConnectionByOid(args.database, args.role, 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, sql);
	PushActiveSnapshot(GetTransactionSnapshot());
	for (i = 0; i < nparams; i++)
	{
		if (nulls[i] != 'n')
			values[i] = CStringGetTextDatum(DatumGetPointer(values[i]));
	}
	SpiConnect();
	nest = SpiPinSearchPath();
	guard = GuardPush();
	(void) SpiExec(sql, nparams, types, values, nulls, false, 0,
				   SPI_OK_SELECT);
	reply = RelayReply();
	GuardPop(guard);
	SpiUnpinSearchPath(nest);
	SpiFinish();
	PopActiveSnapshot();
	CommitTransactionCommand();

	/* pq_endmessage sends the type byte kept in cursor (pqformat.c) */
	reply->cursor = RELAY_MSG_ROWS;
	pq_endmessage(reply);
	pgstat_report_activity(STATE_IDLE, NULL);
	dsm_detach(seg);
	proc_exit(0);
}
