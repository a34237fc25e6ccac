-- delayq schema, version 2: leases per job, at-most-once jobs, steps, alerts (crash recovery).

ALTER TABLE {jobs}
  ADD COLUMN lease_seconds DOUBLE NULL COMMENT 'time-to-run of one attempt, NULL = the default lease' AFTER lease_until,
  ADD COLUMN at_most_once TINYINT NOT NULL DEFAULT 0 COMMENT '1: never re-run by a machine once begun' AFTER lease_seconds,
  ADD COLUMN alert_pending TINYINT NULL COMMENT '1: failed, alert not yet delivered' AFTER last_error,
  ADD COLUMN alerted_at DOUBLE NULL AFTER alert_pending,
  ADD KEY by_alert (alert_pending);

CREATE TABLE IF NOT EXISTS {steps} (
  job_id        BIGINT UNSIGNED NOT NULL,
  name          VARCHAR(64)  NOT NULL,
  mode          VARCHAR(8)   NOT NULL COMMENT 'auto (retryable) or manual (at most once)',
  position      INT          NOT NULL,
  status        VARCHAR(16)  NOT NULL COMMENT 'pending, running, succeeded, failed',
  attempts      INT          NOT NULL DEFAULT 0,
  last_error    TEXT         NULL,
  started_at    DOUBLE       NULL,
  finished_at   DOUBLE       NULL,
  updated_at    DOUBLE       NOT NULL,
  PRIMARY KEY (job_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
