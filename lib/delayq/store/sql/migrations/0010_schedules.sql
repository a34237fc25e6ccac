-- delayq schema, version 10: recurring schedules (schedules.py, scheduler.py).
-- {schedules}: one row per schedule a runner has seen: the latest slot taken (run, skipped or missed, epoch
--   seconds), the job of the latest slot run, whether an operator paused it, and what came of its slots. A runner
--   locks the row (FOR UPDATE) to take the slots that came due, so two runners never both take one.
-- {slots}: one row per slot run, with its job: the unique key on (schedule, slot) is what makes a second job for
--   a slot impossible, whatever the schedules row says (a row deleted by hand, a clock set back). compensate drops
--   the rows older than 8 days (the schedules row keeps the latest).

CREATE TABLE {schedules} (
  name          VARCHAR(100)    NOT NULL,
  last_slot     BIGINT          NOT NULL,
  last_job      BIGINT          NULL,
  paused_at     DOUBLE          NULL,
  ran           BIGINT          NOT NULL DEFAULT 0,
  skipped       BIGINT          NOT NULL DEFAULT 0,
  missed        BIGINT          NOT NULL DEFAULT 0,
  created_at    DOUBLE          NOT NULL,
  updated_at    DOUBLE          NOT NULL,
  PRIMARY KEY (name)
) {table_options};

CREATE TABLE {slots} (
  schedule      VARCHAR(100)    NOT NULL,
  slot          BIGINT          NOT NULL,
  job_id        BIGINT          NOT NULL,
  PRIMARY KEY (schedule, slot)
) {table_options};
