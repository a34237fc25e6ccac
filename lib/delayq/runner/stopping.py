"""How a worker stops (a part of Worker): at the end of its window, on SIGTERM or its supervisor's order it hands
back what never started and lets running jobs end (within the grace period, when it keeps that itself); a worker
whose supervisor died stops at once; a worker whose loop failed records what it can, quietly."""

from __future__ import annotations

import logging
import time
from concurrent.futures import wait as wait_futures

from ..errors import BackendError, DelayqError
from ..jobs import Job
from ..retries import INTERRUPTED, Result
from .summary import Summary

log = logging.getLogger("delayq.runner")


class Stopping:
    supervised: bool

    def _hand_back(self, summary: Summary) -> None:
        """Stop claiming; what was claimed and never started goes back to pending at once."""
        handed = self._unsubmitted(summary) + self.executor.stop()
        for job in handed:
            self._jobs.pop(job.id, None)
            self.claimer.ended(job)
        if handed:
            summary.handed_back += len(self.manager.unclaim(handed))
            for job in handed:
                self._release(job.id)

    def _stop(self, summary: Summary, grace: float | None) -> None:
        """Hand back what never started; let running jobs end (grace: then cut them short). Under a supervisor,
        running jobs end when they end: it enforces time limits and the grace period by ending this process."""
        self._hand_back(summary)
        deadline = None if grace is None or self.supervised else time.monotonic() + grace
        while self._live() and (deadline is None or time.monotonic() < deadline) and not self.orphaned():
            self._take(self.executor.poll(0.1), summary)
            self.writer.flush(summary)
            self._keep()
        if self._live() and not self.supervised:
            now = self.clock.now()
            cut = self.executor.kill()
            self._take([Result(job.id, INTERRUPTED, now, now, error=f"interrupted: the runner stopped and its "
                               f"{grace:g}s grace period ended") for job in cut if job.id in self._jobs], summary)
        self.writer.flush(summary, force=True)
        self.writer.drain()

    def _orphan_stop(self, summary: Summary) -> None:
        """The supervisor is gone: write what has ended, hand back what never started, and stop now (running
        jobs are cut short with this process; compensate recovers them when their leases run out)."""
        self._hand_back(summary)
        self._take(self.executor.poll(0), summary)
        self.writer.flush(summary, force=True)
        self.writer.drain()

    def _abort(self, summary: Summary, error: BaseException) -> None:
        """The loop failed: hand back and record what can be, quietly. Not after a backend error: the store or
        index stopped answering, and another wait on it would break the one bound on the runner's end
        (DELAYQ_DB_TIMEOUT / DELAYQ_REDIS_TIMEOUT); compensate recovers these jobs when their leases run out."""
        if isinstance(error, DelayqError):
            self.executor.stop()
            return
        try:
            handed = self._unsubmitted(summary) + self.executor.stop()
            self.manager.unclaim(handed)
            for job in handed:
                self._release(job.id)
            if not self.supervised:
                now = self.clock.now()
                cut = self.executor.kill()
                self._take([Result(job.id, INTERRUPTED, now, now, error="interrupted: the runner failed")
                            for job in cut if job.id in self._jobs], summary)
            self.writer.flush(summary, force=True)
            self.writer.drain()
        except (DelayqError, OSError) as exc:
            log.warning("while stopping after an error: %s", exc)

    def _unsubmitted(self, summary: Summary) -> list[Job]:
        """The jobs of the claims still under way when the loop ended: to hand back with the others."""
        jobs: list[Job] = []
        failed: BackendError | None = None
        for future, _ in list(self.claimer.under_way):
            wait_futures([future])
            try:
                jobs += self._collect(future, summary)
            except BackendError as exc:  # the backend stopped answering: the worker fails with this one line
                failed = failed or exc     # (after the others are collected); its claim's jobs come back with
                self.claimer.under_way = [c for c in self.claimer.under_way if c[0] is not future]   # their lease
            except DelayqError as exc:   # nothing claimed: its jobs (if any) come back when their lease runs out
                log.warning("a claim under way when the runner stopped failed: %s", exc)
                self.claimer.under_way = [claim for claim in self.claimer.under_way if claim[0] is not future]
        if failed is not None:
            self.executor.stop()
            raise failed
        return jobs
