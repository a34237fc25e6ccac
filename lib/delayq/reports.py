"""What the operator reads: jobs found, searched and counted, their attempts and steps, the figures of the
overview, the metrics and the audit trail. Reads only, over the store's ReportStore (and the job reads of
JobStore); the writes are the manager's (manager.py), pausing and heartbeats the control's (control.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import validate
from .clock import Clock
from .errors import InvalidInput, NotFound
from .jobs import Attempt, Job
from .search import MAX_PAGE, JobFilter
from .store import Step, Store
from .store.base import ROLLUP, Group

LIVE_UPTO = 10_000     # jobs of one queue and status counted on every read; beyond, compensate's count (count_jobs)
COUNT_EVERY = 60.0     # seconds between compensate's counts of a big group
WINDOWS = {"1h": (3600, 60), "24h": (86400, 900), "7d": (7 * 86400, 3600)}   # the charts: (seconds, bucket)


@dataclass
class Activity:
    """A chart's figures: per bucket (oldest first), the attempts by outcome (as stored) and their lateness."""

    window: str
    queue: str | None
    start: float                          # the first bucket's start, epoch seconds
    bucket: int                           # seconds
    counts: dict[str, list[int]]          # outcome -> attempts per bucket
    late_avg: list[float | None]          # seconds from due to started, on average (None: no attempt with a due time)
    late_max: list[float | None]


class Reports:
    def __init__(self, store: Store, clock: Clock):
        self.store = store
        self.clock = clock

    # -- jobs ------------------------------------------------------------------
    def get(self, job_id: int) -> Job | None:
        return self.store.get(job_id)

    def find(self, job_id: int | None = None, ext: str | None = None, queue: str | None = None,
             event_id: str | None = None) -> list[Job]:
        """Jobs by id, by business key (optionally in a queue) or by emitted event; NotFound if none."""
        if queue is not None:
            validate.queue(queue, tube=True)
        if job_id is not None:
            job = self.store.get(job_id)
            found, what = ([job] if job else []), f"id {job_id}"
        elif event_id is not None:
            found, what = self.store.by_event(event_id), f"event {event_id!r}"
        else:
            found, what = self.store.by_ext(validate.ext(ext) or "", queue), f"ext {ext!r}"
        if not found:
            raise NotFound(f"no job with {what}")
        return found

    def attempts(self, job_id: int) -> list[Attempt]:
        return self.store.attempts(job_id)

    def steps(self, job_id: int) -> list[Step]:
        return self.store.steps(job_id)

    def list_jobs(self, status: str | None = None, queue: str | None = None, ext_prefix: str | None = None,
                  limit: int = 50) -> list[dict]:
        if queue is not None:
            validate.queue(queue, tube=True)
        return self.store.list_jobs(status, queue, validate.ext(ext_prefix, "ext prefix"), limit)

    def search(self, f: JobFilter, before: int | None = None, limit: int = 50) -> list[dict]:
        """One keyset page of jobs matching `f`, newest first (the next page: before = the last id)."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"a page holds 1 to {MAX_PAGE} jobs")
        return self.store.search(f.checked(), before, limit)

    def count(self, f: JobFilter) -> list[tuple[str, str, int]]:
        """(queue, status, how many) for the jobs matching `f`."""
        return self.store.count(f.checked())

    def count_upto(self, f: JobFilter, most: int) -> int:
        """How many jobs match `f`, counting no further than `most` (a page's total: "more than 10,000")."""
        return self.store.count_upto(f.checked(), most)

    def newest_job_id(self) -> int:
        """The id of the newest job (0: none): a bulk preview's snapshot is the jobs up to it."""
        return self.store.max_job_id()

    def live_queues_like(self, pattern: str) -> list[str]:
        return self.store.live_queues_like(pattern)

    def failed_in_queue(self, queue: str, limit: int) -> list[int]:
        return self.store.failed_in_queue(queue, limit)

    # -- figures -----------------------------------------------------------------
    def queue_figures(self) -> tuple[float, list[Group]]:
        """(now, per queue and status: how many jobs, and of the pending ones how many are due, the oldest due
        time and the next): exact for groups of up to LIVE_UPTO jobs, compensate's last count for bigger ones
        (Group.counted_at), the same cost at a thousand jobs as at ten million."""
        now = self.clock.now()
        return now, self.store.queue_figures(now, LIVE_UPTO)

    def recent_attempts(self) -> list[tuple]:
        """Rows of ReportStore.recent_attempts for the last minute and hour."""
        now = self.clock.now()
        return self.store.recent_attempts(now - 60, now - 3600)

    def metrics(self) -> list[tuple[str, str, str, int, float]]:
        """Rows of ReportStore.metrics: counters and histogram buckets derived from the database."""
        return self.store.metrics()

    def waiting_on_limits(self) -> dict[str, int]:
        """queue -> pending jobs a rate or concurrency limit held back (limits.py)."""
        return self.store.waiting_on_limits()

    def activity(self, window: str = "1h", queue: str | None = None) -> Activity:
        """Attempts and their lateness over the last hour (by minute), 24 hours (by quarter hour) or 7 days (by
        hour), of one queue or of all: the rolled-up buckets (Control.roll_up) up to the newest, the attempts
        themselves after it. InvalidInput for another window or a bad queue name."""
        if window not in WINDOWS:
            raise InvalidInput(f"the chart's window is one of {', '.join(WINDOWS)}, not {str(window)[:20]!r}", "window")
        if queue is not None:
            validate.queue(queue, "queue", tube=True)
        span, bucket = WINDOWS[window]
        now = self.clock.now()
        start = (now // bucket) * bucket - span
        n = span // bucket + 1
        rows, edge = [], start
        if bucket >= ROLLUP:
            rolled = self.store.rolled_upto()
            if rolled is not None:
                edge = min(max(start, rolled + ROLLUP), now)
                rows += self.store.rollups_per_bucket(start, start, edge, bucket, queue)
        rows += self.store.attempts_per_bucket(start, edge, now + 1, bucket, queue)
        act = Activity(window, queue, start, bucket, {}, [None] * n, [None] * n)
        late_sum, late_n = [0.0] * n, [0] * n
        for b, outcome, count, total, counted, most in rows:
            if not 0 <= b < n:
                continue
            act.counts.setdefault(outcome, [0] * n)[b] += count
            late_sum[b] += total
            late_n[b] += counted
            if most is not None:
                act.late_max[b] = max(most, act.late_max[b] if act.late_max[b] is not None else most)
        act.late_avg = [late_sum[b] / late_n[b] if late_n[b] else None for b in range(n)]
        return act

    def actions(self, before: float | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The dashboard's audit trail, newest first: up to `limit` rows older than `before` (None: from now)."""
        return self.store.actions(before if before is not None else 2.0 ** 62, limit)
