-- delayq schema, version 3: deadlines with a timeout handler, events with several handlers.

ALTER TABLE {jobs} ADD COLUMN on_timeout VARCHAR(255) NULL;
ALTER TABLE {jobs} ADD COLUMN event VARCHAR(64) NULL;
ALTER TABLE {jobs} ADD COLUMN event_id CHAR(32) NULL;
ALTER TABLE {jobs} ADD COLUMN is_unique TINYINT NOT NULL DEFAULT 0;
CREATE INDEX {jobs_ix}by_event ON {jobs} (event_id);
