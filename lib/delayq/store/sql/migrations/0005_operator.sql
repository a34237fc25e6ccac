-- delayq schema, version 5: the operator's side (paused queues, runner heartbeats, metrics from the database).
-- {queues}: one row per paused queue (the row is the pause: resume deletes it); every runner reads it before claiming.
-- {workers}: one row per running process that beats (workers.Heartbeat): who runs what, and since when; a row whose
--   last_seen is older than a few of its own beats (every) belongs to a process that stopped beating.
-- {tallies}: what purge deleted, folded into per-queue totals, so the counters derived from the attempts and jobs
--   tables (metrics.py) never go down when old rows are purged. kind: outcome, duration, lateness, jobs.
-- attempts.queue and attempts.due_at: an attempt's queue and the due time it was claimed at (lateness = started_at -
--   due_at), written with the attempt; older attempts get their job's queue here and no due time.

CREATE TABLE {queues} (
  queue         VARCHAR(64)  NOT NULL,
  paused_at     DOUBLE       NOT NULL,
  reason        VARCHAR(255) NULL,
  PRIMARY KEY (queue)
) {table_options};

CREATE TABLE {workers} (
  id            CHAR(32)     NOT NULL,
  host          VARCHAR(255) NOT NULL,
  pid           INT          NOT NULL,
  queues        TEXT         NOT NULL,
  concurrency   INT          NOT NULL,
  every         DOUBLE       NOT NULL,
  started_at    DOUBLE       NOT NULL,
  last_seen     DOUBLE       NOT NULL,
  stopped_at    DOUBLE       NULL,
  running       TEXT         NULL,
  PRIMARY KEY (id)
) {table_options};

CREATE TABLE {tallies} (
  queue         VARCHAR(64)  NOT NULL,
  kind          VARCHAR(16)  NOT NULL,
  name          VARCHAR(32)  NOT NULL,
  n             BIGINT       NOT NULL,
  total         DOUBLE       NOT NULL,
  PRIMARY KEY (queue, kind, name)
) {table_options};

ALTER TABLE {attempts} ADD COLUMN queue VARCHAR(64) NULL;
ALTER TABLE {attempts} ADD COLUMN due_at DOUBLE NULL;
UPDATE {attempts} SET queue = (SELECT j.queue FROM {jobs} j WHERE j.id = {attempts}.job_id);
CREATE INDEX {jobs_ix}attempts_by_finished ON {attempts} (finished_at);
