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
        pool._out = {}
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
        self._closes = 0                  # close() calls so far: a connection taken before the last one is not kept
        self._out: dict[int, int] = {}    # id of a connection in use -> self._closes when it was taken
        _pools.add(self)

    def acquire(self) -> Any:
        """An idle connection, or a new one (connect errors propagate: the caller translates them)."""
        with self._lock:
            self._check_fork()
            conn = self._idle.pop() if self._idle else None
            closes = self._closes
        if conn is None:
            conn = self._connect()
        with self._lock:
            self._out[id(conn)] = closes
        return conn

    def release(self, conn: Any, broken: bool = False) -> None:
        """Give a connection back; a broken one, one too many, or one taken before close() is closed instead."""
        with self._lock:
            taken = self._out.pop(id(conn), None)
            if (not broken and os.getpid() == self._pid and taken == self._closes
                    and len(self._idle) < self._max_idle):
                self._idle.append(conn)
                return
        if os.getpid() == self._pid:
            self._close(conn)

    def close(self) -> None:
        """Close every idle connection of this process; those in use are closed when released. The pool can be
        used again afterwards: it connects afresh."""
        with self._lock:
            self._check_fork()
            self._closes += 1
            idle, self._idle = self._idle, []
        for conn in idle:
            self._close(conn)

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            self._idle = []            # the parent's: never used, never closed here
            self._out = {}
            self._pid = os.getpid()
