"""What a worker holds (a part of Worker): each job claimed takes a ledger slot at once, is submitted to the job
threads, comes back as a result, becomes an outcome waiting for its group commit, and lets go of its slot once
that commit is done (or it was handed on): at every instant the ledger says what the worker holds."""

from __future__ import annotations

import logging

from ..errors import BackendError, DelayqError
from ..jobs import Job, Outcome
from ..retries import SKIPPED, TIMEOUT, Result, outcome
from .ledger import Ledger
from .summary import Summary, log_outcome
from .threads import ABANDONED, BROKEN, HANDED

log = logging.getLogger("delayq.runner")


class Holding:
    ledger: Ledger
    slots: dict[int, int]
    _jobs: dict[int, Job]

    def _claim_now(self, want: int, summary: Summary) -> list[Job]:
        if want <= 0:
            return []
        jobs = self.claimer.claim(want, self.claimer.plan(want))
        summary.passes += 1
        summary.claimed += len(jobs)
        return self._held(jobs)

    def _collect(self, future, summary: Summary) -> list[Job]:
        jobs = self.claimer.collect(future)
        summary.passes += 1
        summary.claimed += len(jobs)
        return self._held(jobs)

    def _held(self, jobs: list[Job]) -> list[Job]:
        """A ledger slot for each job just claimed (written before anything else happens to it); a job already
        held here is not taken twice."""
        fresh = [job for job in jobs if job.id not in self.slots]
        for job in fresh:
            self.slots[job.id] = self.ledger.take(job.id)
        return fresh

    def _submit(self, jobs: list[Job]) -> None:
        if jobs:
            for job in jobs:
                self._jobs[job.id] = job
            self.executor.submit(jobs)

    def _release(self, job_id: int) -> None:
        """Nothing of this job is held here any more: its ledger slot is free (once, whoever gets here first)."""
        slot = self.slots.pop(job_id, None)
        if slot is not None:
            self.ledger.free(slot)

    def _take(self, results: list[Result], summary: Summary) -> None:
        """Results to outcomes, waiting for the next group commit."""
        for result in results:
            job = self._jobs.pop(result.job_id, None)
            if job is None:
                continue
            self.claimer.ended(job)
            if result.kind in (HANDED, SKIPPED):     # passed to a process of its own, or its claim was gone
                self._release(job.id)
                summary.skipped += result.kind == SKIPPED
                continue
            if result.kind == ABANDONED:             # its supervisor records it once this process is gone
                continue
            if result.kind == BROKEN:                # the store or index failed around it: stop (exit 1, one line)
                raise BackendError(result.error or "the store failed")
            self.claimer.observe(result.ran if result.ran is not None else max(0.0, result.finished - result.started))
            if result.kind == TIMEOUT:
                summary.timed_out += 1
            done = self._outcome(job, result)
            log_outcome(done, result.kind)
            self.writer.add(done)

    def _committed(self, outcomes: list[Outcome], summary: Summary) -> None:
        """Their outcomes are committed: their ledger slots are free (a job timed out here still runs in its
        thread, which frees its slot if it ever returns); the supervisor sees the counts so far."""
        cut = self.executor.abandoned()
        for o in outcomes:
            if not (o.interrupted and o.job.id in cut):
                self._release(o.job.id)
        self.ledger.publish(summary)

    def _outcome(self, job: Job, result: Result) -> Outcome:
        done = outcome(job, result, self.rng)
        if done.ended_by_deadline and job.on_timeout:
            try:     # the deadline ended it: its on_timeout handler is written with the outcome
                done.followup = self.manager.timeout_handler(job, done.finished_at)
            except DelayqError as exc:
                log.warning("job %d: on_timeout %s not queued: %s", job.id, job.on_timeout, exc)
        return done

    def _live(self) -> list[Job]:
        """The jobs still to wait for: handed to the executor, no result yet, not given up by the supervisor."""
        return [job for job_id, job in self._jobs.items()
                if not self.ledger.abandoned(self.slots.get(job_id, -1), job_id)]
