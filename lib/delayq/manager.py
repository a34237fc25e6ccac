"""The manager: every domain verb once (enqueue, cancel, claim, finish, show).

It orders the writes between the store (the truth) and the due index:
the row is committed before its index entry is added; the row is moved to
running before the job runs; the outcome is committed before the in-flight
entry is dropped. The runner and the scripts only call these verbs.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from . import jobs as J
from .clock import Clock
from .errors import BackendError, InvalidInput, NotFound
from .index import DueIndex
from .jobs import Attempt, Job, JobSpec, Outcome
from .registry import Registry
from .store import Cancelled, Inserted, Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    token: str
    jobs: list[Job]


class Manager:
    def __init__(self, store: Store, index: DueIndex, registry: Registry, clock: Clock, lease: float = 300.0):
        self.store = store
        self.index = index
        self.registry = registry
        self.clock = clock
        self.lease = lease

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

    def validate(self, raw: Mapping[str, Any], now: float) -> JobSpec:
        if not isinstance(raw, Mapping):
            raise InvalidInput("a job must be a JSON object whose keys are the flags' names")
        spec = J.build(raw, now)
        try:
            self.registry.resolve(spec.call)
        except ImportError as exc:
            raise InvalidInput(f"callable {spec.call!r} cannot be imported: {exc}") from None
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
        lease_until = now + self.lease
        if self.index.in_store:
            jobs = self.store.claim_due(queues, now, limit, token, lease_until)
        else:
            jobs = []
            for queue in queues:
                if len(jobs) >= limit:
                    break
                ids = self.index.claim(queue, now, limit - len(jobs), lease_until)
                started = self.store.start(ids, token, now, lease_until)
                stale = set(ids) - {job.id for job in started}
                if stale:   # cancelled or otherwise no longer pending: nothing to run
                    self.index.release([(job, queue) for job in stale])
                jobs.extend(started)
        jobs.sort(key=lambda job: (-job.priority, job.due_at, job.id))
        return Claim(token, jobs)

    def finish(self, token: str, outcomes: list[Outcome]) -> set[int]:
        """Commit outcomes, then update the index for the jobs this claim still held."""
        held = self.store.finish(outcomes, token, self.clock.now())
        mine = [o for o in outcomes if o.job.id in held]
        self.index.reschedule([(o.job.id, o.job.queue, o.due_at) for o in mine if o.status == J.PENDING])
        self.index.release([(o.job.id, o.job.queue) for o in mine if o.status != J.PENDING])
        return held

    def next_due(self, queues: list[str]) -> float | None:
        return self.index.next_due(queues)

    # -- read ----------------------------------------------------------------
    def find(self, job_id: int | None = None, ext: str | None = None, queue: str | None = None) -> list[Job]:
        if job_id is not None:
            job = self.store.get(job_id)
            found = [job] if job else []
        else:
            found = self.store.by_ext(J.check_ext(ext) or "", queue)
        if not found:
            raise NotFound(f"no job with {'id ' + str(job_id) if job_id is not None else 'ext ' + repr(ext)}")
        return found

    def attempts(self, job_id: int) -> list[Attempt]:
        return self.store.attempts(job_id)

    def close(self) -> None:
        self.store.close()
        close = getattr(self.index, "close", None)
        if close:
            close()
