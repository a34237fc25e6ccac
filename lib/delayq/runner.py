"""The runner: claim due jobs by the batch, run them, record outcomes.

It knows nothing of SQL or Redis: it calls the manager's verbs. Outcomes are
written by the batch (one transaction), and flushed at least every
FLUSH_EVERY seconds so that a slow job does not hold finished ones back.
"""

from __future__ import annotations

import json
import logging
import random
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from . import context, ladders, logs
from .errors import CallableRefused, Permanent, Snooze
from .registry import steps_of
from .steps import run_steps
from .jobs import FAILED, PENDING, SUCCEEDED, TIMED_OUT, Job, Outcome
from .manager import Manager

log = logging.getLogger(__name__)
FLUSH_EVERY = 1.0
MAX_ERROR = 4000


@dataclass
class Summary:
    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    snoozed: int = 0       # "not yet": rescheduled on the ladder, not a failure
    failed: int = 0
    timed_out: int = 0     # the deadline ended them (their on_timeout handler is queued)
    lost: int = 0          # outcome not written: the claim's lease was taken over meanwhile
    skipped: int = 0       # at-most-once jobs not begun because their claim was already gone
    passes: int = 0

    def add(self, other: "Summary") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def line(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.__dict__.items())


def describe_error(exc: BaseException) -> str:
    """'Type: message', then the job's last frames (the runner's own frame left out), bounded in size."""
    head = f"{type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)[1:][-3:]
    text = head + ("\n" + "".join(traceback.format_list(frames)).rstrip() if frames else "")
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 20] + "\n...[truncated]"


def decide(job: Job, exc: BaseException | None, finished_at: float,
           rng: random.Random | None = None) -> tuple[str, float | None, bool]:
    """(status, next due, ended by the deadline) after one attempt.

    A failure follows the ladder and max_attempts and ends failed (alerted), also
    when the deadline stops its retries. Polling that never got its answer ends
    timed_out (no alert): a snooze whose next poll would fall after the deadline,
    or, without a deadline, a snooze on the last allowed attempt.
    """
    if exc is None:
        return SUCCEEDED, None, False
    if isinstance(exc, (Permanent, CallableRefused)):
        return FAILED, None, False
    snooze = isinstance(exc, Snooze)
    ended = TIMED_OUT if snooze else FAILED
    if job.attempts >= job.max_attempts and not (snooze and job.deadline is not None):
        return ended, None, False
    if snooze and exc.seconds is not None:
        due = finished_at + max(0.0, float(exc.seconds))
    else:
        due = finished_at + ladders.parse(job.ladder).delay(job.attempts, rng)
    if job.deadline is not None and due > job.deadline:
        return ended, None, True
    return PENDING, due, False


def job_args(job: Job) -> dict:
    """The stored args as keyword arguments; a row edited into something else fails for good."""
    try:
        args = json.loads(job.args_json)
    except ValueError as exc:
        raise Permanent(f"args are not valid JSON: {exc}") from None
    if not isinstance(args, dict):
        raise Permanent("args must be a JSON object")
    return args


class _Line:
    """key=value text of a log line, built only if a handler without our formatter asks for the message."""

    def __init__(self, fields: dict):
        self.fields = fields

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.fields.items())


class Runner:
    """Runs claimed batches; with `pipeline`, batch N's outcomes are written on a second connection
    while batch N+1 is claimed and run (at most one batch in the writer at a time)."""

    def __init__(self, manager: Manager, queues: list[str], batch: int = 200,
                 rng: random.Random | None = None, should_stop: Callable[[], bool] = lambda: False,
                 pipeline: bool = False):
        self.manager = manager
        self.clock = manager.clock
        self.queues = queues
        self.batch = batch
        self.rng = rng
        self.should_stop = should_stop
        self._writer = manager.with_own_store() if pipeline else None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="delayq-writer") if pipeline else None
        self._inflight: tuple[Future, list[Outcome], Summary] | None = None

    def run_pass(self, drain: bool = True) -> Summary:
        """Claim one batch, run it, record every outcome (written by the time it returns, unless drain=False)."""
        claim = self.manager.claim(self.queues, self.batch)
        summary = Summary(claimed=len(claim.jobs), passes=1)
        pending: list[Outcome] = []
        last_flush = self.clock.now()
        for job in claim.jobs:
            outcome = self.execute(job, claim.token)
            if outcome is None:
                summary.skipped += 1
                continue
            pending.append(outcome)
            if self.clock.now() - last_flush >= FLUSH_EVERY:
                self._flush(claim.token, pending, summary)
                pending, last_flush = [], self.clock.now()
        self._flush(claim.token, pending, summary)
        if drain:
            self.drain()
        return summary

    def run_for(self, seconds: float, interval: float = 1.0) -> Summary:
        """Loop for `seconds`: run passes back to back while work is due, else sleep until the next due time."""
        passes: list[Summary] = []   # a pass's counts land when the writer is done with it: add them up at the end
        end = self.clock.now() + seconds
        try:
            while not self.should_stop():
                summary = self.run_pass(drain=False)
                passes.append(summary)
                now = self.clock.now()
                if now >= end or self.should_stop():
                    break
                if summary.claimed >= self.batch:
                    continue
                self.drain()         # idle: commit what ran before sleeping
                next_due = self.manager.next_due(self.queues)
                wake = min(end, now + interval, next_due if next_due is not None else end)
                self.clock.sleep(max(0.0, wake - now))
        finally:
            self.drain()
        total = Summary()
        for summary in passes:
            total.add(summary)
        return total

    def drain(self) -> None:
        """Wait for the batch in the writer (if any) and count its outcomes; raises what the writer raised."""
        if self._inflight is None:
            return
        future, outcomes, summary = self._inflight
        self._inflight = None
        self._count(future.result(), outcomes, summary)

    def close(self) -> None:
        self.drain()
        if self._pool:
            self._pool.shutdown()
            self._writer.store.close()

    def execute(self, job: Job, claim_token: str) -> Outcome | None:
        """Run one claimed job; None when an at-most-once job must not begin (its claim is gone)."""
        started = self.clock.now()
        if job.deadline is not None and started > job.deadline:    # picked up only after its deadline (a backlog)
            return self._timed(Outcome(job, TIMED_OUT, started, started, "deadline passed before this attempt began"))
        if job.at_most_once and not self.manager.begin(job, claim_token):
            return None
        exc: BaseException | None = None
        ctx = context.JobContext(job.id, job.queue, job.ext, job.attempts, job.max_attempts,
                                 lambda seconds: self.manager.extend(job.id, claim_token, seconds))
        token = context.enter(ctx)
        try:
            self._call(job, claim_token)
        except Exception as error:  # a job's failure is data, not a crash
            exc = error
        finally:
            context.leave(token)
        finished = self.clock.now()
        status, due, by_deadline = decide(job, exc, finished, self.rng)
        snoozed = isinstance(exc, Snooze)
        self._log(job, status, exc, finished - started, snoozed)
        if status == TIMED_OUT:
            error = f"timed out: still not done after {job.attempts} attempt(s), " + (
                "the deadline passed" if by_deadline else "max_attempts reached")
        else:
            error = None if exc is None or snoozed else describe_error(exc)
        outcome = Outcome(job, status, started, finished, error, due, snoozed)
        return self._timed(outcome) if by_deadline else outcome

    def _timed(self, outcome: Outcome) -> Outcome:
        """The deadline ended this job: its on_timeout handler (if any) is written with the outcome."""
        if outcome.job.on_timeout:
            outcome.followup = self.manager.timeout_handler(outcome.job, outcome.finished_at)
        return outcome

    def _call(self, job: Job, claim_token: str) -> None:
        target = self.manager.registry.resolve(job.call)
        args = job_args(job)
        if steps_of(target) is not None:
            run_steps(self.manager.store, self.clock, job, claim_token, target, args, describe_error)
        else:
            target(**args)

    def _flush(self, token: str, outcomes: list[Outcome], summary: Summary) -> None:
        if not outcomes:
            return
        if self._pool is None:
            self._count(self.manager.finish(token, outcomes), outcomes, summary)
            return
        self.drain()             # at most one batch in the writer
        self._inflight = (self._pool.submit(self._writer.finish, token, outcomes), outcomes, summary)

    @staticmethod
    def _count(held: set[int], outcomes: list[Outcome], summary: Summary) -> None:
        logs.flush()
        for outcome in outcomes:
            if outcome.job.id not in held:
                summary.lost += 1
            elif outcome.status == SUCCEEDED:
                summary.succeeded += 1
            elif outcome.status == PENDING and outcome.snoozed:
                summary.snoozed += 1
            elif outcome.status == PENDING:
                summary.retried += 1
            elif outcome.status == TIMED_OUT:
                summary.timed_out += 1
            else:
                summary.failed += 1

    @staticmethod
    def _log(job: Job, status: str, exc: BaseException | None, seconds: float, snoozed: bool) -> None:
        level = logging.WARNING if status == FAILED else logging.INFO
        if not log.isEnabledFor(level):
            return
        outcome = ("snoozed" if snoozed else "retry") if status == PENDING else status
        fields = {"job": job.id, "queue": job.queue, "call": job.call, "attempt": job.attempts, "outcome": outcome,
                  "ms": round(seconds * 1000, 1)}
        if exc is not None and not snoozed:
            fields["error"] = type(exc).__name__
        log.log(level, "%s", _Line(fields), extra={"fields": fields})
