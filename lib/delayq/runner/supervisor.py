"""The supervisor: starts worker processes, watches them, stops jobs past their time limit, and recovers the dead.

It runs no job and claims nothing. From its one thread it forks workers (worker.py, each in a
process of its own and a process group of its own) and solos (one job alone: at-most-once jobs,
and suspects of a crash), reads their ledgers (ledger.py), and acts:

  - a child that ended (waitpid, however it ended): its process group is killed (a job's forked
    child goes with it), its jobs are recovered at once through the one recovery path
    (postmortem.py decides, recovery.settle writes), and a worker is replaced;
  - a job past its time limit (its own running time: time when one thread held its worker's
    interpreter is not counted against the others): its worker stops taking jobs, a new worker
    takes its place, the jobs beside it finish, then the process is ended and the job recorded as
    timed out. A solo is ended at once;
  - SIGTERM: workers stop claiming and hand back what never started; running jobs have the grace
    period, then their processes are ended and the jobs recorded as interrupted. It always ends:
    every process it or its jobs started is gone before it exits (it is their subreaper);
  - a worker whose backend stopped answering: the runner stops at once and exits 1 with its one line.

Its parts, one concern a module: children.py (forking workers and solos), limits.py (time limits, a worker
whose interpreter one job holds), deaths.py (reaping, recovery of what the dead held, the last sweep). It also
beats the runner's heartbeat row. Every wait is bounded: a loop turn sleeps at most
LOOP seconds; each database call is bounded by DELAYQ_DB_TIMEOUT.
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import tempfile
import time
from typing import Callable

from ..errors import BackendError, DelayqError
from . import orphans, postmortem
from .children import Child, Spawning
from .deaths import Deaths, _oom_kills, _subreaper
from .ledger import DRAIN, FINISH, STOP
from .limits import Limits
from .summary import Summary

log = logging.getLogger("delayq.runner")
LOOP = 0.05                 # seconds between the supervisor's looks at its children (at most)


class Supervisor(Spawning, Limits, Deaths):
    """The loop (its parts: children.py forks and replaces, limits.py watches the time, deaths.py recovers)."""

    def __init__(self, manager, reopen: Callable[[], object], queues: list[str], batch: int = 200, *,
                 processes: int = 1, concurrency: int = 16, timeout: float = 30.0, grace: float = 20.0,
                 pipeline: bool = True, queue_limits: dict[str, int] | None = None,
                 should_stop: Callable[[], bool] = lambda: False, beat: Callable[[], None] | None = None):
        self.manager = manager
        self.reopen = reopen                       # a fresh Manager, made in each child after the fork
        self.queues = queues
        self.batch = batch
        self.processes = processes
        self.concurrency = concurrency
        self.timeout = timeout
        self.grace = grace
        self.pipeline = pipeline
        self.limits = queue_limits or {}
        self.should_stop = should_stop
        self.beat = beat
        self.children: dict[int, Child] = {}
        self.solo_queue: list[tuple[int, str]] = []        # (job id, holder) handed off, not started yet
        self.summary = Summary()
        self.failure: str | None = None
        self._dir = tempfile.mkdtemp(prefix="delayq-runner-")
        self._ledgers: str | None = orphans.directory(manager.store)   # the workers' ledgers: files the next runner reads
        if not orphans.ours(self._ledgers):
            log.warning("%s is not this user's own folder: the workers' ledgers stay in memory (a runner that dies "
                        "whole leaves its jobs to their leases)", self._ledgers)
            self._ledgers = None
        self._handoff_r, self._handoff_w = os.pipe()
        os.set_blocking(self._handoff_r, False)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._buffer = b""
        self._deaths: list[float] = []
        self._oom = _oom_kills()
        self._spawned = 0
        self._kept_at = time.monotonic()
        self._stop_at: float | None = None
        _subreaper()

    # -- the runner's interface ---------------------------------------------------------
    def running_now(self) -> list[tuple[int, float]]:
        now, mono = self.manager.clock.now(), time.monotonic()
        return [(k.job_id, now - (mono - k.started)) for c in self.children.values() for k in c.ledger.running()]

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def run_for(self, seconds: float, interval: float = 1.0, one_pass: bool = False) -> Summary:
        """Keep `processes` workers claiming for `seconds` (one_pass: until nothing more is due), then end them."""
        self._plan = (seconds, interval, one_pass)
        end = time.monotonic() + seconds
        try:
            if self._ledgers is not None:         # a runner that died whole left these
                self.summary.count_recovered(orphans.recover(self.manager, self._ledgers))
            for _ in range(self.processes):
                self._spawn_worker()
            while self.children or self.solo_queue or self._window_open(end, one_pass):
                self._turn(time.monotonic() >= end and not one_pass, one_pass)
        except BaseException as exc:
            if isinstance(exc, DelayqError):
                self.failure = self.failure or str(exc)   # no recovery now: it would wait on the same backend
            self._end_all(postmortem.STOPPED)
            raise
        finally:
            self._sweep()
        if self.failure:
            raise BackendError(self.failure)
        return self.summary

    def _window_open(self, end: float, one_pass: bool) -> bool:
        """No child left, yet the runner goes on: its --for window is not over, nothing stops it, and a worker held
        back after deaths in a row (_replace) is still to come."""
        return not one_pass and time.monotonic() < end and self._stop_at is None and self.failure is None

    def close(self) -> None:
        for fd in (self._handoff_r, self._handoff_w, self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._dir, ignore_errors=True)
        if self._ledgers is not None:
            orphans.tidy(self._ledgers)

    # -- one turn of the loop ---------------------------------------------------------------
    def _turn(self, window_over: bool, one_pass: bool) -> None:
        """One look at the children; `window_over`: --for has run out (a one-pass worker ends on its own)."""
        self._wait(LOOP)
        self._reap()
        self._read_handoffs()
        if self.failure is not None:               # a backend stopped answering: end everything now, exit 1
            for c in list(self.children.values()):
                if not c.killed:
                    self._kill(c, postmortem.STOPPED)
            self.solo_queue = []
            return
        stopping = self.should_stop()
        if stopping and self._stop_at is None:
            self._stop_at = time.monotonic() + self.grace
            self._order(STOP)
        if window_over and not stopping:
            self._order(FINISH)
        self._limits()
        self._start_solos(stopping)
        if stopping:
            self._grace_over()
        elif not window_over and not one_pass:
            self._replace()
        self._keep_leases()
        if self.beat is not None:
            self.beat()

    def _keep_leases(self) -> None:
        """Every third of a lease: the leases of everything the live children hold move on, in one statement. Done
        here, not in the workers: a job holding its worker's interpreter (a C call, a hog) must not let its
        batch-mates' leases run out; a child that hangs as a whole is ended by the time limits, not by its leases."""
        now = time.monotonic()
        if now < self._kept_at + min(30.0, self.manager.lease / 3):
            return
        self._kept_at = now
        self.manager.keep_claims([c.holder for c in self.children.values() if not c.killed]
                                 + [holder for _, holder in self.solo_queue])

    def _wait(self, seconds: float) -> None:
        try:
            ready, _, _ = select.select([self._wake_r, self._handoff_r], [], [], seconds)
        except InterruptedError:
            return
        if self._wake_r in ready:
            try:
                os.read(self._wake_r, 4096)
            except OSError:
                pass

    def _order(self, order: int) -> None:
        for c in self.children.values():
            if c.ledger.order < order or (order == STOP and c.ledger.order == DRAIN):
                c.ledger.order = order

    # -- starting children ------------------------------------------------------------------
    # -- watching -------------------------------------------------------------------------
    def _grace_over(self) -> None:
        if self._stop_at is not None and time.monotonic() >= self._stop_at:
            for c in list(self.children.values()):
                if not c.killed:
                    self._kill(c, postmortem.GRACE)

    # -- the dead -----------------------------------------------------------------------------

