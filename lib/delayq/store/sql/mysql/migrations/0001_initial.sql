-- delayq schema, version 1 (MySQL 8 / MariaDB >= 10.6).
-- {jobs} and {attempts} are replaced by the prefixed table names.
-- Times are epoch seconds (DOUBLE): FROM_UNIXTIME(due_at) reads them.

CREATE TABLE IF NOT EXISTS {jobs} (
  id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  queue         VARCHAR(64)  NOT NULL DEFAULT 'default',
  ext           VARCHAR(191) NULL COMMENT 'business key, e.g. order:123 (the seeds'' ext_string)',
  unique_live   TINYINT      NULL COMMENT '1 while a --unique job is pending or running, else NULL',
  callable      VARCHAR(255) NOT NULL COMMENT 'package.module:function or module:Class.method',
  args          MEDIUMTEXT   NOT NULL COMMENT 'JSON object of keyword arguments',
  status        VARCHAR(16)  NOT NULL COMMENT 'pending, running, succeeded, failed, cancelled',
  attempts      INT          NOT NULL DEFAULT 0,
  max_attempts  INT          NOT NULL,
  ladder        VARCHAR(255) NOT NULL,
  due_at        DOUBLE       NOT NULL,
  deadline      DOUBLE       NULL,
  priority      SMALLINT     NOT NULL DEFAULT 0,
  claim_token   CHAR(32)     NULL,
  lease_until   DOUBLE       NULL,
  last_error    TEXT         NULL,
  created_at    DOUBLE       NOT NULL,
  started_at    DOUBLE       NULL,
  finished_at   DOUBLE       NULL,
  updated_at    DOUBLE       NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uniq_live (queue, ext, unique_live),
  KEY by_ext (ext),
  KEY by_due (status, queue, due_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS {attempts} (
  id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  job_id        BIGINT UNSIGNED NOT NULL,
  attempt       INT          NOT NULL,
  started_at    DOUBLE       NOT NULL,
  finished_at   DOUBLE       NOT NULL,
  outcome       VARCHAR(16)  NOT NULL COMMENT 'succeeded, retry, failed',
  error         TEXT         NULL,
  PRIMARY KEY (id),
  KEY by_job (job_id, attempt)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
