"""The runner: claim what it can start soon, hand it to an executor, commit outcomes in groups.

It knows nothing of SQL or Redis: it calls the manager's verbs. Jobs run in an executor
(processes.py: worker processes, the default of `run-due`; threads.py: threads of this
process). The runner claims only what it can start soon: its free slots plus a prefetch of
about PREFETCH_SECONDS of work at the rate its slots can take jobs (slots / the recent mean time
a job runs; at least a quarter of its slots, at most MAX_AHEAD jobs: a few jobs ahead for
2-second jobs, hundreds for no-op jobs), so other runners on other hosts get the rest. In the loop of `--for`, claims (MAX_CLAIM jobs at
most each) run in threads of their own and the next one starts when half the prefetch is used,
so the workers do not wait for the database between batches; when the workers run through
jobs faster than one claim brings them, a second claim runs beside the first (MAX_CLAIMS). Outcomes are written in groups, one
transaction for many finished jobs, at least every FLUSH_EVERY seconds; with `pipeline`, by a
writer thread on its own connection while the next jobs run.

Stopping: at the end of its window (--for) or on SIGTERM, the runner stops claiming and puts
the jobs it claimed but did not start back to pending at once. Running jobs may finish: at the
end of a window, each within its time limit; after SIGTERM, within the grace period, after
which they are recorded as interrupted (an ordinary job runs again, an at-most-once one fails
as "outcome unknown").
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Callable

from .. import logs
from ..errors import DelayqError
from ..jobs import Job, Outcome
from .decide import INTERRUPTED, outcome
from .execute import SKIPPED, Result, run_job
from .processes import ProcessExecutor
from .summary import Summary, log_outcome
from .threads import ThreadExecutor

log = logging.getLogger("delayq.runner")
FLUSH_EVERY = 1.0           # seconds an outcome may wait before its group is committed
FLUSH_SIZE = 500            # outcomes committed in one transaction at most
MAX_CLAIM = 500             # jobs claimed at once at most
MAX_AHEAD = 1000            # jobs claimed beyond the free slots at most: two claims, so that the next one
                            # is under way while the workers still have half a second's no-op jobs to run
MAX_CLAIMS = 1              # claims under way at once at most
PREFETCH_SECONDS = 0.25     # claimed beyond the free slots: about this much work at the recent rate
MEAN_WEIGHT = 0.05          # weight of each new job's run time in the recent mean (about the last 20-40 jobs)
DEFAULT_TIMEOUT = 30.0      # seconds an attempt may run before it is stopped (DELAYQ_TIMEOUT)
DEFAULT_GRACE = 20.0        # seconds running jobs get after SIGTERM (--grace)
DEFAULT_CONCURRENCY = 16    # jobs at once per process (DELAYQ_CONCURRENCY)


class Runner:
    def __init__(self, manager, queues: list[str], batch: int = 200, *, concurrency: int = 1, processes: int = 0,
                 rng: random.Random | None = None, should_stop: Callable[[], bool] = lambda: False,
                 pipeline: bool = False, timeout: float = DEFAULT_TIMEOUT, grace: float = DEFAULT_GRACE,
                 queue_limits: dict[str, int] | None = None):
        self.manager = manager
        self.clock = manager.clock
        self.queues = queues
        self.batch = batch
        self.rng = rng
        self.should_stop = should_stop
        self.timeout = timeout
        self.grace = grace
        self.limits = {q: n for q, n in (queue_limits or {}).items() if q in queues}
        self.executor = (ThreadExecutor(manager, concurrency, self.timeout_of) if processes == 0
                         else ProcessExecutor(manager, processes, concurrency, self.timeout_of))
        self._jobs: dict[int, Job] = {}            # claimed and handed to the executor, no result yet
        self._per_queue: Counter = Counter()
        self._pending: list[Outcome] = []
        self._pending_since = 0.0
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="delayq-writer") if pipeline else None
        self._inflight: tuple[Future, list[Outcome], Summary] | None = None
        self._floor = max(1, self.executor.capacity // 4)
        self._mean_run: float | None = None         # seconds a job ran, recently (the prefetch follows it)
        self._claimer = ThreadPoolExecutor(MAX_CLAIMS, thread_name_prefix="delayq-claim")
        self._claims: list[tuple[Future, int]] = []  # the claims under way in the claimer threads, and their size
        self._keeper: threading.Thread | None = None
        self._keeper_stop = threading.Event()
        self._checked_at = float("-inf")
        self._snapshot: list[tuple[int, float]] = []
        self._snapshot_at = float("-inf")

    def timeout_of(self, job: Job) -> float:
        return job.timeout or self.timeout

    def running(self) -> list[tuple[int, float]]:
        """(job id, started) of the jobs running now."""
        return [(job.id, started) for job, started in self.executor.running()]

    def running_now(self) -> list[tuple[int, float]]:
        """The same as last seen by the loop (at most 0.5 s old): safe to call from another thread (heartbeats)."""
        return list(self._snapshot)

    def wake(self) -> None:
        """Wake the loop at once (a signal handler calls this after setting its stop flag)."""
        self.executor.wake()

    # -- one pass: claim one batch, run it, record every outcome -------------------------
    def run_pass(self, drain: bool = True) -> Summary:
        summary = Summary()
        self._submit(self._claim(self.batch, summary))
        while self._jobs:
            self._take(self._poll(0.05), summary)
            self._keep_alive()
        self._flush(summary, force=True)
        if drain:
            self.drain()
        return summary

    def execute(self, job: Job) -> Outcome | None:
        """Run one claimed job in this thread; None when an at-most-once job must not begin."""
        result = run_job(self.manager, job)
        return None if result.kind == SKIPPED else self._outcome(job, result)

    # -- the loop ---------------------------------------------------------------------------
    def run_for(self, seconds: float, interval: float = 1.0, one_pass: bool = False) -> Summary:
        """Claim and run for `seconds` (one_pass: until nothing more is due, or `batch` jobs claimed), then stop."""
        summary = Summary()
        end = float("inf") if one_pass else self.clock.now() + seconds     # a pass ends by its own rules
        try:
            self._loop(summary, end, interval, one_pass)
        except BaseException:
            self._abort(summary)
            raise
        self._stop(summary, grace=self.grace if self.should_stop() else None)
        return summary

    def _loop(self, summary: Summary, end: float, interval: float, one_pass: bool) -> None:
        next_claim = self.clock.now()
        claimed = last = 0
        while not self.should_stop():
            for future, want in [claim for claim in self._claims if claim[0].done()]:
                jobs = self._claimed(future, summary)
                claimed += len(jobs)
                last = len(jobs)
                self._submit(jobs)
                now = self.clock.now()
                next_claim = now if len(jobs) >= want else self._next_claim(now, interval)
            now = self.clock.now()
            if not self._claims and ((not one_pass and now >= end)
                                     or (one_pass and (next_claim > now or claimed >= self.batch))):
                break
            in_flight, ahead = self.executor.in_flight(), self._prefetch()
            asked = sum(want for _, want in self._claims)
            room = self.executor.capacity + ahead - in_flight - asked
            hungry = room > ahead // 2                  # a slot is free, or half the prefetch is used
            can_claim = len(self._claims) < MAX_CLAIMS
            if can_claim and hungry and now >= next_claim and now < end:
                # at most twice the last claim: the first claims of a burst are small and quick, so the slots
                # fill at once and do not wait for one large claim; then up to MAX_CLAIM
                want = min(room, MAX_CLAIM, max(self.executor.capacity, 2 * last),
                           self.batch - claimed - asked if one_pass else MAX_CLAIM)
                if want > 0:
                    future = self._claimer.submit(self._claim_jobs, *self._plan(want))
                    self._claims.append((future, want))
                    future.add_done_callback(lambda _: self.executor.wake())
                    can_claim = len(self._claims) < MAX_CLAIMS
            wake = min(end, next_claim if hungry and can_claim else end, self._flush_at(now))
            self._wait(max(0.0, min(wake - now, interval)), summary)
            self._flush(summary)
            self._keep_alive()
        while one_pass and self._jobs and not self.should_stop():     # a pass runs what it claimed
            self._wait(0.1, summary)
            self._flush(summary)
            self._keep_alive()

    def _keep_alive(self) -> None:
        """Start the lease keeper once: a thread of its own, so a loop blocked in a Redis failover or a slow
        commit does not let the leases of running jobs run out (a lease runs out only when the runner died)."""
        if self._keeper is None:
            self._keeper = threading.Thread(target=self._keep_leases, name="delayq-leases", daemon=True)
            self._keeper.start()

    def _keep_leases(self) -> None:
        every = min(30.0, self.manager.lease / 3)
        while not self._keeper_stop.wait(every):
            held = list(self._jobs.values())
            if held:
                try:
                    self.manager.keep_alive(held)
                except DelayqError as exc:
                    log.warning("could not keep the leases of %d running job(s): %s", len(held), exc)

    def _wait(self, seconds: float, summary: Summary) -> None:
        """Until a result or a claim comes (jobs running, or a claim under way), or sleep on the clock (idle: a
        fake clock moves instead)."""
        if self._claims and not self._jobs:
            wait_futures([future for future, _ in self._claims], timeout=max(0.0, seconds), return_when=FIRST_COMPLETED)
            self._take(self._poll(0), summary)
        elif self._jobs or seconds <= 0:
            self._take(self._poll(seconds), summary)
        else:
            self.drain()     # idle: the outcomes in the writer land first (a retry they schedule may be due soon)
            self.clock.sleep(seconds)
            self._take(self._poll(0), summary)
        if time.monotonic() - self._snapshot_at >= 0.5:
            self._snapshot, self._snapshot_at = self.running(), time.monotonic()

    def _check_ready(self) -> None:
        """Before claiming, at most once a second: the store answers, accepts us and has our schema (else exit 1)."""
        if time.monotonic() - self._checked_at >= 1.0:
            self.manager.check_ready()
            self._checked_at = time.monotonic()

    def _plan(self, want: int) -> tuple[int, list[tuple[list[str], int]]]:
        """`want` jobs at most, as (queues, how many) claims: each queue with a concurrency cap within its
        allowance, then the others."""
        capped = [q for q in self.queues if q in self.limits]
        if not capped:
            return want, [(self.queues, want)]
        plan = []
        for queue in capped:
            allowance = min(self.limits[queue] - self._per_queue[queue], want)
            if allowance > 0:
                plan.append(([queue], allowance))
        others = [q for q in self.queues if q not in self.limits]
        if others:
            plan.append((others, want))
        return want, plan

    def _claim_jobs(self, want: int, plan: list[tuple[list[str], int]]) -> list[Job]:
        """Claim by the plan, `want` jobs at most in all (in the claimer thread, or in this one)."""
        self._check_ready()
        jobs: list[Job] = []
        for queues, n in plan:
            if len(jobs) < want:
                jobs += self.manager.claim(queues, min(n, want - len(jobs)))
        return jobs

    def _claimed(self, future: Future, summary: Summary) -> list[Job]:
        """The jobs a claim in a claimer thread brought (what it raised is raised here)."""
        self._claims = [claim for claim in self._claims if claim[0] is not future]
        jobs = future.result()
        summary.passes += 1
        summary.claimed += len(jobs)
        return jobs

    def _next_claim(self, now: float, interval: float) -> float:
        """Nothing more is due now: claim again at the next due time, or after `interval` at the latest."""
        try:
            nxt = self.manager.next_due(self.queues)
        except DelayqError as exc:
            log.warning("could not read the next due time: %s", exc)
            nxt = None
        return min(now + interval, nxt if nxt is not None else now + interval)

    def _claim(self, want: int, summary: Summary) -> list[Job]:
        if want <= 0:
            return []
        jobs = self._claim_jobs(*self._plan(want))
        summary.passes += 1
        summary.claimed += len(jobs)
        return jobs

    def _submit(self, jobs: list[Job]) -> None:
        if jobs:
            for job in jobs:
                self._jobs[job.id] = job
                self._per_queue[job.queue] += 1
            self.executor.submit(jobs)

    def _prefetch(self) -> int:
        """Jobs to claim beyond the free slots: about PREFETCH_SECONDS of work at the rate the slots take jobs
        (Little's law: slots / mean run time), known from the first results on (a burst ramps up in one claim)."""
        if self._mean_run is None:
            return self._floor
        rate = self.executor.capacity / max(self._mean_run, 1e-6)
        return max(self._floor, min(MAX_AHEAD, int(rate * PREFETCH_SECONDS)))

    def _poll(self, timeout: float) -> list[Result]:
        return self.executor.poll(timeout)

    def _take(self, results: list[Result], summary: Summary) -> None:
        """Results to outcomes, waiting for the next group commit."""
        for result in results:
            job = self._jobs.pop(result.job_id, None)
            if job is None:
                continue
            ran = max(0.0, result.finished - result.started)
            self._mean_run = ran if self._mean_run is None else self._mean_run + MEAN_WEIGHT * (ran - self._mean_run)
            self._per_queue[job.queue] -= 1
            if result.kind == SKIPPED:
                summary.skipped += 1
                continue
            if result.kind == "timeout":
                summary.stopped += 1
            elif result.kind == "crashed":
                summary.crashed += 1
            done = self._outcome(job, result)
            log_outcome(done, result.kind)
            if not self._pending:
                self._pending_since = self.clock.now()
            self._pending.append(done)

    def _outcome(self, job: Job, result: Result) -> Outcome:
        done = outcome(job, result, self.rng)
        if done.ended_by_deadline and job.on_timeout:
            try:     # the deadline ended it: its on_timeout handler is written with the outcome
                done.followup = self.manager.timeout_handler(job, done.finished_at)
            except DelayqError as exc:
                log.warning("job %d: on_timeout %s not queued: %s", job.id, job.on_timeout, exc)
        return done

    # -- group commit -----------------------------------------------------------------
    def _flush_at(self, now: float) -> float:
        return self._pending_since + FLUSH_EVERY if self._pending else now + FLUSH_EVERY

    def _flush(self, summary: Summary, force: bool = False) -> None:
        if not self._pending:
            return
        if not force and len(self._pending) < FLUSH_SIZE and self.clock.now() < self._flush_at(self.clock.now()) \
                and self._jobs:
            return
        outcomes, self._pending = self._pending, []
        if self._writer is None:
            summary.count(self.manager.finish(outcomes), outcomes)
            logs.flush()
            return
        self.drain()                 # at most one group in the writer
        self._inflight = (self._writer.submit(self.manager.finish, outcomes), outcomes, summary)

    def drain(self) -> None:
        """Wait for the group in the writer (if any) and count its outcomes; raises what the writer raised."""
        if self._inflight is None:
            return
        future, outcomes, summary = self._inflight
        self._inflight = None
        summary.count(future.result(), outcomes)
        logs.flush()

    # -- stopping -----------------------------------------------------------------------
    def _stop(self, summary: Summary, grace: float | None) -> None:
        """Stop claiming; hand back what never started; let running jobs end (grace: then cut them short)."""
        unsubmitted, handed = self._unsubmitted(summary), self.executor.stop()
        for job in handed:
            self._jobs.pop(job.id, None)
            self._per_queue[job.queue] -= 1
        handed += unsubmitted
        if handed:
            summary.handed_back += self.manager.unclaim(handed)
        deadline = None if grace is None else time.monotonic() + grace
        while self._jobs and (deadline is None or time.monotonic() < deadline):
            self._take(self._poll(0.1), summary)
            self._flush(summary)
            self._keep_alive()
        if self._jobs:
            now = self.clock.now()
            cut = self.executor.kill()
            self._take([Result(job.id, INTERRUPTED, now, now, error=f"interrupted: the runner stopped and its "
                               f"{grace:g}s grace period ended") for job in cut if job.id in self._jobs], summary)
        self._flush(summary, force=True)
        self.drain()

    def _abort(self, summary: Summary) -> None:
        """The loop failed (a backend error): stop the workers; hand back and record what can be, quietly.

        Whatever is not recorded here is recovered by compensate when its lease runs out.
        """
        try:
            handed = self._unsubmitted(summary) + self.executor.stop()
            cut = self.executor.kill()
            self.manager.unclaim(handed)
            now = self.clock.now()
            self._take([Result(job.id, INTERRUPTED, now, now, error="interrupted: the runner failed")
                        for job in cut if job.id in self._jobs], summary)
            self._flush(summary, force=True)
            self.drain()
        except (DelayqError, OSError) as exc:
            log.warning("while stopping after an error: %s", exc)

    def _unsubmitted(self, summary: Summary) -> list[Job]:
        """The jobs of the claims still under way when the loop ended: to hand back with the others."""
        jobs: list[Job] = []
        for future, _ in list(self._claims):
            wait_futures([future])
            try:
                jobs += self._claimed(future, summary)
            except DelayqError as exc:   # nothing claimed: its jobs (if any) come back when their lease runs out
                log.warning("a claim under way when the runner stopped failed: %s", exc)
                self._claims = [claim for claim in self._claims if claim[0] is not future]
        return jobs

    def close(self) -> None:
        self._keeper_stop.set()
        self._claimer.shutdown()
        self.drain()
        self.executor.close()
        if self._writer:
            self._writer.shutdown()
