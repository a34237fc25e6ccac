"""The clock: every comparison of due times and leases reads `now` from here.

A pass reads `now` once and passes it down (into SQL parameters and Lua ARGV).
Runners, compensate and the enqueuing clients on several hosts must agree on time,
whatever each host's own clock says, so the production clock is a server's: the
database's (`SELECT UNIX_TIMESTAMP(NOW(6))`) with MySQL, the one clock that the rows'
due times and leases are compared against. A Cluster has one TIME per node and a
Sentinel failover moves TIME to another host, so Redis is the clock only beside SQLite.
ServerClock reads the server once per pass (sync, at most once a second) and in between adds
the time elapsed on this host's monotonic clock, so a host whose wall clock is off, or stepped, agrees.
Tests replace the clock with FakeClock, never time.time.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Callable, Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch, as agreed by every runner."""

    def sync(self) -> float:
        """Read the clock's source again (once per pass), then return now()."""

    def sleep(self, seconds: float) -> None:
        """Wait; FakeClock advances instead."""


class SystemClock:
    """This host's clock: right for the embedded SQLite default, which lives on one host."""

    def now(self) -> float:
        return time.time()

    def sync(self) -> float:
        return self.now()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


_server_clocks: "weakref.WeakSet[ServerClock]" = weakref.WeakSet()


def _fresh_locks_in_child() -> None:
    for clock in list(_server_clocks):
        clock._reading = threading.Lock()     # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_fresh_locks_in_child)


class ServerClock(SystemClock):
    """A server's clock: read by sync() and at least every `refresh` seconds, extrapolated in between.

    `source` returns the server's time in epoch seconds. Between reads, now() is the last
    reading plus the monotonic time elapsed since (taken at the middle of the round trip),
    so this host's wall clock never enters: off by 30 s, or stepped by NTP, it changes nothing.
    sync() reads again only if the last reading is `min_interval` seconds old: a runner's
    passes come back to back in a burst, and a second of monotonic time drifts by microseconds.
    """

    def __init__(self, source: Callable[[], float], refresh: float = 30.0, min_interval: float = 1.0):
        self._source = source
        self._refresh = refresh
        self._min_interval = min_interval
        self._server = 0.0
        self._read_at = float("-inf")     # monotonic time of the last reading
        self._reading = threading.Lock()  # one thread reads the server at a time; the others extrapolate
        _server_clocks.add(self)

    def sync(self) -> float:
        if time.monotonic() - self._read_at < self._min_interval:
            return self.now()
        first = self._read_at == float("-inf")
        if not self._reading.acquire(blocking=first):   # another thread is reading: its last reading will do
            return self._server + (time.monotonic() - self._read_at)
        try:
            if time.monotonic() - self._read_at >= self._min_interval:    # not read meanwhile by another thread
                before = time.monotonic()
                server = self._source()
                after = time.monotonic()
                self._server, self._read_at = server, (before + after) / 2
        finally:
            self._reading.release()
        return self.now()

    def now(self) -> float:
        elapsed = time.monotonic() - self._read_at
        if elapsed >= self._refresh:
            return self.sync()
        return self._server + elapsed


class FakeClock:
    """A clock for tests: it moves only when told to (or when slept on)."""

    def __init__(self, start: float = 1_800_000_000.0):
        self.t = float(start)

    def now(self) -> float:
        return self.t

    def sync(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.advance(max(seconds, 0.0))

    def advance(self, seconds: float) -> None:
        self.t += seconds
