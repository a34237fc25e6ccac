"""ClaimStore.finish on SQL: a group of outcomes in one transaction, each conditional on its claim token, with
an attempt row for every run (recorded once) and the timeout handlers the deadline calls for."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable

from ..jobs import FAILED, PENDING, SUCCEEDED, TIMED_OUT, Outcome
from .sql_jobs import CHUNK, chunks

_FINISH = ((PENDING, "finish_retry"), (FAILED, "finish_failed"), (TIMED_OUT, "finish_timed_out"))


class _NotAllHeld(Exception):
    """Rolls back the fast path of finish() when a claim no longer holds every job."""


def _by_token(outcomes: Iterable[Outcome]) -> dict[str, list[Outcome]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome.job.token or ""].append(outcome)
    return groups


class OutcomesSql:
    q: Any
    run: Any
    retried: Any
    returning: bool
    _insert: Any

    def finish(self, outcomes: list[Outcome], now: float, witnessed: bool = True,
               lapsed: bool = False) -> tuple[set[int], list[tuple[int, str, float, int]]]:
        if not outcomes:
            return set(), []
        def all_held(cur: Any) -> list[tuple[int, str, float, int]]:
            updated, followups = self._write_outcomes(cur, outcomes, outcomes, now)
            if updated != len(outcomes):
                raise _NotAllHeld
            return followups

        def some_held(cur: Any) -> tuple[set[int], list[tuple[int, str, float, int]]]:
            held: set[int] = set()
            # a recovery skips what is being written now; one of expired leases, a lease renewed since it looked
            lock = "lock_held" if witnessed else "lock_lapsed_now" if lapsed else "lock_held_now"
            extra = {"now": now} if lapsed else {}
            for token, group in _by_token(outcomes).items():
                rows = self.run(cur, lock, ids=[o.job.id for o in group], token=token, **extra).fetchall()
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
