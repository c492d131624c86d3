
-- ---------------------------------------------------------------------------
-- The history of one target's range, found without reading every target's
-- (0.2.0).
--
-- The lineage rule (backfill._lineage_pieces: lineage, stale plans, the
-- refresh, undo) reads the chunks of a target's runs that overlap a range.
-- With only chunks_status_idx (run_id, status) the planner read all of
-- backfill.chunks: beside 27,000 chunks of other targets, a stale plan over
-- a year of daily chunks took 48-52 ms, 6-12 ms with this index.  By
-- (run_id, chunk_end) each run's chunks past the range's start are one
-- index range.
-- ---------------------------------------------------------------------------
CREATE INDEX chunks_range_idx ON backfill.chunks (run_id, chunk_end);
