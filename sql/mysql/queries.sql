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

-- name: insert_jobs_json
-- Insert new jobs from one JSON array of rows (one bound parameter, however many jobs), returning their ids (MariaDB >= 10.6).
INSERT INTO {jobs} (queue, ext, unique_live, is_unique, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, lease_seconds, at_most_once, on_timeout, event, event_id, created_at, updated_at) SELECT queue, ext, unique_live, is_unique, callable, args, 'pending', 0, max_attempts, ladder, due_at, deadline, priority, lease_seconds, at_most_once, on_timeout, event, event_id, %s, %s FROM JSON_TABLE(%s, '$[*]' COLUMNS (n FOR ORDINALITY, queue VARCHAR(64) PATH '$[0]', ext VARCHAR(191) PATH '$[1]', unique_live TINYINT PATH '$[2]', is_unique TINYINT PATH '$[3]', callable VARCHAR(255) PATH '$[4]', args MEDIUMTEXT PATH '$[5]', max_attempts INT PATH '$[6]', ladder VARCHAR(255) PATH '$[7]', due_at DOUBLE PATH '$[8]', deadline DOUBLE PATH '$[9]', priority SMALLINT PATH '$[10]', lease_seconds DOUBLE PATH '$[11]', at_most_once TINYINT PATH '$[12]', on_timeout VARCHAR(255) PATH '$[13]', event VARCHAR(64) PATH '$[14]', event_id CHAR(32) PATH '$[15]')) AS jt ORDER BY n RETURNING id

-- name: insert_jobs_plain
-- The same without RETURNING, one row at a time (MySQL 8).
INSERT INTO {jobs} (queue, ext, unique_live, is_unique, callable, args, status, attempts, max_attempts, ladder, due_at, deadline, priority, lease_seconds, at_most_once, on_timeout, event, event_id, created_at, updated_at) VALUES {rows}

-- name: job_row
-- One VALUES group of insert_jobs.
(%s, %s, %s, %s, %s, %s, 'pending', 0, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)

-- name: find_live_unique
-- The live (pending or running) unique job of a queue and ext.
SELECT id, status, due_at FROM {jobs} WHERE queue = %s AND ext = %s AND unique_live = 1

-- name: delete_jobs
-- Remove jobs (used to undo an enqueue whose index write failed).
DELETE FROM {jobs} WHERE id IN ({ids})

-- name: start_jobs
-- Move claimed jobs from pending to running under a claim token; a job cancelled meanwhile is left alone.
-- An at-most-once job gets started_at only when it really begins (begin_job).
UPDATE {jobs} SET status = 'running', claim_token = %s, lease_until = %s + COALESCE(lease_seconds, %s), started_at = CASE WHEN at_most_once = 1 THEN NULL ELSE %s END, updated_at = %s, attempts = attempts + 1 WHERE id IN ({ids}) AND status = 'pending'

-- name: select_claimed
-- The jobs a claim token holds, among some ids.
SELECT id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline, priority, at_most_once, lease_until, on_timeout FROM {jobs} WHERE id IN ({ids}) AND claim_token = %s

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
UPDATE {jobs} SET status = 'failed', finished_at = %s, last_error = %s, updated_at = %s, claim_token = NULL, lease_until = NULL, unique_live = NULL, alert_pending = 1 WHERE id = %s AND claim_token = %s

-- name: insert_attempts
-- Append attempt rows (the audit trail).
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error) VALUES {rows}

-- name: insert_attempts_json
-- Append attempt rows given as one JSON array of [job_id, attempt, started_at, finished_at, outcome, error].
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error) SELECT job_id, attempt, started_at, finished_at, outcome, error FROM JSON_TABLE(%s, '$[*]' COLUMNS (job_id BIGINT PATH '$[0]', attempt INT PATH '$[1]', started_at DOUBLE PATH '$[2]', finished_at DOUBLE PATH '$[3]', outcome VARCHAR(16) PATH '$[4]', error TEXT PATH '$[5]')) AS jt

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

-- name: begin_job
-- Mark an at-most-once job as begun, only while its claim still holds and its lease has not run out.
UPDATE {jobs} SET started_at = %s, updated_at = %s WHERE id = %s AND claim_token = %s AND status = 'running' AND lease_until > %s

-- name: extend_lease
-- Push a running job's lease out (a long job asking for more time).
UPDATE {jobs} SET lease_until = %s, updated_at = %s WHERE id = %s AND claim_token = %s AND status = 'running'

-- name: expired_leases
-- Running jobs whose lease ran out: their runner died, hung or lost its connection.
SELECT j.id, j.queue, j.claim_token, j.attempts, j.max_attempts, j.at_most_once, j.started_at, (SELECT COUNT(*) FROM {steps} s WHERE s.job_id = j.id AND s.mode = 'manual' AND s.status = 'running') AS manual_running FROM {jobs} j WHERE j.status = 'running' AND j.lease_until < %s ORDER BY j.lease_until LIMIT %s

-- name: recover_pending
-- Put an interrupted job back to pending (if its claim is still the one we saw).
UPDATE {jobs} SET status = 'pending', due_at = %s, attempts = attempts - %s, last_error = %s, updated_at = %s, claim_token = NULL, lease_until = NULL WHERE id = %s AND claim_token = %s AND status = 'running'

-- name: recover_failed
-- Fail an interrupted job that must not be re-run by a machine, or has no attempts left.
UPDATE {jobs} SET status = 'failed', finished_at = %s, last_error = %s, updated_at = %s, claim_token = NULL, lease_until = NULL, unique_live = NULL, alert_pending = 1 WHERE id = %s AND claim_token = %s AND status = 'running'

-- name: lock_job_claim
-- A job still held by a claim token with its lease not run out, locked (before a manual step begins).
SELECT id FROM {jobs} WHERE id = %s AND claim_token = %s AND status = 'running' AND lease_until > %s FOR UPDATE

-- name: select_steps
-- A job's steps in declared order.
SELECT name, mode, position, status, attempts, last_error, started_at, finished_at FROM {steps} WHERE job_id = %s ORDER BY position

-- name: insert_step
-- Declare a step of a job, once.
INSERT INTO {steps} (job_id, name, mode, position, status, attempts, updated_at) VALUES (%s, %s, %s, %s, 'pending', 0, %s)

-- name: begin_step
-- Mark a step as running; a manual step only from pending (never after an attempt a person did not reset).
UPDATE {steps} SET status = 'running', attempts = attempts + 1, started_at = %s, updated_at = %s WHERE job_id = %s AND name = %s AND (status = 'pending' OR (mode = 'auto' AND status = 'failed'))

-- name: finish_step
-- Record a step's outcome.
UPDATE {steps} SET status = %s, last_error = %s, finished_at = %s, updated_at = %s WHERE job_id = %s AND name = %s AND status = 'running'

-- name: recover_manual_steps
-- Manual steps interrupted mid-run: failed, never re-run by a machine.
UPDATE {steps} SET status = 'failed', last_error = %s, updated_at = %s WHERE job_id = %s AND mode = 'manual' AND status = 'running'

-- name: recover_auto_steps
-- Auto steps interrupted mid-run: run again with the job.
UPDATE {steps} SET status = 'pending', updated_at = %s WHERE job_id = %s AND mode = 'auto' AND status = 'running'

-- name: pending_page
-- One page of pending jobs in id order, packed into one JSON array of [id, queue, due_at] (one value to
-- decode instead of a row each; keyset pagination on the primary key, for rebuilding the due index).
-- No index on status alone: it would cost every claim and outcome an index update; this rare scan pays instead.
SELECT JSON_ARRAYAGG(JSON_ARRAY(id, queue, due_at) ORDER BY id) FROM (SELECT id, queue, due_at FROM {jobs} FORCE INDEX (PRIMARY) WHERE status = 'pending' AND id > %s ORDER BY id LIMIT %s) AS page

-- name: select_statuses
-- The status of some jobs.
SELECT id, status FROM {jobs} WHERE id IN ({ids})

-- name: alerts_due
-- Failed jobs whose alert has not been delivered yet.
SELECT id, queue, ext, callable, attempts, last_error FROM {jobs} WHERE alert_pending = 1 ORDER BY id LIMIT %s

-- name: mark_alerted
-- Alerts delivered for these jobs.
UPDATE {jobs} SET alert_pending = NULL, alerted_at = %s WHERE id IN ({ids}) AND alert_pending = 1

-- name: lock_for_retry
-- A job to re-run by hand, locked.
SELECT id, queue, status, attempts, max_attempts FROM {jobs} WHERE id = %s FOR UPDATE

-- name: retry_job
-- A failed job back to pending, by a person's decision.
UPDATE {jobs} SET status = 'pending', due_at = %s, attempts = %s, max_attempts = %s, finished_at = NULL, alert_pending = NULL, unique_live = CASE WHEN is_unique = 1 THEN 1 ELSE NULL END, updated_at = %s WHERE id = %s AND status = 'failed'

-- name: retry_steps
-- Failed steps of a job back to pending (manual ones included: a person decided).
UPDATE {steps} SET status = 'pending', attempts = CASE WHEN %s = 1 THEN 0 ELSE attempts END, updated_at = %s WHERE job_id = %s AND status IN ('failed', 'running') AND (%s IS NULL OR name = %s)

-- name: purge_page
-- Old finished jobs of some statuses, a page at a time.
SELECT id FROM {jobs} WHERE status IN ({statuses}) AND finished_at < %s ORDER BY id LIMIT %s

-- name: delete_attempts_of
-- The attempt rows of some jobs.
DELETE FROM {attempts} WHERE job_id IN ({ids})

-- name: delete_steps_of
-- The step rows of some jobs.
DELETE FROM {steps} WHERE job_id IN ({ids})

-- name: finish_timed_out
-- The deadline ended a held job (not a failure: no alert).
UPDATE {jobs} SET status = 'timed_out', finished_at = %s, last_error = %s, updated_at = %s, claim_token = NULL, lease_until = NULL, unique_live = NULL WHERE id = %s AND claim_token = %s

-- name: select_by_event
-- Every job of one emitted event.
SELECT * FROM {jobs} WHERE event_id = %s ORDER BY id

-- name: stats
-- Per queue and status: count, due now, oldest due, next due, finished since a time.
SELECT queue, status, COUNT(*), SUM(CASE WHEN status = 'pending' AND due_at <= %s THEN 1 ELSE 0 END), MIN(CASE WHEN status = 'pending' THEN due_at END), MIN(CASE WHEN status = 'pending' AND due_at > %s THEN due_at END), SUM(CASE WHEN finished_at >= %s THEN 1 ELSE 0 END) FROM {jobs} GROUP BY queue, status

-- name: list_jobs
-- Jobs newest first, filtered by status, queue and ext prefix (each filter optional).
SELECT id, queue, ext, callable, status, attempts, max_attempts, due_at, finished_at, last_error FROM {jobs} WHERE (%s IS NULL OR status = %s) AND (%s IS NULL OR queue = %s) AND (%s IS NULL OR ext LIKE %s ESCAPE '!') ORDER BY id DESC LIMIT %s

-- name: live_queues_like
-- Queues matching a pattern that have pending or running jobs.
SELECT DISTINCT queue FROM {jobs} WHERE queue LIKE %s AND status IN ('pending', 'running') ORDER BY queue

-- name: failed_in_queue
-- The oldest failed jobs of a queue.
SELECT id FROM {jobs} WHERE queue = %s AND status = 'failed' ORDER BY id LIMIT %s
