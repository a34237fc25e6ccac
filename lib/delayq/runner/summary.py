"""What a run of the runner came to (one summary line), and one log line per job outcome."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .. import words
from ..jobs import FAILED, PENDING, SUCCEEDED, TIMED_OUT, Outcome

log = logging.getLogger("delayq.runner")


@dataclass
class Summary:
    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    snoozed: int = 0       # "not yet": rescheduled on the ladder, not a failure
    failed: int = 0
    expired: int = 0       # the deadline ended them (their on_timeout handler is queued)
    timed_out: int = 0     # ran past their time limit and were stopped (counted in retried or failed too)
    crashed: int = 0       # their worker process died while they ran alone (counted in retried or failed too)
    lost: int = 0          # outcome not written: the claim's lease was taken over meanwhile
    skipped: int = 0       # at-most-once jobs not begun because their claim was already gone
    handed_back: int = 0   # claimed but not started when the runner stopped: pending again at once
    passes: int = 0        # claims made

    def add(self, other: "Summary") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def count(self, held: set[int], outcomes: list[Outcome]) -> None:
        """Count committed outcomes (those whose claim still held)."""
        for outcome in outcomes:
            if outcome.job.id not in held:
                self.lost += 1
            elif outcome.status == SUCCEEDED:
                self.succeeded += 1
            elif outcome.status == PENDING and outcome.snoozed:
                self.snoozed += 1
            elif outcome.status == PENDING:
                self.retried += 1
            elif outcome.status == TIMED_OUT:     # stored spelling of expired
                self.expired += 1
            else:
                self.failed += 1

    def add_counts(self, counts: dict[str, int]) -> None:
        for name, n in counts.items():
            setattr(self, name, getattr(self, name) + n)

    def count_recovered(self, done: list) -> None:
        """Jobs of a dead process, as recovery wrote them (recovery.Recovered)."""
        for r in done:
            if r.kind is None:
                self.handed_back += 1
                continue
            self.crashed += r.kind == "crashed"
            self.timed_out += r.kind == "timeout"
            if r.status == SUCCEEDED:
                self.succeeded += 1
            elif r.status == PENDING:
                self.retried += 1
            elif r.status == TIMED_OUT:
                self.expired += 1
            else:
                self.failed += 1

    @property
    def busy(self) -> bool:
        return bool(self.claimed or self.handed_back or self.lost)

    def line(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.__dict__.items())


class _Line:
    """key=value text of a log line, built only if a handler without our formatter asks for the message."""

    def __init__(self, fields: dict):
        self.fields = fields

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.fields.items())


def log_outcome(outcome: Outcome, kind: str) -> None:
    status = outcome.status
    level = logging.WARNING if status == FAILED else logging.INFO
    if not log.isEnabledFor(level):
        return
    job = outcome.job
    shown = ("snoozed" if outcome.snoozed else "retry") if status == PENDING else words.shown(status)
    fields = {"job": job.id, "queue": job.queue, "call": job.call, "attempt": job.attempts, "outcome": shown,
              "ms": round((outcome.finished_at - outcome.started_at) * 1000, 1)}
    if outcome.error and not outcome.snoozed:
        fields["error"] = outcome.error.split(":", 1)[0].split("\n", 1)[0][:60]
    if kind not in ("ok", "error", "permanent", "snooze", "late"):
        # timed_out, crashed, interrupted: the runner's verdict, not the job's (its kind "timeout" is timed_out)
        fields["by"] = words.TIMED_OUT if kind == "timeout" else kind
    log.log(level, "%s", _Line(fields), extra={"fields": fields})
