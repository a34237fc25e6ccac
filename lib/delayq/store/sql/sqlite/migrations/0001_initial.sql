-- delayq schema, version 1 (SQLite >= 3.35).
-- {jobs} and {attempts} are replaced by the prefixed table names.
-- Times are epoch seconds (REAL): datetime(due_at, 'unixepoch') reads them.

CREATE TABLE IF NOT EXISTS {jobs} (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  queue         TEXT    NOT NULL DEFAULT 'default',
  ext           TEXT    NULL,
  unique_live   INTEGER NULL,
  callable      TEXT    NOT NULL,
  args          TEXT    NOT NULL,
  status        TEXT    NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  max_attempts  INTEGER NOT NULL,
  ladder        TEXT    NOT NULL,
  due_at        REAL    NOT NULL,
  deadline      REAL    NULL,
  priority      INTEGER NOT NULL DEFAULT 0,
  claim_token   TEXT    NULL,
  lease_until   REAL    NULL,
  last_error    TEXT    NULL,
  created_at    REAL    NOT NULL,
  started_at    REAL    NULL,
  finished_at   REAL    NULL,
  updated_at    REAL    NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS {jobs}_uniq_live ON {jobs} (queue, ext, unique_live);
CREATE INDEX IF NOT EXISTS {jobs}_by_ext ON {jobs} (ext);
CREATE INDEX IF NOT EXISTS {jobs}_by_due ON {jobs} (status, queue, due_at);

CREATE TABLE IF NOT EXISTS {attempts} (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id        INTEGER NOT NULL,
  attempt       INTEGER NOT NULL,
  started_at    REAL    NOT NULL,
  finished_at   REAL    NOT NULL,
  outcome       TEXT    NOT NULL,
  error         TEXT    NULL
);

CREATE INDEX IF NOT EXISTS {attempts}_by_job ON {attempts} (job_id, attempt);
