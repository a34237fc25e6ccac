-- MySQL 8 / MariaDB >= 10.6 overrides of sql/queries.sql: only the queries whose SQL differs.
-- JSON_TABLE is documented by both (MySQL 8.0.4, MariaDB 10.6); RETURNING only by MariaDB (the store
-- falls back to insert_job one row at a time on MySQL 8).

-- name: server_time
-- The database's clock, epoch seconds.
SELECT UNIX_TIMESTAMP(NOW(6))

-- name: insert_jobs_json
-- Insert new jobs from one JSON array of rows (one bound parameter, however many jobs), returning their ids (MariaDB).
INSERT INTO {jobs} (queue, ext, unique_live, is_unique, callable, args, status, attempts, max_attempts, ladder,
  due_at, deadline, priority, lease_seconds, timeout_seconds, at_most_once, on_timeout, event, event_id,
  index_pending, limit_key, limit_max, created_at, updated_at)
SELECT queue, ext, unique_live, is_unique, callable, args, 'pending', 0, max_attempts, ladder, due_at, deadline,
  priority, lease_seconds, timeout_seconds, at_most_once, on_timeout, event, event_id, index_pending, limit_key,
  limit_max, :now, :now
FROM JSON_TABLE(:rows, '$[*]' COLUMNS (n FOR ORDINALITY, queue VARCHAR(64) PATH '$[0]', ext VARCHAR(191) PATH '$[1]',
  unique_live TINYINT PATH '$[2]', is_unique TINYINT PATH '$[3]', callable VARCHAR(255) PATH '$[4]',
  args MEDIUMTEXT PATH '$[5]', max_attempts INT PATH '$[6]', ladder VARCHAR(255) PATH '$[7]', due_at DOUBLE PATH '$[8]',
  deadline DOUBLE PATH '$[9]', priority SMALLINT PATH '$[10]', lease_seconds DOUBLE PATH '$[11]',
  timeout_seconds DOUBLE PATH '$[12]', at_most_once TINYINT PATH '$[13]', on_timeout VARCHAR(255) PATH '$[14]',
  event VARCHAR(64) PATH '$[15]', event_id CHAR(32) PATH '$[16]', index_pending TINYINT PATH '$[17]',
  limit_key VARCHAR(191) PATH '$[18]', limit_max INT PATH '$[19]')) AS jt
ORDER BY n RETURNING id

-- name: insert_attempts_json
-- Append attempt rows given as one JSON array of [job_id, attempt, started_at, finished_at, outcome, error, queue, due_at].
INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error, queue, due_at)
SELECT job_id, attempt, started_at, finished_at, outcome, error, queue, due_at
FROM JSON_TABLE(:rows, '$[*]' COLUMNS (job_id BIGINT PATH '$[0]', attempt INT PATH '$[1]', started_at DOUBLE PATH '$[2]',
  finished_at DOUBLE PATH '$[3]', outcome VARCHAR(16) PATH '$[4]', error TEXT PATH '$[5]', queue VARCHAR(64) PATH '$[6]',
  due_at DOUBLE PATH '$[7]')) AS jt

-- name: pending_page
-- One page of pending jobs in id order, packed into one JSON array of [id, queue, due_at, priority] (one value to
-- decode instead of a row each; keyset pagination on the primary key, for rebuilding the due index).
-- No index on status alone: it would cost every claim and outcome an index update; this rare scan pays instead.
-- :upto bounds the ids one statement reads (recovery.SPAN): pending rows may sit behind millions of finished ones.
-- The array's order is not promised (MySQL 8 documents no ORDER BY inside JSON_ARRAYAGG): the caller sorts.
SELECT JSON_ARRAYAGG(JSON_ARRAY(id, queue, due_at, priority)) FROM (SELECT id, queue, due_at, priority FROM {jobs} FORCE INDEX (PRIMARY)
WHERE status = 'pending' AND id > :after AND id <= :upto ORDER BY id LIMIT :limit) AS page

-- name: select_claimed_packed
-- The jobs a claim token holds, as one JSON array of arrays, each in select_claimed's column order (a claim of 500
-- jobs: a fifth of the client's CPU of 500 rows of 18 columns). NULL when none; a value MariaDB cut at
-- group_concat_max_len is not valid JSON: the caller then reads select_claimed's rows.
SELECT JSON_ARRAYAGG(JSON_ARRAY(id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline,
  priority, at_most_once, lease_until, lease_seconds, timeout_seconds, crashes, on_timeout, claim_token, solo))
  AS packed
FROM {jobs} WHERE id IN (:ids) AND claim_token = :token
