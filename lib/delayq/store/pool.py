"""A small pool of database connections, safe to share between threads and across fork().

A connection is used by one thread at a time: a transaction takes one from the pool
and gives it back when it ends. A process forked after connections were made (gunicorn
--preload, multiprocessing) never touches its parent's: the pool notices the new pid and
forgets them without closing them (closing would send the parent's server a quit on a
socket the parent still uses), then connects afresh.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Callable

_pools: "weakref.WeakSet[Pool]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A thread of the parent may have held a pool's lock at the fork: the child starts with fresh ones."""
    for pool in list(_pools):
        pool._lock = threading.Lock()
        pool._idle = []
        pool._pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Pool:
    def __init__(self, connect: Callable[[], Any], close: Callable[[Any], None], max_idle: int = 32):
        self._connect = connect
        self._close = close
        self._max_idle = max_idle
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        _pools.add(self)

    def acquire(self) -> Any:
        """An idle connection, or a new one (connect errors propagate: the caller translates them)."""
        with self._lock:
            self._check_fork()
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def release(self, conn: Any, broken: bool = False) -> None:
        """Give a connection back; a broken one (or one too many) is closed instead."""
        with self._lock:
            if not broken and os.getpid() == self._pid and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        if os.getpid() == self._pid:
            self._close(conn)

    def close(self) -> None:
        """Close every idle connection of this process (those in use are closed when released)."""
        with self._lock:
            self._check_fork()
            idle, self._idle = self._idle, []
        for conn in idle:
            self._close(conn)

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            self._idle = []            # the parent's: never used, never closed here
            self._pid = os.getpid()
