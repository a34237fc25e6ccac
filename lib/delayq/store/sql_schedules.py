"""ScheduleStore on SQL: a schedule's row locked while its due slots are taken, a slot row per slot run."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from ..jobs import JobSpec
from ..schedules import Plan, State
from .base import Inserted

_COLUMNS = ("name", "last_slot", "last_job", "paused_at", "ran", "skipped", "missed", "created_at", "updated_at",
            "status", "finished_at", "last_error")


class _Taken(Exception):
    """A slot row that exists already: another runner took the slot (the transaction is rolled back)."""


class SchedulesSql:
    run: Any
    tx: Any
    retried: Any
    integrity_error: Any
    returning: bool
    _insert_all: Any

    def take_slots(self, name: str, plan: Callable[[State], Plan], jobs: Callable[[list[int]], list[JobSpec]],
                   first_slot: float, now: float, index_pending: bool) -> tuple[Plan, list[Inserted]]:
        def take(cur: Any) -> tuple[Plan, list[Inserted]]:
            row = self.run(cur, "lock_schedule", name=name).fetchone()
            if row is None:
                try:
                    self.run(cur, "insert_schedule", name=name, last_slot=int(first_slot), now=now)
                except self.integrity_error:      # another runner made it meanwhile: lock that one
                    pass
                row = self.run(cur, "lock_schedule", name=name).fetchone()
            last_slot, last_job, paused_at = row
            status = None
            if last_job is not None:
                found = self.run(cur, "job_status", id=last_job).fetchone()
                status = found[0] if found else None
            decided = plan(State(float(last_slot), last_job, status, paused_at is not None))
            if decided.run:     # a slot someone already ran (its row restored or edited by hand) runs no second job
                taken = {int(row[0]) for row in self.run(cur, "taken_slots", name=name,
                                                          slots=list(decided.run)).fetchall()}
                if taken:
                    decided = replace(decided, run=tuple(s for s in decided.run if s not in taken))
            inserted: list[Inserted] = []
            if decided.run:
                inserted = self._insert_all(cur, jobs(list(decided.run)), now, index_pending, self.returning)
                for slot, job in zip(decided.run, inserted):
                    try:
                        self.run(cur, "insert_slot", name=name, slot=slot, job_id=job.id)
                    except self.integrity_error:
                        raise _Taken() from None
            if decided.last_slot != float(last_slot) or decided.run or decided.skipped or decided.missed:
                self.run(cur, "update_schedule", name=name, last_slot=int(decided.last_slot),
                         last_job=inserted[-1].id if inserted else None, ran=len(inserted), skipped=decided.skipped,
                         missed=decided.missed, now=now)
            return decided, inserted
        try:
            return self.retried(take)
        except _Taken:
            return Plan(first_slot), []

    def schedule_rows(self) -> list[dict[str, Any]]:
        with self.tx(write=False) as cur:
            return [dict(zip(_COLUMNS, row)) for row in self.run(cur, "select_schedules").fetchall()]

    def pause_schedule(self, name: str, now: float) -> bool:
        with self.tx() as cur:
            return self.run(cur, "pause_schedule", name=name, now=now).rowcount > 0

    def resume_schedule(self, name: str, now: float) -> bool:
        with self.tx() as cur:
            return self.run(cur, "resume_schedule", name=name, now=now, slot=int(now)).rowcount > 0

    def forget_slots(self, before: float) -> int:
        with self.tx() as cur:
            return self.run(cur, "forget_slots", before=int(before)).rowcount
