-- delayq schema, version 4: transactional enqueue, time limits, jobs that kill their runner.
-- index_pending: 1 while a job written inside the application's own transaction still waits for its
--   due-index entry (an outbox: the runner adds the entry once the row is committed and clears the flag).
-- timeout_seconds: how long one attempt may run before it is stopped and counted as failed (NULL: the default).
-- crashes: how many times a runner died while running this job (a poison pill fails after 3).

ALTER TABLE {jobs} ADD COLUMN index_pending TINYINT NULL;
ALTER TABLE {jobs} ADD COLUMN timeout_seconds DOUBLE NULL;
ALTER TABLE {jobs} ADD COLUMN crashes INT NOT NULL DEFAULT 0;
CREATE INDEX {jobs_ix}by_outbox ON {jobs} (index_pending);
-- by_claim: the in-database claim walks due jobs of one queue highest priority first (a descending key part:
-- MySQL 8 and MariaDB >= 10.8 scan it in order; older MariaDB parses DESC and sorts the due rows instead).
CREATE INDEX {jobs_ix}by_claim ON {jobs} (status, queue, priority DESC, due_at);
