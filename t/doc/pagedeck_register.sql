-- The quick start's registration of daily_revenue (doc/quickstart.md, step 1), after
-- t/doc/pagedeck.sql.
SELECT backfill.register(
    'daily_revenue', 'day',
    source      => $$SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS revenue
                      FROM public.payments
                     WHERE paid_at >= $1 AND paid_at < $2
                     GROUP BY 1$$,
    definition  => 'v1: every payment counts',
    ledger      => $$SELECT sum(payments) FROM public.payment_ledger
                     WHERE day >= $1 AND day < $2$$,
    measure     => 'sum(payments)');
