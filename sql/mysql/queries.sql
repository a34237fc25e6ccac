-- Named queries for MySQL / MariaDB (PyMySQL, %s parameters).
-- Each block: "-- name: NAME", a one-line description, then the SQL.
-- Tokens: {jobs} {attempts} {migrations} table names; {ids} {queues} lists of
-- placeholders; {rows} repeated VALUES groups. Values are always bound.

-- name: create_migrations
-- The table that records which migrations ran.
CREATE TABLE IF NOT EXISTS {migrations} (version INT NOT NULL PRIMARY KEY, applied_at DOUBLE NOT NULL) ENGINE=InnoDB

-- name: applied_migrations
-- Versions already applied.
SELECT version FROM {migrations}

-- name: record_migration
-- Mark a migration as applied.
INSERT INTO {migrations} (version, applied_at) VALUES (%s, %s)

-- name: server_time
-- The database's clock, epoch seconds.
SELECT UNIX_TIMESTAMP(NOW(6))

-- name: insert_jobs
-- Insert new jobs, returning their ids in insertion order (MariaDB >= 10.5).
INSERT INTO {jobs} (queue, ext, unique_live, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, created_at, updated_at) VALUES {rows} RETURNING id

-- name: insert_jobs_plain
-- The same without RETURNING, one row at a time (MySQL 8).
INSERT INTO {jobs} (queue, ext, unique_live, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, created_at, updated_at) VALUES {rows}

-- name: job_row
-- One VALUES group of insert_jobs.
(%s, %s, %s, %s, %s, 'pending', 0, %s, %s, %s, %s, %s, %s, %s)

-- name: find_live_unique
-- The live (pending or running) unique job of a queue and ext.
SELECT id, status, due_at FROM {jobs} WHERE queue = %s AND ext = %s AND unique_live = 1

-- name: delete_jobs
-- Remove jobs (used to undo an enqueue whose index write failed).
DELETE FROM {jobs} WHERE id IN ({ids})

-- name: start_jobs
-- Move claimed jobs from pending to running under a claim token; a job cancelled meanwhile is left alone.
UPDATE {jobs} SET status = 'running', claim_token = %s, lease_until = %s, started_at = %s, updated_at = %s, attempts = attempts + 1 WHERE id IN ({ids}) AND status = 'pending'

-- name: select_claimed
-- The jobs a claim token holds, among some ids.
SELECT id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline, priority FROM {jobs} WHERE id IN ({ids}) AND claim_token = %s

-- name: lock_due
-- Due pending jobs of some queues, locked, skipping those other runners hold (the in-database index).
SELECT id FROM {jobs} WHERE status = 'pending' AND queue IN ({queues}) AND due_at <= %s ORDER BY due_at, priority DESC, id LIMIT %s FOR UPDATE SKIP LOCKED

-- name: next_due
-- The earliest due time of pending jobs in some queues (the in-database index).
SELECT MIN(due_at) FROM {jobs} WHERE status = 'pending' AND queue IN ({queues})

-- name: lock_held
-- Of some ids, those a claim token still holds, locked until the outcome is written.
SELECT id FROM {jobs} WHERE id IN ({ids}) AND claim_token = %s FOR UPDATE

-- name: finish_succeeded
-- Record success for held jobs.
UPDATE {jobs} SET status = 'succeeded', finished_at = %s, updated_at = %s, last_error = NULL, claim_token = NULL, lease_until = NULL, unique_live = NULL WHERE id IN ({ids}) AND claim_token = %s

-- name: finish_retry
-- Put a held job back to pending for its next attempt.
UPDATE {jobs} SET status = 'pending', due_at = %s, last_error = %s, updated_at = %s, claim_token = NULL, lease_until = NULL WHERE id = %s AND claim_token = %s

-- name: finish_failed
-- Record final failure for a held job.
UPDATE {jobs} SET status = 'failed', finished_at = %s, last_error = %s, updated_at = %s, claim_token = NULL, lease_until = NULL, unique_live = NULL WHERE id = %s AND claim_token = %s

-- name: insert_attempts
-- Append attempt rows (the audit trail).
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error) VALUES {rows}

-- name: attempt_row
-- One VALUES group of insert_attempts.
(%s, %s, %s, %s, %s, %s)

-- name: select_job
-- One job by id.
SELECT * FROM {jobs} WHERE id = %s

-- name: select_by_ext
-- Jobs with a business key, optionally in one queue, oldest first.
SELECT * FROM {jobs} WHERE ext = %s AND (%s IS NULL OR queue = %s) ORDER BY id

-- name: select_attempts
-- A job's attempts, in order.
SELECT job_id, attempt, started_at, finished_at, outcome, error FROM {attempts} WHERE job_id = %s ORDER BY attempt, id

-- name: lock_for_cancel_by_ext
-- Jobs with a business key, locked, for cancel.
SELECT id, queue, status FROM {jobs} WHERE ext = %s AND (%s IS NULL OR queue = %s) ORDER BY id FOR UPDATE

-- name: lock_for_cancel_by_id
-- One job, locked, for cancel.
SELECT id, queue, status FROM {jobs} WHERE id = %s AND (%s IS NULL OR queue = %s) FOR UPDATE

-- name: cancel_jobs
-- Cancel pending jobs.
UPDATE {jobs} SET status = 'cancelled', finished_at = %s, updated_at = %s, unique_live = NULL WHERE id IN ({ids}) AND status = 'pending'
