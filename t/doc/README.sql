-- README.md: the role the install section grants pg_cron to.
CREATE ROLE etl;
