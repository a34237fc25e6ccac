-- delayq schema, version 3: deadlines with a timeout handler, events with several handlers.

ALTER TABLE {jobs}
  ADD COLUMN on_timeout VARCHAR(255) NULL COMMENT 'callable run once as its own job when the deadline ends this one' AFTER deadline,
  ADD COLUMN event VARCHAR(64) NULL COMMENT 'the event code that created this job' AFTER ext,
  ADD COLUMN event_id CHAR(32) NULL COMMENT 'one emitted event, shared by its handlers jobs' AFTER event,
  ADD COLUMN is_unique TINYINT NOT NULL DEFAULT 0 COMMENT '1: enqueued with --unique (kept after unique_live is cleared)' AFTER unique_live,
  ADD KEY by_event (event_id);
