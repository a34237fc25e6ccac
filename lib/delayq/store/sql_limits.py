"""Rate and concurrency limits on SQL, inside the transaction that starts claimed jobs (limits.py says who starts).

Only jobs a limit governs come here: start_jobs starts the others and leaves these pending, so a claim of jobs no
limit governs costs what it cost before. For these: the gates' rows are locked in name order (no deadlock between
two claims), the running jobs counted (READ COMMITTED on MySQL: each count sees what the claims before it
committed; SQLite has one writer), the tokens taken, the jobs that may start started, and the others moved to
when they may be looked at again. A claim that started jobs writes every gate they passed (pass_gates): on Galera
a row lock is each node's own and only writes are certified, so two claims on two nodes that pass one gate
conflict at commit, and the second runs again and counts what the first started.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

from ..errors import BackendError
from .sql_jobs import chunks
from ..limits import Allowance, Candidate, QueueLimit, ceil_due, decide, lock_of, refill

Held = tuple[int, str, float, int]          # (id, queue, due again at, priority): what the index must move


class LimitsSql:
    run: Any
    tx: Any
    retried: Any
    integrity_error: Any
    queue_limits: Mapping[str, QueueLimit] = {}

    def set_limits(self, limits: Mapping[str, QueueLimit]) -> None:
        self.queue_limits = dict(limits)

    def _limited_queues(self) -> list[str]:
        return sorted(self.queue_limits)

    def _gate(self, cur: Any, ids: Sequence[int], token: str, now: float, lease: float) -> tuple[list[int], list[Held]]:
        """The claimed jobs start_jobs left pending that a limit governs: start those the gates let through; the
        others are held (due again later). Returns (ids started, held)."""
        rows = {row[0]: row for part in chunks(list(ids)) for row in self.run(cur, "pending_limited", ids=part).fetchall()}
        candidates = [Candidate(*rows[job_id]) for job_id in ids if job_id in rows]   # in the claim's order
        if not candidates:
            return [], []
        limited = {c.queue for c in candidates if c.queue in self.queue_limits}
        gates = sorted({f"queue:{q}" for q in limited} | {lock_of(c.key) for c in candidates if c.key})
        buckets = {name: self._lock_gate(cur, name, now) for name in gates}
        allowed = Allowance()
        for queue in limited:
            limit = self.queue_limits[queue]
            if limit.rate:
                tokens, at = buckets[f"queue:{queue}"]
                # a claim whose `now` was read before another's committed (it waited on the lock) must not move
                # the bucket's clock back: the time between would be counted twice
                now = max(now, at)
                allowed.tokens[queue] = refill(tokens, at, now, limit)
                allowed.rates[queue] = limit.rate
            if limit.max_running:
                running = self.run(cur, "running_in_queue", queue=queue, now=now).fetchone()[0]
                allowed.queue_slots[queue] = limit.max_running - int(running)
                allowed.queue_max[queue] = limit.max_running
        for key in {c.key for c in candidates if c.key}:
            allowed.key_running[key] = int(self.run(cur, "running_with_key", key=key, now=now).fetchone()[0])
        decided = decide(candidates, allowed, now)
        if decided.start:
            for part in chunks(decided.start):
                self.run(cur, "start_limited", token=token, now=now, lease=lease, ids=part)
                self.run(cur, "forget_limited_of", ids=part)
            starting = set(decided.start)
            for c in candidates:
                if c.key and c.id in starting:      # counted as its key's while it runs
                    self.run(cur, "insert_limited", job_id=c.id, queue=c.queue, lkey=c.key, held=0, now=now)
            passed = _passed(candidates, starting, limited)
            if passed:                              # (always: a job that comes here has a gate)
                self.run(cur, "pass_gates", names=passed)
        for queue, used in decided.used.items():    # (a bucket nothing was taken from keeps its row: same refill)
            self.run(cur, "update_gate", name=f"queue:{queue}", tokens=allowed.tokens[queue] - used, now=now)
        return decided.start, self._hold(cur, decided.held, now)

    def _lock_gate(self, cur: Any, name: str, now: float) -> tuple[float, float]:
        row = self.run(cur, "lock_gate", name=name).fetchone()
        if row is None:
            queue = name.partition(":")[2] if name.startswith("queue:") else None
            full = self.queue_limits[queue].burst if queue in self.queue_limits else 0.0
            try:
                self.run(cur, "insert_gate", name=name, tokens=full, now=now)
            except self.integrity_error:
                # another claim made it meanwhile. Its duplicate-key check left this transaction a shared lock on
                # the row; two claims that both went this way would deadlock asking for the row's lock: start over
                # instead (the whole transaction rolled back, then retried: the row is there now)
                error = BackendError(f"gate {name} was made by another claim meanwhile")
                error.retryable = True
                raise error from None
            row = self.run(cur, "lock_gate", name=name).fetchone()
        return float(row[0]), float(row[1])

    def _hold(self, cur: Any, held: list[tuple[Candidate, float]], now: float) -> list[Held]:
        """Move held jobs to when they are due again (grouped by that time), and give each its row of the limits."""
        if not held:
            return []
        by_due: dict[float, list[int]] = defaultdict(list)
        for job, due in held:
            by_due[ceil_due(due)].append(job.id)
        for due, ids in by_due.items():
            for part in chunks(ids):
                self.run(cur, "hold_jobs", due=due, now=now, ids=part)
        ids = [job.id for job, _ in held]
        known = {row[0] for part in chunks(ids) for row in self.run(cur, "limited_of", ids=part).fetchall()}
        for job, _ in held:
            if job.id not in known:
                self.run(cur, "insert_limited", job_id=job.id, queue=job.queue, lkey=job.key, held=1, now=now)
        return [(job.id, job.queue, ceil_due(due), job.priority) for job, due in held]

    def waiting_on_limits(self) -> dict[str, int]:
        with self.tx(write=False) as cur:
            return {queue: int(n) for queue, n in self.run(cur, "waiting_on_limits").fetchall()}

    def forget_limited(self, limit: int = 1000) -> int:
        def forget(cur: Any) -> int:
            ids = [row[0] for row in self.run(cur, "ended_limited", limit=limit).fetchall()]
            # the delete asks again: a job retried and started meanwhile has its row written anew, and keeps it
            return self.run(cur, "forget_ended_limited", ids=ids).rowcount if ids else 0
        return self.retried(forget)


def _passed(candidates: list[Candidate], starting: set[int], limited: set[str]) -> list[str]:
    """The gates the jobs started went through (each a row _gate locked): their limited queues' and their keys'."""
    return sorted({f"queue:{c.queue}" for c in candidates if c.id in starting and c.queue in limited}
                  | {lock_of(c.key) for c in candidates if c.id in starting and c.key})
