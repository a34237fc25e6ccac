"""The scheduler: each runner enqueues the slots of the declared schedules (schedules.py) that have come due.

No process of its own: `run-due` makes a Scheduler of the schedules in DELAYQ_SCHEDULE_MODULES and ticks it
on each turn of its loop (and once before its first claim, so a one-shot pass from cron runs the slot it
enqueued). A tick costs nothing until a schedule's next slot comes due; then one short transaction takes it
(ScheduleStore.take_slots: the schedule's row locked, the plan decided under the lock, the slot row whose unique
key (schedule, slot) refuses a second job, the job). Every runner on every host ticks; whichever comes first
takes the slot, the others find it taken.

`status`, `pause` and `resume` are what `delayq schedules` and the dashboard show and do.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any, Mapping

from . import schedules
from .errors import DelayqError, InvalidInput
from .jobs import JobSpec
from .schedules import Plan, Schedule, State, slot_text

log = logging.getLogger("delayq.scheduler")
KEEP = 8 * 86400          # slot rows kept (compensate drops older ones; the schedules row keeps the latest)


class Scheduler:
    """Enqueues due slots: `tick()` often (every loop turn is fine: it reads the clock, nothing more, until a
    schedule's next slot is due)."""

    def __init__(self, manager: Any, declared: Mapping[str, Schedule]):
        self.manager = manager
        self.schedules = dict(declared)
        self.ran = self.skipped = self.missed = 0
        self._next: dict[str, float] = {}          # name -> its next slot as last seen (none: look now)
        self._broken: dict[str, str] = {}          # name -> why its job cannot be enqueued (said once)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def tick(self) -> int:
        """Take the slots that have come due; returns how many jobs were enqueued. A backend error raises (the
        runner fails with it, as with its heartbeat); a schedule whose job is refused (its callable not allowed,
        its args not fitting) is logged once and tried again at its next slot."""
        now = self.manager.clock.now()
        enqueued = 0
        for schedule in self.schedules.values():
            if self._next.get(schedule.name, now) > now:
                continue
            try:
                enqueued += self.look(schedule, now)
            except InvalidInput as exc:
                if self._broken.get(schedule.name) != str(exc):
                    log.warning("schedule %s: its job is refused: %s", schedule.name, exc)
                    self._broken[schedule.name] = str(exc)
                self._next[schedule.name] = schedule.next_slot(now)
        return enqueued

    def look(self, schedule: Schedule, now: float) -> int:
        """One transaction: take what came due of one schedule (schedules.plan decides, under the row's lock)."""
        manager = self.manager
        written: list[JobSpec] = []

        def jobs(slots: list[int]) -> list[JobSpec]:
            written[:] = [replace(manager.validate(schedule.job(slot), now), due_at=float(slot)) for slot in slots]
            return written

        def decide(state: State) -> Plan:
            return schedules.plan(schedule, state, now)

        decided, inserted = manager.store.take_slots(schedule.name, decide, jobs, now, now,
                                                     manager.index.follows_commit)
        if inserted and manager.index.follows_commit:
            manager.index.add([(job.id, spec.queue, job.due_at, spec.priority) for job, spec in zip(inserted, written)])
            manager.store.outbox_done([job.id for job in inserted])
        self.ran += len(inserted)
        self.skipped += decided.skipped
        self.missed += decided.missed
        self._broken.pop(schedule.name, None)
        self._next[schedule.name] = schedule.next_slot(max(decided.last_slot, 0))
        for job in inserted:
            log.info("schedule=%s slot=%s job=%s", schedule.name, slot_text(int(job.due_at), schedule.tz), job.id)
        if decided.skipped:
            log.info("schedule=%s skipped=%d (no overlap: its previous job still pending or running, or a newer "
                     "slot ran)", schedule.name, decided.skipped)
        if decided.missed:
            log.info("schedule=%s missed=%d (due while no runner ran; catch_up=%s)", schedule.name, decided.missed,
                     schedule.catch_up)
        return len(inserted)

    # -- a thread of its own (a runner without worker processes) ---------------------------------
    def start(self, every: float = 0.5) -> "Scheduler":
        def loop() -> None:
            while not self._stop.wait(every):
                try:
                    self.tick()
                except DelayqError as exc:     # the runner's own calls meet the same backend and say so
                    log.warning("scheduler: %s", exc)
        self._thread = threading.Thread(target=loop, name="delayq-scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


def status(manager: Any, declared: Mapping[str, Schedule]) -> list[dict[str, Any]]:
    """Each schedule, declared or with a row, by name: its rule, zone, job, next and last slot, last job and its
    outcome, and what came of its slots (`declared` False: removed from the code, so it no longer runs)."""
    now = manager.clock.now()
    rows = {row["name"]: row for row in manager.store.schedule_rows()}
    found = []
    for name in sorted(set(declared) | set(rows)):
        s, row = declared.get(name), rows.get(name) or {}
        paused = row.get("paused_at") is not None
        last = row.get("last_slot")
        last_run = row.get("last_job")
        entry: dict[str, Any] = {
            "name": name, "declared": s is not None, "paused": paused, "paused_at": row.get("paused_at"),
            "rule": s.spec if s else None, "tz": s.tz.key if s else None, "call": s.call if s else None,
            "queue": (s.options.get("queue") or "default") if s else None,
            "overlap": s.overlap if s else None, "catch_up": s.catch_up if s else None,
            "next_slot": None, "last_slot": None, "last_job": last_run,
            "last_status": row.get("status"), "last_finished_at": row.get("finished_at"),
            "last_error": row.get("last_error"),
            "ran": int(row.get("ran") or 0), "skipped": int(row.get("skipped") or 0),
            "missed": int(row.get("missed") or 0)}
        if s is not None and not paused:
            entry["next_slot"] = s.next_slot(float(last) if last is not None else now)
        if last is not None and entry["ran"] + entry["skipped"] + entry["missed"]:
            entry["last_slot"] = int(last)         # (before its first slot, the row's last_slot is when it was seen)
        found.append(entry)
    return found


def pause(manager: Any, declared: Mapping[str, Schedule], name: str) -> bool:
    """Pause a schedule (on every runner, within a tick); False if it was paused already."""
    _known(manager, declared, name)
    before = {row["name"]: row for row in manager.store.schedule_rows()}.get(name)
    if before is not None and before["paused_at"] is not None:
        return False
    return manager.store.pause_schedule(name, manager.clock.now())


def resume(manager: Any, declared: Mapping[str, Schedule], name: str) -> bool:
    """Resume a paused schedule: its next slot from now on runs (none that passed while paused); False if it was
    not paused."""
    _known(manager, declared, name)
    return manager.store.resume_schedule(name, manager.clock.now())


def forget(manager: Any) -> int:
    """Drop slot rows older than KEEP (compensate): the unique key guards the slots a runner may still take."""
    return manager.store.forget_slots(manager.clock.now() - KEEP)


def _known(manager: Any, declared: Mapping[str, Schedule], name: str) -> None:
    """A schedule declared in DELAYQ_SCHEDULE_MODULES (its row made if no runner made it yet), or one with a row."""
    if name in declared:
        now = manager.clock.now()
        manager.store.take_slots(name, lambda state: Plan(state.last_slot), lambda slots: [], now, now,
                                 manager.index.follows_commit)
        return
    if name not in {row["name"] for row in manager.store.schedule_rows()}:
        known = ", ".join(sorted(declared)) or "none declared: set DELAYQ_SCHEDULE_MODULES"
        raise InvalidInput(f"no schedule named {name!r} (schedules: {known})", "name")
