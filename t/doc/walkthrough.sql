-- doc/walkthrough.md continues the quick start (doc/quickstart.md): its data, run 1
-- (the three days, probe then the rest) and run 2 (the same range again
-- with backfill.backfill, as the demo does).
\i t/doc/pagedeck.sql
\i t/doc/pagedeck_register.sql
SELECT backfill.plan('daily_revenue', '2026-11-18', '2026-11-21',
                     note => 'payments job failed Wed-Fri; fixed by Theo');
CALL backfill.run(1);
CALL backfill.run(1);
CALL backfill.backfill('daily_revenue', '2026-11-18', '2026-11-21', note => 'rerun to show idempotency');
