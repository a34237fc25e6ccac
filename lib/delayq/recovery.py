"""Crash recovery (bin/compensate.py): expired leases, and the due index rebuilt from the database.

Safe to run from several hosts at once: every change is conditional on what was
read (the claim token for a job, the score for an index member), so two runs
never both apply a decision.
"""

from __future__ import annotations

import logging
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from typing import Callable

from .clock import Clock
from .index import DueIndex, RebuildableIndex
from .jobs import FAILED, PENDING, RUNNING
from .store.base import Expired, MaintenanceStore, Recovery

log = logging.getLogger(__name__)
UNKNOWN = "interrupted, outcome unknown: check by hand, then delayq retry"
POISON = "killed its runner"
MAX_CRASHES = 3          # a job running when its runner died this many times is a poison pill: failed, alerted
PAGE = 5000


@dataclass
class Reconciled:
    restored: int = 0      # pending jobs put back into the due index
    dropped: int = 0       # index members whose job is no longer pending (or running, for in-flight)
    scanned: int = 0       # pending rows read


def decide(e: Expired, now: float) -> Recovery:
    """What becomes of a job whose runner vanished: run again, or fail without re-running."""
    def recovery(status: str, error: str, counts: bool = True, crashed: bool = False) -> Recovery:
        return Recovery(e.id, e.queue, e.priority, e.token, status, now if status == PENDING else None, error,
                        counts, e.attempts, e.started_at if counts else None, crashed)

    if e.manual_running or (e.at_most_once and e.started_at is not None):
        return recovery(FAILED, UNKNOWN, crashed=True)
    if e.at_most_once:   # claimed but never begun: nothing ran, so it may run; the claim does not count
        return recovery(PENDING, "claimed but not begun before the lease ran out", counts=False)
    if e.crashes + 1 >= MAX_CRASHES:
        return recovery(FAILED, f"{POISON}: its runner died while running it {e.crashes + 1} times", crashed=True)
    if e.attempts >= e.max_attempts:
        return recovery(FAILED, "interrupted (lease ran out) with no attempts left", crashed=True)
    return recovery(PENDING, "interrupted: lease ran out (runner killed or hung)", crashed=True)


def recover_expired(store: MaintenanceStore, index: DueIndex, clock: Clock, batch: int = 500) -> list[Recovery]:
    """Recover every running job whose lease ran out; the index follows the committed rows."""
    done: list[Recovery] = []
    while True:
        now = clock.now()
        found = store.expired(now, batch)
        applied = store.recover([decide(e, now) for e in found], now)
        index.reschedule([(r.id, r.queue, r.due_at, r.priority) for r in applied if r.status == PENDING])
        index.release([(r.id, r.queue) for r in applied if r.status != PENDING])
        for r in applied:
            level = logging.WARNING if r.status == FAILED else logging.INFO
            fields = {"job": r.id, "queue": r.queue, "recovered": r.status, "reason": r.error}
            log.log(level, " ".join(f"{k}={v}" for k, v in fields.items()), extra={"fields": fields})
        done.extend(applied)
        if len(found) < batch:
            return done


def reconcile(store: MaintenanceStore, index: DueIndex, clock: Clock,
              progress: Callable[[int], None] | None = None) -> Reconciled:
    """Make the due index match the database: add missing pending jobs, drop stale members.

    Bounded memory and round trips: pending rows are read a page at a time in id
    order, and their ids kept in a sorted array (8 bytes each) so that checking
    the index's members costs a status query only for members not seen pending.
    """
    result = Reconciled()
    if not isinstance(index, RebuildableIndex):
        return result    # the rows are the index: nothing to rebuild
    result.restored += index.catch_up()
    seen = array("q")
    after = 0
    while True:
        page = store.pending_page(after, PAGE)
        if not page:
            break
        result.scanned += len(page)
        result.restored += index.restore(page, clock.now())
        seen.extend(job for job, _, _, _ in page)
        after = page[-1][0]
        if progress:
            progress(len(page))
    now = clock.now()
    # Every pending row is now due or claimed. The due sets can hold stale members only if they hold more
    # members than there are pending rows (stale ones hiding behind live claims wait for the next rebuild:
    # a stale member is harmless anyway, a claim skips rows that are not pending).
    kinds = ("due", "inflight") if index.sizes() > result.scanned else ("inflight",)
    for queue, which, members in index.members(kinds=kinds):
        if which == "due":   # a member not seen pending may be stale, or newer than the scan: ask the rows
            suspects = [(job, score) for job, score in members if not _contains(seen, job)]
            keep = PENDING
        else:                # in flight: live claims stay; expired ones go once their job is not running
            suspects = [(job, score) for job, score in members if score < now]
            keep = RUNNING
        if suspects:
            statuses = store.statuses([job for job, _ in suspects])
            stale = [(job, score) for job, score in suspects if statuses.get(job) != keep]
            if stale:
                result.dropped += index.drop_unchanged(queue, which, stale)
    return result


def _contains(sorted_ids: array, job: int) -> bool:
    i = bisect_left(sorted_ids, job)
    return i < len(sorted_ids) and sorted_ids[i] == job
