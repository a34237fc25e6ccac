"""The due index: which jobs are due when, which are in flight, and how a runner claims them.

The store is the truth; the index is derived from it and can be rebuilt from it.
Whoever indexes, claims: each index claims its own way (the in-database index with
FOR UPDATE SKIP LOCKED / BEGIN IMMEDIATE, Redis with one Lua script per queue), and the
runner calls `claim` without knowing which index it has.

Times are epoch seconds (float) from the caller's clock. Entries name their queue
(keys are per queue) and their priority (the claim order: higher first among due jobs).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterator

from ..jobs import Job

Entry = tuple[int, str, float, int]      # (job id, queue, due_at, priority)


class DueIndex(ABC):
    # True when the index is kept apart from the rows: a job written on the application's own connection
    # is flagged (index_pending) and its entry added by catch_up() once the application committed.
    follows_commit = False

    @abstractmethod
    def add(self, entries: list[Entry]) -> None:
        """Index new due jobs; idempotent (re-adding moves the due time)."""

    @abstractmethod
    def remove(self, entries: list[tuple[int, str]]) -> None:
        """Drop (job id, queue) from the due set (cancel)."""

    @abstractmethod
    def claim(self, queues: list[str], now: float, limit: int, token: str, lease: float,
              record: str | None = None) -> list[Job]:
        """Atomically claim up to `limit` jobs due by `now` and mark them running under `token`.

        Highest priority first across `queues`, the queues taking turns among equal
        priorities (fairness.fair_pick). Two runners never get the same job. A job's
        lease runs out at now + its own lease seconds, else `lease` seconds.
        `token` is new for each claim (its first characters name its holder: jobs.HOLDER). `record` names the
        claim (default: its token): an index that retries through a failover may repeat a claim whose reply was
        lost, and a repeat under the same record takes nothing more.
        """

    @abstractmethod
    def reschedule(self, entries: list[Entry]) -> None:
        """Committed retries and snoozes: in flight -> due at the new time, atomically per queue."""

    @abstractmethod
    def release(self, entries: list[tuple[int, str]]) -> None:
        """Drop (job id, queue) from the in-flight set, once their final outcome is committed."""

    @abstractmethod
    def next_due(self, queues: list[str]) -> float | None:
        """The earliest due time across `queues`, or None when nothing is scheduled."""

    @abstractmethod
    def server_time(self) -> float:
        """The clock that owns due times (Redis TIME, or the database's), epoch seconds."""

    def check(self) -> None:
        """Prove the index answers (BackendError naming the cause otherwise); the in-database index has nothing to do."""

    def catch_up(self, limit: int = 1000) -> int:
        """Index jobs committed inside an application's transaction (the outbox); returns how many."""
        return 0

    def close(self) -> None:
        """Release connections."""


class RebuildableIndex(DueIndex):
    """An index kept apart from the store (Redis), which compensate can rebuild from the rows."""

    follows_commit = True

    @abstractmethod
    def restore(self, entries: list[Entry], now: float) -> int:
        """Add pending jobs missing from the index; returns how many were added.

        Atomic per call and queue; ids claimed by a live runner (in flight, lease
        not run out) are left alone, ids in flight past their lease are due again.
        """

    @abstractmethod
    def members(self, batch: int = 1000, kinds: tuple[str, ...] = ("due", "inflight")
                ) -> Iterator[tuple[str, str, list[tuple[int, float]]]]:
        """Yield (queue, 'due' or 'inflight', [(job id, raw score)]) pages of every set of this prefix."""

    @abstractmethod
    def checked_upto(self) -> int | None:
        """The last job id compensate's look at newer rows reached (None: never, or lost with the index)."""

    @abstractmethod
    def set_checked(self, job_id: int) -> None:
        """Compensate looked at the rows up to this id."""

    @abstractmethod
    def claimed_by(self, holder: str) -> Iterator[tuple[str, list[int]]]:
        """Yield (queue, ids) of the recent claims made by `holder` (for as long as their records live: seconds)."""

    @abstractmethod
    def stranded(self, now: float, limit: int = 1000) -> Iterator[tuple[str, list[tuple[int, float]]]]:
        """Yield (queue, [(job id, raw score)]) of in-flight members whose claim's hint (its raw score) is before
        `now`: a claimer took them and had time to move their rows to running. Up to `limit` a queue."""

    @abstractmethod
    def sizes(self) -> int:
        """How many members all due sets hold."""

    @abstractmethod
    def drop_unchanged(self, queue: str, which: str, members: list[tuple[int, float]]) -> int:
        """Remove members whose raw score is still the one read; returns how many were removed."""

    @abstractmethod
    def rebuild_due(self, every: float) -> bool:
        """True at most once per `every` seconds across all hosts, and at once after the index was wiped."""

    @abstractmethod
    def rebuild_failed(self) -> None:
        """Forget the last rebuild_due(), so the next run rebuilds."""
