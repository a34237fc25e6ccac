-- SQLite (>= 3.35) overrides of sql/queries.sql: only the queries whose SQL differs.

-- name: server_time
-- This host's clock, epoch seconds (the embedded database lives on one host).
SELECT (julianday('now') - 2440587.5) * 86400.0

-- name: insert_jobs_json
-- Insert new jobs from one JSON array of rows (one bound parameter, however many jobs), returning their ids.
INSERT INTO {jobs} (queue, ext, unique_live, is_unique, callable, args, status, attempts, max_attempts, ladder,
  due_at, deadline, priority, lease_seconds, timeout_seconds, at_most_once, on_timeout, event, event_id,
  index_pending, limit_key, limit_max, created_at, updated_at)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
  json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'), 'pending', 0,
  json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'), json_extract(value, '$[9]'),
  json_extract(value, '$[10]'), json_extract(value, '$[11]'), json_extract(value, '$[12]'),
  json_extract(value, '$[13]'), json_extract(value, '$[14]'), json_extract(value, '$[15]'),
  json_extract(value, '$[16]'), json_extract(value, '$[17]'), json_extract(value, '$[18]'),
  json_extract(value, '$[19]'), :now, :now
FROM json_each(:rows) ORDER BY key RETURNING id

-- name: insert_attempts_json
-- Append attempt rows given as one JSON array of [job_id, attempt, started_at, finished_at, outcome, error, queue, due_at].
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error, queue, due_at)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
  json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]'),
  json_extract(value, '$[7]')
FROM json_each(:rows)

-- name: pending_page
-- One page of pending jobs in id order, packed into one JSON array of [id, queue, due_at, priority]
-- (keyset pagination on the primary key, for rebuilding the due index; ids after :after up to :upto).
SELECT json_group_array(json_array(id, queue, due_at, priority)) FROM (SELECT id, queue, due_at, priority FROM {jobs}
WHERE status = 'pending' AND id > :after AND id <= :upto ORDER BY id LIMIT :limit)

-- name: select_claimed_packed
-- Rows, as select_claimed: sqlite3 decodes columns in C, and SQLite's JSON keeps only 15 digits of a REAL.
SELECT id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline, priority, at_most_once,
  lease_until, lease_seconds, timeout_seconds, crashes, on_timeout, claim_token, solo
FROM {jobs} WHERE id IN (:ids) AND claim_token = :token

-- name: filter_arg
-- One argument equal to a value, compared as text (json_extract gives a number as a number: cast to text).
CAST(json_extract(args, :path) AS TEXT) = :value
