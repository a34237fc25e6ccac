"""The write-set ceiling (issue 5, part 5): delayq's own writes per job, done by a plain script.

Raw redis-py and PyMySQL connections run, per job, the writes delayq's runner does, with
delayq's own Lua file and named queries (never copies of them): the claim into the in-flight
set (claim.lua), start_jobs, select_claimed, COMMIT, finish_succeeded, insert_attempts_json,
COMMIT, ZREM from the in-flight set; batched by 500, and then single-row with autocommit for
contrast. What it leaves out is delayq's Python around them (the supervisor, the workers).
"""

from __future__ import annotations

import json
import secrets
import time

import pymysql
import redis

from delayq.index.redis import BAND, load_scripts

RECORD_SECONDS = 15         # how long claim.lua keeps a claim's record: what RedisIndex keeps on one server
from delayq_side import NOOP, World

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
    """delayq's own Lua claim and named queries (the real files, never copies), on raw connections."""
    from urllib.parse import urlsplit

    u = urlsplit(w.config.database_url)
    conn = pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root", password=u.password or "",
                           database=u.path.lstrip("/"), autocommit=size == 1)
    r = redis.Redis.from_url(w.config.redis_url)
    claim = load_scripts(r)["claim"]                     # index/lua/claim.lua, as the runner runs it
    q = w.q.store.q                                      # store/sql/queries.sql + mysql/queries.sql, by name
    due, inflight = "{" + w.prefix + ":default}:due", "{" + w.prefix + ":default}:inflight"
    done = 0
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        while done < count:
            now = time.time()
            token = secrets.token_hex(16)       # one a claim, as the runner: claim.lua records what it took under it
            record = "{" + w.prefix + ":default}:claim:" + token
            ids = [int(i) for i in claim(keys=[due, inflight, record],
                                         args=[repr(now), size, repr(now + 300), BAND, RECORD_SECONDS])]
            cur.execute(*q("start_jobs", token=token, now=now, lease=300.0, ids=ids))
            cur.execute(*q("select_claimed", ids=ids, token=token))
            claimed = cur.fetchall()
            if size > 1:
                conn.commit()   # delayq commits the start before running the batch: a crash then leaves leases
            end = time.time()
            cur.execute(*q("finish_succeeded", now=end, token=token, ids=ids))
            rows = [(row[0], row[5], now, end, "succeeded", None, row[1], row[8]) for row in claimed]
            cur.execute(*q("insert_attempts_json", rows=json.dumps(rows)))
            if size > 1:
                conn.commit()
            r.zrem(inflight, *ids)
            done += len(ids)
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed
