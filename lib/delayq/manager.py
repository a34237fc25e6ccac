"""The manager: every write to jobs once (enqueue, emit, cancel, claim, finish, unclaim, extend, retry, run now).

It orders the writes between the store (the truth) and the due index: the row is
committed before its index entry is added; the index claims and moves the row to running
before the job runs; the outcome is committed before the in-flight entry is dropped.
The runner, the scripts, pull mode and the client call these verbs. Reads are `manager.reports`
(reports.py), paused queues, heartbeats, the audit trail and alerts `manager.control` (control.py); bulk
actions by filter are bulk.py, recovery (compensate, a dead runner's jobs) recovery.py.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

from . import events, limits, validate, words
from .clock import Clock
from .control import Control
from .errors import BackendError, InvalidInput, NotFound
from .grouping import Group
from .index import DueIndex
from .jobs import PENDING, Job, JobSpec, Outcome, claim_token, new_holder
from .registry import Registry
from .reports import Reports
from .store import Cancelled, Changed, Inserted, Store
from .store.base import UNIQUE_TAKEN

log = logging.getLogger(__name__)


class Claims:
    """The runner's verbs, in the order a job meets them: claim, (hand off,) begin, extend, finish or unclaim;
    its leases kept alive meanwhile, and what a dead holder held read back for recovery. Manager has them."""

    store: Store
    index: DueIndex
    clock: Clock
    lease: float
    control: Control

    def claim(self, queues: list[str], limit: int, holder: str | None = None) -> list[Job]:
        """Claim up to `limit` due jobs of `queues` not paused, marked running under a new claim token of `holder`
        (each job carries it; a worker is one holder all its life, so whatever ends it, its rows are found by its
        holder: held(); default: a holder of its own).

        The start of a pass: the clock reads its server here (once per pass, at most once a second)."""
        now = self.clock.sync()
        active = self.control.active(queues, now)
        limit = limits.claim_size(active, self.limits, limit) if self.limits else limit
        token = claim_token(holder or new_holder("c"))
        jobs = self.index.claim(active, now, limit, token, self.lease) if active else []
        if jobs and self.clock.now() - now > min(job.lease or self.lease for job in jobs) / 3:
            # The claim's leases were set at `now`, and it committed a third of a lease or more later (its process
            # held up between its UPDATE and its COMMIT: a batch-mate holding the interpreter, swap). Its rows
            # were locked meanwhile, so the runner's renewal skipped them: they move on now, before any starts,
            # so that none runs under a lease that ran out (compensate would take it over while it runs).
            self.store.keep_alive(jobs, self.clock.now(), self.lease)
        return jobs

    def finish(self, outcomes: list[Outcome], witnessed: bool = True, lapsed: bool = False) -> set[int]:
        """Commit outcomes, then update the index for the jobs whose claim still held; returns those ids.
        witnessed=False (recovery): attempt rows only for those (a run is recorded once, by whoever recovers it);
        lapsed (recovery of expired leases): only where the lease has still run out now (Store.finish)."""
        held, handlers = self.store.finish(outcomes, self.clock.now(), witnessed, lapsed)
        self.index.add(handlers)     # on_timeout jobs, committed with the outcomes
        mine = [o for o in outcomes if o.job.id in held]
        self.index.reschedule([(o.job.id, o.job.queue, o.due_at, o.job.priority) for o in mine if o.status == PENDING])
        self.index.release([(o.job.id, o.job.queue) for o in mine if o.status != PENDING])
        return held

    def keep_alive(self, jobs: list[Job]) -> int:
        """A live runner's jobs keep their claim: leases move on; returns how many still held."""
        return self.store.keep_alive(jobs, self.clock.now(), self.lease) if jobs else 0

    def unclaim(self, jobs: list[Job]) -> list[Job]:
        """Jobs claimed but never started (a runner stopping) back to pending at their due time again; returns
        those whose claim still held."""
        if not jobs:
            return []
        back = self.store.unclaim(jobs, self.clock.now())
        self.index.reschedule([(j.id, j.queue, j.due_at, j.priority) for j in back])
        return back

    def keep_claims(self, holders: list[str]) -> int:
        """The holders are alive (a supervisor's children): the leases of all they hold move on; returns how many."""
        return self.store.keep_alive_held(holders, self.clock.now(), self.lease) if holders else 0

    def held(self, holder: str) -> list[Job]:
        """The running jobs a holder still holds, whatever claim brought each (it died: recovery reads them)."""
        return self.store.held(holder)

    def hand_off(self, job: Job, holder: str) -> Job | None:
        """A claimed job passes to another holder (a worker hands it to a process of its own), under a new claim
        token; None if the job's own token no longer holds it."""
        token = claim_token(holder)
        if not self.store.hand_off(job.id, job.token or "", token, self.clock.now()):
            return None
        return replace(job, token=token)

    def next_due(self, queues: list[str]) -> float | None:
        """The earliest due time among `queues` not paused (a runner sleeps until then)."""
        active = self.control.active(queues, self.clock.now())
        return self.index.next_due(active) if active else None

    def begin(self, job: Job) -> bool:
        """Commit that an at-most-once job begins now; False: its claim is gone, it must not run."""
        return self.store.begin_job(job.id, job.token or "", self.clock.now())

    def extend(self, job: Job, seconds: float) -> bool:
        """A running job asks for `seconds` more from now; False if its claim is gone."""
        seconds = validate.duration(seconds, "extend() seconds", 1, validate.MAX_LEASE)
        now = self.clock.now()
        return self.store.extend_lease(job.id, job.token or "", now + seconds, now)


class Manager(Claims):
    def __init__(self, store: Store, index: DueIndex, registry: Registry, clock: Clock, lease: float = 300.0,
                 queues: Mapping[str, Mapping[str, Any]] | None = None, event_modules: tuple[str, ...] = ()):
        self.store = store
        self.index = index
        self.registry = registry
        self.clock = clock
        self.lease = lease                      # seconds, for jobs with no lease of their own or their queue's
        self.queues = dict(queues or {})        # per-queue defaults (DELAYQ_QUEUES), already validated
        self.limits = limits.queue_limits(self.queues)    # rate and max_running across runners
        store.set_limits(self.limits)                     # enforced where jobs start
        self.event_modules = event_modules
        self.reports = Reports(store, clock)    # the reads
        self.control = Control(store, clock)    # paused queues, heartbeats, the audit trail, alerts
        # Single enqueues that come together share one transaction (grouping.py), then their index entries
        # are added while the next group's rows are written.
        self._group: Group[JobSpec, Inserted] = Group(lambda specs: store.insert_jobs(specs, clock.now()),
                                                      then=lambda specs, inserted: _index_new(self, specs, inserted))

    # -- fail fast -------------------------------------------------------------
    def check_ready(self) -> int:
        """Prove the store is reachable, accepts our login and is migrated to this code's schema version, and the
        due index answers: one query (and one Redis PING). Raises BackendError / SchemaError naming the cause;
        returns the schema version. Call it before writing, and on every runner pass."""
        version = self.store.check_schema()
        self.index.check()
        return version

    # -- enqueue -------------------------------------------------------------
    def enqueue(self, call: str, args: Mapping[str, Any] | str | None = None, connection: Any = None,
                **options: Any) -> Inserted:
        """Schedule one job; options are the bulk keys (delay or at, ext, queue, ladder, ...).

        With `connection`, the row is written on the caller's open connection, inside the
        caller's transaction (it exists if and only if the caller commits; its index entry
        follows the commit within a runner pass).
        """
        now = self.clock.now()
        spec = self.validate({"call": call, "args": args, **options}, now)
        if connection is not None or spec.unique:     # (a unique job alone: its conflict fails no other job)
            return self.insert([spec], now, connection)[0]
        return self._group.submit(spec)         # threads enqueueing at the same moment share one write

    def enqueue_many(self, raws: Iterable[Mapping[str, Any]], connection: Any = None, source: str | None = None,
                     lines: list[int] | None = None, on_item: Callable[[int], None] | None = None) -> list[Inserted]:
        """Validate every job first, then write them all; nothing is written if any is invalid.

        An error names the item's line (`lines[i]`, else its 1-based position) in `source`.
        """
        now = self.clock.now()
        specs = []
        for number, raw in enumerate(raws, 1):
            try:
                specs.append(self.validate(raw, now))
            except InvalidInput as exc:
                raise exc.on_line(lines[number - 1] if lines else number, source) from None
            if on_item:
                on_item(number)
        return self.insert(specs, now, connection)

    def emit(self, code: str, data: Mapping[str, Any] | str | None = None, delay: Any = None,
             ext: str | None = None) -> tuple[str, list[Inserted]]:
        """One job per handler of event `code`, sharing a new event id; returns (event id, jobs)."""
        found = events.handlers(code, self.event_modules, self.registry.allowed)
        now = self.clock.now()
        event_id = secrets.token_hex(16)
        specs = [replace(self.validate({"call": name, "args": data, "delay": delay, "ext": ext, **options}, now),
                         event=code, event_id=event_id) for name, options in found.items()]
        return event_id, self.insert(specs, now)

    def validate(self, raw: Mapping[str, Any], now: float) -> JobSpec:
        return validate.job(raw, now, self.registry, self.queues)

    def timeout_handler(self, job: Job, now: float) -> JobSpec:
        """The job's on_timeout callable as a job of its own: same queue, ext and args, due now, its queue's defaults."""
        return self.validate({"call": job.on_timeout, "args": job.args_json, "queue": job.queue, "ext": job.ext}, now)

    def insert(self, specs: list[JobSpec], now: float, connection: Any = None) -> list[Inserted]:
        """Write validated jobs: rows first (committed), then their index entries."""
        if not specs:
            return []
        if connection is not None:
            # the index entry (if the index is kept apart) follows the commit: catch_up() adds it
            return self.store.insert_jobs_on(connection, specs, now, self.index.follows_commit)
        inserted = self.store.insert_jobs(specs, now)
        _index_new(self, specs, inserted)
        return inserted

    # -- cancel --------------------------------------------------------------
    def cancel(self, job_id: int | None = None, ext: str | None = None, queue: str | None = None) -> Cancelled:
        """Pending jobs become cancelled, then leave the due index. NotFound if nothing matched."""
        if (job_id is None) == (ext is None):
            raise InvalidInput("cancel needs exactly one of id or ext")
        validate.ext(ext)
        if queue is not None:
            validate.queue(queue)
        result = self.store.cancel(self.clock.now(), job_id=job_id, ext=ext, queue=queue)
        if not result.cancelled and not result.untouched:
            raise NotFound(f"no job with {'id ' + str(job_id) if job_id is not None else 'ext ' + repr(ext)}"
                           + (f" in queue {queue!r}" if queue else ""))
        try:
            self.index.remove(result.cancelled)
        except BackendError as exc:
            # The cancel is committed; a stale index entry is harmless (a claim skips rows that are not pending).
            log.warning("cancelled %d job(s) but could not drop them from the index: %s", len(result.cancelled), exc)
        return result

    # -- by hand: retry, run now ---------------------------------------------------
    def retry(self, job_id: int | None = None, ext: str | None = None, step: str | None = None,
              reset_attempts: bool = False, at: float | None = None) -> list[int]:
        """Failed jobs (by id, or every failed one with an ext) back to pending, due now or `at`."""
        candidates = self.reports.find(job_id=job_id, ext=ext)
        if step is not None:
            for job in candidates:
                names = self.store.step_names(job.id)
                if step not in names:
                    raise InvalidInput(f"job {job.id} has no step {step!r}" +
                                       (f": its steps are {', '.join(names)}" if names else ": it has no steps"))
        changed = self.retry_ids([job.id for job in candidates], step, reset_attempts, at)
        taken = [job for job, reason in changed.skipped if reason == UNIQUE_TAKEN]
        if taken:
            raise InvalidInput(f"job {taken[0]} was enqueued as unique and another job with its queue and ext is live "
                               "now: cancel that one first, or let it finish")
        if not changed.changed:
            refused = ", ".join(f"job {job} is {words.shown(reason)}" for job, reason in changed.skipped)
            raise NotFound(f"nothing to retry: {refused} (only failed jobs can be retried)")
        return [job for job, _, _ in changed.changed]

    def retry_ids(self, ids: list[int], step: str | None = None, reset_attempts: bool = False,
                  at: float | None = None) -> Changed:
        """A batch of failed jobs back to pending in one transaction (those still failed: the rest skipped, with
        their status), then into the due index."""
        now = self.clock.now()
        due = max(now, at) if at is not None else now
        changed = self.store.retry_ids(ids, due, now, reset_attempts, step)
        self.index.add([(job, queue, due, priority) for job, queue, priority in changed.changed])
        return changed

    def cancel_ids(self, ids: list[int]) -> Changed:
        """A batch of pending jobs cancelled in one transaction (the rest skipped), then dropped from the index."""
        changed = self.store.cancel_ids(ids, self.clock.now())
        try:
            self.index.remove([(job, queue) for job, queue, _ in changed.changed])
        except BackendError as exc:   # committed; a stale index entry is harmless (claims skip rows not pending)
            log.warning("cancelled %d job(s) but could not drop them from the index: %s", len(changed.changed), exc)
        return changed

    def run_now(self, job_id: int) -> Job:
        """A pending job due now: its due time moves to now in the store, then in the index (the dashboard's
        "run now"). InvalidInput if it is not pending (only a waiting job can be brought forward); NotFound if none."""
        job = self.reports.find(job_id=job_id)[0]
        now = self.clock.now()
        if job.status != PENDING or not self.store.make_due(job.id, now):
            current = self.store.statuses([job.id]).get(job.id, "gone")
            raise InvalidInput(f"job {job.id} is {words.shown(current)}: only a pending job can run now")
        self.index.add([(job.id, job.queue, now, job.priority)])
        return replace(job, due_at=now)

    def close(self) -> None:
        self.store.close()
        self.index.close()


def _index_new(manager: Manager, specs: list[JobSpec], inserted: list[Inserted]) -> None:
    """Index entries for the rows just committed; if that fails, the rows go too (nothing half-written)."""
    new = [(r.id, s.queue, r.due_at, s.priority) for r, s in zip(inserted, specs) if r.created]
    try:
        manager.index.add(new)
    except BaseException:     # a backend error, or an interrupt: no row stays without its entry
        manager.store.delete_jobs([job for job, _, _, _ in new])
        raise
