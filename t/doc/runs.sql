-- doc/runs.md: the quick start's tables and registration (doc/quickstart.md steps 0-1).
\i t/doc/pagedeck.sql
\i t/doc/pagedeck_register.sql
