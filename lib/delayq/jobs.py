"""Jobs as values: a new job's validated spec, a stored job, an attempt, an outcome.

Validation lives here, once, for the Python API, the scripts and bulk files alike.
Times are epoch seconds (float); durations are seconds.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from . import ladders
from .errors import InvalidInput
from .registry import check_name

PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED = "pending", "running", "succeeded", "failed", "cancelled"
TIMED_OUT = "timed_out"     # the deadline ended it (polling that never got its answer): not a failure
STATUSES = (PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED, TIMED_OUT)
FINAL = (SUCCEEDED, FAILED, CANCELLED, TIMED_OUT)

MAX_EXT = 191
MAX_ARGS_BYTES = 65_535
AT_TOLERANCE = 60.0   # an --at this far in the past is still accepted (clock skew, slow scripts)
QUEUE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
SPEC_KEYS = {"call", "args", "delay", "at", "ext", "queue", "ladder", "max_attempts", "deadline", "priority", "unique",
             "lease", "on_timeout"}
QUEUE_DEFAULT_KEYS = {"ladder", "max_attempts", "lease", "priority"}
MAX_LEASE = 7 * 86400


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
    lease: float | None = None          # seconds an attempt may run; None = the queue's or DELAYQ_LEASE
    at_most_once: bool = False          # set from the code's @delayq.job(at_most_once=True)
    on_timeout: str | None = None       # callable run once (as its own job) when the deadline ends the job
    event: str | None = None            # the event code that created it (delayq.emit)
    event_id: str | None = None         # one emitted event: all its handlers' jobs share it


@dataclass
class Job:
    """A stored job, as read back from the store."""

    id: int
    queue: str
    call: str
    args_json: str
    attempts: int
    max_attempts: int
    ladder: str
    due_at: float
    status: str = RUNNING      # a claim reads back only what running the job needs
    ext: str | None = None
    deadline: float | None = None
    priority: int = 0
    at_most_once: bool = False
    lease_until: float | None = None
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

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "args_json"}
        data["args"] = self.args
        return data


@dataclass
class Attempt:
    job_id: int
    attempt: int
    started_at: float
    finished_at: float
    outcome: str            # succeeded, retry, failed
    error: str | None = None


@dataclass
class Outcome:
    """What one run of a claimed job came to, for Store.finish."""

    job: Job
    status: str              # succeeded, pending (a retry or a snooze), failed, timed_out
    started_at: float
    finished_at: float
    error: str | None = None
    due_at: float | None = None    # for a retry
    snoozed: bool = False
    label: str | None = None       # the attempt row's outcome, where it is not the status (pull mode)
    followup: JobSpec | None = None   # the on_timeout handler's job, inserted with this outcome

    @property
    def attempt_outcome(self) -> str:
        if self.label:
            return self.label
        if self.status == PENDING:
            return "snoozed" if self.snoozed else "retry"
        return self.status


def check_queue(queue: Any) -> str:
    if not isinstance(queue, str) or not QUEUE_RE.match(queue):
        raise InvalidInput(f"queue {str(queue)[:80]!r} is invalid: use 1-64 letters, digits, '_', '.' or '-'")
    return queue


def check_ext(ext: Any) -> str | None:
    if ext is None:
        return None
    if not isinstance(ext, str) or not ext:
        raise InvalidInput("ext must be a non-empty string, e.g. order:123")
    if len(ext) > MAX_EXT:
        raise InvalidInput(f"ext is {len(ext)} characters long: at most {MAX_EXT}")
    if _CONTROL_RE.search(ext):
        raise InvalidInput("ext must not contain control characters")
    return ext


def parse_args(args: Any) -> str:
    """args as given (a JSON text or a mapping) -> canonical JSON text of an object."""
    if args is None:
        return "{}"
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise InvalidInput(f"args is not valid JSON: {exc}") from None
    if not isinstance(args, Mapping):
        raise InvalidInput("args must be a JSON object, e.g. '{\"order_id\": 123}'")
    try:
        text = json.dumps(args, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"args cannot be stored as JSON: {exc}") from None
    if len(text.encode()) > MAX_ARGS_BYTES:
        raise InvalidInput(f"args is {len(text.encode())} bytes as JSON: at most {MAX_ARGS_BYTES}")
    return text


def _number(name: str, value: Any, minimum: float | None = 0) -> float:
    if isinstance(value, bool):
        raise InvalidInput(f"{name} must be a number, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a number of seconds, not {str(value)[:40]!r}") from None
    if not math.isfinite(number) or (minimum is not None and number < minimum):
        raise InvalidInput(f"{name} must be a finite number >= {minimum}, not {value!r}")
    return number


def _integer(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidInput(f"{name} must be an integer")
    try:
        number = int(value)
    except ValueError:
        raise InvalidInput(f"{name} must be an integer, not {value!r}") from None
    if not lo <= number <= hi:
        raise InvalidInput(f"{name} must be between {lo} and {hi}")
    return number


def parse_at(value: Any) -> float:
    """ISO-8601 (with a zone; a naive time is read as UTC) or epoch seconds -> epoch seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number("at", value)
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value.strip()):
        return float(value)
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"at {str(value)[:40]!r} is not an ISO-8601 time, e.g. 2026-12-01T08:00:00+08:00") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def build(raw: Mapping[str, Any], now: float, at_most_once: bool = False) -> JobSpec:
    """Validate one job given as the scripts' flags (a dict) and make its due time absolute.

    An at-most-once job (as its code declares) gets exactly one attempt.
    """
    unknown = set(raw) - SPEC_KEYS
    if unknown:
        raise InvalidInput(f"unknown key(s) {', '.join(sorted(unknown))}: use {', '.join(sorted(SPEC_KEYS))}")
    if not raw.get("call"):
        raise InvalidInput("call is required: 'package.module:function'")
    check_name(raw["call"])
    if raw.get("delay") is not None and raw.get("at") is not None:
        raise InvalidInput("give delay or at, not both")
    if raw.get("at") is not None:
        due = parse_at(raw["at"])
        if due < now - AT_TOLERANCE:
            raise InvalidInput(f"at is {now - due:.0f} s in the past; use a future time or delay")
        due = max(due, now)
    else:
        due = now + _number("delay", raw.get("delay") or 0)
    ladder = ladders.parse(raw.get("ladder"))
    max_attempts = raw.get("max_attempts")
    deadline = raw.get("deadline")
    on_timeout = raw.get("on_timeout")
    if on_timeout is not None:
        check_name(on_timeout)
        if deadline is None:
            raise InvalidInput("on_timeout needs a deadline: when the deadline passes, it runs once")
    ext = check_ext(raw.get("ext"))
    unique = bool(raw.get("unique", False))
    lease = raw.get("lease")
    if lease is not None:
        lease = _number("lease", lease)
        if not 1 <= lease <= MAX_LEASE:
            raise InvalidInput(f"lease must be between 1 second and {MAX_LEASE} seconds (7 days)")
    if unique and ext is None:
        raise InvalidInput("unique needs ext: the business key that must have one live job, e.g. --ext order:123")
    return JobSpec(
        call=raw["call"],
        args_json=parse_args(raw.get("args")),
        due_at=due,
        queue=check_queue(raw.get("queue") or "default"),
        ext=ext,
        ladder=ladder.spec,
        max_attempts=1 if at_most_once else ladder.default_max_attempts if max_attempts is None else _integer(
            "max_attempts", max_attempts, 1, 10_000),
        at_most_once=at_most_once,
        deadline=None if deadline is None else parse_deadline(deadline, now),
        priority=_integer("priority", raw.get("priority") or 0, -1000, 1000),
        unique=unique,
        lease=lease,
        on_timeout=on_timeout,
    )


def parse_deadline(value: Any, now: float) -> float:
    """Seconds from now (a number) or an absolute ISO-8601 time -> epoch seconds."""
    if isinstance(value, str) and not re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
        when = parse_at(value)
        if when <= now:
            raise InvalidInput(f"deadline {value!r} is already past")
        return when
    return now + _number("deadline", value)
