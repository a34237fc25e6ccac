"""The due index in Redis: per queue, a ZSET of due ids and a ZSET of ids in flight.

Keys share a hash tag per queue, "{PREFIX:QUEUE}:due" and "{PREFIX:QUEUE}:inflight" (and a
claim's short-lived record "{PREFIX:QUEUE}:claim:TOKEN"), so each Lua script touches one hash
slot and also runs on Redis Cluster; a runner of several queues makes one call per queue.
The Lua files ship in the package (index/lua/*.lua), one per operation, loaded by name.
One server, a Sentinel set or a Cluster (redis_client.py); every call is retried through a
failover for a bounded time, and only calls that are safe to repeat are made.

A due set's score is due_at - priority * BAND: each priority level owns a range of
scores below the next lower one, so the lowest scores are the highest priority and, within
a level, the earliest due. BAND is 2^35 seconds (year 3058), beyond any due time validation
admits; scores of non-zero priorities keep due times to within 1/128 s.
"""

from __future__ import annotations

import math
import time

from ..fairness import fair_pick, in_order
from ..jobs import Job
from .base import Entry, RebuildableIndex
from .redis_base import BAND, CLAIM_WINDOW, MAX_PER_CALL, _by_queue, _chunks, due_of, score
from .redis_base import load_scripts  # noqa: F401 (the benchmarks load the claim script as the index does)
from .redis_rebuild import RedisRebuild

CATCH_UP_EVERY = 0.5      # seconds between outbox sweeps made by claim()


class RedisIndex(RedisRebuild, RebuildableIndex):
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
        begun = self.store.start(ids, token, start_at, lease) if ids else []
        jobs = in_order(begun, ids) if ids else []
        held = getattr(begun, "held", [])
        if held:    # a limit held them back: in flight -> due again when the limit may let them start
            self.reschedule(held)
        started = {job.id for job in jobs} | {job for job, _, _, _ in held}
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
