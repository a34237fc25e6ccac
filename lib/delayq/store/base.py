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


@dataclass(frozen=True)
class Expired:
    """A running job whose lease ran out, as compensate finds it."""

    id: int
    queue: str
    token: str
    attempts: int
    max_attempts: int
    at_most_once: bool
    started_at: float | None      # NULL for an at-most-once job that never began
    manual_running: int           # manual steps that began and never reported


@dataclass(frozen=True)
class Recovery:
    """What compensate decided for one expired job."""

    id: int
    queue: str
    token: str
    status: str                   # pending (runs again) or failed
    due_at: float | None
    error: str
    counts: bool                  # the interrupted attempt really began: keep it counted and recorded
    attempt: int
    started_at: float | None


@dataclass(frozen=True)
class Step:
    name: str
    mode: str                     # auto or manual
    position: int
    status: str                   # pending, running, succeeded, failed
    attempts: int
    last_error: str | None
    started_at: float | None
    finished_at: float | None


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
    def start(self, ids: list[int], token: str, now: float, lease: float) -> list[Job]:
        """Move those of `ids` still pending to running under `token`; returns exactly those.

        attempts is incremented; the lease runs out at now + the job's own lease
        seconds, or `lease` seconds for jobs without one. A job cancelled since it
        was indexed is not returned.
        """

    @abstractmethod
    def claim_due(self, queues: list[str], now: float, limit: int, token: str, lease: float) -> list[Job]:
        """The in-database index: atomically start up to `limit` jobs due by `now`.

        Concurrent callers never get the same job (FOR UPDATE SKIP LOCKED, or
        SQLite's single writer).
        """

    @abstractmethod
    def next_due(self, queues: list[str]) -> float | None:
        """Earliest due time among pending jobs of `queues` (in-database index)."""

    @abstractmethod
    def finish(self, outcomes: list[Outcome], token: str, now: float) -> tuple[set[int], list[tuple[int, str, float]]]:
        """Write outcomes and attempt rows in one transaction; returns the ids `token` still held.

        An outcome is written only where the row still holds `token`, so a
        runner that lost its lease cannot overwrite another runner's record.
        Attempt rows are written for every outcome: the run did happen. An
        outcome's followup (the on_timeout handler of a job its deadline ended) is
        inserted in the same transaction; their (id, queue, due_at) are returned
        second, for the index.
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

    # -- leases and recovery (bin/compensate.py) -------------------------------
    @abstractmethod
    def begin_job(self, job_id: int, token: str, now: float) -> bool:
        """Record that an at-most-once job begins; False if its claim or lease is gone (do not run it)."""

    @abstractmethod
    def extend_lease(self, job_id: int, token: str, until: float, now: float) -> bool:
        """Move a running job's lease to `until`; False if the claim is gone."""

    @abstractmethod
    def expired(self, now: float, limit: int) -> list[Expired]:
        """Up to `limit` running jobs whose lease ran out before `now`, oldest lease first."""

    @abstractmethod
    def recover(self, decisions: list[Recovery], now: float) -> list[Recovery]:
        """Apply recovery decisions in one transaction, each only if the job still holds the token seen.

        Interrupted manual steps become failed, auto steps pending; an attempt row
        "interrupted" is written where the attempt counts. Returns those applied.
        """

    # -- steps ---------------------------------------------------------------
    @abstractmethod
    def steps(self, job_id: int) -> list[Step]:
        """A job's steps in declared order."""

    @abstractmethod
    def ensure_steps(self, job_id: int, declared: list[tuple[str, str]], now: float) -> None:
        """Create the (name, mode) step rows a job does not have yet."""

    @abstractmethod
    def begin_step(self, job_id: int, name: str, token: str, now: float) -> bool:
        """Mark a step running, committed before it runs; False if it must not run.

        A manual step begins only from pending; nothing begins once the job's claim
        or lease is gone.
        """

    @abstractmethod
    def finish_step(self, job_id: int, name: str, status: str, error: str | None, now: float) -> None:
        """Record a running step's outcome (succeeded or failed)."""

    # -- index rebuild, alerts, manual retry, purge --------------------------
    @abstractmethod
    def pending_page(self, after_id: int, limit: int) -> list[tuple[int, str, float]]:
        """(id, queue, due_at) of pending jobs with id > after_id, in id order."""

    @abstractmethod
    def statuses(self, ids: list[int]) -> dict[int, str]:
        """id -> status for those of `ids` that exist."""

    @abstractmethod
    def alerts_due(self, limit: int) -> list[dict]:
        """Failed jobs whose alert is not delivered yet (id, queue, ext, callable, attempts, last_error)."""

    @abstractmethod
    def mark_alerted(self, ids: list[int], now: float) -> None:
        """The alert for these jobs was delivered."""

    @abstractmethod
    def retry(self, job_id: int, due_at: float, now: float, reset_attempts: bool, step: str | None) -> tuple[str, str] | None:
        """A failed job (and its failed steps, or only `step`) back to pending; see bin/retry.py."""

    @abstractmethod
    def purge_page(self, statuses: list[str], before: float, limit: int) -> list[int]:
        """Up to `limit` ids of jobs in `statuses` finished before `before`."""

    @abstractmethod
    def delete_with_history(self, ids: list[int]) -> None:
        """Delete jobs with their attempt and step rows, in one short transaction."""

    # -- the operator's view, events and tubes ---------------------------------
    @abstractmethod
    def by_event(self, event_id: str) -> list[Job]:
        """Every job created by one emitted event."""

    @abstractmethod
    def stats(self, now: float, since: float) -> list[tuple]:
        """Rows (queue, status, count, due by now, oldest pending due, next pending due after now,
        finished since `since`): one full pass over the jobs table."""

    @abstractmethod
    def list_jobs(self, status: str | None, queue: str | None, ext_prefix: str | None, limit: int) -> list[dict]:
        """Jobs newest first; each filter is optional; ext_prefix is matched literally."""

    @abstractmethod
    def live_queues_like(self, pattern: str) -> list[str]:
        """Queues matching a SQL LIKE pattern that have pending or running jobs."""

    @abstractmethod
    def failed_in_queue(self, queue: str, limit: int) -> list[int]:
        """The oldest failed job ids of a queue."""

    @abstractmethod
    def clone(self) -> "Store":
        """The same store on a connection of its own, for another thread."""

    def close(self) -> None:
        """Release the connection; the store reconnects on next use."""
