"""The write-set ceiling (issue 5, part 5): delayq's own writes per job, done by a plain script.

No delayq code runs in the timed loop: raw redis-py and PyMySQL do, per job, the
writes delayq's runner does (Lua claim into the in-flight set, UPDATE to running,
read back the claimed rows, COMMIT, UPDATE to succeeded, INSERT the attempt row,
COMMIT, ZREM from the in-flight set), batched by 500, and then single-row with
autocommit for contrast. delayq's migrate and enqueue only set the tables up.
"""

from __future__ import annotations

import time

import pymysql
import redis

from delayq_side import NOOP, World

CLAIM = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then return ids end
redis.call('ZREM', KEYS[1], unpack(ids))
local p = {}
for i, id in ipairs(ids) do p[2 * i - 1] = ARGV[3]; p[2 * i] = id end
redis.call('ZADD', KEYS[2], unpack(p))
return ids
"""


def ceiling(mysql_url: str, redis_url: str, n: int, batch: int = 500) -> dict:
    results = {}
    for label, size in (("batched_500", batch), ("single_row_autocommit", 1)):
        w = World(mysql_url, redis_url)
        try:
            count = n if size > 1 else min(n, 5000)
            w.q.enqueue_many({"call": NOOP} for _ in range(count))
            results[label] = round(count / _loop(w, size, count))
        finally:
            w.close()
    return results


def _loop(w: World, size: int, count: int) -> float:
    from urllib.parse import urlsplit

    u = urlsplit(w.config.database_url)
    conn = pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root", password=u.password or "",
                           database=u.path.lstrip("/"), autocommit=size == 1)
    r = redis.Redis.from_url(w.config.redis_url)
    claim = r.register_script(CLAIM)
    jobs, attempts = w.prefix + "_jobs", w.prefix + "_attempts"
    due, inflight = "{" + w.prefix + ":default}:due", "{" + w.prefix + ":default}:inflight"
    done = 0
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        while done < count:
            now = time.time()
            ids = [int(i) for i in claim(keys=[due, inflight], args=[now, size, now + 300])]
            marks = ", ".join(["%s"] * len(ids))
            cur.execute(f"UPDATE {jobs} SET status = 'running', claim_token = %s, lease_until = %s, started_at = %s, "
                        f"updated_at = %s, attempts = attempts + 1 WHERE id IN ({marks}) AND status = 'pending'",
                        ["t" * 32, now + 300, now, now, *ids])
            cur.execute(f"SELECT id, queue, ext, callable, args, attempts, max_attempts, ladder, due_at, deadline, "
                        f"priority, at_most_once, lease_until, on_timeout FROM {jobs} WHERE id IN ({marks}) "
                        f"AND claim_token = %s", [*ids, "t" * 32])
            cur.fetchall()
            if size > 1:
                conn.commit()   # delayq commits the start before running the batch: a crash then leaves leases
            end = time.time()
            cur.execute(f"UPDATE {jobs} SET status = 'succeeded', finished_at = %s, updated_at = %s, last_error = NULL, "
                        f"claim_token = NULL, lease_until = NULL, unique_live = NULL WHERE id IN ({marks}) "
                        f"AND claim_token = %s", [end, end, *ids, "t" * 32])
            rows = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(ids))
            cur.execute(f"INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error) "
                        f"VALUES {rows}", [v for i in ids for v in (i, 1, now, end, "succeeded", None)])
            if size > 1:
                conn.commit()
            r.zrem(inflight, *ids)
            done += len(ids)
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed
