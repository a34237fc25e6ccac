-- delayq schema, version 2: leases per job, at-most-once jobs, steps, alerts (crash recovery).

ALTER TABLE {jobs} ADD COLUMN lease_seconds REAL NULL;
ALTER TABLE {jobs} ADD COLUMN at_most_once INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {jobs} ADD COLUMN alert_pending INTEGER NULL;
ALTER TABLE {jobs} ADD COLUMN alerted_at REAL NULL;
CREATE INDEX IF NOT EXISTS {jobs}_by_alert ON {jobs} (alert_pending);

CREATE TABLE IF NOT EXISTS {steps} (
  job_id        INTEGER NOT NULL,
  name          TEXT    NOT NULL,
  mode          TEXT    NOT NULL,
  position      INTEGER NOT NULL,
  status        TEXT    NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  last_error    TEXT    NULL,
  started_at    REAL    NULL,
  finished_at   REAL    NULL,
  updated_at    REAL    NOT NULL,
  PRIMARY KEY (job_id, name)
);
