-- delayq schema, version 9: the dashboard's long charts (24 hours, 7 days).
-- {rollups}: the attempts of each 5-minute bucket by queue and outcome, with their lateness (started_at - due_at:
--   the sum and count of those whose due time is known, and the largest). compensate rolls up the buckets that
--   ended more than 5 minutes ago (Control.roll_up: delete the bucket range, insert it again, in one transaction,
--   so a bucket rolled twice counts once) and drops those older than 8 days; the charts read them, and the
--   attempts themselves for the last minutes. Claims and outcomes never touch it.

CREATE TABLE {rollups} (
  at            BIGINT       NOT NULL,
  queue         VARCHAR(64)  NOT NULL,
  outcome       VARCHAR(32)  NOT NULL,
  n             INT          NOT NULL,
  late_sum      DOUBLE       NOT NULL,
  late_n        INT          NOT NULL,
  late_max      DOUBLE       NULL,
  PRIMARY KEY (at, queue, outcome)
) {table_options};
