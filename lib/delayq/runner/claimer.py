"""Claiming: how many jobs a worker takes, from which queues, and when; the claims run in a thread of their own.

A worker claims only what it can start soon: its free slots plus a prefetch of about
PREFETCH_SECONDS of work at the rate its slots take jobs (Little's law: slots / the recent mean
time a job runs; at least a quarter of its slots, at most MAX_AHEAD jobs: a few jobs ahead for
2-second jobs, hundreds for no-op jobs), so other runners on other hosts get the rest. A claim
(MAX_CLAIM jobs at most) runs in the claimer thread, so the job threads do not wait for the
database between batches. Every claim of a worker is made by the worker as one holder (its claim
tokens begin with the holder's name): whatever ends the worker, the rows it holds are found by it.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor

from ..jobs import Job

MAX_CLAIM = 500             # jobs claimed at once at most
MAX_AHEAD = 1000            # jobs claimed beyond the free slots at most: two claims, so that the next one
                            # is under way while the workers still have half a second's no-op jobs to run
PREFETCH_SECONDS = 0.25     # claimed beyond the free slots: about this much work at the recent rate
MEAN_WEIGHT = 0.05          # weight of each new job's run time in the recent mean (about the last 20-40 jobs)


class Claimer:
    def __init__(self, manager, queues: list[str], holder: str, capacity: int, limits: dict[str, int]):
        self.manager = manager
        self.queues = queues
        self.holder = holder
        self.limits = limits                         # queue -> jobs of it at once at most, in this worker
        self.per_queue: Counter = Counter()          # claimed jobs of a capped queue not yet ended
        self.floor = max(1, capacity // 4)
        self.mean_run: float | None = None           # seconds a job ran, recently (the prefetch follows it)
        self.under_way: list[tuple[Future, int]] = []   # claims in the claimer thread, and their size
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="delayq-claim")
        self._checked_at = float("-inf")

    # -- how much ---------------------------------------------------------------------
    def prefetch(self, capacity: int) -> int:
        """Jobs to claim beyond the free slots: about PREFETCH_SECONDS of work at the rate the slots take jobs,
        known from the first results on (a burst ramps up in one claim)."""
        if self.mean_run is None:
            return self.floor
        rate = capacity / max(self.mean_run, 1e-6)
        return max(self.floor, min(MAX_AHEAD, int(rate * PREFETCH_SECONDS)))

    def observe(self, ran: float) -> None:
        """A job ran `ran` seconds: the recent mean moves."""
        self.mean_run = ran if self.mean_run is None else self.mean_run + MEAN_WEIGHT * (ran - self.mean_run)

    def asked(self) -> int:
        return sum(want for _, want in self.under_way)

    def plan(self, want: int) -> list[tuple[list[str], int]]:
        """`want` jobs at most, as (queues, how many) claims: each queue with a cap within its allowance, then
        the others."""
        capped = [q for q in self.queues if q in self.limits]
        if not capped:
            return [(self.queues, want)]
        plan = []
        for queue in capped:
            allowance = min(self.limits[queue] - self.per_queue[queue], want)
            if allowance > 0:
                plan.append(([queue], allowance))
        others = [q for q in self.queues if q not in self.limits]
        if others:
            plan.append((others, want))
        return plan

    # -- claiming -----------------------------------------------------------------------
    def start(self, want: int, wake) -> None:
        """Claim `want` jobs at most in the claimer thread; `wake` is called when the claim is done."""
        future = self._pool.submit(self.claim, want, self.plan(want))
        self.under_way.append((future, want))
        future.add_done_callback(lambda _: wake())

    def claim(self, want: int, plan: list[tuple[list[str], int]]) -> list[Job]:
        """Claim by the plan, `want` jobs at most in all (in the claimer thread, or in the caller's)."""
        self._check_ready()
        jobs: list[Job] = []
        for queues, n in plan:
            if len(jobs) < want:
                jobs += self.manager.claim(queues, min(n, want - len(jobs)), self.holder)
        for job in jobs:
            if job.queue in self.limits:
                self.per_queue[job.queue] += 1
        return jobs

    def finished(self) -> list[tuple[Future, int]]:
        return [claim for claim in self.under_way if claim[0].done()]

    def collect(self, future: Future) -> list[Job]:
        """The jobs a finished claim brought (what it raised is raised here)."""
        self.under_way = [claim for claim in self.under_way if claim[0] is not future]
        return future.result()

    def ended(self, job: Job) -> None:
        if job.queue in self.limits:
            self.per_queue[job.queue] -= 1

    def next_claim(self, now: float, interval: float) -> float:
        """Nothing more is due now: claim again at the next due time, or after `interval` at the latest (an index
        that does not answer fails the worker, as its next claim would)."""
        nxt = self.manager.next_due(self.queues)
        return min(now + interval, nxt if nxt is not None else now + interval)

    def _check_ready(self) -> None:
        """Before claiming, at most once a second: the store answers, accepts us and has our schema (else exit 1)."""
        if time.monotonic() - self._checked_at >= 1.0:
            self.manager.check_ready()
            self._checked_at = time.monotonic()

    def close(self) -> None:
        self._pool.shutdown(wait=False)
