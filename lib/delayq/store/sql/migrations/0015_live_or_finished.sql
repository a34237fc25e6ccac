-- delayq schema, version 15: the live and the finished jobs, each newest first (issue 26).
-- is_finished: 1 once the job has finished (succeeded, failed, cancelled, timed out: finished_at is set), 0 while it
--   is pending or running. The database computes it (a generated column): no statement writes it.
-- by_is_finished: a page of pending jobs reads the live rows alone, and a page of succeeded jobs the finished ones
--   alone. Without it the first page of "succeeded" walked the primary key back through every newer pending row
--   (about 1 s a million), and a deep page of "pending" through every older finished row (426 ms at 20 million).
-- A job's entry moves once, when it finishes (benchmarks/index_cost.py --column, docs/PERFORMANCE.md).

ALTER TABLE {jobs} ADD COLUMN is_finished TINYINT AS (finished_at IS NOT NULL) VIRTUAL;
CREATE INDEX {jobs_ix}by_is_finished ON {jobs} (is_finished, id);
