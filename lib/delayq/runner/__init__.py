"""The runner: claims due jobs, runs many at once, records every outcome; crash-only.

    worker.py      Worker: one process's loop of claim, run, commit (its roles below)
    claimer.py       Claimer: what to claim and when, in a thread of its own
    threads.py       ThreadExecutor: the job threads (the Executor protocol); ledger marks; hand-off
    writer.py        OutcomeWriter: outcomes committed in groups
    leases.py        LeaseKeeper: the leases of a live worker's jobs move on
    ledger.py      Ledger: shared memory that says what a worker holds, readable after it died
    supervisor.py  Supervisor: forks workers and solos, time limits, SIGTERM, recovers the dead at once
    child.py       what a forked process sets up (process group, os._exit hook, fatal-signal report)
    postmortem.py  what each job of a dead process comes to (recovery.settle writes it)
    execute.py     run_job: one job in the current thread, whatever it raises, as a Result (../retries.py:
                   what a Result comes to: succeeded, retried, failed, expired)
    summary.py     the summary line, one log line per outcome

Where a job goes when a process dies: its worker's ledger says whether it never started (handed
back), ran (interrupted: runs again; at-most-once: outcome unknown; or blamed, if it killed the
process) or ended (its outcome is written). The supervisor reads it and recovers at once; if the
supervisor died too, compensate recovers by the lease (recovery.py). One path, two witnesses.
"""

from __future__ import annotations

import random
import time
from typing import Callable

from ..jobs import Job, Outcome
from ..retries import Result, decide, outcome
from .execute import describe_error, job_args, run_job
from .summary import Summary
from .supervisor import Supervisor
from .worker import DEFAULT_CONCURRENCY, DEFAULT_GRACE, DEFAULT_TIMEOUT, Worker
from .writer import FLUSH_EVERY

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_GRACE", "DEFAULT_TIMEOUT", "FLUSH_EVERY", "Result", "Runner", "Summary",
           "decide", "describe_error", "job_args", "outcome", "run_job"]


class Runner:
    """One Worker in this process (`processes=0`: no isolation; the tests' fake clock), or a Supervisor of
    `processes` worker processes (`reopen` makes each child's own Manager after the fork)."""

    def __init__(self, manager, queues: list[str], batch: int = 200, *, concurrency: int = 1, processes: int = 0,
                 rng: random.Random | None = None, should_stop: Callable[[], bool] = lambda: False,
                 pipeline: bool = False, timeout: float = DEFAULT_TIMEOUT, grace: float = DEFAULT_GRACE,
                 queue_limits: dict[str, int] | None = None, reopen: Callable[[], object] | None = None,
                 beat: Callable[[], None] | None = None):
        if processes == 0:
            self.impl: Worker | Supervisor = Worker(
                manager, queues, batch, concurrency=concurrency, rng=rng, should_stop=should_stop, pipeline=pipeline,
                timeout=timeout, grace=grace, queue_limits=queue_limits)
        else:
            if reopen is None:
                raise ValueError("a runner of worker processes needs reopen: a Manager factory for each child")
            self.impl = Supervisor(manager, reopen, queues, batch, processes=processes, concurrency=concurrency,
                                   timeout=timeout, grace=grace, pipeline=pipeline, queue_limits=queue_limits,
                                   should_stop=should_stop, beat=beat)

    @property
    def grace(self) -> float:
        return self.impl.grace

    @grace.setter
    def grace(self, seconds: float) -> None:
        """A second SIGTERM: no more grace."""
        self.impl.grace = seconds
        if isinstance(self.impl, Supervisor) and self.impl._stop_at is not None:
            self.impl._stop_at = min(self.impl._stop_at, time.monotonic() + seconds)

    def run_for(self, seconds: float, interval: float = 1.0, one_pass: bool = False) -> Summary:
        return self.impl.run_for(seconds, interval, one_pass)

    def run_pass(self, drain: bool = True) -> Summary:
        return self._worker().run_pass(drain)

    def execute(self, job: Job) -> Outcome | None:
        return self._worker().execute(job)

    def running_now(self) -> list[tuple[int, float]]:
        return self.impl.running_now()

    def wake(self) -> None:
        self.impl.wake()

    def close(self) -> None:
        self.impl.close()

    def _worker(self) -> Worker:
        if not isinstance(self.impl, Worker):
            raise TypeError("run_pass and execute run in this process: make the Runner with processes=0")
        return self.impl
