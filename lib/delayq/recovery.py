"""Recovery: the jobs of a process that died, and the due index rebuilt from the rows (bin/compensate.py).

One path for every death, whoever died (a job's worker process, the runner, the host). Its jobs
are the rows still running under its claim token; each gets a Result saying what is known of
its run, and that Result is written as any outcome is (Manager.finish: conditional on the
token, with its attempt row), or the job is handed back unstarted (Manager.unclaim):

  never began (claimed, not started; an at-most-once job whose begin never committed)
      -> pending again at once, the claim not counted, no attempt row (nothing ran)
  ended, its outcome not committed yet      -> that outcome (a success stays a success)
  running when its process died             -> interrupted: runs again at once, not a failure;
      crashed (it killed its process: counted, a poison pill at 3); timed out (past its limit);
      an at-most-once job that began -> failed, "outcome unknown" (never run twice by a machine)

A live supervisor knows which of these each job is (its worker's ledger: runner/postmortem.py)
and recovers at once. Compensate knows nothing (the runner vanished: its leases ran out) and
treats every job of an expired lease as running, except an at-most-once job that never began.
Every change is conditional on the claim token read, so two recoveries never both apply.
"""

from __future__ import annotations

import logging
import random
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from . import words
from .clock import Clock
from .errors import DelayqError
from .index import DueIndex, RebuildableIndex
from .jobs import FAILED, ISOLATED, PENDING, RUNNING, Job, Outcome
from .retries import CRASHED, INTERRUPTED, TIMEOUT, VANISHED, Result, outcome
from .store.base import MaintenanceStore

if TYPE_CHECKING:
    from .manager import Manager

log = logging.getLogger(__name__)
LEASE_RAN_OUT = "interrupted: lease ran out (its runner was killed, hung or cut off)"
PAGE = 5000
SPAN = 200_000          # ids one page's read walks at most: pending rows may sit behind millions of finished ones

Judge = Callable[[Job], "Result | None"]        # what is known of one job's run; None: it never began


@dataclass(frozen=True)
class Recovered:
    """One job recovered: what became of it."""

    id: int
    queue: str
    status: str                  # pending (runs again) or a final status
    error: str | None
    kind: str | None = None      # what was known of its run (the kinds of retries.py); None: never began


@dataclass
class Reconciled:
    restored: int = 0      # pending jobs put back into the due index
    dropped: int = 0       # index members whose job is no longer pending (or running, for in-flight)
    scanned: int = 0       # pending rows read


def by_lease(now: float) -> Judge:
    """Nothing is known of a job whose lease ran out: it was running (it may have been), unless it is an
    at-most-once job whose begin never committed. Held by a worker process (its token starts with ISOLATED), its
    runner's death was nobody's doing: interrupted, it runs again. Held by a runner that ran jobs in its own
    process (`--processes 0`) or by a pull consumer, it may have killed its runner: counted as such (a poison pill
    at 3; no attempts left: failed)."""
    def judge(job: Job) -> Result | None:
        if job.at_most_once and job.started_at is None:
            return None
        kind = INTERRUPTED if (job.token or "").startswith(ISOLATED) else VANISHED
        return Result(job.id, kind, job.started_at or now, now, error=LEASE_RAN_OUT)
    return judge


def settle(manager: "Manager", jobs: list[Job], judge: Judge, solo: Callable[[Job], bool] = lambda job: False,
           rng: random.Random | None = None, lapsed: bool = False) -> list[Recovered]:
    """Write what each job of a dead holder comes to: an outcome (with its attempt row), or handed back unstarted.

    `solo`: jobs to run alone in a process of their own from now on (their process died under them together
    with others, and nobody knows which one killed it). Returns what was applied (a job taken over meanwhile by
    another recovery is left out). `lapsed`: the jobs were read as expired leases: an outcome is written only where
    the lease has still run out (a live holder whose renewal came late keeps its job)."""
    outcomes: list[Outcome] = []
    unstarted: list[Job] = []
    kinds: dict[int, str] = {}
    for job in jobs:
        result = judge(job)
        if result is None:
            unstarted.append(job)
            continue
        kinds[job.id] = result.kind
        done = outcome(job, result, rng)
        done.solo = solo(job)
        if done.ended_by_deadline and job.on_timeout:
            try:
                done.followup = manager.timeout_handler(job, done.finished_at)
            except DelayqError as exc:
                log.warning("job %d: on_timeout %s not queued: %s", job.id, job.on_timeout, exc)
        outcomes.append(done)
    held = manager.finish(outcomes, witnessed=False, lapsed=lapsed) if outcomes else set()
    back = manager.unclaim(unstarted) if unstarted else []
    done_list = [Recovered(o.job.id, o.job.queue, o.status, o.error, kinds[o.job.id]) for o in outcomes
                 if o.job.id in held]
    done_list += [Recovered(job.id, job.queue, PENDING, None) for job in back]
    for r in done_list:
        level = logging.WARNING if r.status == FAILED else logging.INFO
        fields = {"job": r.id, "queue": r.queue, "recovered": words.shown(r.status), "reason": r.error or ("never began" if r.kind is None else f"it ended {r.kind}")}
        if r.kind in (TIMEOUT, CRASHED):        # the runner's verdict, in the run_due log lines' words
            fields["by"] = words.TIMED_OUT if r.kind == TIMEOUT else r.kind
        log.log(level, " ".join(f"{k}={v}" for k, v in fields.items()), extra={"fields": fields})
    return done_list


def recover_expired(manager: "Manager", batch: int = 500) -> list[Recovered]:
    """Recover every running job whose lease ran out (its runner vanished); the index follows the committed rows."""
    done: list[Recovered] = []
    while True:
        now = manager.clock.now()
        found = manager.store.expired(now, batch)
        settled = settle(manager, found, by_lease(now), lapsed=True)
        done += settled
        if len(found) < batch or not settled:   # nothing applied: the rest is locked now (the next run takes it)
            return done


NEWER_SETTLE = 5.0      # seconds a row may wait between its commit and its index entry before it counts as missing
NEWER_PAGE = 20000      # rows looked at in one compensate run at most (the rest: the next run)


def index_newer(store: MaintenanceStore, index: DueIndex, now: float) -> int:
    """Rows written since compensate last looked, pending and missing from the due index, are added to it: an
    enqueue whose index write failed or whose reply was lost (the row committed, its ZADD never sent) waits one
    compensate run, not a full rebuild's interval. A walk of the primary key from where the last run stopped."""
    if not isinstance(index, RebuildableIndex):
        return 0
    after = index.checked_upto()
    if after is None:                     # never looked, or the index was lost (its rebuild covers the past)
        index.set_checked(store.max_job_id())
        return 0
    entries, last = store.newer_rows(after, now - NEWER_SETTLE, NEWER_PAGE)
    added = index.restore(entries, now) if entries else 0
    if last != after:
        index.set_checked(last)
    return added


def requeue_stranded(store: MaintenanceStore, index: DueIndex, now: float) -> int:
    """In-flight ids whose claimer died between its claim and its rows' update (the rows still pending, the claim's
    hint run out) are due again now; in-flight ids of finished jobs go. Cheap (a range read per queue), so
    compensate does it on every run: a stranded job waits one compensate, never a full rebuild's interval."""
    if not isinstance(index, RebuildableIndex):
        return 0
    moved = 0
    for queue, members in index.stranded(now):
        statuses = store.statuses([job for job, _ in members])
        pending = [job for job, _ in members if statuses.get(job) == PENDING]
        if pending:
            moved += index.restore(store.pending_entries(pending), now)
        stale = [(job, raw) for job, raw in members if statuses.get(job) not in (PENDING, RUNNING)]
        if stale:
            index.drop_unchanged(queue, "inflight", stale)
    return moved


def requeue_claims(store: MaintenanceStore, index: DueIndex, holder: str) -> int:
    """A claimer that just died (its holder known) may have moved ids in flight without moving their rows to
    running: those still pending are due again at once, not when their claim's hint runs out."""
    if not isinstance(index, RebuildableIndex):
        return 0
    moved = 0
    for queue, ids in index.claimed_by(holder):
        statuses = store.statuses(ids)
        entries = store.pending_entries([job for job in ids if statuses.get(job) == PENDING])
        if entries:
            index.add(entries)
            index.release([(job, queue) for job, _, _, _ in entries])
            moved += len(entries)
    return moved


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
    after, top = 0, store.max_job_id()     # a job written after this wrote its own entry (enqueue, the outbox)
    while after < top:
        upto = min(after + SPAN, top)
        page = store.pending_page(after, upto, PAGE)
        after = page[-1][0] if len(page) == PAGE else upto
        if not page:
            continue
        result.scanned += len(page)
        result.restored += index.restore(page, clock.now())
        seen.extend(job for job, _, _, _ in page)
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
