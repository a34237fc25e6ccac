"""Group commit for single enqueues: threads that enqueue at the same moment share one write.

A web application enqueues from many request threads through one client. Each single
enqueue alone costs a transaction, a commit (a flush of the database's log) and an index
write, most of it work repeated per job. Here the first thread to arrive writes at once;
threads that arrive while it writes wait, and the first of them then writes everything that
came meanwhile in one transaction and one index call (leader and followers, as a database's
own group commit). A lone thread never waits for company. Each caller returns only once its
own row is committed and indexed, with its own result, or raises the error of the write that
carried it (nothing of that write is kept: the rows and their index entries go together; only a
connection lost with the write in flight leaves it unknown, and the error then says so). Jobs
that must be the only live one of their business key (unique) are written alone: a conflict of
one must not fail the others' write.

A process forked while a thread of its parent was writing starts with an empty group.
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from typing import Callable, Generic, TypeVar

from .errors import BackendError

T = TypeVar("T")
R = TypeVar("R")
MAX_GROUP = 500             # items written together at most (one chunk of the store's inserts)

_groups: "weakref.WeakSet[Group]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for group in list(_groups):
        group._reset()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Slot(Generic[T, R]):
    __slots__ = ("item", "wake", "batch", "leading", "done", "value", "error")

    def __init__(self, item: T):
        self.item = item
        self.wake = threading.Event()        # set when done, or when handed a batch to write
        self.batch: list[_Slot] | None = None
        self.leading = False                 # this slot's thread has begun writing its batch
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

    A waiting caller interrupted (KeyboardInterrupt in the main thread) leaves the group working: its
    item is withdrawn if no write took it yet, and a batch it was handed goes to the next waiting thread.
    """

    def __init__(self, write: Callable[[list[T]], list[R]], writers: int = 1,
                 then: Callable[[list[T], list[R]], None] | None = None):
        if writers < 1:
            raise ValueError("a group needs at least one writer")
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
        try:
            if slot.batch is None:
                slot.wake.wait()
            if slot.batch is not None:           # this thread writes the batch that carries its item
                self._lead(slot, slot.batch)
        except BaseException:
            if not slot.leading:                 # interrupted before writing: nothing may wait on this thread
                self._abandon(slot)
            raise
        if slot.error is not None:
            raise slot.error if slot.leading else self._error_for(slot)
        return slot.value  # type: ignore[return-value]

    def _take_batch(self, leader: _Slot) -> None:
        """(Under the lock) `leader`, the oldest waiting, writes next: everything that waits, MAX_GROUP at most."""
        self._writing += 1
        leader.batch, self._waiting = self._waiting[:MAX_GROUP], self._waiting[MAX_GROUP:]

    def _lead(self, slot: _Slot, batch: list[_Slot]) -> None:
        released = False
        try:
            slot.leading = True
            items = [s.item for s in batch]
            results = self._write(items)
            if len(results) != len(items):
                raise RuntimeError(f"a group write returned {len(results)} results for {len(items)} items")
            if self._then is not None:       # the next write may begin while this batch's second stage runs
                self._release()
                released = True
                self._then(items, results)
            for s, value in zip(batch, results):
                s.value = value
        except BaseException as exc:     # every caller of the batch gets it
            for s in batch:
                s.error = exc
            if not isinstance(exc, Exception):
                raise                    # KeyboardInterrupt, SystemExit: this thread's own; the others see why
        finally:
            if not released:
                self._release()
            for s in batch:
                s.done = True
                s.wake.set()

    def _error_for(self, slot: _Slot) -> BaseException:
        """The error of the write that carried `slot`, for its caller. One exception object must not be raised
        in several threads at once (each raise rewrites its traceback): each caller gets a copy, whose cause is
        the original. The writer's KeyboardInterrupt or SystemExit is its own: the others learn their job's
        write was cut short, and may or may not be stored."""
        exc = slot.error
        assert exc is not None
        if not isinstance(exc, Exception):
            copied: BaseException = BackendError(
                f"the write of this job's group was interrupted ({type(exc).__name__}): it may or may not be stored")
        else:
            try:
                copied = copy.copy(exc)
            except Exception:             # an exception that cannot be rebuilt from its args
                copied = BackendError(str(exc) or type(exc).__name__)
        copied.__cause__ = exc
        return copied

    def _abandon(self, slot: _Slot) -> None:
        """An interrupted caller that had not begun writing: withdraw its item if no write took it; give back a
        batch it was handed (to the next waiting thread). An item already in another's write may still be
        stored."""
        with self._lock:
            if slot in self._waiting:
                self._waiting.remove(slot)
                return
            batch, slot.batch = slot.batch, None
            if batch is None:
                return
            self._waiting[:0] = [s for s in batch if s is not slot]
            self._writing -= 1
            nxt = self._next()
        if nxt is not None:
            nxt.wake.set()

    def _release(self) -> None:
        """A write ended: hand the oldest waiting thread the next batch."""
        with self._lock:
            self._writing -= 1
            nxt = self._next()
        if nxt is not None:
            nxt.wake.set()

    def _next(self) -> _Slot | None:
        """(Under the lock) the oldest waiting thread, handed the next batch if a writer's place is free."""
        nxt = self._waiting[0] if self._waiting and self._writing < self._max_writers else None
        if nxt is not None:
            self._take_batch(nxt)
        return nxt
