-- delayq schema, version 12: operator reads whose cost does not grow with the tables (issue 26).
-- {counts}: jobs per queue and status as compensate last counted them (Control.count_jobs), for the groups too big
--   to count on every page (above Reports.LIVE_UPTO rows); smaller groups are counted live, from the indexes.
-- No index is added to the jobs table: an index on status, (status, id), made the no-op burst's MariaDB cost 24%
--   more CPU a job (each job changes status twice), one on finished_at 7% (docs/PERFORMANCE.md, issue 26;
--   version 14 measured that one again, on a private server, and found no cost: it adds it).

CREATE TABLE {counts} (
  queue         VARCHAR(64)  NOT NULL,
  status        VARCHAR(16)  NOT NULL,
  n             BIGINT       NOT NULL,
  counted_at    DOUBLE       NOT NULL,
  PRIMARY KEY (queue, status)
) {table_options};
