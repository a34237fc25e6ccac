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

-- name: insert_jobs_json
-- Insert new jobs from one JSON array of rows (one bound parameter, however many jobs), returning their ids.
INSERT INTO {jobs} (queue, ext, unique_live, is_unique, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, lease_seconds, at_most_once, on_timeout, event, event_id, created_at, updated_at) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'), 'pending', 0, json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'), json_extract(value, '$[9]'), json_extract(value, '$[10]'), json_extract(value, '$[11]'), json_extract(value, '$[12]'), json_extract(value, '$[13]'), json_extract(value, '$[14]'), json_extract(value, '$[15]'), ?, ? FROM json_each(?) ORDER BY key RETURNING id

-- name: insert_jobs_plain
-- The same without RETURNING, one row at a time (unused on SQLite).
INSERT INTO {jobs} (queue, ext, unique_live, is_unique, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, lease_seconds, at_most_once, on_timeout, event, event_id, created_at, updated_at) VALUES {rows}

-- name: job_row
-- One VALUES group of insert_jobs.
(?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: find_live_unique
-- The live (pending or running) unique job of a queue and ext.
SELECT id, status, due_at FROM {jobs} WHERE queue = ? AND ext = ? AND unique_live = 1

-- name: delete_jobs
-- Remove jobs (used to undo an enqueue whose index write failed).
DELETE FROM {jobs} WHERE id IN ({ids})

-- name: start_jobs
-- Move claimed jobs from pending to running under a claim token; a job cancelled meanwhile is left alone.
-- An at-most-once job gets started_at only when it really begins (begin_job).
UPDATE {jobs} SET status = 'running', claim_token = ?, lease_until = ? + COALESCE(lease_seconds, ?), started_at = CASE WHEN at_most_once = 1 THEN NULL ELSE ? END, updated_at = ?, attempts = attempts + 1 WHERE id IN ({ids}) AND status = 'pending'

-- name: select_claimed
-- The jobs a claim token holds, among some ids.
SELECT id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline, priority, at_most_once, lease_until, on_timeout FROM {jobs} WHERE id IN ({ids}) AND claim_token = ?

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
UPDATE {jobs} SET status = 'failed', finished_at = ?, last_error = ?, updated_at = ?, claim_token = NULL, lease_until = NULL, unique_live = NULL, alert_pending = 1 WHERE id = ? AND claim_token = ?

-- name: insert_attempts
-- Append attempt rows (the audit trail).
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error) VALUES {rows}

-- name: insert_attempts_json
-- Append attempt rows given as one JSON array of [job_id, attempt, started_at, finished_at, outcome, error].
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]') FROM json_each(?)

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

-- name: begin_job
-- Mark an at-most-once job as begun, only while its claim still holds and its lease has not run out.
UPDATE {jobs} SET started_at = ?, updated_at = ? WHERE id = ? AND claim_token = ? AND status = 'running' AND lease_until > ?

-- name: extend_lease
-- Push a running job's lease out (a long job asking for more time).
UPDATE {jobs} SET lease_until = ?, updated_at = ? WHERE id = ? AND claim_token = ? AND status = 'running'

-- name: expired_leases
-- Running jobs whose lease ran out: their runner died, hung or lost its connection.
SELECT j.id, j.queue, j.claim_token, j.attempts, j.max_attempts, j.at_most_once, j.started_at, (SELECT COUNT(*) FROM {steps} s WHERE s.job_id = j.id AND s.mode = 'manual' AND s.status = 'running') AS manual_running FROM {jobs} j WHERE j.status = 'running' AND j.lease_until < ? ORDER BY j.lease_until LIMIT ?

-- name: recover_pending
-- Put an interrupted job back to pending (if its claim is still the one we saw).
UPDATE {jobs} SET status = 'pending', due_at = ?, attempts = attempts - ?, last_error = ?, updated_at = ?, claim_token = NULL, lease_until = NULL WHERE id = ? AND claim_token = ? AND status = 'running'

-- name: recover_failed
-- Fail an interrupted job that must not be re-run by a machine, or has no attempts left.
UPDATE {jobs} SET status = 'failed', finished_at = ?, last_error = ?, updated_at = ?, claim_token = NULL, lease_until = NULL, unique_live = NULL, alert_pending = 1 WHERE id = ? AND claim_token = ? AND status = 'running'

-- name: lock_job_claim
-- A job still held by a claim token with its lease not run out (under the write lock, before a manual step begins).
SELECT id FROM {jobs} WHERE id = ? AND claim_token = ? AND status = 'running' AND lease_until > ?

-- name: select_steps
-- A job's steps in declared order.
SELECT name, mode, position, status, attempts, last_error, started_at, finished_at FROM {steps} WHERE job_id = ? ORDER BY position

-- name: insert_step
-- Declare a step of a job, once.
INSERT INTO {steps} (job_id, name, mode, position, status, attempts, updated_at) VALUES (?, ?, ?, ?, 'pending', 0, ?)

-- name: begin_step
-- Mark a step as running; a manual step only from pending (never after an attempt a person did not reset).
UPDATE {steps} SET status = 'running', attempts = attempts + 1, started_at = ?, updated_at = ? WHERE job_id = ? AND name = ? AND (status = 'pending' OR (mode = 'auto' AND status = 'failed'))

-- name: finish_step
-- Record a step's outcome.
UPDATE {steps} SET status = ?, last_error = ?, finished_at = ?, updated_at = ? WHERE job_id = ? AND name = ? AND status = 'running'

-- name: recover_manual_steps
-- Manual steps interrupted mid-run: failed, never re-run by a machine.
UPDATE {steps} SET status = 'failed', last_error = ?, updated_at = ? WHERE job_id = ? AND mode = 'manual' AND status = 'running'

-- name: recover_auto_steps
-- Auto steps interrupted mid-run: run again with the job.
UPDATE {steps} SET status = 'pending', updated_at = ? WHERE job_id = ? AND mode = 'auto' AND status = 'running'

-- name: pending_page
-- One page of pending jobs in id order, packed into one JSON array of [id, queue, due_at]
-- (keyset pagination on the primary key, for rebuilding the due index).
SELECT json_group_array(json_array(id, queue, due_at)) FROM (SELECT id, queue, due_at FROM {jobs} WHERE status = 'pending' AND id > ? ORDER BY id LIMIT ?)

-- name: select_statuses
-- The status of some jobs.
SELECT id, status FROM {jobs} WHERE id IN ({ids})

-- name: alerts_due
-- Failed jobs whose alert has not been delivered yet.
SELECT id, queue, ext, callable, attempts, last_error FROM {jobs} WHERE alert_pending = 1 ORDER BY id LIMIT ?

-- name: mark_alerted
-- Alerts delivered for these jobs.
UPDATE {jobs} SET alert_pending = NULL, alerted_at = ? WHERE id IN ({ids}) AND alert_pending = 1

-- name: lock_for_retry
-- A job to re-run by hand.
SELECT id, queue, status, attempts, max_attempts FROM {jobs} WHERE id = ?

-- name: retry_job
-- A failed job back to pending, by a person's decision.
UPDATE {jobs} SET status = 'pending', due_at = ?, attempts = ?, max_attempts = ?, finished_at = NULL, alert_pending = NULL, unique_live = CASE WHEN is_unique = 1 THEN 1 ELSE NULL END, updated_at = ? WHERE id = ? AND status = 'failed'

-- name: retry_steps
-- Failed steps of a job back to pending (manual ones included: a person decided).
UPDATE {steps} SET status = 'pending', attempts = CASE WHEN ? = 1 THEN 0 ELSE attempts END, updated_at = ? WHERE job_id = ? AND status IN ('failed', 'running') AND (? IS NULL OR name = ?)

-- name: purge_page
-- Old finished jobs of some statuses, a page at a time.
SELECT id FROM {jobs} WHERE status IN ({statuses}) AND finished_at < ? ORDER BY id LIMIT ?

-- name: delete_attempts_of
-- The attempt rows of some jobs.
DELETE FROM {attempts} WHERE job_id IN ({ids})

-- name: delete_steps_of
-- The step rows of some jobs.
DELETE FROM {steps} WHERE job_id IN ({ids})

-- name: finish_timed_out
-- The deadline ended a held job (not a failure: no alert).
UPDATE {jobs} SET status = 'timed_out', finished_at = ?, last_error = ?, updated_at = ?, claim_token = NULL, lease_until = NULL, unique_live = NULL WHERE id = ? AND claim_token = ?

-- name: select_by_event
-- Every job of one emitted event.
SELECT * FROM {jobs} WHERE event_id = ? ORDER BY id

-- name: stats
-- Per queue and status: count, due now, oldest due, next due, finished since a time.
SELECT queue, status, COUNT(*), SUM(CASE WHEN status = 'pending' AND due_at <= ? THEN 1 ELSE 0 END), MIN(CASE WHEN status = 'pending' THEN due_at END), MIN(CASE WHEN status = 'pending' AND due_at > ? THEN due_at END), SUM(CASE WHEN finished_at >= ? THEN 1 ELSE 0 END) FROM {jobs} GROUP BY queue, status

-- name: list_jobs
-- Jobs newest first, filtered by status, queue and ext prefix (each filter optional).
SELECT id, queue, ext, callable, status, attempts, max_attempts, due_at, finished_at, last_error FROM {jobs} WHERE (? IS NULL OR status = ?) AND (? IS NULL OR queue = ?) AND (? IS NULL OR ext LIKE ? ESCAPE '!') ORDER BY id DESC LIMIT ?

-- name: live_queues_like
-- Queues matching a pattern that have pending or running jobs.
SELECT DISTINCT queue FROM {jobs} WHERE queue LIKE ? AND status IN ('pending', 'running') ORDER BY queue

-- name: failed_in_queue
-- The oldest failed jobs of a queue.
SELECT id FROM {jobs} WHERE queue = ? AND status = 'failed' ORDER BY id LIMIT ?
