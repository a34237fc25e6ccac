-- delayq schema, version 3: deadlines with a timeout handler, events with several handlers.

ALTER TABLE {jobs} ADD COLUMN on_timeout TEXT NULL;
ALTER TABLE {jobs} ADD COLUMN event TEXT NULL;
ALTER TABLE {jobs} ADD COLUMN event_id TEXT NULL;
ALTER TABLE {jobs} ADD COLUMN is_unique INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS {jobs}_by_event ON {jobs} (event_id);
