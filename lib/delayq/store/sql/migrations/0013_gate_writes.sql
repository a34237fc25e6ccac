-- delayq schema, version 13: a gate's row written by each claim that passes it (issue 26: limits on Galera).
-- passes: how many claims started jobs through the gate (a queue's "queue:NAME", a key's lock row "key#N"). The
--   claim adds one, in its own transaction, to every gate it passed, whose row it holds locked already. A key's
--   limit and a queue's max_running were held by the row lock alone; on Galera a row lock is each node's own and
--   only writes are certified, so two claims on two nodes could both pass one gate. Now both write its row: the
--   second to commit is refused (1213) and run again, and counts what the first started. A real change of value
--   each time (an UPDATE that sets what is there writes nothing, with binlog_format=ROW). Jobs of no limit never
--   touch the gates.

ALTER TABLE {limits} ADD COLUMN passes BIGINT NOT NULL DEFAULT 0;
