"""Group commit for single enqueues: threads that enqueue at the same moment share one write.

A web application enqueues from many request threads through one client. Each single
enqueue alone costs a transaction, a commit (a flush of the database's log) and an index
write, most of it work repeated per job. Here the first thread to arrive writes at once;
threads that arrive while it writes wait, and the first of them then writes everything that
came meanwhile in one transaction and one index call (leader and followers, as a database's
own group commit). A lone thread never waits for company. Each caller returns only once its
own row is committed and indexed, with its own result, or raises the error of the write that
carried it (nothing of that write is kept: the rows and their index entries go together).

A process forked while a thread of its parent was writing starts with an empty group.
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from typing import Callable, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")
MAX_GROUP = 500             # items written together at most (one chunk of the store's inserts)

_groups: "weakref.WeakSet[Group]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for group in list(_groups):
        group._reset()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Slot(Generic[T, R]):
    __slots__ = ("item", "wake", "batch", "done", "value", "error")

    def __init__(self, item: T):
        self.item = item
        self.wake = threading.Event()        # set when done, or when handed a batch to write
        self.batch: list[_Slot] | None = None
        self.done = False
        self.value: R | None = None
        self.error: BaseException | None = None


class Group(Generic[T, R]):
    """`submit(item)` returns write([... item ...])'s result for that item; concurrent submits share a write.

    `write` gets the items in arrival order and returns one result per item, in that order; it must
    be all or nothing (one transaction), since every item of a failed write gets its error. At most
    `writers` writes run at once. `then(items, results)`, if given, is a second stage run after the
    write, outside the writers' limit (the next write overlaps it); it must undo the write if it fails.
    A waiting thread is woken once: when its result is there, or when the write before hands it the
    next batch to write (the oldest waiting thread writes next, with everything that waits).
    """

    def __init__(self, write: Callable[[list[T]], list[R]], writers: int = 1,
                 then: Callable[[list[T], list[R]], None] | None = None):
        self._write = write
        self._then = then
        self._max_writers = writers
        self._reset()
        _groups.add(self)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[_Slot] = []
        self._writing = 0                        # writes under way

    def submit(self, item: T) -> R:
        slot: _Slot = _Slot(item)
        with self._lock:
            self._waiting.append(slot)
            if self._writing < self._max_writers:
                self._take_batch(slot)
        if slot.batch is None:
            slot.wake.wait()
        lead = slot.batch is not None            # this thread writes the batch that carries its item
        if lead:
            self._lead(slot.batch)
        if slot.error is not None:
            # one exception object must not be raised in several threads at once (each raise rewrites its
            # traceback): the thread that wrote raises it, the others a copy
            raise slot.error if lead else copy.copy(slot.error)
        return slot.value  # type: ignore[return-value]

    def _take_batch(self, leader: _Slot) -> None:
        """(Under the lock) `leader`, the oldest waiting, writes next: everything that waits, MAX_GROUP at most."""
        self._writing += 1
        leader.batch, self._waiting = self._waiting[:MAX_GROUP], self._waiting[MAX_GROUP:]

    def _lead(self, batch: list[_Slot]) -> None:
        items = [s.item for s in batch]
        released = False
        try:
            results = self._write(items)
            if self._then is not None:       # the next write may begin while this batch's second stage runs
                self._release()
                released = True
                self._then(items, results)
            for s, value in zip(batch, results):
                s.value = value
        except BaseException as exc:     # every caller of the batch gets it
            for s in batch:
                s.error = exc
        finally:
            if not released:
                self._release()
            for s in batch:
                s.done = True
                s.wake.set()

    def _release(self) -> None:
        """A write ended: hand the oldest waiting thread the next batch."""
        with self._lock:
            self._writing -= 1
            nxt = self._waiting[0] if self._waiting and self._writing < self._max_writers else None
            if nxt is not None:
                self._take_batch(nxt)
        if nxt is not None:
            nxt.wake.set()
