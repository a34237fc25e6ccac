"""The manager: every domain verb once (enqueue, cancel, claim, finish, retry, purge, find, ...).

It orders the writes between the store (the truth) and the due index: the row is
committed before its index entry is added; the index claims and moves the row to running
before the job runs; the outcome is committed before the in-flight entry is dropped.
The runner, the scripts, pull mode and the client call only these verbs.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

from . import bulk, events, recovery, validate, words
from .bulk import BulkResult
from .clock import Clock
from .errors import BackendError, InvalidInput, NotFound
from .grouping import Group
from .index import DueIndex
from .jobs import FINAL, PENDING, Attempt, Job, JobSpec, Outcome, claim_token, new_holder
from .registry import Registry
from .search import MAX_PAGE, JobFilter
from .store import Cancelled, Changed, Inserted, Step, StepStore, Store
from .store.base import UNIQUE_TAKEN
from .workers import Worker

log = logging.getLogger(__name__)
PAUSED_FOR = 1.0            # seconds a process trusts its last read of the paused queues
FORGET_WORKERS = 86400.0    # seconds after its last beat a runner's row is deleted


class Manager:
    def __init__(self, store: Store, index: DueIndex, registry: Registry, clock: Clock, lease: float = 300.0,
                 queues: Mapping[str, Mapping[str, Any]] | None = None, event_modules: tuple[str, ...] = ()):
        self.store = store
        self.index = index
        self.registry = registry
        self.clock = clock
        self.lease = lease                      # seconds, for jobs with no lease of their own or their queue's
        self.queues = dict(queues or {})        # per-queue defaults (DELAYQ_QUEUES), already validated
        self.event_modules = event_modules
        self._paused_read: tuple[float, frozenset[str]] = (float("-inf"), frozenset())
        self._group: Group[JobSpec, Inserted] = Group(self._write_rows, then=self._add_to_index)

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

    def _write_rows(self, specs: list[JobSpec]) -> list[Inserted]:
        """Single enqueues that came together (grouping.py): their rows in one transaction; then _add_to_index,
        while the next group's rows are written."""
        return self.store.insert_jobs(specs, self.clock.now())

    def _add_to_index(self, specs: list[JobSpec], inserted: list[Inserted]) -> None:
        """Index entries for the rows just committed; if that fails, the rows go too (nothing half-written)."""
        new = [(r.id, s.queue, r.due_at, s.priority) for r, s in zip(inserted, specs) if r.created]
        try:
            self.index.add(new)
        except BaseException:     # a backend error, or an interrupt: no row stays without its entry
            self.store.delete_jobs([job for job, _, _, _ in new])
            raise

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
        self._add_to_index(specs, inserted)
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

    # -- claim, run, finish (the runner) --------------------------------------
    def claim(self, queues: list[str], limit: int, holder: str | None = None) -> list[Job]:
        """Claim up to `limit` due jobs of `queues` not paused, marked running under a new claim token of `holder`
        (each job carries it; a worker is one holder all its life, so whatever ends it, its rows are found by its
        holder: held(); default: a holder of its own).

        The start of a pass: the clock reads its server here (once per pass, at most once a second)."""
        now = self.clock.sync()
        active = self.active(queues, now)
        token = claim_token(holder or new_holder("c"))
        jobs = self.index.claim(active, now, limit, token, self.lease) if active else []
        if jobs and self.clock.now() - now > min(job.lease or self.lease for job in jobs) / 3:
            # The claim's leases were set at `now`, and it committed a third of a lease or more later (its process
            # held up between its UPDATE and its COMMIT: a batch-mate holding the interpreter, swap). Its rows
            # were locked meanwhile, so the runner's renewal skipped them: they move on now, before any starts,
            # so that none runs under a lease that ran out (compensate would take it over while it runs).
            self.store.keep_alive(jobs, self.clock.now(), self.lease)
        return jobs

    def finish(self, outcomes: list[Outcome], witnessed: bool = True) -> set[int]:
        """Commit outcomes, then update the index for the jobs whose claim still held; returns those ids.
        witnessed=False (recovery): attempt rows only for those (a run is recorded once, by whoever recovers it)."""
        held, handlers = self.store.finish(outcomes, self.clock.now(), witnessed)
        self.index.add(handlers)     # on_timeout jobs, committed with the outcomes
        mine = [o for o in outcomes if o.job.id in held]
        self.index.reschedule([(o.job.id, o.job.queue, o.due_at, o.job.priority) for o in mine if o.status == PENDING])
        self.index.release([(o.job.id, o.job.queue) for o in mine if o.status != PENDING])
        return held

    def keep_alive(self, jobs: list[Job]) -> int:
        """A live runner's jobs keep their claim: leases move on; returns how many still held."""
        return self.store.keep_alive(jobs, self.clock.now(), self.lease) if jobs else 0

    def unclaim(self, jobs: list[Job]) -> int:
        """Jobs claimed but never started (a runner stopping) back to pending at once; returns how many."""
        return len(self.unclaimed(jobs))

    def unclaimed(self, jobs: list[Job]) -> list[Job]:
        """The same, returning the jobs whose claim still held (now pending at their due time again)."""
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
        active = self.active(queues, self.clock.now())
        return self.index.next_due(active) if active else None

    def begin(self, job: Job) -> bool:
        """Commit that an at-most-once job begins now; False: its claim is gone, it must not run."""
        return self.store.begin_job(job.id, job.token or "", self.clock.now())

    def extend(self, job: Job, seconds: float) -> bool:
        """A running job asks for `seconds` more from now; False if its claim is gone."""
        seconds = validate.duration(seconds, "extend() seconds", 1, validate.MAX_LEASE)
        now = self.clock.now()
        return self.store.extend_lease(job.id, job.token or "", now + seconds, now)

    # -- steps (multi-step jobs) -----------------------------------------------
    @property
    def step_store(self) -> StepStore:
        """The part of the store that runs multi-step jobs (steps.run_steps)."""
        return self.store

    def steps(self, job_id: int) -> list[Step]:
        return self.store.steps(job_id)

    # -- by hand: retry, purge, alerts, recovery -------------------------------
    def retry(self, job_id: int | None = None, ext: str | None = None, step: str | None = None,
              reset_attempts: bool = False, at: float | None = None) -> list[int]:
        """Failed jobs (by id, or every failed one with an ext) back to pending, due now or `at`."""
        candidates = self.find(job_id=job_id, ext=ext)
        if step is not None:
            for job in candidates:
                names = self.store.step_names(job.id)
                if step not in names:
                    raise InvalidInput(f"job {job.id} has no step {step!r}" +
                                       (f": its steps are {', '.join(names)}" if names else ": it has no steps"))
        changed = self._retry_ids([job.id for job in candidates], step, reset_attempts, at)
        taken = [job for job, reason in changed.skipped if reason == UNIQUE_TAKEN]
        if taken:
            raise InvalidInput(f"job {taken[0]} was enqueued as unique and another job with its queue and ext is live "
                               "now: cancel that one first, or let it finish")
        if not changed.changed:
            refused = ", ".join(f"job {job} is {words.shown(reason)}" for job, reason in changed.skipped)
            raise NotFound(f"nothing to retry: {refused} (only failed jobs can be retried)")
        return [job for job, _, _ in changed.changed]

    def purge(self, statuses: list[str], older_than: float, batch: int | None = None,
              progress: Callable[[int], None] | None = None) -> int:
        """Delete jobs in `statuses` finished more than `older_than` seconds ago, with their history."""
        bad = set(statuses) - set(FINAL)
        if bad or not statuses:
            raise InvalidInput(f"purge takes final statuses only ({', '.join(FINAL)}), not {', '.join(sorted(bad)) or 'none'}")
        f = JobFilter(statuses=tuple(statuses), until=self.clock.now() - older_than, time_field="finished")
        return self.bulk_purge(f, progress, batch).total

    # -- bulk actions: every job a filter matches, in batches ------------------
    def newest_job_id(self) -> int:
        """The id of the newest job (0: none): a bulk preview's snapshot is the jobs up to it."""
        return self.store.max_job_id()

    def bulk_preview(self, action: str, f: JobFilter) -> BulkResult:
        """What bulk_<action> would do now ("retry", "cancel" or "purge"): counts per queue, a sample of ids."""
        scope = bulk.scoped(action, f.checked())
        return bulk.preview(self.count(scope), self.search(scope, limit=bulk.SAMPLE * 2), action)

    def bulk_retry(self, f: JobFilter, step: str | None = None, reset_attempts: bool = False, at: float | None = None,
                   progress: Callable[[int], None] | None = None) -> BulkResult:
        """Every failed job matching `f` back to pending (due now or `at`), a batch per transaction."""
        scope = bulk.scoped("retry", f.checked())
        return bulk.run(self.store, scope, lambda ids: self._retry_ids(ids, step, reset_attempts, at), progress)

    def bulk_cancel(self, f: JobFilter, progress: Callable[[int], None] | None = None) -> BulkResult:
        """Every pending job matching `f` cancelled, then dropped from the due index, a batch per transaction."""
        return bulk.run(self.store, bulk.scoped("cancel", f.checked()), self._cancel_ids, progress)

    def bulk_purge(self, f: JobFilter, progress: Callable[[int], None] | None = None,
                   batch: int | None = None) -> BulkResult:
        """Every job matching `f` in a final status deleted with its history (its counts kept for the metrics)."""
        scope = bulk.scoped("purge", f.checked())
        statuses = list(scope.statuses or FINAL)
        return bulk.run(self.store, scope, lambda ids: self.store.purge_ids(ids, statuses), progress, batch)

    def _retry_ids(self, ids: list[int], step: str | None, reset_attempts: bool, at: float | None) -> Changed:
        now = self.clock.now()
        due = max(now, at) if at is not None else now
        changed = self.store.retry_ids(ids, due, now, reset_attempts, step)
        self.index.add([(job, queue, due, priority) for job, queue, priority in changed.changed])
        return changed

    def _cancel_ids(self, ids: list[int]) -> Changed:
        changed = self.store.cancel_ids(ids, self.clock.now())
        try:
            self.index.remove([(job, queue) for job, queue, _ in changed.changed])
        except BackendError as exc:   # committed; a stale index entry is harmless (claims skip rows not pending)
            log.warning("cancelled %d job(s) but could not drop them from the index: %s", len(changed.changed), exc)
        return changed

    def run_now(self, job_id: int) -> Job:
        """A pending job due now: its due time moves to now in the store, then in the index (the dashboard's
        "run now"). InvalidInput if it is not pending (only a waiting job can be brought forward); NotFound if none."""
        job = self.find(job_id=job_id)[0]
        now = self.clock.now()
        if job.status != PENDING or not self.store.make_due(job.id, now):
            current = self.store.statuses([job.id]).get(job.id, "gone")
            raise InvalidInput(f"job {job.id} is {words.shown(current)}: only a pending job can run now")
        self.index.add([(job.id, job.queue, now, job.priority)])
        return replace(job, due_at=now)

    # -- paused queues -----------------------------------------------------------
    def pause(self, queue: str, reason: str | None = None) -> bool:
        """Stop claiming `queue` on every runner (within a second); enqueue goes on. False if already paused."""
        validate.queue(queue, "queue", tube=True)
        reason = validate.text(reason, "--reason", 255) if reason else None
        paused = self.store.pause(queue, reason, self.clock.now())
        self._paused_read = (float("-inf"), frozenset())
        return paused

    def resume(self, queue: str) -> bool:
        """Claim `queue` again; False if it was not paused."""
        validate.queue(queue, "queue", tube=True)
        resumed = self.store.resume(queue)
        self._paused_read = (float("-inf"), frozenset())
        return resumed

    def paused_queues(self) -> dict[str, tuple[float, str | None]]:
        """queue -> (paused since, reason), read now."""
        return self.store.paused()

    def active(self, queues: list[str], now: float) -> list[str]:
        """Those of `queues` not paused; the paused set is read from the store at most once per PAUSED_FOR seconds."""
        read_at, paused = self._paused_read
        if not read_at <= now < read_at + PAUSED_FOR:
            paused = frozenset(self.store.paused())
            self._paused_read = (now, paused)
        return [queue for queue in queues if queue not in paused]

    # -- runners' heartbeats -------------------------------------------------------
    def heartbeat(self, worker: Mapping[str, Any], running: list[tuple[int, float]]) -> None:
        """Record that a runner is alive now and runs these (job id, started at) (workers.Heartbeat calls it)."""
        self.store.beat(dict(worker), json.dumps([[job, started] for job, started in running]), self.clock.now())

    def worker_stopped(self, worker_id: str) -> None:
        self.store.worker_stopped(worker_id, self.clock.now())

    def forget_workers(self) -> int:
        """Delete the rows of runners gone for a day."""
        return self.store.forget_workers(self.clock.now() - FORGET_WORKERS)

    def workers(self) -> list[Worker]:
        """Every runner row as a workers.Worker, live or not (state and how long ago it stopped beating)."""
        now = self.clock.now()
        return [Worker.from_row(row, now) for row in self.store.workers()]

    def send_alerts(self, alerter, limit: int = 1000) -> int:
        """One digest for the failed jobs not alerted yet; returns how many it covered (0 if not delivered)."""
        jobs = self.store.alerts_due(limit)
        if not jobs or not alerter.send(jobs, len(jobs), more=len(jobs) == limit):
            return 0
        self.store.mark_alerted([job["id"] for job in jobs], self.clock.now())
        return len(jobs)

    def recover_expired(self) -> list[recovery.Recovered]:
        """Jobs of vanished runners (lease run out) run again or fail as "outcome unknown"."""
        return recovery.recover_expired(self)

    def index_newer(self) -> int:
        """Rows written since the last look, pending and missing from the due index, added to it (compensate)."""
        return recovery.index_newer(self.store, self.index, self.clock.now())

    def requeue_stranded(self) -> int:
        """In-flight ids of claims cut short between their two steps, due again now (each compensate run)."""
        return recovery.requeue_stranded(self.store, self.index, self.clock.now())

    def requeue_claims(self, holder: str) -> int:
        """Ids a dead claimer (`holder`) left in flight with their rows still pending, due again now."""
        return recovery.requeue_claims(self.store, self.index, holder)

    def reconcile(self, progress: Callable[[int], None] | None = None) -> recovery.Reconciled:
        """The due index made to match the rows (a no-op for the in-database index)."""
        return recovery.reconcile(self.store, self.index, self.clock, progress)

    # -- read ----------------------------------------------------------------
    def get(self, job_id: int) -> Job | None:
        return self.store.get(job_id)

    def find(self, job_id: int | None = None, ext: str | None = None, queue: str | None = None,
             event_id: str | None = None) -> list[Job]:
        """Jobs by id, by business key (optionally in a queue) or by emitted event; NotFound if none."""
        if queue is not None:
            validate.queue(queue, tube=True)
        if job_id is not None:
            job = self.store.get(job_id)
            found, what = ([job] if job else []), f"id {job_id}"
        elif event_id is not None:
            found, what = self.store.by_event(event_id), f"event {event_id!r}"
        else:
            found, what = self.store.by_ext(validate.ext(ext) or "", queue), f"ext {ext!r}"
        if not found:
            raise NotFound(f"no job with {what}")
        return found

    def attempts(self, job_id: int) -> list[Attempt]:
        return self.store.attempts(job_id)

    def list_jobs(self, status: str | None = None, queue: str | None = None, ext_prefix: str | None = None,
                  limit: int = 50) -> list[dict]:
        if queue is not None:
            validate.queue(queue, tube=True)
        return self.store.list_jobs(status, queue, validate.ext(ext_prefix, "ext prefix"), limit)

    def search(self, f: JobFilter, before: int | None = None, limit: int = 50) -> list[dict]:
        """One keyset page of jobs matching `f`, newest first (the next page: before = the last id)."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"a page holds 1 to {MAX_PAGE} jobs")
        return self.store.search(f.checked(), before, limit)

    def count(self, f: JobFilter) -> list[tuple[str, str, int]]:
        """(queue, status, how many) for the jobs matching `f`."""
        return self.store.count(f.checked())

    def count_upto(self, f: JobFilter, most: int = 10_000) -> int:
        """How many jobs match `f`, counting no further than `most` (a page's total: "more than 10,000")."""
        return self.store.count_upto(f.checked(), most)

    def stats(self, since: float) -> tuple[float, list[tuple]]:
        """(now, rows of ReportStore.stats) with `since` seconds back as the recent window."""
        now = self.clock.now()
        return now, self.store.stats(now, now - since)

    def recent_attempts(self) -> list[tuple]:
        """Rows of ReportStore.recent_attempts for the last minute and hour."""
        now = self.clock.now()
        return self.store.recent_attempts(now - 60, now - 3600)

    def metrics(self) -> list[tuple[str, str, str, int, float]]:
        """Rows of ReportStore.metrics: counters and histogram buckets derived from the database."""
        return self.store.metrics()

    def queue_counts(self) -> tuple[float, list[tuple[str, str, int, int, float | None]]]:
        """(now, rows (queue, status, count, due by now, earliest due)) for the pending, running and failed jobs:
        the overview's cheap cousin of `stats`, which reads every row."""
        now = self.clock.now()
        return now, self.store.queue_counts(now)

    def throughput(self, minutes: int = 60) -> tuple[float, dict[str, list[int]]]:
        """Attempts finished per minute over the last `minutes` whole minutes and the current one, by outcome:
        (start of the first minute, outcome -> counts, oldest minute first)."""
        now = self.clock.now()
        start = (now // 60 - minutes) * 60
        series: dict[str, list[int]] = {}
        for minute, outcome, n in self.store.attempts_per_minute(start):
            if 0 <= minute <= minutes:
                series.setdefault(outcome, [0] * (minutes + 1))[minute] += n
        return start, series

    # -- the dashboard's audit trail ------------------------------------------------
    def record_action(self, address: str, actor: str, action: str, target: str, jobs: int,
                      detail: str | None = None) -> None:
        """Write one audit row for an action taken on the dashboard (after the action committed)."""
        self.store.record_action({"id": secrets.token_hex(16), "at": self.clock.now(), "address": address[:64],
                                  "actor": actor[:64], "action": action[:32], "target": target, "jobs": int(jobs),
                                  "detail": detail})

    def actions(self, before: float | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The audit trail, newest first: up to `limit` rows older than `before` (None: from now)."""
        return self.store.actions(before if before is not None else 2.0 ** 62, limit)

    def live_queues_like(self, pattern: str) -> list[str]:
        return self.store.live_queues_like(pattern)

    def failed_in_queue(self, queue: str, limit: int) -> list[int]:
        return self.store.failed_in_queue(queue, limit)

    def close(self) -> None:
        self.store.close()
        self.index.close()
