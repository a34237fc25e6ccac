"""Jobs as values: a new job's validated spec, a stored job, an attempt, an outcome.

Times are epoch seconds (float); durations are seconds. Turning raw input into a
JobSpec is validate.py's work, done once for every entry point.
"""

from __future__ import annotations

import json
import operator
import secrets
from dataclasses import dataclass, fields
from typing import Any

from . import ladders

PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED = "pending", "running", "succeeded", "failed", "cancelled"
TIMED_OUT = "timed_out"     # the deadline ended it (polling that never got its answer): not a failure. Shown as
                            # "expired" (words.py): the stored spelling, kept so that no row needs rewriting
STATUSES = (PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED, TIMED_OUT)
FINAL = (SUCCEEDED, FAILED, CANCELLED, TIMED_OUT)
# An attempt that ran past its time limit and was stopped, as its attempts row stores it: its job pending again on
# the ladder, or failed for good (the job's status says the same; the row keeps both for the counters). Both are
# shown as "timed_out" (words.py).
TIMEOUT_RETRY, TIMEOUT_FAILED = "timeout_retry", "timeout_failed"
ISOLATED = "w"              # the first letter of the claim tokens of worker and solo processes, which run nothing
                            # but jobs: when such a lease runs out, its whole runner vanished, and no job is to blame
HOLDER = 16                 # a claim token's first characters name its holder (one process, all its life); the
                            # other 16 name one claim: whatever ends a process, its rows are found by its holder
MAX_PRIORITY = 1000         # priorities run from -MAX_PRIORITY to MAX_PRIORITY; higher is claimed first


@dataclass(frozen=True)
class JobSpec:
    """A job ready to be stored: every field checked, due time absolute."""

    call: str
    args_json: str
    due_at: float
    queue: str = "default"
    ext: str | None = None
    ladder: str = ladders.DEFAULT
    max_attempts: int = 16
    deadline: float | None = None
    priority: int = 0
    unique: bool = False
    lease: float | None = None          # seconds an attempt may run before it counts as lost; None = the default
    timeout: float | None = None        # seconds an attempt may run before it is stopped; None = the default
    at_most_once: bool = False          # set from the code's @delayq.job(at_most_once=True)
    on_timeout: str | None = None       # callable run once (as its own job) when the deadline ends the job
    event: str | None = None            # the event code that created it (delayq.emit)
    event_id: str | None = None         # one emitted event: all its handlers' jobs share it
    limit_key: str | None = None        # @delayq.job(limit_key=...) of its arguments: at most limit_max run at once
    limit_max: int | None = None


@dataclass
class Job:
    """A stored job, as read back from the store (a claim reads back only what running it needs)."""

    id: int
    queue: str
    call: str
    args_json: str
    attempts: int
    max_attempts: int
    ladder: str
    due_at: float
    status: str = RUNNING
    ext: str | None = None
    deadline: float | None = None
    priority: int = 0
    at_most_once: bool = False
    lease_until: float | None = None
    lease: float | None = None
    timeout: float | None = None
    crashes: int = 0                    # times it ended the process running it (a poison pill at 3)
    solo: bool = False                  # runs alone in a process of its own (at-most-once, or a suspect of a crash)
    manual_running: int = 0             # manual steps marked running (read back by recovery only)
    token: str | None = None            # the claim that holds it, while running
    on_timeout: str | None = None
    event: str | None = None
    event_id: str | None = None
    last_error: str | None = None
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float | None = None

    @property
    def args(self) -> dict[str, Any]:
        return json.loads(self.args_json)

    def __reduce__(self) -> tuple:
        """Pickled as a tuple of its values (every claim sends its jobs to a worker process): a third of the
        default's bytes and time, which pickles the instance's dict, names and all."""
        return Job, _job_values(self)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in ("args_json", "token")}
        data["args"] = self.args
        return data


_job_values = operator.attrgetter(*(f.name for f in fields(Job)))


@dataclass
class Attempt:
    job_id: int
    attempt: int
    started_at: float
    finished_at: float
    outcome: str            # as stored: succeeded, retry, snoozed, failed, timed_out (the deadline), timeout_retry,
                            # timeout_failed (the time limit), interrupted (pull: deleted, ...); words.shown() names them
    error: str | None = None


@dataclass
class Outcome:
    """What one run of a claimed job came to, for ClaimStore.finish (the job carries its claim token)."""

    job: Job
    status: str              # succeeded, pending (a retry or a snooze), failed, timed_out
    started_at: float
    finished_at: float
    error: str | None = None
    due_at: float | None = None    # for a retry
    snoozed: bool = False
    label: str | None = None       # the attempt row's outcome, where it is not the status (pull mode)
    followup: JobSpec | None = None   # the on_timeout handler's job, inserted with this outcome
    interrupted: bool = False      # stopped from outside (time limit, a dead worker, shutdown): its running steps
                                   # go back to pending (auto) or fail as outcome unknown (manual)
    crashed: bool = False          # it ended its process: counted (a poison pill at 3)
    ended_by_deadline: bool = False
    solo: bool = False             # from now on it runs alone: its process died under it with others

    @property
    def attempt_outcome(self) -> str:
        if self.label:
            return self.label
        if self.status == PENDING:
            return "snoozed" if self.snoozed else "retry"
        return self.status


def new_holder(kind: str) -> str:
    """A holder's name: `kind` (ISOLATED for a process that runs nothing but jobs), then random characters."""
    return kind + secrets.token_hex(HOLDER // 2)[:HOLDER - len(kind)]


def claim_token(holder: str) -> str:
    """A new claim's token: its holder, then random characters (32 in all: the column's size)."""
    return holder + secrets.token_hex(8)
