-- delayq schema, version 7: one index on status instead of two.
-- by_due (status, queue, due_at) goes: by_claim (status, queue, priority, due_at), from version 4, serves every
-- query by_due served (the in-database claim and next due time walk it one priority level at a time). Each job
-- changes status twice (pending -> running -> its outcome), and each index on status is rewritten each time: one
-- index fewer is about a quarter of the database's work for a job (docs/PERFORMANCE.md).

DROP INDEX {jobs_ix}by_due {on_jobs};
