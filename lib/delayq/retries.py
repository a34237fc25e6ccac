"""What one run of a job comes to: succeeded, pending again (a retry or a snooze), failed, or expired (the deadline
ended it; stored as jobs.TIMED_OUT, see words.py). A run past its time limit (kind TIMEOUT) is a failure, retried
or failed, whose attempt row says it timed out (jobs.TIMEOUT_RETRY, jobs.TIMEOUT_FAILED).

A run's Result (runner/execute.py makes it; a worker's ledger keeps its kind) is what the job itself said;
decide() is pure (the ladder, max_attempts and the deadline); outcome() adds what the
supervisor learnt that the job itself could not report: it ran past its time limit, its
process died under it, or the runner stopped before it ended. Recovery (recovery.py) comes
to its outcomes through the same outcome().
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from . import ladders
from .jobs import FAILED, PENDING, SUCCEEDED, TIMED_OUT, TIMEOUT_FAILED, TIMEOUT_RETRY, Job, Outcome

# Kinds a job's own run reports (runner/execute.py):
OK, ERROR, PERMANENT, SNOOZE, SKIPPED, LATE = "ok", "error", "permanent", "snooze", "skipped", "late"


@dataclass
class Result:
    """What one run came to: small and picklable (it crosses from a worker process to the supervisor)."""

    job_id: int
    kind: str                   # ok, error, permanent, snooze, skipped (an at-most-once claim gone), late, or below
    started: float
    finished: float
    error: str | None = None    # "Type: message" and the job's last frames
    snooze: float | None = None  # seconds asked by Snooze(seconds)
    ran: float | None = None    # seconds it ran, on this host's monotonic clock (the shared clock may step)


# Kinds only the supervisor can tell:
TIMEOUT = "timeout"          # ran past its time limit: stopped, counted as a failure
CRASHED = "crashed"          # it ended its process (os._exit, a fatal signal, alone when killed): counted (3: poison)
INTERRUPTED = "interrupted"  # cut short by no fault of its own (its process died with others, the runner stopped
                             # after its grace period, its worker's runner vanished): runs again at once
VANISHED = "vanished"        # its lease ran out and its runner ran jobs in its own process: it may have killed it
UNKNOWN = "outcome unknown: check by hand, then delayq retry"
POISON_AFTER = 3
CUT_SHORT = (TIMEOUT, CRASHED, INTERRUPTED, VANISHED)     # stopped from outside: an at-most-once part's outcome unknown


def decide(job: Job, result: Result, rng: random.Random | None = None) -> tuple[str, float | None, bool]:
    """(status, next due, ended by the deadline) after one attempt.

    A failure follows the ladder and max_attempts and ends failed (alerted), also
    when the deadline stops its retries. Polling that never got its answer expires
    (TIMED_OUT, no alert): a snooze whose next poll would fall after the deadline,
    or, without a deadline, a snooze on the last allowed attempt.
    """
    kind, finished = result.kind, result.finished
    if kind == OK:
        return SUCCEEDED, None, False
    if kind == LATE:
        return TIMED_OUT, None, True
    if kind == PERMANENT or (kind in (CRASHED, VANISHED) and job.crashes + 1 >= POISON_AFTER):
        return FAILED, None, False
    if began_once(job) and kind in CUT_SHORT:
        return FAILED, None, False
    if kind == INTERRUPTED:                      # again at once: it was not the job's fault
        return PENDING, finished, False
    if kind == VANISHED:                         # again at once while attempts last
        return (FAILED, None, False) if job.attempts >= job.max_attempts else (PENDING, finished, False)
    snooze = kind == SNOOZE
    ended = TIMED_OUT if snooze else FAILED
    if job.attempts >= job.max_attempts and not (snooze and job.deadline is not None):
        return ended, None, False
    if snooze and result.snooze is not None:
        due = finished + max(0.0, float(result.snooze))
    else:
        due = finished + ladders.parse(job.ladder).delay(job.attempts, rng)
    if job.deadline is not None and due > job.deadline:
        return ended, None, True
    return PENDING, due, False


def began_once(job: Job) -> bool:
    """Whether a part that must never run twice by a machine may have run: an at-most-once job, or a job with a
    manual step marked running (as read back by recovery)."""
    return job.at_most_once or job.manual_running > 0


def outcome(job: Job, result: Result, rng: random.Random | None = None) -> Outcome:
    """The Outcome to commit for one Result (the on_timeout follow-up is added by the supervisor)."""
    status, due, by_deadline = decide(job, result, rng)
    return Outcome(job, status, result.started, result.finished, error_of(job, result, status, by_deadline), due,
                   snoozed=result.kind == SNOOZE, interrupted=result.kind in CUT_SHORT,
                   crashed=result.kind in (CRASHED, VANISHED), ended_by_deadline=by_deadline,
                   label=label(result.kind, status))


def label(kind: str, status: str) -> str | None:
    """The attempt row's outcome where it is not the job's status: interrupted, or timed out (with what came of
    its job: the failure counters count it as a retry or a failure, the time-limit counter as timed out)."""
    if kind in (INTERRUPTED, VANISHED):
        return "interrupted"
    if kind == TIMEOUT:
        return TIMEOUT_RETRY if status == PENDING else TIMEOUT_FAILED
    return None


def error_of(job: Job, result: Result, status: str, by_deadline: bool) -> str | None:
    if result.kind == LATE:
        return "deadline passed before this attempt began"
    if status == TIMED_OUT:
        return f"expired: still not done after {job.attempts} attempt(s), " + (
            "the deadline passed" if by_deadline else "max_attempts reached")
    if result.kind == SNOOZE or result.kind == OK:
        return None
    if began_once(job) and result.kind in CUT_SHORT:
        return f"{result.error}; {UNKNOWN}"
    if result.kind == VANISHED and status == FAILED:
        if job.crashes + 1 >= POISON_AFTER:
            return f"killed its runner: its runner died while running it {job.crashes + 1} times"
        return f"{result.error}; no attempts left"
    if result.kind == CRASHED and status == FAILED:
        return f"killed its runner: {result.error}"
    return result.error
