-- delayq schema, version 11: rate and concurrency limits across runners (limits.py, store/sql_limits.py).
-- limit_key, limit_max: a job's key (from its arguments, @delayq.job(limit_key=..., limit=...)) and how many of
--   its key may run at once. NULL for the jobs of no key: their claims and outcomes never look at the tables below,
--   and no index on the jobs table changes (each index on status costs every job twice).
-- {limits}: one row per gate, locked where jobs start: a queue's ("queue:NAME": the tokens of its rate's bucket, at
--   a time) and the lock rows of the keys ("key#N": a key's count is taken under the row of its hash).
-- {limited}: the jobs a limit touched: held back (held = 1, their job pending: "waiting on a limit"), or started
--   under a key (held = 0; counted while their job runs, by its status and lease: a dead holder's slot comes back
--   when its lease runs out). compensate drops the rows whose job ended.

ALTER TABLE {jobs} ADD COLUMN limit_key VARCHAR(191) NULL;
ALTER TABLE {jobs} ADD COLUMN limit_max INT NULL;

CREATE TABLE {limits} (
  name          VARCHAR(100)    NOT NULL,
  tokens        DOUBLE          NOT NULL,
  at            DOUBLE          NOT NULL,
  PRIMARY KEY (name)
) {table_options};

CREATE TABLE {limited} (
  job_id        BIGINT          NOT NULL,
  queue         VARCHAR(64)     NOT NULL,
  lkey          VARCHAR(191)    NULL,
  held          TINYINT         NOT NULL,
  since         DOUBLE          NOT NULL,
  PRIMARY KEY (job_id)
) {table_options};

CREATE INDEX {jobs_ix}limited_by_key ON {limited} (lkey);
