-- delayq schema, version 12: operator reads that stay flat as the tables grow (issue 26).
-- by_status (status, id): a status filter's newest-first page reads its own rows (the failed jobs), where the
--   primary key read backwards walked past every newer row of other statuses (a block of pending jobs, say).
-- by_finished (finished_at): "finished in the last 10 minutes" reads those rows only. Written once a job, when it
--   ends (and again if it is retried by hand).
-- {counts}: jobs per queue and status as compensate last counted them (Control.count_jobs), for the groups too big
--   to count on every page (above Reports.LIVE_UPTO rows); smaller groups are counted live, from the indexes.

CREATE INDEX {jobs_ix}by_status ON {jobs} (status, id);
CREATE INDEX {jobs_ix}by_finished ON {jobs} (finished_at);
CREATE TABLE {counts} (
  queue         VARCHAR(64)  NOT NULL,
  status        VARCHAR(16)  NOT NULL,
  n             BIGINT       NOT NULL,
  counted_at    DOUBLE       NOT NULL,
  PRIMARY KEY (queue, status)
) {table_options};
