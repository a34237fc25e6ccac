"""The supervisor's children (a part of Supervisor): each worker and solo forked into a process and a process group
of its own, its ledger made before the fork; a job a worker hands off to run alone comes back on a pipe and
starts as a solo; workers that die are replaced, never in a tight loop."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from ..jobs import ISOLATED, Job, new_holder
from . import child, orphans
from .ledger import RUN, Ledger
from .worker import Worker, ledger_for


@dataclass
class Child:
    """One forked process as the supervisor sees it."""

    pid: int
    solo: bool
    ledger: Ledger
    holder: str                                   # every claim token of its begins with this
    fault_file: str
    spawned: float
    draining: float | None = None                 # when it was told to drain (a time limit in it)
    killed: str | None = None                     # why the supervisor ended it, if it did
    timed_out: dict[int, float] = field(default_factory=dict)    # job id -> its limit: abandoned here
    credit: dict[tuple[int, int], float] = field(default_factory=dict)   # (slot, job) -> seconds not counted
    cpu: dict[int, float] = field(default_factory=dict)          # thread id -> CPU seconds, last read
    checked: float = 0.0                                          # when its ledger was last looked at
    rescued: float = 0.0                                          # when its ended jobs were last written for it


class Spawning:
    children: dict[int, Child]

    def _spawn_worker(self) -> None:
        holder = new_holder(ISOLATED)
        ledger = orphans.create(self._ledgers, holder, lambda path: ledger_for(self.concurrency, path))
        seconds, interval, one_pass = self._plan
        share = max(1, self.batch // self.processes)
        nth = self._spawned % self.processes           # a queue's cap is shared out: the workers never exceed it
        self._spawned += 1
        limits = {q: n // self.processes + (nth < n % self.processes) for q, n in self.limits.items()}

        def main() -> None:
            manager = self.reopen()
            worker = Worker(manager, self.queues, share, concurrency=self.concurrency, pipeline=self.pipeline,
                            timeout=self.timeout, grace=self.grace, queue_limits=limits, ledger=ledger, holder=holder,
                            hand_off=self._hand_off_from(manager), supervised=True,
                            should_stop=lambda: ledger.order != RUN, orphaned=child.orphaned)
            child.on_wake(worker.wake)
            try:
                summary = worker.run_for(seconds, interval, one_pass)
            finally:
                worker.close()
            ledger.publish(summary)
        self._fork(ledger, holder, main, solo=False)

    def _hand_off_from(self, manager):
        """In a worker: pass a job that must run alone to the supervisor (a holder of its own, then a line on the
        hand-off pipe: one write, atomic)."""
        fd = self._handoff_w

        def hand_off(job: Job) -> bool:
            holder = new_holder(ISOLATED)
            if manager.hand_off(job, holder) is None:
                return False
            try:
                os.write(fd, f"{job.id} {holder}\n".encode())
            except OSError:
                pass          # the supervisor is gone: compensate hands the job back when its lease runs out
            return True
        return hand_off

    def _spawn_solo(self, job_id: int, holder: str) -> None:
        ledger = orphans.create(self._ledgers, holder, lambda path: Ledger(4, 1, path))

        def main() -> None:
            manager = self.reopen()
            jobs = [job for job in manager.held(holder) if job.id == job_id]
            worker = Worker(manager, [], 1, concurrency=1, timeout=self.timeout, ledger=ledger, holder=holder,
                            supervised=True, should_stop=lambda: False, orphaned=child.orphaned)
            child.on_wake(worker.wake)
            try:
                summary = worker.run_jobs(jobs)
            finally:
                worker.close()
            ledger.publish(summary)
        self._fork(ledger, holder, main, solo=True)

    def _fork(self, ledger: Ledger, holder: str, main: Callable[[], None], solo: bool) -> None:
        fault_file = os.path.join(self._dir, f"{holder}.fault")
        supervisor = os.getpid()
        pid = os.fork()
        if pid == 0:                                   # the child: never returns
            os.close(self._handoff_r)
            os.close(self._wake_r)
            child.setup(ledger, supervisor, fault_file)
            child.run(main, ledger)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass                                       # it set its own, or it is gone already
        self.children[pid] = Child(pid, solo, ledger, holder, fault_file, time.monotonic())

    def _replace(self) -> None:
        """Keep `processes` workers that take jobs (a draining one does not count)."""
        taking = sum(1 for c in self.children.values() if not c.solo and c.draining is None)
        for _ in range(self.processes - taking):
            self._deaths = [t for t in self._deaths if time.monotonic() - t < 10]
            if len(self._deaths) > 3 and time.monotonic() - self._deaths[-1] < min(5.0, 0.2 * 2 ** len(self._deaths)):
                return                                 # dying at start-up? don't fork in a tight loop
            self._spawn_worker()

    def _read_handoffs(self) -> None:
        try:
            data = os.read(self._handoff_r, 65536)
        except BlockingIOError:
            return
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            job, holder = line.split()
            self.solo_queue.append((int(job), holder.decode()))

    def _start_solos(self, stopping: bool) -> None:
        if stopping:
            for job_id, holder in self.solo_queue:      # never started: back to pending at once
                self._settle(holder, lambda job: None, lambda job: False)
            self.solo_queue = []
            return
        while self.solo_queue and sum(c.solo for c in self.children.values()) < self.concurrency:
            self._spawn_solo(*self.solo_queue.pop(0))
