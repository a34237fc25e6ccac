"""The lease keeper: a live worker's jobs keep their claim, whatever its other threads are doing.

A thread of its own moves the leases of the jobs the worker holds every third of a lease (at
most every 30 s), so a loop blocked in a Redis failover or a slow commit never lets them run
out: a lease runs out only when its holder died (or is stopped: SIGSTOP, a host cut off), and
then compensate recovers its jobs (recovery.py). If the store does not answer, the keeper stops and
the worker fails with that error (one line, exit 1): without its leases kept, it must not go on.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..errors import DelayqError
from ..jobs import Job



class LeaseKeeper:
    def __init__(self, manager, held: Callable[[], list[Job]]):
        self.manager = manager
        self.held = held                         # the jobs to keep (a copy: called from the keeper's thread)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: DelayqError | None = None    # the store stopped answering: the worker fails with it

    def start(self) -> None:
        """Start the keeper once (a no-op afterwards)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="delayq-leases", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        every = min(30.0, self.manager.lease / 3)
        while not self._stop.wait(every):
            jobs = self.held()
            if jobs:
                try:
                    self.manager.keep_alive(jobs)
                except DelayqError as exc:
                    self.error = exc
                    return

    def stop(self) -> None:
        self._stop.set()
