"""The manager: every domain verb once (enqueue, cancel, claim, finish, show).

It orders the writes between the store (the truth) and the due index:
the row is committed before its index entry is added; the row is moved to
running before the job runs; the outcome is committed before the in-flight
entry is dropped. The runner and the scripts only call these verbs.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping

from . import events
from . import jobs as J
from .clock import Clock
from .errors import BackendError, InvalidInput, NotFound
from .index import DueIndex
from .jobs import Attempt, Job, JobSpec, Outcome
from .registry import Registry, check_name, steps_of
from .store import Cancelled, Inserted, Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    token: str
    jobs: list[Job]


class Manager:
    def __init__(self, store: Store, index: DueIndex, registry: Registry, clock: Clock, lease: float = 300.0,
                 queues: Mapping[str, Mapping[str, Any]] | None = None, event_modules: tuple[str, ...] = ()):
        self.store = store
        self.index = index
        self.registry = registry
        self.clock = clock
        self.lease = lease                      # seconds, for jobs with no lease of their own or their queue's
        self.queues = dict(queues or {})        # per-queue defaults: ladder, max_attempts, lease, priority
        self.event_modules = event_modules

    # -- enqueue -------------------------------------------------------------
    def enqueue(self, call: str, args: Mapping[str, Any] | str | None = None, **options: Any) -> Inserted:
        """Schedule one job; options are the bulk keys (delay or at, ext, queue, ladder, ...)."""
        now = self.clock.now()
        return self.insert([self.validate({"call": call, "args": args, **options}, now)], now)[0]

    def enqueue_many(self, raws: Iterable[Mapping[str, Any]], on_line: Callable[[int], None] | None = None) -> list[Inserted]:
        """Validate every job first (InvalidInput names the 1-based item), then write them all.

        Nothing is written if any item is invalid. If the index write fails after
        the rows were committed, the new rows are deleted again and BackendError raised.
        """
        now = self.clock.now()
        specs = []
        for number, raw in enumerate(raws, 1):
            try:
                specs.append(self.validate(raw, now))
            except InvalidInput as exc:
                raise type(exc)(f"item {number}: {exc}") from None
            if on_line:
                on_line(number)
        return self.insert(specs, now)

    def emit(self, code: str, data: Mapping[str, Any] | str | None = None, delay: float | None = None,
             ext: str | None = None) -> tuple[str, list[Inserted]]:
        """One job per handler of event `code`, sharing a new event id; returns (event id, jobs)."""
        found = events.handlers(code, self.event_modules, self.registry.allowed)
        now = self.clock.now()
        event_id = secrets.token_hex(16)
        specs = [replace(self.validate({"call": name, "args": data, "delay": delay, "ext": ext, **options}, now),
                         event=code, event_id=event_id) for name, options in found.items()]
        return event_id, self.insert(specs, now)

    def timeout_handler(self, job: Job, now: float) -> JobSpec:
        """The job's on_timeout callable as a job of its own: same queue, ext and args, due now, its queue's defaults."""
        return self.validate({"call": job.on_timeout, "args": job.args_json, "queue": job.queue, "ext": job.ext}, now)

    def validate(self, raw: Mapping[str, Any], now: float) -> JobSpec:
        if not isinstance(raw, Mapping):
            raise InvalidInput("a job must be a JSON object whose keys are the flags' names")
        defaults = self.queues.get(raw.get("queue") or "default", {})
        merged = {**defaults, **{k: v for k, v in raw.items() if v is not None}}
        call = merged.get("call")
        if not call:
            raise InvalidInput("call is required: 'package.module:function'")
        check_name(call)
        try:
            target = self.registry.resolve(call)
        except ImportError as exc:
            raise InvalidInput(f"callable {call!r} cannot be imported: {exc}") from None
        spec = J.build(merged, now, at_most_once=self.registry.at_most_once(call) and steps_of(target) is None)
        if spec.on_timeout:
            try:
                self.registry.resolve(spec.on_timeout)
            except ImportError as exc:
                raise InvalidInput(f"on_timeout {spec.on_timeout!r} cannot be imported: {exc}") from None
        return spec

    def insert(self, specs: list[JobSpec], now: float) -> list[Inserted]:
        """Write validated jobs: rows first (committed), then their index entries."""
        if not specs:
            return []
        inserted = self.store.insert_jobs(specs, now)
        new = [(r.id, s.queue, r.due_at) for r, s in zip(inserted, specs) if r.created]
        try:
            self.index.add(new)
        except BackendError:
            self.store.delete_jobs([job for job, _, _ in new])
            raise
        return inserted

    # -- cancel --------------------------------------------------------------
    def cancel(self, job_id: int | None = None, ext: str | None = None, queue: str | None = None) -> Cancelled:
        """Pending jobs become cancelled, then leave the due index. NotFound if nothing matched."""
        if (job_id is None) == (ext is None):
            raise InvalidInput("cancel needs exactly one of id or ext")
        if ext is not None:
            J.check_ext(ext)
        if queue is not None:
            J.check_queue(queue)
        result = self.store.cancel(self.clock.now(), job_id=job_id, ext=ext, queue=queue)
        if not result.cancelled and not result.untouched:
            raise NotFound(f"no job with {'id ' + str(job_id) if job_id is not None else 'ext ' + repr(ext)}")
        try:
            self.index.remove(result.cancelled)
        except BackendError as exc:
            # The cancel is committed; a stale index entry is harmless (start() skips non-pending rows).
            log.warning("cancelled %d job(s) but could not drop them from the index: %s", len(result.cancelled), exc)
        return result

    # -- claim and finish ----------------------------------------------------
    def claim(self, queues: list[str], limit: int) -> Claim:
        """Claim up to `limit` due jobs of `queues` and mark them running; highest priority first."""
        now = self.clock.now()
        token = secrets.token_hex(16)
        if self.index.in_store:
            jobs = self.store.claim_due(queues, now, limit, token, self.lease)
        else:
            jobs = []
            for queue in queues:
                if len(jobs) >= limit:
                    break
                # The in-flight score is a hint for the index rebuild; the row's lease_until is the truth.
                ids = self.index.claim(queue, now, limit - len(jobs), now + self.lease)
                started = self.store.start(ids, token, now, self.lease)
                stale = set(ids) - {job.id for job in started}
                if stale:   # cancelled or otherwise no longer pending: nothing to run
                    self.index.release([(job, queue) for job in stale])
                jobs.extend(started)
        jobs.sort(key=lambda job: (-job.priority, job.due_at, job.id))
        return Claim(token, jobs)

    def finish(self, token: str, outcomes: list[Outcome]) -> set[int]:
        """Commit outcomes, then update the index for the jobs this claim still held."""
        held, handlers = self.store.finish(outcomes, token, self.clock.now())
        self.index.add(handlers)     # on_timeout jobs, committed with the outcomes
        mine = [o for o in outcomes if o.job.id in held]
        self.index.reschedule([(o.job.id, o.job.queue, o.due_at) for o in mine if o.status == J.PENDING])
        self.index.release([(o.job.id, o.job.queue) for o in mine if o.status != J.PENDING])
        return held

    def next_due(self, queues: list[str]) -> float | None:
        return self.index.next_due(queues)

    def with_own_store(self) -> "Manager":
        """The same manager on a second database connection (for a writer thread); the index is shared."""
        return Manager(self.store.clone(), self.index, self.registry, self.clock, self.lease, self.queues,
                       self.event_modules)

    def begin(self, job: Job, token: str) -> bool:
        """Commit that an at-most-once job begins now; False: its claim is gone, it must not run."""
        return self.store.begin_job(job.id, token, self.clock.now())

    def extend(self, job_id: int, token: str, seconds: float) -> bool:
        """A running job asks for `seconds` more from now; False if its claim is gone."""
        if not 1 <= seconds <= J.MAX_LEASE:
            raise InvalidInput(f"extend() takes 1 to {J.MAX_LEASE} seconds, not {seconds!r}")
        now = self.clock.now()
        return self.store.extend_lease(job_id, token, now + seconds, now)

    # -- by hand: retry and purge ----------------------------------------------
    def retry(self, job_id: int | None = None, ext: str | None = None, step: str | None = None,
              reset_attempts: bool = False, at: float | None = None) -> list[int]:
        """Failed jobs (by id, or every failed one with an ext) back to pending, due now or `at`."""
        candidates = self.find(job_id=job_id, ext=ext)
        if step is not None:
            for job in candidates:
                names = [s.name for s in self.store.steps(job.id)]
                if step not in names:
                    raise InvalidInput(f"job {job.id} has no step {step!r}" +
                                       (f": its steps are {', '.join(names)}" if names else ": it has no steps"))
        now = self.clock.now()
        due = max(now, at) if at is not None else now
        retried, refused = [], []
        for job in candidates:
            result = self.store.retry(job.id, due, now, reset_attempts, step)
            if result and result[0] == J.FAILED:
                retried.append((job.id, result[1], due))
            else:
                refused.append(f"job {job.id} is {result[0] if result else 'gone'}")
        if not retried:
            raise NotFound(f"nothing to retry: {', '.join(refused)} (only failed jobs can be retried)")
        self.index.add(retried)
        return [job for job, _, _ in retried]

    def purge(self, statuses: list[str], older_than: float, batch: int = 500,
              progress: Callable[[int], None] | None = None) -> int:
        """Delete jobs in `statuses` finished more than `older_than` seconds ago, with their history."""
        bad = set(statuses) - set(J.FINAL)
        if bad or not statuses:
            raise InvalidInput(f"purge takes final statuses only ({', '.join(J.FINAL)}), not {', '.join(sorted(bad)) or 'none'}")
        before = self.clock.now() - older_than
        deleted = 0
        while True:
            ids = self.store.purge_page(statuses, before, batch)
            self.store.delete_with_history(ids)
            deleted += len(ids)
            if progress and ids:
                progress(len(ids))
            if len(ids) < batch:
                return deleted

    def send_alerts(self, alerter, limit: int = 1000) -> int:
        """One digest for the failed jobs not alerted yet; returns how many it covered (0 if not delivered)."""
        jobs = self.store.alerts_due(limit)
        if not jobs or not alerter.send(jobs, len(jobs), more=len(jobs) == limit):
            return 0
        self.store.mark_alerted([job["id"] for job in jobs], self.clock.now())
        return len(jobs)

    # -- read ----------------------------------------------------------------
    def find(self, job_id: int | None = None, ext: str | None = None, queue: str | None = None,
             event_id: str | None = None) -> list[Job]:
        """Jobs by id, by business key (optionally in a queue) or by emitted event; NotFound if none."""
        if job_id is not None:
            job = self.store.get(job_id)
            found, what = ([job] if job else []), f"id {job_id}"
        elif event_id is not None:
            found, what = self.store.by_event(event_id), f"event {event_id!r}"
        else:
            found, what = self.store.by_ext(J.check_ext(ext) or "", queue), f"ext {ext!r}"
        if not found:
            raise NotFound(f"no job with {what}")
        return found

    def attempts(self, job_id: int) -> list[Attempt]:
        return self.store.attempts(job_id)

    def close(self) -> None:
        self.store.close()
        close = getattr(self.index, "close", None)
        if close:
            close()
