"""The in-database due index: the jobs table's own rows (status, queue, priority, due_at) are the index.

For shops whose Redis is flushed with the cache (seed 000): nothing to keep in step,
nothing to rebuild. Claims lock due rows with FOR UPDATE SKIP LOCKED (SQLite: the
single writer of BEGIN IMMEDIATE), so concurrent runners skip each other's rows.
"""

from __future__ import annotations

from ..jobs import Job
from .base import DueIndex, Entry


class StoreIndex(DueIndex):
    def __init__(self, store):
        self.store = store          # ClaimStore and MaintenanceStore parts

    def add(self, entries: list[Entry]) -> None:
        pass                        # the committed row is the entry

    def remove(self, entries: list[tuple[int, str]]) -> None:
        pass

    def claim(self, queues: list[str], now: float, limit: int, token: str, lease: float,
              record: str | None = None) -> list[Job]:
        return self.store.claim_due(queues, now, limit, token, lease)

    def reschedule(self, entries: list[Entry]) -> None:
        pass

    def release(self, entries: list[tuple[int, str]]) -> None:
        pass

    def next_due(self, queues: list[str]) -> float | None:
        return self.store.next_due(queues)

    def server_time(self) -> float:
        return self.store.server_time()
