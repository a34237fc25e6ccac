"""ClaimStore on SQL: start claimed jobs, claim in the database, write outcomes in groups."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable, Iterator, Sequence

from ..fairness import fair_pick
from ..jobs import FAILED, MAX_PRIORITY, PENDING, SUCCEEDED, TIMED_OUT, Job, Outcome
from .sql_jobs import CHUNK, chunks, rows_to_jobs

_FINISH = ((PENDING, "finish_retry"), (FAILED, "finish_failed"), (TIMED_OUT, "finish_timed_out"))


class _NotAllHeld(Exception):
    """Rolls back the fast path of finish() when a claim no longer holds every job."""


def in_order(jobs: list[Job], ids: Sequence[int]) -> list[Job]:
    """The started jobs in the order they were claimed (priority first), not the database's."""
    rank = {job_id: i for i, job_id in enumerate(ids)}
    return sorted(jobs, key=lambda job: rank[job.id])


def _group_jobs(jobs: Iterable[Job]) -> dict[str, list[Job]]:
    groups: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        groups[job.token or ""].append(job)
    return groups


def _by_token(outcomes: Iterable[Outcome]) -> dict[str, list[Outcome]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome.job.token or ""].append(outcome)
    return groups


class ClaimsSql:
    q: Any
    run: Any
    tx: Any
    retried: Any
    returning: bool
    _insert: Any

    def start(self, ids: list[int], token: str, now: float, lease: float) -> list[Job]:
        if not ids:
            return []
        return self.retried(lambda cur: self._start(cur, ids, token, now, lease))

    def _start(self, cur: Any, ids: Sequence[int], token: str, now: float, lease: float) -> list[Job]:
        jobs: list[Job] = []
        for start in range(0, len(ids), CHUNK):
            part = list(ids[start:start + CHUNK])
            started = self.run(cur, "start_jobs", token=token, now=now, lease=lease, ids=part).rowcount
            jobs.extend(self._read_claimed(cur, part, token, started))
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

    def finish(self, outcomes: list[Outcome], now: float,
               witnessed: bool = True) -> tuple[set[int], list[tuple[int, str, float, int]]]:
        if not outcomes:
            return set(), []
        def all_held(cur: Any) -> list[tuple[int, str, float, int]]:
            updated, followups = self._write_outcomes(cur, outcomes, outcomes, now)
            if updated != len(outcomes):
                raise _NotAllHeld
            return followups

        def some_held(cur: Any) -> tuple[set[int], list[tuple[int, str, float, int]]]:
            held: set[int] = set()
            lock = "lock_held" if witnessed else "lock_held_now"     # a recovery skips what is being written now
            for token, group in _by_token(outcomes).items():
                rows = self.run(cur, lock, ids=[o.job.id for o in group], token=token).fetchall()
                held.update(row[0] for row in rows)
            mine = [o for o in outcomes if o.job.id in held]
            ran = mine
            if witnessed and len(mine) < len(outcomes):     # runs whose claim was lost: recorded, once
                ran = mine + self._unrecorded(cur, [o for o in outcomes if o.job.id not in held])
            _, followups = self._write_outcomes(cur, mine, ran, now)
            return held, followups
        if not witnessed:
            return self.retried(some_held)
        try:   # the usual case: every claim still holds its jobs, checked by the update counts
            return {o.job.id for o in outcomes}, self.retried(all_held)
        except _NotAllHeld:
            return self.retried(some_held)   # some lease was taken over: lock the rows, write only those still held

    def _unrecorded(self, cur: Any, outcomes: list[Outcome]) -> list[Outcome]:
        """Of the runs of jobs no longer held, those without an attempt row yet. A run's row may be there already:
        its supervisor wrote its outcome while its worker could not (a batch-mate held the worker's interpreter),
        or a recovery recorded it as interrupted; its witness adds no second row for the same attempt."""
        have: set[tuple[int, int]] = set()
        for part in chunks([o.job.id for o in outcomes]):
            have.update((job, attempt) for job, attempt in self.run(cur, "recorded_attempts", ids=part).fetchall())
        return [o for o in outcomes if (o.job.id, o.job.attempts) not in have]

    def _write_outcomes(self, cur: Any, mine: list[Outcome], ran: list[Outcome],
                        now: float) -> tuple[int, list[tuple[int, str, float, int]]]:
        """Outcome updates for `mine` (each conditional on its token), attempt rows for every run.

        Returns the rows updated, and the timeout-handler jobs inserted for jobs the deadline ended.
        """
        updated = 0
        for token, group in _by_token(o for o in mine if o.status == SUCCEEDED).items():
            for start in range(0, len(group), CHUNK):
                ids = [o.job.id for o in group[start:start + CHUNK]]
                updated += self.run(cur, "finish_succeeded", now=now, token=token, ids=ids).rowcount
        for status, name in _FINISH:
            rows = [{"due_at": o.due_at, "error": o.error, "now": now, "id": o.job.id, "token": o.job.token,
                     "crashed": 1 if o.crashed else 0, "solo": 1 if o.solo else 0} for o in mine if o.status == status]
            if rows:
                cur.executemany(self.q(name)[0], rows)
                updated += cur.rowcount
        for start in range(0, len(ran), CHUNK):
            rows = [(o.job.id, o.job.attempts, o.started_at, o.finished_at, o.attempt_outcome, o.error, o.job.queue,
                     o.job.due_at) for o in ran[start:start + CHUNK]]
            self.run(cur, "insert_attempts_json", rows=json.dumps(rows, ensure_ascii=False))   # one parameter
        for o in mine:
            if o.interrupted:    # stopped from outside: its running steps are recovered as compensate would
                self.run(cur, "recover_manual_steps", error=o.error, now=now, id=o.job.id)
                self.run(cur, "recover_auto_steps", now=now, id=o.job.id)
        handlers = [o.followup for o in mine if o.followup is not None]
        ids = self._insert(cur, handlers, now, False, self.returning) if handlers else []
        return updated, [(i, spec.queue, spec.due_at, spec.priority) for i, spec in zip(ids, handlers)]

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
