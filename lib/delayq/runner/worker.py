"""A worker: one process's loop of claim, run, commit. Each worker claims, runs and records its own jobs.

Its parts: holding.py (what it holds from claim to commit) and stopping.py (how it stops); its roles, each a
class of its own: the Claimer (what to claim and when, in a thread), the job
threads (threads.py: ThreadExecutor), the OutcomeWriter (group commits), the LeaseKeeper, and
the Ledger (shared memory that says, at every instant, which of its jobs never started, which
run and which ended with their outcome not yet committed). The worker is one holder: every
claim token it gets begins with its name, so whatever ends it, its rows are found by it.

A worker runs alone in the runner's process (`--processes 0`; the tests' fake clock), or in a
process of its own under a supervisor (supervisor.py), which watches its ledger, stops jobs past
their time limit by ending the process, and recovers at once what a dead worker held.

Stopping: at the end of its window (--for), on SIGTERM, or when its supervisor says so, a
worker stops claiming and puts the jobs it claimed but did not start back to pending at once.
Running jobs may finish (each within its time limit; after SIGTERM, within the grace period,
after which they are recorded as interrupted: an ordinary job runs again, an at-most-once one
fails as "outcome unknown"). A worker whose supervisor died (`orphaned`) stops at once: it
writes the outcomes it has, hands back what never started, and ends with its jobs' processes.
"""

from __future__ import annotations

import logging
import random
import time
from concurrent.futures import FIRST_COMPLETED
from concurrent.futures import wait as wait_futures
from typing import Callable

from ..jobs import Job, Outcome, new_holder
from ..retries import SKIPPED
from .claimer import MAX_AHEAD, MAX_CLAIM, Claimer
from .execute import run_job
from .holding import Holding
from .leases import LeaseKeeper
from .ledger import Ledger
from .stopping import Stopping
from .summary import Summary
from .threads import HandOff, ThreadExecutor
from .writer import FLUSH_SIZE, OutcomeWriter

log = logging.getLogger("delayq.runner")
DEFAULT_TIMEOUT = 30.0      # seconds an attempt may run before it is stopped (DELAYQ_TIMEOUT)
DEFAULT_GRACE = 20.0        # seconds running jobs get after SIGTERM (--grace)
DEFAULT_CONCURRENCY = 16    # jobs at once per process (DELAYQ_CONCURRENCY)


def ledger_for(concurrency: int, path: str | None = None) -> Ledger:
    """A ledger with room for everything a worker can hold at once: running, claimed ahead, claims under way,
    outcomes waiting for their commit (two groups: one in the writer thread, one filling); in memory, or in the
    file `path` (a supervisor's workers: runner/orphans.py)."""
    return Ledger(concurrency + MAX_AHEAD + MAX_CLAIM + 2 * FLUSH_SIZE + 64, concurrency, path)


class Worker(Holding, Stopping):
    """The loop (its parts: holding.py, what it holds from claim to commit; stopping.py, how it stops)."""

    def __init__(self, manager, queues: list[str], batch: int = 200, *, concurrency: int = 1,
                 rng: random.Random | None = None, should_stop: Callable[[], bool] = lambda: False,
                 pipeline: bool = False, timeout: float = DEFAULT_TIMEOUT, grace: float = DEFAULT_GRACE,
                 queue_limits: dict[str, int] | None = None, ledger: Ledger | None = None, holder: str | None = None,
                 hand_off: HandOff | None = None, supervised: bool = False,
                 orphaned: Callable[[], bool] = lambda: False):
        self.manager = manager
        self.clock = manager.clock
        self.queues = queues
        self.batch = batch
        self.rng = rng
        self.should_stop = should_stop
        self.orphaned = orphaned                 # its supervisor died: stop at once
        self.timeout = timeout
        self.grace = grace
        self.supervised = supervised             # time limits and the grace period are the supervisor's
        self.holder = holder or new_holder("p")  # its claims' tokens begin with it (jobs.HOLDER)
        self.ledger = ledger or ledger_for(concurrency)
        self.slots: dict[int, int] = {}          # job id -> ledger slot, from its claim until nothing is held
        self._jobs: dict[int, Job] = {}          # claimed and handed to the executor, no result yet
        self.executor = ThreadExecutor(manager, concurrency, self.timeout_of, self.ledger, self.slots, hand_off,
                                       own_limits=not supervised)
        limits = {q: n for q, n in (queue_limits or {}).items() if q in queues}
        self.claimer = Claimer(manager, queues, self.holder, self.executor.capacity, limits)
        self.writer = OutcomeWriter(manager, self.clock, pipeline, self._committed)
        self.keeper = LeaseKeeper(manager, lambda: list(self._jobs.values()))
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
        self._submit(self._claim_now(self.batch, summary))
        while self._jobs:
            self._take(self.executor.poll(0.05), summary)
            self._keep()
        self.writer.flush(summary, force=True)
        if drain:
            self.writer.drain()
        return summary

    def run_jobs(self, jobs: list[Job]) -> Summary:
        """Run jobs already claimed (a solo process's one job), record their outcomes, and stop."""
        summary = Summary()           # (its worker counted the claim: a job handed off is counted once)
        self._submit(self._held(jobs))
        while self._live() and not self.orphaned():     # orphaned: nobody would stop it past its time limit
            self._take(self.executor.poll(0.1), summary)
            self._keep()
        self.writer.flush(summary, force=True)
        self.writer.drain()
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
            if self.orphaned():
                self._orphan_stop(summary)
            else:
                self._stop(summary, grace=self.grace if self.should_stop() else None)
        except BaseException as exc:
            self._abort(summary, exc)
            raise
        return summary

    def _stopping(self) -> bool:
        return self.should_stop() or self.orphaned()

    def _loop(self, summary: Summary, end: float, interval: float, one_pass: bool) -> None:
        next_claim = self.clock.now()
        claimed = last = 0
        capacity = self.executor.capacity
        while not self._stopping():
            for future, want in self.claimer.finished():
                jobs = self._collect(future, summary)
                claimed += len(jobs)
                last = len(jobs)
                self._submit(jobs)
                now = self.clock.now()
                next_claim = now if len(jobs) >= want else self.claimer.next_claim(now, interval)
            now = self.clock.now()
            if not self.claimer.under_way and ((not one_pass and now >= end)
                                               or (one_pass and (next_claim > now or claimed >= self.batch))):
                break
            capacity = self.executor.capacity
            in_flight, ahead = self.executor.in_flight(), self.claimer.prefetch(capacity)
            room = min(capacity + ahead - in_flight - self.claimer.asked(), self.ledger.available())
            hungry = room > ahead // 2                  # a slot is free, or half the prefetch is used
            can_claim = not self.claimer.under_way
            if can_claim and hungry and now >= next_claim and now < end:
                # at most twice the last claim: the first claims of a burst are small and quick, so the slots
                # fill at once and do not wait for one large claim; then up to MAX_CLAIM
                want = min(room, MAX_CLAIM, max(capacity, 2 * last),
                           self.batch - claimed - self.claimer.asked() if one_pass else MAX_CLAIM)
                if want > 0:
                    self.claimer.start(want, self.executor.wake)
                    can_claim = False
            wake = min(end, next_claim if hungry and can_claim else end, self.writer.due_at(now))
            self._wait(max(0.0, min(wake - now, interval)), summary)
            self.writer.flush(summary, idle=not self._jobs)
            self._keep()
        while one_pass and self._live() and not self._stopping():     # a pass runs what it claimed
            self._wait(0.1, summary)
            self.writer.flush(summary)
            self._keep()

    def _keep(self) -> None:
        """The lease keeper runs (started once; under a supervisor, the supervisor keeps the leases: a job holding
        this process's interpreter cannot stop that); if the store stopped answering it, the worker fails."""
        if not self.supervised:
            self.keeper.start()
        if self.keeper.error is not None:
            raise self.keeper.error

    def _wait(self, seconds: float, summary: Summary) -> None:
        """Until a result or a claim comes (jobs running, or a claim under way), or sleep on the clock (idle: a
        fake clock moves instead)."""
        if self.claimer.under_way and not self._jobs:
            wait_futures([future for future, _ in self.claimer.under_way], timeout=max(0.0, seconds),
                         return_when=FIRST_COMPLETED)
            self._take(self.executor.poll(0), summary)
        elif self._jobs or seconds <= 0:
            self._take(self.executor.poll(seconds), summary)
        else:
            self.writer.drain()     # idle: the outcomes in the writer land first (a retry they schedule may be due soon)
            self.clock.sleep(seconds)
            self._take(self.executor.poll(0), summary)
        if time.monotonic() - self._snapshot_at >= 0.5:
            self._snapshot, self._snapshot_at = self.running(), time.monotonic()

    def close(self) -> None:
        self.keeper.stop()
        self.claimer.close()
        self.writer.drain()
        self.writer.close()
        self.executor.stop()
