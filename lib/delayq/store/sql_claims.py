"""ClaimStore on SQL: start claimed jobs, claim in the database, unclaim, keep leases (outcomes: sql_outcomes)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Iterator, Sequence

from ..fairness import fair_pick, in_order
from ..jobs import MAX_PRIORITY, PENDING, Job
from .sql_jobs import CHUNK, chunks, rows_to_jobs


class Started(list):
    """The jobs a start moved to running (a list of Job), and `held`: (id, queue, due again at, priority) of those a
    limit held back, which an index kept apart must move to their new due time (limits.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[int, str, float, int]] = []

def _group_jobs(jobs: Iterable[Job]) -> dict[str, list[Job]]:
    groups: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        groups[job.token or ""].append(job)
    return groups


class ClaimsSql:
    q: Any
    run: Any
    tx: Any
    retried: Any
    returning: bool
    _insert: Any
    _gate: Any
    _limited_queues: Any

    def start(self, ids: list[int], token: str, now: float, lease: float) -> Started:
        if not ids:
            return []
        return self.retried(lambda cur: self._start(cur, ids, token, now, lease))

    def _start(self, cur: Any, ids: Sequence[int], token: str, now: float, lease: float) -> Started:
        jobs = Started()
        limited = self._limited_queues()
        parts = [list(ids[start:start + CHUNK]) for start in range(0, len(ids), CHUNK)]
        started = []
        for part in parts:
            if limited:
                started.append(self.run(cur, "start_jobs_but", token=token, now=now, lease=lease, ids=part,
                                        limited=limited).rowcount)
            else:
                started.append(self.run(cur, "start_jobs", token=token, now=now, lease=lease, ids=part).rowcount)
        left = [job for part, n in zip(parts, started) if n < len(part) for job in part]
        if left:    # some no longer pending, or governed by a limit: the gates decide those, all in one pass
            passed, jobs.held = self._gate(cur, left, token, now, lease)       # (its locks taken in name order)
            through = set(passed)
            started = [n + sum(1 for job in part if job in through) for part, n in zip(parts, started)]
        for part, n in zip(parts, started):
            jobs.extend(self._read_claimed(cur, part, token, n))
        return jobs

    def _read_claimed(self, cur: Any, ids: list[int], token: str, started: int) -> list[Job]:
        """The jobs just started, packed in one value where the dialect packs them; their rows if that value was
        cut short or dropped (MariaDB's group_concat_max_len, MySQL's max_allowed_packet: jobs with large args)."""
        try:
            jobs = rows_to_jobs(self.run(cur, "select_claimed_packed", ids=ids, token=token))
            if len(jobs) == started:
                return jobs
        except ValueError:
            pass
        return rows_to_jobs(self.run(cur, "select_claimed", ids=ids, token=token))

    def claim_due(self, queues: list[str], now: float, limit: int, token: str, lease: float) -> list[Job]:
        def claim(cur: Any) -> list[Job]:
            # Each queue's candidates, locked (others skip them): its priority levels from the highest down,
            # each level's due jobs earliest first, until `limit` are found (by_claim ranges, read in order).
            candidates = [self._lock_due(cur, queue, now, limit) for queue in queues]
            ids = fair_pick(candidates, limit)
            return in_order(self._start(cur, ids, token, now, lease), ids) if ids else []
        return self.retried(claim)

    def _lock_due(self, cur: Any, queue: str, now: float, limit: int) -> list[tuple]:
        rows: list[tuple] = []
        if limit <= 0:
            return rows
        for priority, first_due in self._bands(cur, queue):
            if first_due <= now:
                rows += self.run(cur, "lock_due", queue=queue, priority=priority, now=now,
                                 limit=limit - len(rows)).fetchall()
            if len(rows) >= limit:      # full: the next level is not even looked up
                break
        return rows

    def _bands(self, cur: Any, queue: str) -> Iterator[tuple[int, float]]:
        """(priority, earliest due time) of one queue's pending jobs, for each priority, highest first."""
        below = MAX_PRIORITY + 1
        while True:
            row = self.run(cur, "top_band", queue=queue, below=below).fetchone()
            if row is None:
                return
            priority, first_due = row
            yield priority, float(first_due)
            below = priority

    def next_due(self, queues: list[str]) -> float | None:
        """Two index dives a priority level in use per queue (one level, the usual case: two dives and one more
        that finds no level below it), whatever the table holds."""
        with self.tx(write=False) as cur:
            firsts = [first_due for queue in queues for _, first_due in self._bands(cur, queue)]
        return min(firsts, default=None)

    def unclaim(self, jobs: list[Job], now: float) -> list[Job]:
        def unclaim(cur: Any) -> list[Job]:
            held: list[Job] = []
            for token, group in _group_jobs(jobs).items():
                self.run(cur, "unclaim_jobs", now=now, token=token, ids=[j.id for j in group])
                rows = self.run(cur, "select_statuses", ids=[j.id for j in group]).fetchall()
                pending = {job_id for job_id, status in rows if status == PENDING}
                held.extend(j for j in group if j.id in pending)
            return held
        return self.retried(unclaim)

    def keep_alive(self, jobs: list[Job], now: float, lease: float) -> int:
        def keep(cur: Any) -> int:
            kept = 0
            for token, group in _group_jobs(jobs).items():
                for start in range(0, len(group), CHUNK):
                    ids = [j.id for j in group[start:start + CHUNK]]
                    kept += self.run(cur, "keep_alive", now=now, lease=lease, token=token, ids=ids).rowcount
            return kept
        return self.retried(keep) if jobs else 0

    def keep_alive_held(self, holders: list[str], now: float, lease: float) -> int:
        if not holders:
            return 0
        def keep(cur: Any) -> int:
            ids = [row[0] for row in self.run(cur, "lock_running_held", holders=holders).fetchall()]
            return sum(self.run(cur, "keep_alive_held", now=now, lease=lease, ids=part).rowcount
                       for part in chunks(ids))
        return self.retried(keep)

    def held(self, holder: str) -> list[Job]:
        with self.tx(write=False) as cur:
            return rows_to_jobs(self.run(cur, "select_held", holder=holder))

    def hand_off(self, job_id: int, token: str, new_token: str, now: float) -> bool:
        return self.retried(lambda cur: self.run(cur, "hand_off", id=job_id, token=token, new_token=new_token,
                                                 now=now).rowcount == 1)

    def begin_job(self, job_id: int, token: str, now: float) -> bool:
        return self.retried(lambda cur: self.run(cur, "begin_job", now=now, id=job_id, token=token).rowcount == 1)

    def extend_lease(self, job_id: int, token: str, until: float, now: float) -> bool:
        with self.tx() as cur:
            return self.run(cur, "extend_lease", until=until, now=now, id=job_id, token=token).rowcount == 1
