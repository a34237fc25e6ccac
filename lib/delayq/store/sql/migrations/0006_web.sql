-- delayq schema, version 6: the web dashboard's audit trail.
-- {audit}: one row per action taken on `delayq web` (retry, cancel, run now, bulk retry/cancel/purge, pause,
--   resume): when, from which address, who (how the request was authenticated), what, on which jobs, and how
--   many jobs it touched. Written after the action committed; never updated. The id is random (secrets.token_hex),
--   so one shared file serves both dialects (no AUTO_INCREMENT / AUTOINCREMENT spelling to pick).

CREATE TABLE {audit} (
  id            CHAR(32)     NOT NULL,
  at            DOUBLE       NOT NULL,
  address       VARCHAR(64)  NOT NULL,
  actor         VARCHAR(64)  NOT NULL,
  action        VARCHAR(32)  NOT NULL,
  target        TEXT         NOT NULL,
  jobs          INT          NOT NULL,
  detail        TEXT         NULL,
  PRIMARY KEY (id)
) {table_options};

CREATE INDEX {jobs_ix}audit_by_at ON {audit} (at);

-- The dashboard's search by callable: without an index, a page of a rare callable reads the primary key backwards
-- until it has found 50 of them (1.3 s for a callable of 1 job in 10,000 among 1,000,000, measured by
-- benchmarks/web_page.py); with it, the matching ids come from the index in order (callable = ? AND id < ?
-- ORDER BY id DESC reads the index backwards, no sort). The callable never changes, so only insert and purge
-- pay for it; claims and outcomes do not touch it.
CREATE INDEX {jobs_ix}by_call ON {jobs} (callable);
