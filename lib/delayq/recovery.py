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

from .jobs import FAILED, PENDING, RUNNING
from .manager import Manager
from .store.base import Expired, Recovery

log = logging.getLogger(__name__)
UNKNOWN = "interrupted, outcome unknown: check by hand, then bin/retry.py"
PAGE = 5000


@dataclass
class Reconciled:
    restored: int = 0      # pending jobs put back into the due index
    dropped: int = 0       # index members whose job is no longer pending (or running, for in-flight)
    scanned: int = 0       # pending rows read


def decide(e: Expired, now: float) -> Recovery:
    """What becomes of a job whose runner vanished: run again, or fail without re-running."""
    if e.manual_running or (e.at_most_once and e.started_at is not None):
        return Recovery(e.id, e.queue, e.token, FAILED, None, UNKNOWN, True, e.attempts, e.started_at)
    if e.at_most_once:   # claimed but never begun: nothing ran, so it may run; the claim does not count
        return Recovery(e.id, e.queue, e.token, PENDING, now, "claimed but not begun before the lease ran out",
                        False, e.attempts, None)
    if e.attempts >= e.max_attempts:
        return Recovery(e.id, e.queue, e.token, FAILED, None, "interrupted (lease ran out) with no attempts left",
                        True, e.attempts, e.started_at)
    return Recovery(e.id, e.queue, e.token, PENDING, now, "interrupted: lease ran out (runner killed or hung)",
                    True, e.attempts, e.started_at)


def recover_expired(manager: Manager, batch: int = 500) -> list[Recovery]:
    """Recover every running job whose lease ran out; the index follows the committed rows."""
    done: list[Recovery] = []
    while True:
        now = manager.clock.now()
        found = manager.store.expired(now, batch)
        applied = manager.store.recover([decide(e, now) for e in found], now)
        manager.index.reschedule([(r.id, r.queue, r.due_at) for r in applied if r.status == PENDING])
        manager.index.release([(r.id, r.queue) for r in applied if r.status != PENDING])
        for r in applied:
            level = logging.WARNING if r.status == FAILED else logging.INFO
            fields = {"job": r.id, "queue": r.queue, "recovered": r.status, "reason": r.error}
            log.log(level, " ".join(f"{k}={v}" for k, v in fields.items()), extra={"fields": fields})
        done.extend(applied)
        if len(found) < batch:
            return done


def reconcile(manager: Manager, progress: Callable[[int], None] | None = None) -> Reconciled:
    """Make the due index match the database: add missing pending jobs, drop stale members.

    Bounded memory and round trips: pending rows are read a page at a time in id
    order, and their ids kept in a sorted array (8 bytes each) so that checking
    the index's members costs a status query only for members not seen pending.
    """
    result = Reconciled()
    if manager.index.in_store:
        return result    # the rows are the index: nothing to rebuild
    seen = array("q")
    after = 0
    while True:
        page = manager.store.pending_page(after, PAGE)
        if not page:
            break
        result.scanned += len(page)
        result.restored += manager.index.restore(page, manager.clock.now())
        seen.extend(job for job, _, _ in page)
        after = page[-1][0]
        if progress:
            progress(len(page))
    now = manager.clock.now()
    # Every pending row is now due or claimed. The due sets can hold stale members only if they hold more
    # members than there are pending rows (stale ones hiding behind live claims wait for the next rebuild:
    # a stale member is harmless anyway, a claim skips rows that are not pending).
    kinds = ("due", "inflight") if manager.index.sizes() > result.scanned else ("inflight",)
    for queue, which, members in manager.index.members(kinds=kinds):
        if which == "due":   # a member not seen pending may be stale, or newer than the scan: ask the rows
            suspects = [(job, score) for job, score in members if not _contains(seen, job)]
            keep = PENDING
        else:                # in flight: live claims stay; expired ones go once their job is not running
            suspects = [(job, score) for job, score in members if score < now]
            keep = RUNNING
        if suspects:
            statuses = manager.store.statuses([job for job, _ in suspects])
            stale = [(job, score) for job, score in suspects if statuses.get(job) != keep]
            if stale:
                result.dropped += manager.index.drop_unchanged(queue, which, stale)
    return result


def _contains(sorted_ids: array, job: int) -> bool:
    i = bisect_left(sorted_ids, job)
    return i < len(sorted_ids) and sorted_ids[i] == job
