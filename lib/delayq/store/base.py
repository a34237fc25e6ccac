"""The store: the durable record of every job and attempt (the source of truth).

Every method is one transaction: it commits before it returns, or changes
nothing and raises BackendError. Times are epoch seconds (float) as read from
the injected clock; the store never reads the clock itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..jobs import Attempt, Job, JobSpec, Outcome


@dataclass(frozen=True)
class Inserted:
    id: int
    status: str
    due_at: float
    created: bool       # False: a live --unique job with this queue+ext already existed


@dataclass(frozen=True)
class Cancelled:
    cancelled: list[tuple[int, str]]     # (id, queue) now cancelled
    untouched: list[tuple[int, str]]     # (id, status) not pending, so left alone


class Store(ABC):
    backend: str = "store"

    @abstractmethod
    def migrate(self, now: float) -> list[int]:
        """Create or upgrade the tables; idempotent. Returns the versions applied now."""

    @abstractmethod
    def server_time(self) -> float:
        """The database's clock in epoch seconds (for ServerClock)."""

    @abstractmethod
    def insert_jobs(self, specs: list[JobSpec], now: float) -> list[Inserted]:
        """Insert jobs as pending, in one transaction, batched; one result per spec, in order.

        A unique spec whose queue+ext already has a live job returns that job
        (created=False) and inserts nothing; a unique index decides, not a read.
        """

    @abstractmethod
    def delete_jobs(self, ids: list[int]) -> None:
        """Remove jobs outright: undoes an enqueue whose index write failed."""

    @abstractmethod
    def start(self, ids: list[int], token: str, now: float, lease_until: float) -> list[Job]:
        """Move those of `ids` still pending to running under `token`; returns exactly those.

        attempts is incremented; a job cancelled since it was indexed is not returned.
        """

    @abstractmethod
    def claim_due(self, queues: list[str], now: float, limit: int, token: str, lease_until: float) -> list[Job]:
        """The in-database index: atomically start up to `limit` jobs due by `now`.

        Concurrent callers never get the same job (FOR UPDATE SKIP LOCKED, or
        SQLite's single writer).
        """

    @abstractmethod
    def next_due(self, queues: list[str]) -> float | None:
        """Earliest due time among pending jobs of `queues` (in-database index)."""

    @abstractmethod
    def finish(self, outcomes: list[Outcome], token: str, now: float) -> set[int]:
        """Write outcomes and attempt rows in one transaction; returns the ids `token` still held.

        An outcome is written only where the row still holds `token`, so a
        runner that lost its lease cannot overwrite another runner's record.
        Attempt rows are written for every outcome: the run did happen.
        """

    @abstractmethod
    def cancel(self, now: float, job_id: int | None = None, ext: str | None = None, queue: str | None = None) -> Cancelled:
        """Cancel the pending jobs matching id or ext (optionally within a queue)."""

    @abstractmethod
    def get(self, job_id: int) -> Job | None:
        """One job by id."""

    @abstractmethod
    def by_ext(self, ext: str, queue: str | None = None) -> list[Job]:
        """Jobs with a business key, oldest first."""

    @abstractmethod
    def attempts(self, job_id: int) -> list[Attempt]:
        """A job's attempts in order."""

    def close(self) -> None:
        """Release the connection; the store reconnects on next use."""
