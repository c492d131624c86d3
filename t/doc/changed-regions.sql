-- doc/changed-regions.md: the quick start's tables, daily_revenue built
-- over 11-30 November (so its watermark is December 1), and a settlements
-- table read through a view (a source without a trigger) with its own
-- target, built over the same days.
\i t/doc/pagedeck.sql
\i t/doc/pagedeck_register.sql
SET client_min_messages = warning;
CALL backfill.backfill('daily_revenue', '2026-11-11', '2026-12-01');
CREATE TABLE processor_settlements (day date PRIMARY KEY, settled numeric(12,2) NOT NULL);
INSERT INTO processor_settlements
SELECT paid_at::date, sum(amount) FROM payments GROUP BY 1;
CREATE VIEW settlements AS SELECT day, settled FROM processor_settlements;
CREATE TABLE daily_settled (day date PRIMARY KEY, settled numeric(12,2) NOT NULL);
SELECT backfill.register('daily_settled', 'day',
    source  => $$SELECT day, settled FROM public.settlements WHERE day >= $1 AND day < $2$$,
    ledger  => $$SELECT sum(settled) FROM public.settlements WHERE day >= $1 AND day < $2$$,
    measure => 'sum(settled)', ledger_gate => false);
CALL backfill.backfill('daily_settled', '2026-11-11', '2026-12-01');
RESET client_min_messages;
