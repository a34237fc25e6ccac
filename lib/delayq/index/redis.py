"""The due index in Redis: per queue, a ZSET of due ids and a ZSET of ids in flight.

Keys share a hash tag per queue, "{PREFIX:QUEUE}:due" and "{PREFIX:QUEUE}:inflight" (and a
claim's short-lived record "{PREFIX:QUEUE}:claim:TOKEN"), so each Lua script touches one hash
slot and also runs on Redis Cluster; a runner of several queues makes one call per queue.
The Lua files ship in the package (sql/lua/*.lua), one per operation, loaded by name.
One server, a Sentinel set or a Cluster (redis_client.py); every call is retried through a
failover for a bounded time, and only calls that are safe to repeat are made.

A due set's score is due_at - priority * BAND: each priority level owns a range of
scores below the next lower one, so the lowest scores are the highest priority and, within
a level, the earliest due. BAND is 2^35 seconds (year 3058), beyond any due time validation
admits; scores of non-zero priorities keep due times to within 1/128 s.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections import defaultdict
from typing import Callable, Iterable, Iterator, TypeVar

import redis
from redis.exceptions import RedisClusterException

from ..errors import BackendError
from ..fairness import fair_pick
from ..jobs import Job
from ..store.queries import sql_dir
from ..store.sql_claims import in_order
from . import redis_client
from .base import Entry, RebuildableIndex

T = TypeVar("T")
log = logging.getLogger(__name__)
BAND = float(2 ** 35)
MAX_PER_CALL = 1000
CATCH_UP_EVERY = 0.5      # seconds between outbox sweeps made by claim()
CLAIM_WINDOW = 30.0       # seconds a claimer may take from its Redis claim to its rows' update (beyond a failover)


def score(due_at: float, priority: int) -> float:
    return due_at - priority * BAND


def due_of(raw: float) -> float:
    return raw - math.floor(raw / BAND) * BAND


def timeouts(seconds: float) -> dict[str, float]:
    """redis-py's bounds for one wait: connecting and each command's answer (DELAYQ_REDIS_TIMEOUT)."""
    return {"socket_timeout": seconds, "socket_connect_timeout": seconds}


def load_scripts(client: redis.Redis) -> dict:
    lua = sql_dir() / "lua"
    return {item.name[:-4]: client.register_script(item.read_text(encoding="utf-8"))
            for item in lua.iterdir() if item.name.endswith(".lua")}


class RedisIndex(RebuildableIndex):
    backend = "Redis"

    def __init__(self, url: str, prefix: str, store, client: redis.Redis | None = None,
                 socket_timeout: float = redis_client.SOCKET_TIMEOUT,
                 connect_timeout: float = redis_client.CONNECT_TIMEOUT, failover_wait: float | None = None):
        """`failover_wait`: seconds a call keeps retrying through a failover (default: FAILOVER_WAIT for
        the Sentinel and Cluster forms, 0 for one server). Connects on first use."""
        self.target = redis_client.parse(url)
        self.where = self.target.describe()
        self.prefix = prefix
        self.store = store          # ClaimStore (start) and MaintenanceStore (outbox) parts
        self._timeouts = (socket_timeout, connect_timeout)
        self.timeout = socket_timeout
        if failover_wait is None:
            failover_wait = 0.0 if self.target.form == redis_client.SERVER else redis_client.FAILOVER_WAIT
        # one bound for a whole call, its retries and every wait in them: the failover wait, at least one timeout
        self.failover = redis_client.Failover(failover_wait, self._rode_over, timeout=socket_timeout)
        # a claim's record outlives every retry of it: a retry can start up to failover_wait after the first
        # failure, and the first attempt may have run up to a socket timeout before that
        self._record_seconds = int(failover_wait + socket_timeout) + 5
        self._client = client
        self._scripts: dict = {}
        self._caught_up = float("-inf")

    @property
    def r(self):
        """redis-py's client (Redis, a Sentinel-managed Redis, or RedisCluster), made on first use."""
        if self._client is None:
            self._client = self._call(lambda: redis_client.connect(self.target, *self._timeouts))
        if not self._scripts:
            self._scripts = load_scripts(self._client)
        return self._client

    def keys(self, queue: str) -> tuple[str, str]:
        tag = "{" + self.prefix + ":" + queue + "}"
        return tag + ":due", tag + ":inflight"

    def _record(self, queue: str, token: str) -> str:
        return "{" + self.prefix + ":" + queue + "}:claim:" + token

    def _marker(self) -> str:
        return "{" + self.prefix + "}:rebuilt"

    def _fail(self, exc: Exception) -> BackendError:
        """One line naming the cause (no server there, a refused login, a database number the server lacks),
        the form and the hosts, never a password."""
        text = redis_client.short(exc)
        for secret in self.target.secrets():
            text = text.replace(secret, "***")
        if isinstance(exc, redis.AuthenticationError) or text.startswith(("WRONGPASS", "NOAUTH", "invalid username")):
            return BackendError(f"Redis at {self.where}: authentication failed: check the user and password in "
                                "DELAYQ_REDIS_URL")
        if "DB index is out of range" in text:
            return BackendError(f"Redis at {self.where}: no such database number on this server: fix the /N at the "
                                "end of DELAYQ_REDIS_URL (the server's `databases` setting)")
        if isinstance(exc, redis.TimeoutError):
            setting = "DELAYQ_REDIS_FAILOVER_WAIT" if self.failover.wait > self.timeout else "DELAYQ_REDIS_TIMEOUT"
            return BackendError(f"Redis at {self.where} timed out after {self.failover.bound:g} s ({setting}): {text}")
        if isinstance(exc, redis.ConnectionError):
            return BackendError(f"Redis at {self.where} is unreachable: {text} (is the server running, and the host "
                                "and port in DELAYQ_REDIS_URL right?)")
        return BackendError(f"Redis at {self.where} failed: {text}")

    def check(self) -> None:
        """One PING: the server answers, accepted our login and has our database (through a failover)."""
        self._call(lambda: self.r.ping())

    def _call(self, fn: Callable[[], T]) -> T:
        """Run fn (safe to repeat) through a failover, a backend error naming the form and host if it lasts."""
        try:
            return self.failover.call(fn)
        except (redis.RedisError, RedisClusterException) as exc:
            raise self._fail(exc) from None

    def _rode_over(self, seconds: float) -> None:
        """A call succeeded after a failover: writes acknowledged by the old master may be gone, so the
        next compensate rebuilds the index now rather than in --rebuild-every seconds."""
        log.warning("Redis at %s: a call succeeded after %.1f s of failover errors; the next compensate "
                    "rebuilds the due index", self.where, seconds)
        try:
            self.r.delete(self._marker())
        except (redis.RedisError, RedisClusterException):
            pass    # the rebuild then waits for --rebuild-every: late, never lost

    def _script(self, name: str, keys: list[str], args: list) -> object:
        client = self.r
        return self._call(lambda: self._scripts[name](keys=keys, args=args, client=client))

    # -- writes that follow committed rows -----------------------------------
    def add(self, entries: list[Entry]) -> None:
        if len(entries) == 1:      # a single enqueue: one ZADD, without a pipeline's own work around it
            (job, queue, due, prio), = entries
            key, member = self.keys(queue)[0], {str(job): score(due, prio)}
            self._call(lambda: self.r.zadd(key, member))
            return

        def zadd(pipe) -> None:
            for queue, items in _by_queue(entries):
                for part in _chunks(items):
                    pipe.zadd(self.keys(queue)[0], {str(job): score(due, prio) for job, due, prio in part})
        self._pipeline(zadd)

    def remove(self, entries: list[tuple[int, str]]) -> None:
        self._zrem(entries, 0)

    def release(self, entries: list[tuple[int, str]]) -> None:
        self._zrem(entries, 1)

    def _zrem(self, entries: list[tuple[int, str]], which: int) -> None:
        def zrem(pipe) -> None:
            for queue, items in _by_queue((job, queue, 0.0, 0) for job, queue in entries):
                for part in _chunks(items):
                    pipe.zrem(self.keys(queue)[which], *[str(job) for job, _, _ in part])
        self._pipeline(zrem)

    def _pipeline(self, fill: Callable[[object], None]) -> list:
        """One pipeline (split per node on a cluster), filled and sent again whole if a failover cut it."""
        def send() -> list:
            with self.r.pipeline(transaction=False) as pipe:
                fill(pipe)
                return pipe.execute()
        return self._call(send)

    def _each(self, name: str, calls: list[tuple[list[str], list]]) -> list:
        """A read-only script once per (keys, args): one pipeline on a server or a Sentinel master, one call
        each on a cluster (its pipelines refuse EVALSHA; every call goes to the node that owns its slot)."""
        if self.target.form == redis_client.CLUSTER:
            return [self._script(name, keys, args) for keys, args in calls]

        def fill(pipe) -> None:
            for keys, args in calls:
                self._scripts[name](keys=keys, args=args, client=pipe)
        return self._pipeline(fill)

    def reschedule(self, entries: list[Entry]) -> None:
        for queue, items in _by_queue(entries):
            for part in _chunks(items):
                args = [v for job, due, prio in part for v in (repr(score(due, prio)), str(job))]
                self._script("reschedule", list(self.keys(queue)), args)

    # -- claiming ------------------------------------------------------------
    def claim(self, queues: list[str], now: float, limit: int, token: str, lease: float,
              record: str | None = None) -> list[Job]:
        if now - self._caught_up >= CATCH_UP_EVERY:
            self._caught_up = now
            self.catch_up()
        limit = min(limit, MAX_PER_CALL)
        # The in-flight score is a hint: until then, the claimer is moving the rows to running (after it, the row
        # is the truth: running under its lease, or still pending if the claimer died between the two steps, and
        # then compensate puts the id back in the due set at once, not when a lease would have run out).
        hint = repr(now + min(lease, CLAIM_WINDOW + self.failover.wait))
        record = record or token      # each claim has its own token (a holder's name, then its own characters)
        began = time.monotonic()
        if len(queues) == 1:
            taken = [(job, queues[0]) for job in self.claim_lua(queues[0], now, limit, hint, record)]
        else:
            taken = self._claim_across(queues, now, limit, hint, record)
        ids = [job for job, _ in taken]
        # a claim that waited out a failover starts its jobs, and their leases, when it got them, not before
        waited = time.monotonic() - began
        start_at = now + waited if waited >= 1.0 else now
        jobs = in_order(self.store.start(ids, token, start_at, lease), ids) if ids else []
        started = {job.id for job in jobs}
        stale = [(job, queue) for job, queue in taken if job not in started]
        if stale:   # cancelled or otherwise no longer pending: nothing to run
            self.release(stale)
        return jobs

    def claim_lua(self, queue: str, now: float, limit: int, hint: str, token: str) -> list[int]:
        """claim.lua on one queue: due ids -> in flight, recorded under the token (a retry returns the same)."""
        keys = [*self.keys(queue), self._record(queue, token)]
        return [int(job) for job in self._script("claim", keys, [repr(now), limit, hint, BAND, self._record_seconds])]

    def _claim_across(self, queues: list[str], now: float, limit: int, hint: str,
                      token: str) -> list[tuple[int, str]]:
        """Peek at every queue, pick across them (priority, then the queues in turn), claim exactly those.

        One read-only peek a queue (one pipeline on a single server), then one claim_ids.lua call
        per queue that has picks. Returns (job id, queue) in the order picked;
        ids another runner took since the peek are left out.
        """
        peeked = self._each("peek", [([self.keys(queue)[0]], [repr(now), limit, BAND]) for queue in queues])
        candidates = []
        for rows in peeked:
            pairs = zip(rows[0::2], rows[1::2])
            candidates.append([(int(job), -math.floor(float(raw) / BAND), due_of(float(raw))) for job, raw in pairs])
        picked = fair_pick(candidates, limit)
        chosen = set(picked)
        claimed: dict[int, str] = {}
        for queue, rows in zip(queues, candidates):
            mine = [str(job) for job, _, _ in rows if job in chosen]
            if mine:
                keys = [*self.keys(queue), self._record(queue, token)]
                found = self._script("claim_ids", keys, [repr(now), hint, BAND, self._record_seconds, *mine])
                claimed.update((int(job), queue) for job in found)
        return [(job, claimed[job]) for job in picked if job in claimed]

    def catch_up(self, limit: int = 1000) -> int:
        """Index the jobs committed inside an application's transaction, then clear their outbox flag."""
        rows = self.store.outbox(limit)
        if rows:
            self.add(rows)
            self.store.outbox_done([job for job, _, _, _ in rows])
        return len(rows)

    def next_due(self, queues: list[str]) -> float | None:
        firsts = [float(due) for due in self._each("next_due", [([self.keys(q)[0]], [BAND]) for q in queues]) if due]
        return min(firsts) if firsts else None

    def server_time(self) -> float:
        seconds, micros = self._call(lambda: self.r.time())
        return seconds + micros / 1e6

    # -- rebuild (compensate) ------------------------------------------------
    def restore(self, entries: list[Entry], now: float) -> int:
        added = 0
        for queue, items in _by_queue(entries):
            for part in _chunks(items, 2000):
                pairs = json.dumps([[score(due, prio), str(job)] for job, due, prio in part])
                added += self._script("restore", list(self.keys(queue)), [repr(now), pairs])
        return added

    def _our_keys(self, match: str) -> list[bytes]:
        """Keys of this prefix matching a pattern, from every primary of a cluster (SCAN, never KEYS)."""
        return self._call(lambda: list(self.r.scan_iter(match=match, count=1000)))

    def members(self, batch: int = 1000, kinds: tuple[str, ...] = ("due", "inflight")
                ) -> Iterator[tuple[str, str, list[tuple[int, float]]]]:
        for key in self._our_keys("{" + self.prefix + ":*}:*"):
            name = key.decode()
            tag, _, kind = name.rpartition(":")
            queue = tag[len(self.prefix) + 2:-1]
            if kind not in kinds or self.keys(queue) != (tag + ":due", tag + ":inflight"):
                continue
            cursor = 0
            while True:   # one ZSCAN page a call, each retried alone: a page seen twice is harmless
                cursor, page = self._call(lambda: self.r.zscan(name, cursor, count=batch))
                if page:
                    yield queue, kind, [(int(member), raw) for member, raw in page]
                if not cursor:
                    break

    def claimed_by(self, holder: str) -> Iterator[tuple[str, list[int]]]:
        """(queue, ids) of the claims made by `holder` whose records still live (a few seconds): what a claimer
        that just died may have moved in flight without moving its rows to running."""
        for key in self._our_keys("{" + self.prefix + ":*}:claim:" + holder + "*"):
            name = key.decode()
            tag = name[:name.index("}") + 1]
            queue = tag[len(self.prefix) + 2:-1]
            raw = self._call(lambda: self.r.get(name))
            if raw:
                yield queue, [int(job) for job in json.loads(raw)]

    def stranded(self, now: float, limit: int = MAX_PER_CALL) -> Iterator[tuple[str, list[tuple[int, float]]]]:
        """(queue, [(job id, raw score)]) of in-flight members whose claim's hint ran out before `now`: a bounded
        range read per in-flight set (ZRANGEBYSCORE), never the whole set."""
        for key in self._our_keys("{" + self.prefix + ":*}:inflight"):
            name = key.decode()
            tag = name.rpartition(":")[0]
            queue = tag[len(self.prefix) + 2:-1]
            if self.keys(queue)[1] != name:
                continue
            page = self._call(lambda: self.r.zrangebyscore(name, "-inf", f"({now!r}", start=0, num=limit,
                                                            withscores=True))
            if page:
                yield queue, [(int(member), raw) for member, raw in page]

    def sizes(self) -> int:
        keys = self._our_keys("{" + self.prefix + ":*}:due")

        def zcard(pipe) -> None:
            for key in keys:
                pipe.zcard(key)
        return sum(self._pipeline(zcard)) if keys else 0

    def drop_unchanged(self, queue: str, which: str, members: list[tuple[int, float]]) -> int:
        key = self.keys(queue)[0 if which == "due" else 1]
        removed = 0
        for part in _chunks(members):
            args = [v for job, raw in part for v in (repr(raw), str(job))]
            removed += self._script("drop_unchanged", [key], args)
        return removed

    def checked_upto(self) -> int | None:
        """The last job id compensate looked at (newer_rows), or None when it never did or the key was lost."""
        raw = self._call(lambda: self.r.get("{" + self.prefix + "}:checked"))
        return int(raw) if raw else None

    def set_checked(self, job_id: int) -> None:
        self._call(lambda: self.r.set("{" + self.prefix + "}:checked", str(int(job_id))))

    def rebuild_due(self, every: float) -> bool:
        # A marker that FLUSHALL or an eviction wipes together with the sets, so a lost index is rebuilt at once;
        # a client that rode over a failover deletes it too. The marker's value makes a repeated SET (its first
        # reply lost) still say that this run won.
        mine = secrets.token_hex(8)

        def claim_marker() -> bool:
            if self.r.set(self._marker(), mine, nx=True, ex=max(1, int(every))):
                return True
            return self.r.get(self._marker()) == mine.encode()
        return self._call(claim_marker)

    def rebuild_failed(self) -> None:
        try:
            self.r.delete(self._marker())
        except (redis.RedisError, RedisClusterException, BackendError):
            pass    # the marker expires on its own

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _by_queue(entries: Iterable[tuple]) -> list[tuple[str, list[tuple[int, float, int]]]]:
    grouped: dict[str, list[tuple[int, float, int]]] = defaultdict(list)
    for job, queue, due, priority in entries:
        grouped[queue].append((job, due, priority))
    return list(grouped.items())


def _chunks(items: list, size: int = MAX_PER_CALL) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
