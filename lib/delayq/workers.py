"""Runners you can see: each running process beats a row (host, pid, queues, concurrency, started, last seen,
the jobs it runs now), and `delayq workers` reads them back.

A `Heartbeat` writes its row from its own daemon thread every `every` seconds, so a runner
busy with a long job still beats. `stop()` marks the row stopped at once; a process that died
without stopping (kill -9, a lost host) simply stops beating, and its row reads as stopped
once MISSED beats went by. Rows unseen for a day are deleted (Control.forget_workers).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from .clock import Clock
from .errors import DelayqError

log = logging.getLogger(__name__)
EVERY = 5.0          # seconds between beats
MISSED = 3           # beats missed before a runner counts as stopped
MAX_RUNNING = 500    # jobs listed in one row (the rest are counted, not listed)


@dataclass(frozen=True)
class Worker:
    """One runner's row as the operator sees it."""

    id: str
    host: str
    pid: int
    queues: list[str]
    concurrency: int
    every: float                  # its beat interval, seconds
    started_at: float
    last_seen: float
    stopped_at: float | None      # a clean stop; None while it beats, or when it died without one
    running: list[tuple[int, float]] = field(default_factory=list)    # (job id, started at)
    live: bool = True
    quiet_for: float = 0.0        # seconds since the last beat

    @classmethod
    def from_row(cls, row: dict[str, Any], now: float) -> "Worker":
        every, last_seen = float(row["every"]), float(row["last_seen"])
        live = row["stopped_at"] is None and now - last_seen <= every * MISSED
        running = [(int(job), float(at)) for job, at in json.loads(row["running"] or "[]")] if live else []
        return cls(row["id"], row["host"], int(row["pid"]), [q for q in row["queues"].split(",") if q],
                   int(row["concurrency"]), every, float(row["started_at"]), last_seen,
                   None if row["stopped_at"] is None else float(row["stopped_at"]), running, live,
                   max(0.0, now - last_seen))

    @property
    def state(self) -> str:
        """live, stopped (it said so) or lost (it stopped beating: killed, hung or cut off)."""
        if self.live:
            return "live"
        return "stopped" if self.stopped_at is not None else "lost"


class Beats(Protocol):
    """Where a Heartbeat writes (control.Control)."""

    clock: Clock

    def heartbeat(self, worker: Mapping[str, Any], running: list[tuple[int, float]]) -> None: ...

    def worker_stopped(self, worker_id: str) -> None: ...

    def forget_workers(self) -> int: ...


class Heartbeat:
    """Beats a runner's row from a daemon thread: `start()`, then `stop()` when the runner exits.

    `running` returns the (job id, started at) of the jobs running now; it is called from the
    heartbeat's thread, so it must be safe to call from there (copy a list under a lock).
    """

    def __init__(self, control: Beats, queues: list[str], concurrency: int,
                 running: Callable[[], list[tuple[int, float]]], every: float = EVERY):
        if not 0 < every <= 3600:
            raise ValueError("every must be between 0 and 3600 seconds")
        self.control = control
        self.running = running
        self.every = every
        self.id = secrets.token_hex(16)
        self.row = {"id": self.id, "host": socket.gethostname()[:255], "pid": os.getpid(),
                    "queues": ",".join(queues), "concurrency": int(concurrency), "every": float(every),
                    "started_at": control.clock.now()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._beaten = False
        self._next = float("inf")

    def start(self, at_once: bool = True, thread: bool = True) -> "Heartbeat":
        """Beat in the background; at_once: write the first beat now (errors raise: a runner that cannot beat
        should know). Without it (a one-shot pass, a loop.sh tick) the first beat comes after `every`
        seconds, so only a pass that runs that long (a slow job) shows up, not every tick.
        thread=False: no thread of its own; the caller calls tick() often (a supervisor that forks stays
        single-threaded)."""
        self._next = time.monotonic() + self.every
        if at_once:
            self.control.forget_workers()
            self.beat()
        if thread:
            self._thread = threading.Thread(target=self._loop, name="delayq-heartbeat", daemon=True)
            self._thread.start()
        return self

    def tick(self) -> None:
        """Beat if `every` seconds went by since the last beat; a failed beat raises (the caller, a supervisor,
        fails with it: its database does not answer)."""
        if time.monotonic() < self._next or self._stop.is_set():
            return
        self._next = time.monotonic() + self.every
        self.beat()

    def beat(self) -> None:
        running = list(self.running())
        self.control.heartbeat(self.row, running[:MAX_RUNNING])
        self._beaten = True

    def stop(self, mark: bool = True) -> None:
        """Stop beating and mark the row stopped (a warning, not an error, if the database is away). mark=False:
        leave the row to read as lost once its beats stop (a runner failing because its database is away)."""
        self._stop.set()
        if self._thread is not None and mark:
            self._thread.join(timeout=self.every + 10)
        if not self._beaten or not mark:
            return
        try:
            self.control.worker_stopped(self.id)
        except DelayqError as exc:
            log.warning("could not mark runner %s stopped: %s", self.id, exc)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.beat()
            except Exception as exc:      # never let the thread die: the next beat may work
                log.warning("heartbeat failed: %s", exc)

    def __enter__(self) -> "Heartbeat":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
