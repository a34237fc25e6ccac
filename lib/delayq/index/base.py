"""The due index: which job ids are due when, and which are in flight.

The store is the truth; the index is derived from it and can be rebuilt from it.
Times are epoch seconds (float) from the caller's clock; each entry names its
queue because keys are per queue.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class DueIndex(ABC):
    in_store = False     # True: the store's own rows are the index (no separate writes)

    @abstractmethod
    def add(self, entries: list[tuple[int, str, float]]) -> None:
        """Index (job_id, queue, due_at) entries; idempotent (re-adding moves the due time)."""

    @abstractmethod
    def remove(self, entries: list[tuple[int, str]]) -> None:
        """Drop (job_id, queue) from the due set (cancel)."""

    @abstractmethod
    def claim(self, queue: str, now: float, limit: int, lease_until: float) -> list[int]:
        """Atomically move up to `limit` ids due by `now` into the in-flight set; earliest first."""

    @abstractmethod
    def release(self, entries: list[tuple[int, str]]) -> None:
        """Drop (job_id, queue) from the in-flight set, once their outcome is committed."""

    @abstractmethod
    def reschedule(self, entries: list[tuple[int, str, float]]) -> None:
        """Atomically per queue: in flight -> due at the new time (a retry, once committed)."""

    @abstractmethod
    def next_due(self, queues: list[str]) -> float | None:
        """The earliest due time across `queues`, or None when nothing is scheduled."""

    @abstractmethod
    def server_time(self) -> float:
        """The index server's clock, epoch seconds."""

    # -- rebuild (bin/compensate.py) -----------------------------------------
    def restore(self, entries: list[tuple[int, str, float]], now: float) -> int:
        """Add pending (job_id, queue, due_at) missing from the index; returns how many were added.

        Atomic per call and queue; ids claimed by a live runner (in flight, lease
        not run out) are left alone.
        """
        return 0

    def members(self, batch: int = 1000, kinds: tuple[str, ...] = ("due", "inflight")):
        """Yield (queue, kind, [(job_id, score)]) pages of every due ('due') and in-flight ('inflight') set."""
        return iter(())

    def sizes(self) -> int:
        """How many members all due sets hold."""
        return 0

    def drop_unchanged(self, queue: str, which: str, members: list[tuple[int, float]]) -> int:
        """Remove members whose score is still the one read; returns how many were removed."""
        return 0

    def rebuild_due(self, every: float) -> bool:
        """True at most once per `every` seconds across all hosts, and at once after the index was wiped."""
        return False

    def rebuild_failed(self) -> None:
        """Forget the last rebuild_due(), so the next run rebuilds."""


class StoreIndex(DueIndex):
    """No Redis: the store's rows (status, due_at) are the index; claims go through the store."""

    in_store = True

    def __init__(self, store):
        self.store = store

    def add(self, entries):
        pass

    def remove(self, entries):
        pass

    def claim(self, queue, now, limit, lease_until):
        raise NotImplementedError("the in-store index claims through Store.claim_due")

    def release(self, entries):
        pass

    def reschedule(self, entries):
        pass

    def next_due(self, queues):
        return self.store.next_due(queues)

    def server_time(self):
        return self.store.server_time()
