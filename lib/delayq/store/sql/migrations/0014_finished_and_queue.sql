-- delayq schema, version 14: two operator reads that walked the jobs table (issue 26).
-- by_finished: "finished in the last 10 minutes" read every row newer than the matches (1,063 ms at 1M jobs).
-- by_queue: a queue's jobs, newest first, walked the primary key back through the other queues' rows (843 ms).
-- Neither changed the no-op burst's MariaDB CPU a job beyond the run-to-run spread (117.0 -> 116.5 us, median of
--   6 alternated bursts; benchmarks/index_cost.py): a job sets finished_at once, and its queue never.

CREATE INDEX {jobs_ix}by_finished ON {jobs} (finished_at);
CREATE INDEX {jobs_ix}by_queue ON {jobs} (queue, id);
