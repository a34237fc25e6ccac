-- Named queries for SQLite (stdlib sqlite3, ? parameters).
-- Each block: "-- name: NAME", a one-line description, then the SQL.
-- Tokens: {jobs} {attempts} {migrations} table names; {ids} {queues} lists of
-- placeholders; {rows} repeated VALUES groups. Values are always bound.

-- name: create_migrations
-- The table that records which migrations ran.
CREATE TABLE IF NOT EXISTS {migrations} (version INT NOT NULL PRIMARY KEY, applied_at DOUBLE NOT NULL)

-- name: applied_migrations
-- Versions already applied.
SELECT version FROM {migrations}

-- name: record_migration
-- Mark a migration as applied.
INSERT INTO {migrations} (version, applied_at) VALUES (?, ?)

-- name: server_time
-- The database's clock, epoch seconds.
SELECT (julianday('now') - 2440587.5) * 86400.0

-- name: insert_jobs
-- Insert new jobs, returning their ids in insertion order (SQLite >= 3.35).
INSERT INTO {jobs} (queue, ext, unique_live, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, created_at, updated_at) VALUES {rows} RETURNING id

-- name: insert_jobs_plain
-- The same without RETURNING, one row at a time (unused on SQLite).
INSERT INTO {jobs} (queue, ext, unique_live, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, created_at, updated_at) VALUES {rows}

-- name: job_row
-- One VALUES group of insert_jobs.
(?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?, ?)

-- name: find_live_unique
-- The live (pending or running) unique job of a queue and ext.
SELECT id, status, due_at FROM {jobs} WHERE queue = ? AND ext = ? AND unique_live = 1

-- name: delete_jobs
-- Remove jobs (used to undo an enqueue whose index write failed).
DELETE FROM {jobs} WHERE id IN ({ids})

-- name: start_jobs
-- Move claimed jobs from pending to running under a claim token; a job cancelled meanwhile is left alone.
UPDATE {jobs} SET status = 'running', claim_token = ?, lease_until = ?, started_at = ?, updated_at = ?, attempts = attempts + 1 WHERE id IN ({ids}) AND status = 'pending'

-- name: select_claimed
-- The jobs a claim token holds, among some ids.
SELECT id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline, priority FROM {jobs} WHERE id IN ({ids}) AND claim_token = ?

-- name: lock_due
-- Due pending jobs of some queues (the in-database index); BEGIN IMMEDIATE holds the write lock.
SELECT id FROM {jobs} WHERE status = 'pending' AND queue IN ({queues}) AND due_at <= ? ORDER BY due_at, priority DESC, id LIMIT ?

-- name: next_due
-- The earliest due time of pending jobs in some queues (the in-database index).
SELECT MIN(due_at) FROM {jobs} WHERE status = 'pending' AND queue IN ({queues})

-- name: lock_held
-- Of some ids, those a claim token still holds, under the write lock of BEGIN IMMEDIATE.
SELECT id FROM {jobs} WHERE id IN ({ids}) AND claim_token = ?

-- name: finish_succeeded
-- Record success for held jobs.
UPDATE {jobs} SET status = 'succeeded', finished_at = ?, updated_at = ?, last_error = NULL, claim_token = NULL, lease_until = NULL, unique_live = NULL WHERE id IN ({ids}) AND claim_token = ?

-- name: finish_retry
-- Put a held job back to pending for its next attempt.
UPDATE {jobs} SET status = 'pending', due_at = ?, last_error = ?, updated_at = ?, claim_token = NULL, lease_until = NULL WHERE id = ? AND claim_token = ?

-- name: finish_failed
-- Record final failure for a held job.
UPDATE {jobs} SET status = 'failed', finished_at = ?, last_error = ?, updated_at = ?, claim_token = NULL, lease_until = NULL, unique_live = NULL WHERE id = ? AND claim_token = ?

-- name: insert_attempts
-- Append attempt rows (the audit trail).
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error) VALUES {rows}

-- name: attempt_row
-- One VALUES group of insert_attempts.
(?, ?, ?, ?, ?, ?)

-- name: select_job
-- One job by id.
SELECT * FROM {jobs} WHERE id = ?

-- name: select_by_ext
-- Jobs with a business key, optionally in one queue, oldest first.
SELECT * FROM {jobs} WHERE ext = ? AND (? IS NULL OR queue = ?) ORDER BY id

-- name: select_attempts
-- A job's attempts, in order.
SELECT job_id, attempt, started_at, finished_at, outcome, error FROM {attempts} WHERE job_id = ? ORDER BY attempt, id

-- name: lock_for_cancel_by_ext
-- Jobs with a business key, for cancel.
SELECT id, queue, status FROM {jobs} WHERE ext = ? AND (? IS NULL OR queue = ?) ORDER BY id

-- name: lock_for_cancel_by_id
-- One job, for cancel.
SELECT id, queue, status FROM {jobs} WHERE id = ? AND (? IS NULL OR queue = ?)

-- name: cancel_jobs
-- Cancel pending jobs.
UPDATE {jobs} SET status = 'cancelled', finished_at = ?, updated_at = ?, unique_live = NULL WHERE id IN ({ids}) AND status = 'pending'
