"""The store: the durable record of every job and attempt (the source of truth).

Seven small interfaces, one per concern, so a caller depends on the part it uses:

  JobStore          write, cancel and read jobs
  ClaimStore        claims and outcomes: what a runner does to jobs it runs
  StepStore         the steps of multi-step jobs
  MaintenanceStore  schema, leases and recovery, the due index's rebuild and outbox, alerts, retry, purge
  ReportStore       the operator's views and the metrics derived from the rows
  ControlStore      paused queues, runner heartbeats, the dashboard's audit trail: what operators and runners
                    tell each other
  ScheduleStore     recurring schedules: which slot is taken, by which job

Every method is one transaction: it commits before it returns, or changes nothing and
raises BackendError (except JobStore.insert_jobs_on, which writes inside the caller's
transaction). Times are epoch seconds (float) from the injected clock; the store never
reads the clock itself. Durations are seconds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

from ..jobs import Attempt, Job, JobSpec, Outcome
from ..limits import QueueLimit
from ..schedules import Plan, State
from ..search import JobFilter


@dataclass(frozen=True)
class Inserted:
    id: int
    status: str
    due_at: float
    created: bool       # False: a live unique job with this queue+ext already existed


@dataclass(frozen=True)
class Cancelled:
    cancelled: list[tuple[int, str]]     # (id, queue) now cancelled
    untouched: list[tuple[int, str]]     # (id, status) not pending, so left alone


class Group(NamedTuple):
    """One queue's jobs of one status (ReportStore.queue_figures): how many, and for pending jobs what is due."""

    queue: str
    status: str
    count: int
    due_now: int = 0                  # pending jobs due by now, `most` + 1 meaning more than `most`
    oldest_due: float | None = None   # the earliest pending due time
    next_due: float | None = None     # the earliest pending due time after now
    counted_at: float | None = None   # when compensate counted `count` (a group above `most`); None: counted now
    at_least: bool = False            # `count` is a floor: the group grew past `most` since compensate counted it


UNIQUE_TAKEN = "unique: another job with its queue and ext is live"     # why retry_ids skipped a unique job
ROLLUP = 300    # seconds in a rolled-up bucket (MaintenanceStore.roll_up)
# (bucket, outcome, attempts, lateness sum, lateness count, lateness max): ReportStore.attempts_per_bucket's rows
Bucket = tuple[int, str, int, float, int, "float | None"]


@dataclass(frozen=True)
class Changed:
    """What a bulk change did to one batch: each job changed only if it was still in the state the action needs."""

    changed: list[tuple[int, str, int]]  # (id, queue, priority) changed
    skipped: list[tuple[int, str]]       # (id, reason): the job's status when it was not the one needed, or why not


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


class JobStore(ABC):
    """Write, cancel and read jobs."""

    @abstractmethod
    def insert_jobs(self, specs: list[JobSpec], now: float, index_pending: bool = False) -> list[Inserted]:
        """Insert jobs as pending, in one transaction; one result per spec, in order.

        A unique spec whose queue+ext already has a live job returns that job
        (created=False) and inserts nothing; a unique index decides, not a read.
        index_pending marks the rows as waiting for their due-index entry (the outbox).
        """

    @abstractmethod
    def insert_jobs_on(self, connection: Any, specs: list[JobSpec], now: float,
                       index_pending: bool) -> list[Inserted]:
        """The same on the caller's open DB-API connection, inside the caller's transaction.

        Nothing is committed or rolled back here: the jobs exist if and only if the
        caller commits. index_pending marks rows whose index entry follows the commit (the outbox).
        """

    @abstractmethod
    def delete_jobs(self, ids: list[int]) -> None:
        """Remove jobs outright: undoes an enqueue whose index write failed."""

    @abstractmethod
    def cancel(self, now: float, job_id: int | None = None, ext: str | None = None,
               queue: str | None = None) -> Cancelled:
        """Cancel the pending jobs matching id or ext (optionally within a queue), rows locked while deciding."""

    @abstractmethod
    def cancel_ids(self, ids: list[int], now: float) -> Changed:
        """Cancel those of `ids` still pending, rows locked while deciding; the others are skipped with their status."""

    @abstractmethod
    def get(self, job_id: int) -> Job | None:
        """One job by id."""

    @abstractmethod
    def by_ext(self, ext: str, queue: str | None = None) -> list[Job]:
        """Jobs with a business key, oldest first."""

    @abstractmethod
    def by_event(self, event_id: str) -> list[Job]:
        """Every job created by one emitted event, oldest first."""

    @abstractmethod
    def attempts(self, job_id: int) -> list[Attempt]:
        """A job's attempts in order."""

    @abstractmethod
    def statuses(self, ids: list[int]) -> dict[int, str]:
        """id -> status for those of `ids` that exist."""

    @abstractmethod
    def make_due(self, job_id: int, now: float) -> bool:
        """A pending job's due time becomes `now` (run now); False, and nothing changed, if it is not pending."""


class ClaimStore(ABC):
    """Claims and outcomes: the writes a runner makes for the jobs it runs."""

    @abstractmethod
    def start(self, ids: list[int], token: str, now: float, lease: float) -> list[Job]:
        """Move those of `ids` still pending to running under `token`; returns exactly those.

        attempts is incremented; the lease runs out at now + the job's own lease
        seconds, or `lease` seconds for jobs without one. A job cancelled since it
        was indexed is not returned.

        A job a limit governs (set_limits: its queue's rate or max_running; its limit key) starts only if the
        limits let it, in the same transaction; one held back stays pending, its attempts unchanged, due again
        later: the list returned carries them as `.held`, (id, queue, due again at, priority), for an index kept
        apart to move (limits.py).
        """

    @abstractmethod
    def set_limits(self, limits: Mapping[str, QueueLimit]) -> None:
        """The queues' limits across runners (DELAYQ_QUEUES' rate and max_running), which start() enforces."""

    @abstractmethod
    def waiting_on_limits(self) -> dict[str, int]:
        """queue -> pending jobs a limit held back (not started since)."""

    @abstractmethod
    def forget_limited(self, limit: int = 1000) -> int:
        """Drop up to `limit` rows of the limits' bookkeeping whose job ended or is gone; returns how many."""

    @abstractmethod
    def claim_due(self, queues: list[str], now: float, limit: int, token: str, lease: float) -> list[Job]:
        """The in-database index: atomically start up to `limit` jobs due by `now`.

        Per queue, highest priority first, then earliest due; at most `limit` in all, shared
        fairly between the queues that have due jobs. Concurrent callers never get the same
        job (FOR UPDATE SKIP LOCKED, or SQLite's single writer).
        """

    @abstractmethod
    def next_due(self, queues: list[str]) -> float | None:
        """Earliest due time among pending jobs of `queues` (in-database index)."""

    @abstractmethod
    def finish(self, outcomes: list[Outcome], now: float, witnessed: bool = True,
               lapsed: bool = False) -> tuple[set[int], list[tuple[int, str, float, int]]]:
        """Write outcomes and attempt rows in one transaction; returns the ids whose claim still held.

        Each outcome is written only where the row still holds the outcome's claim
        token (outcome.job.token), so a runner that lost its lease cannot overwrite
        another runner's record. Attempt rows are written for every outcome: the run
        did happen (witnessed=False, recovery's: only where the claim held; another
        recovery of the same death got there first and recorded it). A recovery (witnessed=False) never waits on a
        row another transaction has locked: it skips it, and the next recovery finds it again. An outcome's followup
        (the on_timeout handler of a job its deadline ended) is inserted in the same transaction; their (id, queue,
        due_at, priority) are returned second. lapsed (a recovery of expired leases): only rows whose lease has still
        run out at `now`; a holder that renewed it since it was read keeps its job.
        """

    @abstractmethod
    def unclaim(self, jobs: list[Job], now: float) -> list[Job]:
        """Claimed jobs that never started back to pending at once, where their claim still holds.

        The claim does not count as an attempt. Returns those put back (the index re-adds them).
        """

    @abstractmethod
    def keep_alive(self, jobs: list[Job], now: float, lease: float) -> int:
        """Move the leases of running jobs to now + their lease (else `lease`), where the claim holds.

        Called by a live runner for the jobs it runs: a lease then runs out only when its runner died.
        """

    @abstractmethod
    def keep_alive_held(self, holders: list[str], now: float, lease: float) -> int:
        """Move the leases of every running job these holders hold (jobs.HOLDER: a claim token's first characters)
        to now + their lease (else `lease`); returns how many. One statement, whatever they hold."""

    @abstractmethod
    def held(self, holder: str) -> list[Job]:
        """The running jobs a holder holds, whatever claim brought each, with what recovering them needs
        (started_at: NULL for an at-most-once job that never began; manual_running: manual steps marked running).
        Their holder died."""

    @abstractmethod
    def hand_off(self, job_id: int, token: str, new_token: str, now: float) -> bool:
        """A running job held by `token` is held by `new_token` from now on (its lease unchanged); False if
        `token` no longer holds it."""

    @abstractmethod
    def begin_job(self, job_id: int, token: str, now: float) -> bool:
        """Record that an at-most-once job begins; False if its claim or lease is gone (do not run it)."""

    @abstractmethod
    def extend_lease(self, job_id: int, token: str, until: float, now: float) -> bool:
        """Move a running job's lease to `until`; False if the claim is gone."""


class StepStore(ABC):
    """The steps of multi-step jobs (seed 003)."""

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


class MaintenanceStore(ABC):
    """Schema, recovery of expired leases, the index's rebuild and outbox, alerts, retry by hand, purge."""

    @abstractmethod
    def migrate(self, now: float) -> list[int]:
        """Create or upgrade the tables; idempotent. Returns the versions applied now."""

    @abstractmethod
    def server_time(self) -> float:
        """The database's clock in epoch seconds (for ServerClock)."""

    @abstractmethod
    def expired(self, now: float, limit: int) -> list[Job]:
        """Up to `limit` running jobs whose lease ran out before `now`, oldest lease first: what recovering them
        needs (as ClaimStore.held reads it: started_at, manual_running). Recovery writes their outcomes through
        ClaimStore.finish and unclaim, conditional on the token read here."""

    @abstractmethod
    def pending_page(self, after_id: int, upto_id: int, limit: int) -> list[tuple[int, str, float, int]]:
        """(id, queue, due_at, priority) of pending jobs with after_id < id <= upto_id, in id order, `limit` at most
        (keyset pages; upto_id bounds the rows one read walks)."""

    @abstractmethod
    def newer_rows(self, after_id: int, before: float, limit: int) -> tuple[list[tuple[int, str, float, int]], int]:
        """The jobs with id > after_id, in id order, up to the first one created after `before` (at most `limit`):
        (entries (id, queue, due_at, priority) of those pending, the last id looked at)."""

    @abstractmethod
    def max_job_id(self) -> int:
        """The newest job's id (0 when there is none)."""

    @abstractmethod
    def pending_entries(self, ids: list[int]) -> list[tuple[int, str, float, int]]:
        """(id, queue, due_at, priority) of those of `ids` still pending."""

    @abstractmethod
    def outbox(self, limit: int) -> list[tuple[int, str, float, int]]:
        """(id, queue, due_at, priority) of committed jobs still waiting for their due-index entry, oldest first."""

    @abstractmethod
    def outbox_done(self, ids: list[int]) -> None:
        """Their due-index entries were added."""

    @abstractmethod
    def alerts_due(self, limit: int) -> list[dict]:
        """Failed jobs whose alert is not delivered yet (id, queue, ext, callable, attempts, last_error, finished_at)."""

    @abstractmethod
    def mark_alerted(self, ids: list[int], now: float) -> None:
        """The alert for these jobs was delivered."""

    @abstractmethod
    def roll_up(self, since: float, until: float, keep: float) -> int:
        """The attempts finished in [since, until) (multiples of ROLLUP) into ROLLUP-second buckets by queue and
        outcome, replacing those buckets if they were rolled up before (one transaction: rolled twice, counted
        once); buckets older than `keep` deleted. Returns the bucket rows written."""

    @abstractmethod
    def count_groups(self, now: float, most: int, every: float, budget: float) -> int:
        """Count the groups (queue, status) of more than `most` jobs whose count is missing or older than `every`
        seconds, one statement each, for at most `budget` seconds (compensate); forget the counts of groups now
        small. Returns the groups counted. What queue_figures reads for the big groups."""

    @abstractmethod
    def retry_ids(self, ids: list[int], due_at: float, now: float, reset_attempts: bool, step: str | None) -> Changed:
        """Those of `ids` still failed back to pending at `due_at`, with their failed steps (or only `step`).

        One transaction, rows locked while deciding. Skipped: jobs not failed (reason: their status),
        without `step` ("no step ..."), or unique jobs whose queue+ext has another live job now.
        """

    @abstractmethod
    def step_names(self, job_id: int) -> list[str]:
        """A job's step names in declared order."""

    @abstractmethod
    def purge_ids(self, ids: list[int], statuses: list[str]) -> Changed:
        """Delete those of `ids` whose status is in `statuses`, with their attempts and steps, in one transaction.

        Their counts (jobs enqueued and cancelled, attempts by outcome, run time and lateness buckets)
        are added to the folded totals in the same transaction, so derived counters never go down.
        """


class ReportStore(ABC):
    """The operator's views: each one query, bounded by its limit."""

    @abstractmethod
    def search(self, f: "JobFilter", before: int | None, limit: int) -> list[dict]:
        """Up to `limit` jobs matching the filter with id < `before` (None: from the newest), newest first.

        A keyset page: the next page passes the last id seen as `before`; no OFFSET scans.
        """

    @abstractmethod
    def search_keys(self, f: "JobFilter", before: int | None, limit: int,
                    by_id: bool = False) -> list[tuple[int, str, str]]:
        """(id, queue, status) of up to `limit` jobs matching the filter with id < `before`, newest first.

        by_id: walk the primary key backwards whatever the filter (for a walk over many matches: each page then
        reads only up to its last match, where an index on the filter's columns would sort every remaining match).
        """

    @abstractmethod
    def count(self, f: "JobFilter") -> list[tuple[str, str, int]]:
        """(queue, status, how many) of the jobs matching the filter."""

    @abstractmethod
    def count_upto(self, f: "JobFilter", most: int) -> int:
        """How many jobs match the filter, `most` at most (it stops counting there)."""

    @abstractmethod
    def recent_attempts(self, minute: float, hour: float) -> list[tuple]:
        """Rows (queue, outcome, attempts finished since `hour`, of them since `minute`, average and maximum
        lateness in seconds): attempts, not current statuses, so a retried job's failure still counts."""

    @abstractmethod
    def metrics(self) -> list[tuple[str, str, str, int, float]]:
        """Rows (queue, kind, name, count, sum): kind outcome (attempts by outcome), duration and lateness
        (histogram buckets named by their upper bound, not cumulative), jobs (enqueued, cancelled); purged rows
        included through the folded totals. One statement: one consistent read."""

    @abstractmethod
    def queue_figures(self, now: float, most: int) -> list[Group]:
        """Per queue and status (groups with jobs only), how many jobs, and for pending ones how many are due by
        `now`, the earliest due time and the next after `now`. One consistent read, whose cost does not grow with
        the tables: groups of at most `most` jobs are counted from the indexes, bigger ones come from their last
        count_groups() (a floor of `most` + 1 when they grew since); due jobs are counted up to `most` + 1."""

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
    def attempts_per_bucket(self, since: float, from_at: float, until: float, bucket: int,
                            queue: str | None = None) -> list[Bucket]:
        """The attempts finished in [from_at, until) of `queue` (None: every queue) as rows (bucket, outcome,
        attempts, lateness sum, lateness count, lateness max), a bucket `bucket` seconds long, 0 starting at
        `since`; lateness in seconds (started_at - due_at), counted where the due time is known."""

    @abstractmethod
    def rollups_per_bucket(self, since: float, from_at: float, until: float, bucket: int,
                           queue: str | None = None) -> list[Bucket]:
        """The same rows from the rolled-up 5-minute buckets that start in [from_at, until) (MaintenanceStore.roll_up);
        `bucket` a multiple of 300 and `since` of `bucket`, so each 5-minute bucket falls into one."""

    @abstractmethod
    def rolled_upto(self) -> float | None:
        """The start of the newest 5-minute bucket rolled up (epoch seconds), None if none is."""


class ControlStore(ABC):
    """Paused queues, runner heartbeats and the audit trail of actions taken on the dashboard.
    Each method is one short transaction."""

    @abstractmethod
    def pause(self, queue: str, reason: str | None, now: float) -> bool:
        """Pause a queue; False if it was paused already (a new reason replaces the old one)."""

    @abstractmethod
    def resume(self, queue: str) -> bool:
        """Resume a queue; False if it was not paused."""

    @abstractmethod
    def paused(self) -> dict[str, tuple[float, str | None]]:
        """queue -> (paused since, reason) for every paused queue."""

    @abstractmethod
    def beat(self, worker: dict[str, Any], running: str, now: float) -> None:
        """Upsert a runner's row: worker holds id, host, pid, queues, concurrency, every, started_at;
        `running` is the JSON of the jobs it runs now; last_seen becomes `now`."""

    @abstractmethod
    def worker_stopped(self, worker_id: str, now: float) -> None:
        """Mark a runner's row stopped now (a clean exit)."""

    @abstractmethod
    def workers(self) -> list[dict[str, Any]]:
        """Every runner row (id, host, pid, queues, concurrency, every, started_at, last_seen, stopped_at, running)."""

    @abstractmethod
    def forget_workers(self, before: float) -> int:
        """Delete rows of runners last seen before `before`; returns how many."""

    @abstractmethod
    def record_action(self, row: dict[str, Any]) -> None:
        """Append one audit row: id, at (epoch seconds), address, actor, action, target, jobs, detail."""

    @abstractmethod
    def actions(self, before: float, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` audit rows older than `before`, newest first."""


class ScheduleStore(ABC):
    """Recurring schedules (scheduler.py): a row per schedule, locked to take its due slots, and a row per slot run
    whose unique key (schedule, slot) makes a second job for a slot impossible. Each method is one transaction."""

    @abstractmethod
    def take_slots(self, name: str, plan: Callable[[State], Plan], jobs: Callable[[list[int]], list[JobSpec]],
                   first_slot: float, now: float, index_pending: bool) -> tuple[Plan, list[Inserted]]:
        """Lock the schedule's row (made, with last_slot = `first_slot`, if there is none), read its latest job's
        status, ask `plan` what comes of its due slots, and write it in the same transaction: for each slot run a
        slot row and its job (`jobs(slots)`; index_pending: flagged for an index kept apart, as insert_jobs_on), the row's
        latest slot, latest job and counts. Returns the plan and the jobs written. A slot someone else wrote
        already (its slot row exists) rolls the whole back and writes nothing: the plan comes back with no run."""

    @abstractmethod
    def schedule_rows(self) -> list[dict[str, Any]]:
        """Every schedule row by name: name, last_slot, last_job, paused_at, ran, skipped, missed, created_at,
        updated_at, and its latest job's status, finished_at, last_error (None: no job, or purged)."""

    @abstractmethod
    def pause_schedule(self, name: str, now: float) -> bool:
        """Pause a schedule (its slots pass without jobs); False if it has no row (never seen by a runner)."""

    @abstractmethod
    def resume_schedule(self, name: str, now: float) -> bool:
        """Resume a paused schedule: its slots count from `now` (none that passed meanwhile runs); False if it
        was not paused."""

    @abstractmethod
    def forget_slots(self, before: float) -> int:
        """Delete slot rows of slots before `before`; returns how many."""


class Store(JobStore, ClaimStore, StepStore, MaintenanceStore, ReportStore, ControlStore, ScheduleStore):
    """Every part together, as one backend implements them (SqlStore on MySQL or SQLite)."""

    backend: str = "store"
    where: str = ""

    def close(self) -> None:
        """Release the connections; the store reconnects on next use."""
