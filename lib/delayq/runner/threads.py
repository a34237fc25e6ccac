"""Job threads: the jobs of one process run here, `concurrency` at a time, each mark in the ledger first.

Before a job's code runs, its thread writes "running since, in this thread" into the ledger;
when it returns, "ended, and how". So whatever ends the process, its supervisor knows which
jobs ran (runner/ledger.py). A job that must run alone (at-most-once, or a suspect of a crash:
Job.solo) is handed off instead, when a supervisor is there to take it (runner/supervisor.py
runs it in a process of its own).

Time limits: under a supervisor, the supervisor watches the ledger and stops a job by ending
its process. Alone (`--processes 0`, the tests' fake clock), a job past its limit cannot be
stopped: it is reported as timed out and its thread is left to finish on its own, holding its
slot, until the runner exits.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Protocol

from ..errors import DelayqError
from ..jobs import Job
from ..retries import SKIPPED, TIMEOUT, Result
from .execute import run_job
from .ledger import Ledger

HANDED = "handed"            # a Result kind: passed to a process of its own, nothing to record here
BROKEN = "broken"            # the store or index failed around the job (its begin, its hand-off): the worker stops
ABANDONED = "abandoned"      # its supervisor gave up on it (time limit) while it ran: nothing to record here

HandOff = Callable[[Job], bool]   # pass a job to a process of its own; False if its claim was gone


class Executor(Protocol):
    """Where a worker's claimed jobs run. Results come back through poll(); every submitted job gives exactly
    one Result (or is returned by stop() / kill())."""

    capacity: int

    def submit(self, jobs: list[Job]) -> None: ...
    def poll(self, timeout: float) -> list[Result]: ...
    def in_flight(self) -> int: ...
    def running(self) -> list[tuple[Job, float]]: ...
    def wake(self) -> None: ...
    def stop(self) -> list[Job]: ...
    def kill(self) -> list[Job]: ...


class ThreadExecutor:
    def __init__(self, manager, concurrency: int, timeout_of: Callable[[Job], float], ledger: Ledger,
                 slots: dict[int, int], hand_off: HandOff | None = None, own_limits: bool = True):
        self.manager = manager
        self.concurrency = concurrency
        self.timeout_of = timeout_of
        self.ledger = ledger
        self.slots = slots                              # job id -> its ledger slot (the worker's table)
        self.hand_off = hand_off
        self.own_limits = own_limits                    # False under a supervisor, which stops jobs itself
        self.events: queue.SimpleQueue = queue.SimpleQueue()     # Results, and wake-ups (None)
        self._todo: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._assigned: dict[int, Job] = {}           # submitted, no result reported yet
        self._running: dict[int, float] = {}          # job id -> started (on the manager's clock)
        self._abandoned: set[int] = set()             # timed out: a late result from its thread is dropped
        self._stuck = 0                               # threads still busy with an abandoned job
        self._stopped = False
        self._threads = [threading.Thread(target=self._work, args=(n,), name=f"delayq-job-{n}", daemon=True)
                         for n in range(concurrency)]
        for thread in self._threads:
            thread.start()

    @property
    def capacity(self) -> int:
        return self.concurrency - self._stuck

    def in_flight(self) -> int:
        with self._lock:
            return len(self._assigned)

    def submit(self, jobs: list[Job]) -> None:
        with self._lock:
            self._assigned.update((job.id, job) for job in jobs)
        for job in jobs:
            self._todo.put(job)

    def running(self) -> list[tuple[Job, float]]:
        """(job, started on the manager's clock) of the jobs running now."""
        with self._lock:
            return [(self._assigned[i], t) for i, t in self._running.items() if i in self._assigned]

    def poll(self, timeout: float) -> list[Result]:
        """Wait up to `timeout` for results; returns what came (time limits checked too, when they are ours)."""
        results = []
        try:
            item = self.events.get(timeout=max(0.0, timeout))
            while True:
                if item is not None:
                    results.append(item)
                item = self.events.get_nowait()
        except queue.Empty:
            pass
        if self.own_limits:
            self._check()
        while True:
            try:
                item = self.events.get_nowait()
            except queue.Empty:
                return results
            if item is not None:
                results.append(item)

    def wake(self) -> None:
        self.events.put(None)

    def abandoned(self) -> set[int]:
        """Jobs given up on here (time limit, end of the grace period) whose threads still run them."""
        with self._lock:
            return set(self._abandoned)

    def _check(self) -> None:
        """Time limits: a job past its timeout is reported as timed out (its thread cannot be stopped)."""
        now = self.manager.clock.now()
        for job, started in self.running():
            limit = self.timeout_of(job)
            if now - started > limit:
                with self._lock:
                    if self._assigned.pop(job.id, None) is None:
                        continue
                    self._abandoned.add(job.id)
                    self._stuck += 1
                self.ledger.abandon(self.slots[job.id], job.id)     # its thread frees the slot if it ever returns
                self.events.put(Result(job.id, TIMEOUT, started, now, error=f"timed out after {limit:g}s"))

    def stop(self) -> list[Job]:
        """Stop starting jobs; return those submitted but not started (to hand back). Idempotent."""
        if self._stopped:
            return []
        self._stopped = True
        unstarted = []
        while True:
            try:
                job = self._todo.get_nowait()
            except queue.Empty:
                break
            with self._lock:
                if self._assigned.pop(job.id, None) is not None:
                    unstarted.append(job)
        for _ in self._threads:
            self._todo.put(None)
        return unstarted

    def kill(self) -> list[Job]:
        """Give up on what still runs (the grace period is over): the jobs, for the worker to record."""
        with self._lock:
            left, self._assigned = list(self._assigned.values()), {}
            self._abandoned.update(job.id for job in left)
        return left

    def _work(self, n: int) -> None:
        tid, ident = threading.get_native_id(), threading.get_ident()
        while True:
            job = self._todo.get()
            if job is None:
                return
            if job.id not in self._assigned:       # (a dict lookup: atomic; stop() takes jobs out first)
                continue
            try:
                self._run(n, job, tid, ident)
            except DelayqError as exc:       # not the job's failure (that is a Result): the worker cannot go on
                self._report(job, Result(job.id, BROKEN, 0.0, 0.0, error=str(exc)))

    def _run(self, n: int, job: Job, tid: int, ident: int) -> None:
        if self.hand_off is not None and (job.at_most_once or job.solo):
            handed = self.hand_off(job)
            self._report(job, Result(job.id, HANDED if handed else SKIPPED, 0.0, 0.0))
            return
        slot = self.slots[job.id]
        if self.own_limits:                         # (under a supervisor, the ledger says what runs since when)
            with self._lock:
                self._running[job.id] = self.manager.clock.now()
        _current.slot = slot
        began = time.monotonic()
        self.ledger.start(slot, n, began, self.timeout_of(job), tid, ident)
        try:
            result = run_job(self.manager, job)
        finally:
            _current.slot = None
            self.ledger.idle(n)
            if self.own_limits:
                with self._lock:
                    self._running.pop(job.id, None)
        result.ran = time.monotonic() - began
        kept = self.ledger.end(slot, result.kind, result.started, result.finished, result.snooze)
        self._report(job, result if kept else Result(job.id, ABANDONED, result.started, result.finished))

    def _report(self, job: Job, result: Result) -> None:
        with self._lock:
            if job.id in self._abandoned:           # timed out here already: its late result is dropped
                self._abandoned.discard(job.id)
                self._stuck -= 1
                slot = self.slots.pop(job.id, None)     # (a job cut short at the end of the grace period: freed)
                if slot is not None:
                    self.ledger.free(slot)
                return
            self._assigned.pop(job.id, None)
        self.events.put(result)


class _Current(threading.local):
    slot: int | None = None


_current = _Current()


def current_slot() -> int | None:
    """The ledger slot of the job this thread runs (None outside a job): os._exit's hook blames it."""
    return _current.slot
