"""The outcome writer: a worker's outcomes committed in groups, one transaction for many finished jobs.

An outcome waits at most FLUSH_EVERY seconds (or until FLUSH_SIZE are waiting) before its group
is committed; with `pipeline`, by a thread of its own on its own connection while the next jobs
run. A job's ledger slot keeps saying "ended, and how" until its outcome is committed, so a
worker that dies with outcomes waiting loses none of them: its supervisor writes them
(runner/postmortem.py). Only the death of the whole runner at once (its supervisor too, the
host) can lose what waits here: at most FLUSH_SIZE outcomes, or FLUSH_EVERY seconds of work, per
worker, whose jobs then run again (docs/RELIABILITY.md).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from .. import logs
from ..jobs import Outcome
from .summary import Summary

FLUSH_EVERY = 1.0           # seconds an outcome may wait before its group is committed
FLUSH_SIZE = 500            # outcomes committed in one transaction at most


class OutcomeWriter:
    def __init__(self, manager, clock, pipeline: bool, committed: Callable[[list[Outcome], Summary], None]):
        self.manager = manager
        self.clock = clock
        self.committed = committed                   # after each commit: the worker frees their ledger slots
        self.pending: list[Outcome] = []
        self._since = 0.0
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="delayq-writer") if pipeline else None
        self._inflight: tuple[Future, list[Outcome], Summary] | None = None

    def add(self, outcome: Outcome) -> None:
        if not self.pending:
            self._since = self.clock.now()
        self.pending.append(outcome)

    def due_at(self, now: float) -> float:
        """When the waiting group must be committed at the latest."""
        return self._since + FLUSH_EVERY if self.pending else now + FLUSH_EVERY

    def flush(self, summary: Summary, force: bool = False, idle: bool = False) -> None:
        """Commit the waiting group if it is due (full, old enough, nothing else running: `idle`), or `force`."""
        if not self.pending:
            return
        now = self.clock.now()
        if not (force or idle or len(self.pending) >= FLUSH_SIZE or now >= self.due_at(now)):
            return
        outcomes, self.pending = self.pending, []
        if self._thread is None:
            self._count(self.manager.finish(outcomes), outcomes, summary)
            return
        self.drain()                 # at most one group in the writer thread
        self._inflight = (self._thread.submit(self.manager.finish, outcomes), outcomes, summary)

    def drain(self) -> None:
        """Wait for the group in the writer thread (if any) and count it; raises what the writer raised."""
        if self._inflight is None:
            return
        future, outcomes, summary = self._inflight
        self._inflight = None
        self._count(future.result(), outcomes, summary)

    def _count(self, held: set[int], outcomes: list[Outcome], summary: Summary) -> None:
        summary.count(held, outcomes)
        self.committed(outcomes, summary)
        logs.flush()

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=False)
