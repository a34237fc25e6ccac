"""The clock: every comparison of due times and leases reads `now` from here.

A pass reads `now` once and passes it down (into SQL parameters and Lua ARGV).
Runners on several hosts must agree on time, so the production clock follows a
server's clock (Redis TIME or the database's NOW()): it measures the offset to
that server now and then, and adds it to the local monotonic-backed time.
Tests replace the clock with FakeClock, never time.time.
"""

from __future__ import annotations

import time
from typing import Callable, Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch, as agreed by every runner."""

    def sleep(self, seconds: float) -> None:
        """Wait; FakeClock advances instead."""


class SystemClock:
    """This host's clock: right for the embedded SQLite default, which lives on one host."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ServerClock(SystemClock):
    """This host's clock corrected by its offset to a server's clock.

    `source` returns the server's time in epoch seconds; it is asked again
    after `refresh` seconds, so one pass costs no extra round trip.
    """

    def __init__(self, source: Callable[[], float], refresh: float = 30.0):
        self._source = source
        self._refresh = refresh
        self._offset = 0.0
        self._measured_at = float("-inf")

    def now(self) -> float:
        local = time.monotonic()
        if local - self._measured_at >= self._refresh:
            before = time.time()
            server = self._source()
            after = time.time()
            self._offset = server - (before + after) / 2
            self._measured_at = local
        return time.time() + self._offset


class FakeClock:
    """A clock for tests: it moves only when told to (or when slept on)."""

    def __init__(self, start: float = 1_800_000_000.0):
        self.t = float(start)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.advance(max(seconds, 0.0))

    def advance(self, seconds: float) -> None:
        self.t += seconds
