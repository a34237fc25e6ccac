-- delayq schema, version 2: leases per job, at-most-once jobs, steps, alerts (crash recovery).
-- Shared by both dialects. Tokens: {jobs} {steps} table names; {table_options} the dialect's table options;
-- {jobs_ix} the dialect's index-name prefix (SQLite index names are global, MySQL's are per table).

ALTER TABLE {jobs} ADD COLUMN lease_seconds DOUBLE NULL;
ALTER TABLE {jobs} ADD COLUMN at_most_once TINYINT NOT NULL DEFAULT 0;
ALTER TABLE {jobs} ADD COLUMN alert_pending TINYINT NULL;
ALTER TABLE {jobs} ADD COLUMN alerted_at DOUBLE NULL;
CREATE INDEX {jobs_ix}by_alert ON {jobs} (alert_pending);

CREATE TABLE {steps} (
  job_id        BIGINT UNSIGNED NOT NULL,
  name          VARCHAR(64)  NOT NULL,
  mode          VARCHAR(8)   NOT NULL,
  position      INT          NOT NULL,
  status        VARCHAR(16)  NOT NULL,
  attempts      INT          NOT NULL DEFAULT 0,
  last_error    TEXT         NULL,
  started_at    DOUBLE       NULL,
  finished_at   DOUBLE       NULL,
  updated_at    DOUBLE       NOT NULL,
  PRIMARY KEY (job_id, name)
) {table_options};
