-- delayq's named queries, shared by MySQL/MariaDB and SQLite (procrastinate's layout).
-- Each block: "-- name: NAME", a one-line description, then the SQL. This file names every
-- query; a dialect overrides one in sql/<dialect>/queries.sql only where the dialects truly
-- differ, and a block with no SQL here must be given by every dialect.
--
-- Parameters are named (:name) and always bound, never formatted into the text. A list
-- parameter used as IN (:ids) is expanded to one placeholder per item.
-- Tokens filled in per dialect at load time:
--   {jobs} {attempts} {steps} {migrations} {queues} {workers} {tallies} {audit}  table names (with DELAYQ_PREFIX)
--   {table_options}                         MySQL: ENGINE=InnoDB DEFAULT CHARSET=utf8mb4; SQLite: nothing
--   {for_update}                            MySQL: FOR UPDATE; SQLite: nothing (BEGIN IMMEDIATE holds the one write lock)
--   {skip_locked}                           MySQL: FOR UPDATE SKIP LOCKED; SQLite: nothing
--   {scan_by_id}                            MySQL: FORCE INDEX (PRIMARY); SQLite: NOT INDEXED (the rowid still serves)
--   {not_by_id_order}                       MySQL: IGNORE INDEX FOR ORDER BY (PRIMARY); SQLite: nothing
--   {by_queue}                              MySQL: FORCE INDEX (by_queue); SQLite: nothing
--   {by_claim}                              MySQL: FORCE INDEX (by_claim); SQLite: nothing
--   {by_is_finished}                        MySQL: FORCE INDEX (by_is_finished); SQLite: INDEXED BY (the same index)
--   {include:NAME}                          the text of query NAME (one query shared by two others)
-- Times are epoch seconds (DOUBLE / REAL), durations seconds.

-- ---------------------------------------------------------------------------------------------
-- schema

-- name: create_migrations
-- The table that records which migrations ran.
CREATE TABLE IF NOT EXISTS {migrations} (version INT NOT NULL PRIMARY KEY, applied_at DOUBLE NOT NULL) {table_options}

-- name: applied_migrations
-- Versions already applied.
SELECT version FROM {migrations}

-- name: record_migration
-- Mark a migration as applied.
INSERT INTO {migrations} (version, applied_at) VALUES (:version, :now)

-- name: server_time
-- The database's clock, epoch seconds. (Per dialect: sql/<dialect>/queries.sql.)

-- ---------------------------------------------------------------------------------------------
-- jobs: write, cancel, read

-- name: insert_jobs_json
-- Insert new jobs from one JSON array of rows (:rows), returning their ids. (Per dialect: JSON_TABLE / json_each.)

-- name: insert_job
-- Insert one new job (MySQL 8 has no INSERT ... RETURNING: one row at a time, the id from lastrowid).
INSERT INTO {jobs} (queue, ext, unique_live, is_unique, callable, args, status, attempts, max_attempts, ladder,
  due_at, deadline, priority, lease_seconds, timeout_seconds, at_most_once, on_timeout, event, event_id,
  index_pending, limit_key, limit_max, created_at, updated_at)
VALUES (:queue, :ext, :unique_live, :is_unique, :callable, :args, 'pending', 0, :max_attempts, :ladder,
  :due_at, :deadline, :priority, :lease_seconds, :timeout_seconds, :at_most_once, :on_timeout, :event, :event_id,
  :index_pending, :limit_key, :limit_max, :now, :now)

-- name: find_live_ext
-- The oldest live (pending or running) job of a queue and ext, whatever flags it was enqueued with: what a unique
-- enqueue returns instead of adding one.
SELECT id, status, due_at FROM {jobs} WHERE queue = :queue AND ext = :ext AND status IN ('pending', 'running')
ORDER BY id LIMIT 1

-- name: delete_jobs
-- Remove jobs (used to undo an enqueue whose index write failed).
DELETE FROM {jobs} WHERE id IN (:ids)

-- name: lock_for_cancel_by_ext
-- Jobs with a business key (optionally in one queue), locked, for cancel.
SELECT id, queue, status FROM {jobs} WHERE ext = :ext AND (:queue IS NULL OR queue = :queue) ORDER BY id {for_update}

-- name: lock_for_cancel_by_id
-- One job (optionally only in a queue), locked, for cancel.
SELECT id, queue, status FROM {jobs} WHERE id = :id AND (:queue IS NULL OR queue = :queue) {for_update}

-- name: cancel_jobs
-- Cancel pending jobs.
UPDATE {jobs} SET status = 'cancelled', finished_at = :now, updated_at = :now, unique_live = NULL, index_pending = NULL
WHERE id IN (:ids) AND status = 'pending'

-- name: select_job
-- One job by id.
SELECT * FROM {jobs} WHERE id = :id

-- name: select_by_ext
-- Jobs with a business key, optionally in one queue, oldest first.
SELECT * FROM {jobs} WHERE ext = :ext AND (:queue IS NULL OR queue = :queue) ORDER BY id

-- name: select_by_event
-- Every job of one emitted event.
SELECT * FROM {jobs} WHERE event_id = :event_id ORDER BY id

-- name: select_attempts
-- A job's attempts, in order.
SELECT job_id, attempt, started_at, finished_at, outcome, error FROM {attempts} WHERE job_id = :id ORDER BY attempt, id

-- name: select_statuses
-- The status of some jobs.
SELECT id, status FROM {jobs} WHERE id IN (:ids)

-- name: make_due
-- A pending job due now ("run now" on the dashboard); a job no longer pending is left alone.
UPDATE {jobs} SET due_at = :now, updated_at = :now WHERE id = :id AND status = 'pending'

-- ---------------------------------------------------------------------------------------------
-- claims and outcomes

-- name: start_jobs
-- Move claimed jobs from pending to running under a claim token; a job cancelled meanwhile is left alone, and so
-- is a job of a limit key: it passes the gates first (start_limited).
-- An at-most-once job gets started_at only when it really begins (begin_job).
UPDATE {jobs} SET status = 'running', claim_token = :token, lease_until = :now + COALESCE(lease_seconds, :lease),
  started_at = CASE WHEN at_most_once = 1 THEN NULL ELSE :now END, updated_at = :now, attempts = attempts + 1
WHERE id IN (:ids) AND status = 'pending' AND limit_key IS NULL

-- name: start_jobs_but
-- The same where some queues have limits (:limited), whose jobs pass the gates first. By the primary key, always:
-- `queue NOT IN` would tempt the optimizer into a range of by_claim, locking rows other claims and outcomes hold.
UPDATE {jobs} {scan_by_id} SET status = 'running', claim_token = :token,
  lease_until = :now + COALESCE(lease_seconds, :lease),
  started_at = CASE WHEN at_most_once = 1 THEN NULL ELSE :now END, updated_at = :now, attempts = attempts + 1
WHERE id IN (:ids) AND status = 'pending' AND limit_key IS NULL AND queue NOT IN (:limited)

-- name: start_limited
-- The same for jobs a limit governs, once the gates let them start (by the primary key: SQLite's planner would
-- otherwise walk by_claim's pending rows).
UPDATE {jobs} {scan_by_id} SET status = 'running', claim_token = :token, lease_until = :now + COALESCE(lease_seconds, :lease),
  started_at = CASE WHEN at_most_once = 1 THEN NULL ELSE :now END, updated_at = :now, attempts = attempts + 1
WHERE id IN (:ids) AND status = 'pending'

-- name: select_claimed
-- The jobs a claim token holds, among some ids: what running them needs.
SELECT id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline, priority, at_most_once,
  lease_until, lease_seconds, timeout_seconds, crashes, on_timeout, claim_token, solo
FROM {jobs} WHERE id IN (:ids) AND claim_token = :token

-- name: select_claimed_packed
-- The same as select_claimed, packed where the driver decodes columns slowly: one value, a JSON array of rows in
-- select_claimed's column order (PyMySQL decodes each column of each row in Python; json.loads does them all in C).
-- (Per dialect.)

-- name: top_band
-- The highest priority below :below among one queue's pending jobs, and the earliest due time at that priority
-- (no row: none). Two dives into by_claim (status, queue, priority, due_at), whatever the table holds (ORDER BY
-- ... LIMIT 1 reads the index in order either way its priority part is stored): the in-database index walks
-- priority levels ("bands") with it, so that one index on status serves every query.
SELECT b.priority, (SELECT due_at FROM {jobs} WHERE status = 'pending' AND queue = :queue AND priority = b.priority
  ORDER BY due_at LIMIT 1) FROM (SELECT priority FROM {jobs} WHERE status = 'pending' AND queue = :queue
  AND priority < :below ORDER BY priority DESC LIMIT 1) AS b

-- name: lock_due
-- Due pending jobs of one queue at one priority, earliest due first, locked, skipping those other runners hold
-- (the in-database index: a range of by_claim, read in order).
SELECT id, priority, due_at FROM {jobs} WHERE status = 'pending' AND queue = :queue AND priority = :priority
  AND due_at <= :now ORDER BY due_at, id LIMIT :limit {skip_locked}

-- name: lock_held
-- Of some ids, those a claim token still holds, locked until the outcome is written.
SELECT id FROM {jobs} WHERE id IN (:ids) AND claim_token = :token {for_update}

-- name: lock_held_now
-- The same, skipping rows locked now: a recovery never waits on a live writer (a worker frozen mid-write by a job
-- holding its interpreter, or another recovery); what it skipped, the next one finds again.
SELECT id FROM {jobs} WHERE id IN (:ids) AND claim_token = :token {skip_locked}

-- name: lock_lapsed_now
-- The same, and only where the lease has still run out: a recovery of expired leases read the rows a moment ago, and
-- a holder that renewed its lease since (a late renewal of a live runner) keeps its job.
SELECT id FROM {jobs} WHERE id IN (:ids) AND claim_token = :token AND lease_until < :now {skip_locked}

-- name: recorded_attempts
-- Of some jobs, the attempts that have their row already (a run is recorded once, whoever writes it first).
SELECT job_id, attempt FROM {attempts} WHERE job_id IN (:ids)

-- name: finish_succeeded
-- Record success for held jobs.
UPDATE {jobs} SET status = 'succeeded', finished_at = :now, updated_at = :now, last_error = NULL, claim_token = NULL,
  lease_until = NULL, unique_live = NULL
WHERE id IN (:ids) AND claim_token = :token

-- name: finish_retry
-- Put a held job back to pending for its next attempt (:solo = 1: its later attempts run alone).
UPDATE {jobs} SET status = 'pending', due_at = :due_at, last_error = :error, updated_at = :now, claim_token = NULL,
  lease_until = NULL, crashes = crashes + :crashed, solo = CASE WHEN :solo = 1 THEN 1 ELSE solo END
WHERE id = :id AND claim_token = :token

-- name: finish_failed
-- Record final failure for a held job; its alert is pending.
UPDATE {jobs} SET status = 'failed', finished_at = :now, last_error = :error, updated_at = :now, claim_token = NULL,
  lease_until = NULL, unique_live = NULL, alert_pending = 1, crashes = crashes + :crashed
WHERE id = :id AND claim_token = :token

-- name: unclaim_jobs
-- Claimed jobs that never started go back to pending at once (a runner stopping): the claim does not count.
UPDATE {jobs} SET status = 'pending', attempts = attempts - 1, claim_token = NULL, lease_until = NULL, started_at = NULL,
  updated_at = :now
WHERE id IN (:ids) AND claim_token = :token AND status = 'running'

-- name: finish_timed_out
-- The deadline ended a held job (not a failure: no alert).
UPDATE {jobs} SET status = 'timed_out', finished_at = :now, last_error = :error, updated_at = :now, claim_token = NULL,
  lease_until = NULL, unique_live = NULL
WHERE id = :id AND claim_token = :token

-- name: insert_attempts_json
-- Append attempt rows given as one JSON array (:rows). (Per dialect: JSON_TABLE / json_each.)

-- name: select_held
-- The jobs a holder (a claim token's first 16 characters: one process) still holds (running), whatever claim brought
-- each: what recovery needs when it died, manual steps included.
SELECT j.id, j.queue, j.ext, j.callable, j.args, j.attempts, j.max_attempts, j.ladder, j.due_at, j.deadline,
  j.priority, j.at_most_once, j.lease_until, j.lease_seconds, j.timeout_seconds, j.crashes, j.on_timeout,
  j.claim_token, j.solo, j.started_at,
  (SELECT COUNT(*) FROM {steps} s WHERE s.job_id = j.id AND s.mode = 'manual' AND s.status = 'running') AS manual_running
FROM {jobs} j WHERE j.status = 'running' AND SUBSTR(j.claim_token, 1, 16) = :holder ORDER BY j.id

-- name: hand_off
-- A running job passes from one claim token to another (a worker hands it to a process of its own).
UPDATE {jobs} SET claim_token = :new_token, updated_at = :now
WHERE id = :id AND claim_token = :token AND status = 'running'

-- name: begin_job
-- Mark an at-most-once job as begun, only while its claim still holds and its lease has not run out.
UPDATE {jobs} SET started_at = :now, updated_at = :now
WHERE id = :id AND claim_token = :token AND status = 'running' AND lease_until > :now

-- name: keep_alive
-- The supervisor of running jobs is alive: their leases move on (a lease runs out only when its runner dies).
UPDATE {jobs} SET lease_until = :now + COALESCE(lease_seconds, :lease), updated_at = :now
WHERE id IN (:ids) AND claim_token = :token AND status = 'running'

-- name: lock_running_held
-- The running jobs the holders (a claim token's first 16 characters) hold, locked, skipping those locked now: a
-- supervisor keeping its workers' leases never waits on a worker's own open write (a job holding that worker's
-- interpreter in a C call can hold it for seconds; the supervisor ends such a worker as hung).
SELECT id FROM {jobs} WHERE status = 'running' AND SUBSTR(claim_token, 1, 16) IN (:holders) {skip_locked}

-- name: keep_alive_held
-- The holders are alive: the leases of the jobs locked above move on (a supervisor, for its worker processes:
-- whatever a job does inside a worker, its leases are kept while it lives).
UPDATE {jobs} SET lease_until = :now + COALESCE(lease_seconds, :lease), updated_at = :now
WHERE id IN (:ids) AND status = 'running'

-- name: extend_lease
-- Push a running job's lease out (a long job asking for more time).
UPDATE {jobs} SET lease_until = :until, updated_at = :now WHERE id = :id AND claim_token = :token AND status = 'running'

-- ---------------------------------------------------------------------------------------------
-- steps of multi-step jobs

-- name: select_steps
-- A job's steps in declared order.
SELECT name, mode, position, status, attempts, last_error, started_at, finished_at FROM {steps} WHERE job_id = :id
ORDER BY position

-- name: insert_step
-- Declare a step of a job, once.
INSERT INTO {steps} (job_id, name, mode, position, status, attempts, updated_at)
VALUES (:id, :name, :mode, :position, 'pending', 0, :now)

-- name: lock_job_claim
-- A job still held by a claim token with its lease not run out, locked (before a manual step begins).
SELECT id FROM {jobs} WHERE id = :id AND claim_token = :token AND status = 'running' AND lease_until > :now {for_update}

-- name: begin_step
-- Mark a step as running; a manual step only from pending (never after an attempt a person did not reset).
UPDATE {steps} SET status = 'running', attempts = attempts + 1, started_at = :now, updated_at = :now
WHERE job_id = :id AND name = :name AND (status = 'pending' OR (mode = 'auto' AND status = 'failed'))

-- name: finish_step
-- Record a step's outcome.
UPDATE {steps} SET status = :status, last_error = :error, finished_at = :now, updated_at = :now
WHERE job_id = :id AND name = :name AND status = 'running'

-- name: recover_manual_steps
-- Manual steps interrupted mid-run: failed, never re-run by a machine.
UPDATE {steps} SET status = 'failed', last_error = :error, updated_at = :now
WHERE job_id = :id AND mode = 'manual' AND status = 'running'

-- name: recover_auto_steps
-- Auto steps interrupted mid-run: run again with the job.
UPDATE {steps} SET status = 'pending', updated_at = :now WHERE job_id = :id AND mode = 'auto' AND status = 'running'

-- name: retry_steps
-- Failed steps of some jobs back to pending (manual ones included: a person decided); all of them, or one.
UPDATE {steps} SET status = 'pending', attempts = CASE WHEN :reset = 1 THEN 0 ELSE attempts END, updated_at = :now
WHERE job_id IN (:ids) AND status IN ('failed', 'running') AND (:step IS NULL OR name = :step)

-- ---------------------------------------------------------------------------------------------
-- maintenance: leases, the index rebuild and outbox, alerts, retry by hand, purge

-- name: expired_leases
-- Running jobs whose lease ran out: their runner died, hung or lost its connection.
SELECT j.id, j.queue, j.ext, j.callable, j.args, j.attempts, j.max_attempts, j.ladder, j.due_at, j.deadline,
  j.priority, j.at_most_once, j.lease_until, j.lease_seconds, j.timeout_seconds, j.crashes, j.on_timeout,
  j.claim_token, j.solo, j.started_at,
  (SELECT COUNT(*) FROM {steps} s WHERE s.job_id = j.id AND s.mode = 'manual' AND s.status = 'running') AS manual_running
FROM {jobs} j WHERE j.status = 'running' AND j.lease_until < :now ORDER BY j.lease_until LIMIT :limit

-- name: pending_page
-- One page of pending jobs packed into one JSON array, for the index rebuild. (Per dialect: JSON aggregation.)

-- name: newer_rows
-- Jobs written after :after (by id), up to those created by :before: their status and due-index entry (compensate's
-- look at the rows written since its last run: a walk of the primary key from where the last one stopped).
SELECT id, status, queue, due_at, priority, created_at FROM {jobs} WHERE id > :after ORDER BY id LIMIT :limit

-- name: max_job_id
-- The newest job's id (0: none).
SELECT COALESCE(MAX(id), 0) FROM {jobs}

-- name: pending_entries
-- Of some ids, the jobs still pending, as due-index entries (in-flight ids whose claimer died before its update).
SELECT id, queue, due_at, priority FROM {jobs} WHERE id IN (:ids) AND status = 'pending'

-- name: outbox_page
-- Jobs written inside an application's transaction whose due-index entry is still to be added.
SELECT id, queue, due_at, priority FROM {jobs} WHERE index_pending = 1 ORDER BY id LIMIT :limit

-- name: outbox_clear
-- Their index entries were added.
UPDATE {jobs} SET index_pending = NULL WHERE id IN (:ids) AND index_pending = 1

-- name: alerts_due
-- Failed jobs whose alert has not been delivered yet.
SELECT id, queue, ext, callable, attempts, last_error, finished_at FROM {jobs} WHERE alert_pending = 1 ORDER BY id LIMIT :limit

-- name: mark_alerted
-- Alerts delivered for these jobs.
UPDATE {jobs} SET alert_pending = NULL, alerted_at = :now WHERE id IN (:ids) AND alert_pending = 1

-- name: lock_keys
-- Some jobs' queue, status and priority, locked: a bulk action decides on these, then changes only what it saw.
SELECT id, queue, status, priority FROM {jobs} WHERE id IN (:ids) {for_update}

-- name: retry_jobs
-- Failed jobs back to pending, by a person's decision. max_attempts is set before attempts: MySQL assigns left to
-- right (each sees the values already set), SQLite from the old row: written this way, both read the old attempts.
UPDATE {jobs} SET status = 'pending', due_at = :due_at,
  max_attempts = CASE WHEN :reset = 1 OR max_attempts > attempts THEN max_attempts ELSE attempts + 1 END,
  attempts = CASE WHEN :reset = 1 THEN 0 ELSE attempts END,
  finished_at = NULL, alert_pending = NULL, crashes = 0, unique_live = CASE WHEN is_unique = 1 THEN 1 ELSE NULL END,
  updated_at = :now
WHERE id IN (:ids) AND status = 'failed'

-- name: jobs_with_step
-- Of some jobs, those that have a step of this name.
SELECT job_id FROM {steps} WHERE job_id IN (:ids) AND name = :step

-- name: step_names
-- The step names of one job, in declared order (to say which steps a job has).
SELECT name FROM {steps} WHERE job_id = :id ORDER BY position

-- name: delete_attempts_of
-- The attempt rows of some jobs.
DELETE FROM {attempts} WHERE job_id IN (:ids)

-- name: delete_steps_of
-- The step rows of some jobs.
DELETE FROM {steps} WHERE job_id IN (:ids)

-- ---------------------------------------------------------------------------------------------
-- reporting: the operator's view

-- name: queues_present
-- Every queue that has a job: a loose scan of the uniq_live index (queue, ext, ...) on MySQL and MariaDB, one dive
-- a queue ("Using index for group-by"), not a read of the rows.
SELECT queue FROM {jobs} GROUP BY queue

-- name: count_group_upto
-- How many jobs of one queue have one status, counting no further than :most (a range of by_claim).
SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE status = :status AND queue = :queue LIMIT :most) AS upto

-- name: next_pending_priority
-- The highest priority of a queue's pending jobs below :below: the first entry of a by_claim range (status, queue,
-- priority DESC), so a queue's priorities are found one statement each, without reading its jobs. (ORDER BY ...
-- LIMIT 1 rather than MAX(): MariaDB reads a whole range for MIN and MAX on an index with a DESC part.)
SELECT priority FROM {jobs} WHERE status = 'pending' AND queue = :queue AND priority < :below
ORDER BY priority DESC LIMIT 1

-- name: due_figures
-- Of a queue's pending jobs of one priority: how many are due by :now (counting no further than :most), the
-- earliest due time, the earliest after :now. Each a range of by_claim read from its start.
SELECT
  (SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE status = 'pending' AND queue = :queue AND priority = :priority
     AND due_at <= :now LIMIT :most) AS due),
  (SELECT due_at FROM {jobs} WHERE status = 'pending' AND queue = :queue AND priority = :priority
     ORDER BY due_at LIMIT 1),
  (SELECT due_at FROM {jobs} WHERE status = 'pending' AND queue = :queue AND priority = :priority
     AND due_at > :now ORDER BY due_at LIMIT 1)

-- name: count_group
-- How many jobs of one queue have one status, all of them: compensate's count of a big group (Control.count_jobs).
SELECT COUNT(*) FROM {jobs} WHERE status = :status AND queue = :queue

-- name: counted
-- The groups compensate counted, with when.
SELECT queue, status, n, counted_at FROM {counts}

-- name: forget_count
-- A group's count, gone (the group is small enough to count live, or empty).
DELETE FROM {counts} WHERE queue = :queue AND status = :status

-- name: put_count
-- A group's count (after forget_count, in the same transaction).
INSERT INTO {counts} (queue, status, n, counted_at) VALUES (:queue, :status, :n, :at)

-- name: list_jobs
-- Jobs newest first, filtered by status, queue and ext prefix (each filter optional).
SELECT id, queue, ext, callable, status, attempts, max_attempts, due_at, finished_at, last_error FROM {jobs}
WHERE (:status IS NULL OR status = :status) AND (:queue IS NULL OR queue = :queue)
  AND (:ext_like IS NULL OR ext LIKE :ext_like ESCAPE '!')
ORDER BY id DESC LIMIT :limit

-- name: search_jobs
-- Jobs matching a filter, newest first, one keyset page below :before ({where}: the filter's fragments, AND-ed).
-- {order}: empty, or {not_by_id_order} when the filter's statuses are few (failed, cancelled...): the optimizer,
-- which reckons matches spread evenly, would walk the primary key back through every newer row (the pending
-- backlog) to find a page of old failures; this way it reads that status's entries in by_claim and sorts them.
-- Or {by_queue} for a queue: its rows alone, newest first; or {by_is_finished} for pending or succeeded jobs: the live
-- (or the finished) rows alone, newest first (sql_reporting.ReportingSql._order).
SELECT id, queue, ext, callable, status, attempts, max_attempts, priority, due_at, created_at, finished_at, last_error
FROM {jobs} {order} WHERE {where} AND id < :before ORDER BY id DESC LIMIT :limit

-- name: search_few_ids
-- The ids of jobs of the few statuses (and queues, and an id window) below :before, newest first, from by_claim's
-- entries alone ({by_claim}): the first step of a search of those statuses with a fragment the index lacks.
SELECT id FROM {jobs} {by_claim} WHERE {where} AND id < :before ORDER BY id DESC LIMIT :limit

-- name: search_keys
-- Id, queue and status of the jobs matching a filter, one keyset page below :before (what a bulk action walks).
-- {by_id}: empty, or for a walk over many jobs {scan_by_id} (the primary key read backwards) or {by_is_finished}
-- (the live or the finished rows alone, read backwards): no page sorts every remaining match (which a secondary
-- index on status and queue would make the optimizer do).
SELECT id, queue, status FROM {jobs} {by_id} WHERE {where} AND id < :before ORDER BY id DESC LIMIT :limit

-- name: count_jobs
-- How many jobs match a filter, per queue and status.
SELECT queue, status, COUNT(*) FROM {jobs} WHERE {where} GROUP BY queue, status

-- name: count_upto
-- How many jobs match a filter, counting no further than :most (a search page's total stays cheap on big tables).
SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE {where} LIMIT :most) AS upto

-- name: filter_attempts_of
-- A filter fragment on attempts: those of some jobs.
job_id IN (:ids)

-- name: filter_ids
-- A filter fragment: these ids.
id IN (:ids)

-- name: filter_queues
-- A filter fragment: in these queues.
queue IN (:queues)

-- name: filter_statuses
-- A filter fragment: in these statuses.
status IN (:statuses)

-- name: filter_timed_out
-- A filter fragment: the job's last attempt ran past its time limit (stored timeout_retry or timeout_failed; see
-- words.py). One dive into the attempts' (job_id, attempt) index per row the other fragments leave.
(SELECT a.outcome FROM {attempts} a WHERE a.job_id = {jobs}.id ORDER BY a.attempt DESC, a.id DESC LIMIT 1)
  IN ('timeout_retry', 'timeout_failed')

-- name: filter_call
-- A filter fragment: this callable.
callable = :call

-- name: filter_call_prefix
-- A filter fragment: callables of a module (a literal prefix).
callable LIKE :call_like ESCAPE '!'

-- name: filter_ext
-- A filter fragment: this business key.
ext = :ext

-- name: filter_ext_prefix
-- A filter fragment: business keys starting with a literal prefix.
ext LIKE :ext_like ESCAPE '!'

-- name: filter_since
-- A filter fragment: a time (due, created or finished: {time_column}) at or after :since.
{time_column} >= :since

-- name: filter_until
-- A filter fragment: a time before :until.
{time_column} < :until

-- name: filter_arg
-- A filter fragment: one argument of the job (a top-level key of its JSON args, :path is '$."key"') equal to a
-- value, compared as text (a scan of the rows the other fragments leave). (Per dialect.)
JSON_UNQUOTE(JSON_EXTRACT(args, :path)) = :value

-- name: filter_upto_id
-- A filter fragment: jobs that existed when a bulk action was previewed.
id <= :upto_id

-- name: filter_above_id
-- A filter fragment: a scan's window (the dashboard reads a scan's rows a window of ids at a time).
id > :above_id

-- name: filter_live
-- A filter fragment: pending or running (implied by such statuses: it lets a page read by_is_finished's live end).
is_finished = 0

-- name: filter_finished
-- A filter fragment: finished (implied by the final statuses: a page of them reads by_is_finished's finished end).
is_finished = 1

-- name: filter_as_of
-- A filter fragment: jobs not changed since a bulk action was previewed (a post-filter on the rows found).
updated_at <= :as_of

-- name: filter_error
-- A filter fragment: text in the last error (a scan of the rows the other fragments leave).
last_error LIKE :error_like ESCAPE '!'

-- name: live_queues_like
-- Queues matching a pattern that have pending or running jobs.
SELECT DISTINCT queue FROM {jobs} WHERE queue LIKE :pattern AND status IN ('pending', 'running') ORDER BY queue

-- name: failed_in_queue
-- The oldest failed jobs of a queue.
SELECT id FROM {jobs} WHERE queue = :queue AND status = 'failed' ORDER BY id LIMIT :limit

-- name: recent_attempts
-- Per queue, attempts that finished since :hour (and since :minute) by outcome, and how late they started
-- (start minus the due time they were claimed at): the throughput view of stats.
SELECT queue, outcome, COUNT(*), SUM(CASE WHEN finished_at >= :minute THEN 1 ELSE 0 END),
  AVG(started_at - due_at), MAX(started_at - due_at)
FROM {attempts} WHERE finished_at >= :hour GROUP BY queue, outcome

-- name: attempts_per_bucket
-- Attempts finished from :from_at to before :until, of every queue (:all_queues = 1) or of :queue, by bucket of
-- :bucket seconds (0 = the bucket starting at :since) and outcome, with their lateness (sum, count where the due
-- time is known, largest): the dashboard's charts. FLOOR: MySQL's, and SQLite's math functions (built in by
-- default since 3.35).
SELECT FLOOR((finished_at - :since) / :bucket) AS b, outcome, COUNT(*), COALESCE(SUM(started_at - due_at), 0),
       COUNT(due_at), MAX(started_at - due_at)
FROM {attempts} WHERE finished_at >= :from_at AND finished_at < :until AND (:all_queues = 1 OR queue = :queue)
GROUP BY b, outcome

-- name: rollups_per_bucket
-- The same from the rolled-up 5-minute buckets starting from :from_at to before :until (the long charts).
SELECT FLOOR((at - :since) / :bucket) AS b, outcome, SUM(n), SUM(late_sum), SUM(late_n), MAX(late_max)
FROM {rollups} WHERE at >= :from_at AND at < :until AND (:all_queues = 1 OR queue = :queue)
GROUP BY b, outcome

-- name: rolled_upto
-- The start of the newest bucket rolled up (NULL: none yet).
SELECT MAX(at) FROM {rollups}

-- name: clear_rollups
-- The buckets about to be rolled up again, and those past the charts' reach (before :keep).
DELETE FROM {rollups} WHERE (at >= :since AND at < :until) OR at < :keep

-- name: roll_up
-- The attempts finished in [:since, :until) into 5-minute buckets (both multiples of 300 seconds).
INSERT INTO {rollups} (at, queue, outcome, n, late_sum, late_n, late_max)
SELECT FLOOR(finished_at / 300) * 300, COALESCE(queue, ''), outcome, COUNT(*), COALESCE(SUM(started_at - due_at), 0),
       COUNT(due_at), MAX(started_at - due_at)
FROM {attempts} WHERE finished_at >= :since AND finished_at < :until
GROUP BY FLOOR(finished_at / 300) * 300, COALESCE(queue, ''), outcome

-- ---------------------------------------------------------------------------------------------
-- metrics: counters and histograms derived from the rows (metrics.py), so every runner and restart agrees

-- name: tally_attempts
-- Per queue: attempts by outcome, and run time and lateness as histogram buckets (rows: queue, kind, name, count,
-- sum; a bucket's name is its upper bound). {where}: which attempts (all, or those of jobs purge is deleting).
SELECT COALESCE(queue, '') AS q, 'outcome' AS kind, outcome AS name, COUNT(*) AS n, 0 AS total
FROM {attempts} WHERE {where} GROUP BY q, outcome
UNION ALL
SELECT COALESCE(queue, '') AS q, 'duration' AS kind, CASE WHEN finished_at - started_at <= 0.005 THEN '0.005'
  WHEN finished_at - started_at <= 0.01 THEN '0.01' WHEN finished_at - started_at <= 0.025 THEN '0.025'
  WHEN finished_at - started_at <= 0.05 THEN '0.05' WHEN finished_at - started_at <= 0.1 THEN '0.1'
  WHEN finished_at - started_at <= 0.25 THEN '0.25' WHEN finished_at - started_at <= 0.5 THEN '0.5'
  WHEN finished_at - started_at <= 1 THEN '1' WHEN finished_at - started_at <= 2.5 THEN '2.5'
  WHEN finished_at - started_at <= 5 THEN '5' WHEN finished_at - started_at <= 10 THEN '10'
  WHEN finished_at - started_at <= 30 THEN '30' WHEN finished_at - started_at <= 60 THEN '60'
  WHEN finished_at - started_at <= 300 THEN '300' ELSE '+Inf' END AS b, COUNT(*), SUM(finished_at - started_at)
FROM {attempts} WHERE {where} GROUP BY q, b
UNION ALL
SELECT COALESCE(queue, '') AS q, 'lateness' AS kind, CASE WHEN started_at - due_at <= 0.1 THEN '0.1'
  WHEN started_at - due_at <= 0.5 THEN '0.5' WHEN started_at - due_at <= 1 THEN '1' WHEN started_at - due_at <= 2 THEN '2'
  WHEN started_at - due_at <= 5 THEN '5' WHEN started_at - due_at <= 10 THEN '10' WHEN started_at - due_at <= 30 THEN '30'
  WHEN started_at - due_at <= 60 THEN '60' WHEN started_at - due_at <= 300 THEN '300'
  WHEN started_at - due_at <= 900 THEN '900' WHEN started_at - due_at <= 3600 THEN '3600' ELSE '+Inf' END AS b,
  COUNT(*), SUM(started_at - due_at)
FROM {attempts} WHERE {where} AND due_at IS NOT NULL GROUP BY q, b

-- name: metrics
-- Every counter and histogram bucket per queue: what purge folded into {tallies} plus the rows still here, in one
-- statement (one consistent read: a purge committing meanwhile never makes a counter go down). Jobs count as
-- enqueued when created; cancelled ones by status.
SELECT q, kind, name, SUM(n), SUM(total) FROM (
  SELECT queue AS q, kind, name, n, total FROM {tallies}
  UNION ALL
  {include:tally_attempts}
  UNION ALL
  SELECT queue AS q, 'jobs' AS kind, 'enqueued' AS name, COUNT(*) AS n, 0 AS total FROM {jobs} GROUP BY queue
  UNION ALL
  SELECT queue AS q, 'jobs' AS kind, 'cancelled' AS name, COUNT(*) AS n, 0 AS total FROM {jobs}
  WHERE status = 'cancelled' GROUP BY queue
) t GROUP BY q, kind, name

-- name: tally_add
-- Add to one folded total (purge: the counts of the rows it deletes).
UPDATE {tallies} SET n = n + :n, total = total + :total WHERE queue = :queue AND kind = :kind AND name = :name

-- name: tally_insert
-- A folded total seen for the first time.
INSERT INTO {tallies} (queue, kind, name, n, total) VALUES (:queue, :kind, :name, :n, :total)

-- ---------------------------------------------------------------------------------------------
-- control: paused queues and runner heartbeats

-- name: paused_queues
-- The paused queues, with when and why.
SELECT queue, paused_at, reason FROM {queues} ORDER BY queue

-- name: pause_again
-- A queue already paused: a new reason replaces the old one; it stays paused since the first time.
UPDATE {queues} SET reason = COALESCE(:reason, reason) WHERE queue = :queue

-- name: pause_queue
-- Pause a queue (the row is the pause).
INSERT INTO {queues} (queue, paused_at, reason) VALUES (:queue, :now, :reason)

-- name: resume_queue
-- Resume a queue.
DELETE FROM {queues} WHERE queue = :queue

-- name: beat_again
-- A runner's heartbeat: still here, running these jobs now.
UPDATE {workers} SET last_seen = :now, running = :running, stopped_at = NULL WHERE id = :id

-- name: beat_first
-- A runner's first heartbeat (or one after its row was forgotten).
INSERT INTO {workers} (id, host, pid, queues, concurrency, every, started_at, last_seen, running)
VALUES (:id, :host, :pid, :queues, :concurrency, :every, :started_at, :now, :running)

-- name: worker_stopped
-- A runner stopped cleanly: its row says so at once (not after missed beats).
UPDATE {workers} SET stopped_at = :now, last_seen = :now, running = NULL WHERE id = :id

-- name: select_workers
-- Every runner row, oldest first.
SELECT id, host, pid, queues, concurrency, every, started_at, last_seen, stopped_at, running FROM {workers}
ORDER BY started_at, id

-- name: insert_audit
-- One action taken on the web dashboard: when, from which address, what, on which jobs and how many.
INSERT INTO {audit} (id, at, address, actor, action, target, jobs, detail)
VALUES (:id, :at, :address, :actor, :action, :target, :jobs, :detail)

-- name: select_audit
-- The newest actions first, older than :before.
SELECT id, at, address, actor, action, target, jobs, detail FROM {audit} WHERE at < :before ORDER BY at DESC LIMIT :limit

-- name: forget_workers
-- Rows of runners not seen since :before (gone for a day): the table stays small.
DELETE FROM {workers} WHERE last_seen < :before

-- ---------------------------------------------------------------------------------------------
-- schedules: recurring schedules (scheduler.py); one short transaction a slot

-- name: lock_schedule
-- A schedule's row, locked: the one runner that holds it decides its due slots.
SELECT last_slot, last_job, paused_at FROM {schedules} WHERE name = :name {for_update}

-- name: insert_schedule
-- A schedule seen for the first time: its slots count from :last_slot (the first runs at the next slot after it).
INSERT INTO {schedules} (name, last_slot, created_at, updated_at) VALUES (:name, :last_slot, :now, :now)

-- name: job_status
-- One job's status (none: purged).
SELECT status FROM {jobs} WHERE id = :id

-- name: taken_slots
-- Of some slots, those that already have their job.
SELECT slot FROM {slots} WHERE schedule = :name AND slot IN (:slots)

-- name: insert_slot
-- A slot run, with its job: the primary key (schedule, slot) refuses a second.
INSERT INTO {slots} (schedule, slot, job_id) VALUES (:name, :slot, :job_id)

-- name: update_schedule
-- What one look at a schedule did: its latest slot, its latest job, and what came of its slots.
UPDATE {schedules} SET last_slot = :last_slot, last_job = COALESCE(:last_job, last_job), ran = ran + :ran,
  skipped = skipped + :skipped, missed = missed + :missed, updated_at = :now
WHERE name = :name

-- name: select_schedules
-- Every schedule row, by name, with its latest job's status, outcome time and last error (NULL: purged).
SELECT s.name, s.last_slot, s.last_job, s.paused_at, s.ran, s.skipped, s.missed, s.created_at, s.updated_at,
       j.status, j.finished_at, j.last_error
FROM {schedules} s LEFT JOIN {jobs} j ON j.id = s.last_job ORDER BY s.name

-- name: pause_schedule
-- An operator pauses a schedule: its slots pass without jobs until it is resumed.
UPDATE {schedules} SET paused_at = COALESCE(paused_at, :now), updated_at = :now WHERE name = :name

-- name: resume_schedule
-- Resume a schedule; the slots that passed meanwhile do not catch up (its slots count from now).
UPDATE {schedules} SET paused_at = NULL, last_slot = CASE WHEN last_slot < :slot THEN :slot ELSE last_slot END, updated_at = :now
WHERE name = :name AND paused_at IS NOT NULL

-- name: forget_slots
-- Slot rows older than :before (the schedules row keeps the latest).
DELETE FROM {slots} WHERE slot < :before

-- ---------------------------------------------------------------------------------------------
-- limits: rate and concurrency across runners (limits.py, sql_limits.py), only where a limit governs a job

-- name: pending_limited
-- Of some claimed ids, the pending jobs start_jobs left alone: those a limit governs, with what governs them.
SELECT id, queue, priority, limit_key, limit_max FROM {jobs} {scan_by_id} WHERE id IN (:ids) AND status = 'pending'

-- name: lock_gate
-- A gate's row, locked: a queue's bucket of tokens, or the lock row of some keys.
SELECT tokens, at FROM {limits} WHERE name = :name {for_update}

-- name: insert_gate
-- A gate seen for the first time (its bucket full).
INSERT INTO {limits} (name, tokens, at) VALUES (:name, :tokens, :now)

-- name: update_gate
-- A queue's bucket after its tokens were taken.
UPDATE {limits} SET tokens = :tokens, at = :now WHERE name = :name

-- name: pass_gates
-- The gates a claim passed (jobs started through them), written (passes + 1): on Galera, where a row lock is each
-- node's own and only writes are certified, two claims on two nodes that pass one gate then conflict at commit.
UPDATE {limits} SET passes = passes + 1 WHERE name IN (:names)

-- name: running_in_queue
-- How many of a queue's jobs run now (their lease not run out): a range of by_claim.
SELECT COUNT(*) FROM {jobs} WHERE status = 'running' AND queue = :queue AND lease_until > :now

-- name: running_with_key
-- How many jobs of a key run now (their lease not run out).
SELECT COUNT(*) FROM {limited} l JOIN {jobs} j ON j.id = l.job_id
WHERE l.lkey = :key AND j.status = 'running' AND j.lease_until > :now

-- name: hold_jobs
-- Jobs a gate held back: due again at :due (not started, no attempt counted), out of the way of those behind them.
UPDATE {jobs} {scan_by_id} SET due_at = :due, updated_at = :now WHERE id IN (:ids) AND status = 'pending'

-- name: limited_of
-- Which of some jobs have a row of the limits already.
SELECT job_id FROM {limited} WHERE job_id IN (:ids)

-- name: forget_limited_of
-- Rows of some jobs (before they are written again, as started).
DELETE FROM {limited} WHERE job_id IN (:ids)

-- name: insert_limited
-- A job a limit touched: held back (:held = 1), or started under its key (0).
INSERT INTO {limited} (job_id, queue, lkey, held, since) VALUES (:job_id, :queue, :lkey, :held, :now)

-- name: waiting_on_limits
-- Per queue: the pending jobs a limit held back (not started since).
SELECT l.queue, COUNT(*) FROM {limited} l JOIN {jobs} j ON j.id = l.job_id WHERE l.held = 1 AND j.status = 'pending'
GROUP BY l.queue

-- name: ended_limited
-- Rows of jobs that ended (or were purged): compensate drops them, a page at a time.
SELECT l.job_id FROM {limited} l LEFT JOIN {jobs} j ON j.id = l.job_id
WHERE j.id IS NULL OR j.status NOT IN ('pending', 'running') LIMIT :limit

-- name: forget_ended_limited
-- Those rows, unless their job is pending or running again by now (retried and started meanwhile).
DELETE FROM {limited} WHERE job_id IN (:ids)
  AND job_id NOT IN (SELECT id FROM {jobs} WHERE id IN (:ids) AND status IN ('pending', 'running'))
