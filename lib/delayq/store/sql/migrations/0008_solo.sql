-- delayq schema, version 8: jobs that run alone.
-- solo: 1 once a job's process died under it together with others and nobody could say which job killed it (the
--   OOM killer, a kill from outside), or once it killed its process itself: its later attempts run alone, in a
--   process of their own, where a death can only be its own (runner/supervisor.py).

ALTER TABLE {jobs} ADD COLUMN solo TINYINT NOT NULL DEFAULT 0;
