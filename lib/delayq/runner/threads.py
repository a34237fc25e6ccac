"""Running jobs in threads of the runner itself (`--processes 0`, and the tests' fake clock).

The cheapest way to run jobs, with two limits the process executor does not have: a job
that ends the process (os._exit, a segfault) takes the runner with it, and a job past its
time limit cannot be stopped: its outcome is recorded as timed out and the thread is left to
finish on its own, holding its slot, until the runner exits.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

from ..jobs import Job
from .decide import TIMEOUT
from .execute import Result, run_job


class ThreadExecutor:
    def __init__(self, manager, concurrency: int, timeout_of: Callable[[Job], float]):
        self.manager = manager
        self.concurrency = concurrency
        self.timeout_of = timeout_of
        self.events: queue.SimpleQueue = queue.SimpleQueue()     # Results, and wake-ups (None)
        self._todo: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._assigned: dict[int, Job] = {}           # submitted, no result reported yet
        self._running: dict[int, float] = {}          # job id -> started (monotonic clock of this process)
        self._abandoned: set[int] = set()             # timed out: a late result from its thread is dropped
        self._stuck = 0                               # threads still busy with an abandoned job
        self._stopped = False
        self._threads = [threading.Thread(target=self._work, name=f"delayq-job-{n}", daemon=True)
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
        """Wait up to `timeout` for results; returns what came (time limits checked too)."""
        results = []
        try:
            item = self.events.get(timeout=max(0.0, timeout))
            while True:
                if item is not None:
                    results.append(item)
                item = self.events.get_nowait()
        except queue.Empty:
            pass
        self.check()
        while True:
            try:
                item = self.events.get_nowait()
            except queue.Empty:
                return results
            if item is not None:
                results.append(item)

    def wake(self) -> None:
        self.events.put(None)

    def check(self) -> None:
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
        """Give up on what still runs (the grace period is over): the jobs, for the supervisor to record."""
        with self._lock:
            left, self._assigned = list(self._assigned.values()), {}
            self._abandoned.update(job.id for job in left)
        return left

    def close(self) -> None:
        self.stop()

    def _work(self) -> None:
        while True:
            job = self._todo.get()
            if job is None:
                return
            with self._lock:
                if job.id not in self._assigned:
                    continue
                self._running[job.id] = self.manager.clock.now()
            result = run_job(self.manager, job)
            with self._lock:
                self._running.pop(job.id, None)
                if job.id in self._abandoned:
                    self._abandoned.discard(job.id)
                    self._stuck -= 1
                    continue
                self._assigned.pop(job.id, None)
            self.events.put(result)
