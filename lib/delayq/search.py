"""Which jobs an operator means: one filter for list, the bulk actions (retry, cancel, purge) and the web search.

A JobFilter is a value; validate it once with `JobFilter.checked()`. The store turns each
set field into one named SQL fragment (store/sql/queries.sql, "filter_*") and joins them with
AND, so every combination uses bound parameters and the indexes a fragment can use.
Results come in keyset pages (id below the last one seen): no OFFSET scans, bounded memory.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import datetime

from . import validate, words
from .errors import InvalidInput
from .jobs import STATUSES

TIME_FIELDS = {"due": "due_at", "created": "created_at", "finished": "finished_at"}
MAX_PAGE = 10_000
ARG_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_AGO_RE = re.compile(r"^\s*(\d+(\.\d+)?\s*[smhd])(\s+ago)?\s*$")      # 2h, or 2h ago (the help's own form)


@dataclass(frozen=True)
class JobFilter:
    ids: tuple[int, ...] = ()
    queues: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()       # as stored (jobs.STATUSES); words.status_filter() reads what a user typed
    call: str | None = None              # a callable's name, or a prefix ending with ':' or '.' (a module)
    ext: str | None = None               # one business key, exactly
    ext_prefix: str | None = None        # business keys starting with this (matched literally)
    since: float | None = None           # epoch seconds, inclusive, on `time_field`
    until: float | None = None           # epoch seconds, exclusive, on `time_field`
    time_field: str = "due"              # due, created or finished
    error: str | None = None             # text found in the last error (a scan: combine with other filters)
    timed_out: bool = False              # only jobs whose last attempt ran past its time limit (--status timed_out)
    arg: tuple[str, str] | None = None   # (key, value): a top-level argument equal to value, as text (a scan)
    upto_id: int | None = None           # a preview's snapshot: jobs that existed then (id at most this)...
    as_of: float | None = None           # ...and have not changed since (updated at or before this)
    above_id: int | None = None          # a scan's window: only jobs with a larger id (the dashboard's bounded scan)

    def checked(self) -> "JobFilter":
        """The same filter with every field validated, or InvalidInput naming the field."""
        for job_id in self.ids:
            if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id < 1:
                raise InvalidInput(f"--id must be a positive integer, not {job_id!r}", "id")
        for queue in self.queues:
            validate.queue(queue, "--queue", tube=True)
        bad = set(self.statuses) - set(STATUSES)
        if bad:
            raise InvalidInput(f"--status {', '.join(sorted(bad))} is unknown: use {', '.join(STATUSES)}", "status")
        if self.time_field not in TIME_FIELDS:
            raise InvalidInput(f"time field {self.time_field!r} is unknown: use due, created or finished", "time_field")
        if self.arg is not None:
            key, value = self.arg
            if not ARG_KEY.fullmatch(key or ""):
                raise InvalidInput(f"an argument's name is letters, digits and _ (64 at most), not {key[:70]!r}", "arg")
            _text(value, "the argument's value", 200)
        if self.upto_id is not None and (isinstance(self.upto_id, bool) or not isinstance(self.upto_id, int)
                                         or self.upto_id < 0):
            raise InvalidInput(f"the preview's last id must be a whole number, not {self.upto_id!r}", "upto_id")
        if self.above_id is not None and (isinstance(self.above_id, bool) or not isinstance(self.above_id, int)
                                          or self.above_id < 0):
            raise InvalidInput(f"a scan's lowest id must be a whole number, not {self.above_id!r}", "above_id")
        if self.as_of is not None and not math.isfinite(self.as_of):
            raise InvalidInput("the preview's time must be a finite number of seconds", "as_of")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise InvalidInput("--since must be before --until", "since")
        return replace(self, call=_text(self.call, "--call", 255), ext=validate.ext(self.ext, "--ext"),
                       ext_prefix=validate.ext(self.ext_prefix, "--ext-prefix"), error=_text(self.error, "--error", 200))

    def describe(self) -> str:
        """The set fields in words, for messages: "queue 'sms', status failed"."""
        parts = [f"id {', '.join(map(str, self.ids))}" if self.ids else "",
                 f"queue {', '.join(map(repr, self.queues))}" if self.queues else "",
                 f"status {', '.join(words.shown(s) for s in self.statuses)}" if self.statuses else "",
                 f"last attempt {words.TIMED_OUT}" if self.timed_out else "",
                 f"call {self.call!r}" if self.call else "", f"ext {self.ext!r}" if self.ext is not None else "",
                 f"ext prefix {self.ext_prefix!r}" if self.ext_prefix is not None else "",
                 f"{self.time_field} time from {_when(self.since)}" if self.since is not None else "",
                 f"{self.time_field} time before {_when(self.until)}" if self.until is not None else "",
                 f"error containing {self.error!r}" if self.error else "",
                 f"argument {self.arg[0]} = {self.arg[1]!r}" if self.arg is not None else "",
                 f"as previewed (id up to {self.upto_id}, unchanged since {_when(self.as_of)})"
                 if self.upto_id is not None and self.as_of is not None else ""]
        return ", ".join(part for part in parts if part) or "every job"

    @property
    def empty(self) -> bool:
        """No field set: every job matches (a bulk action refuses this unless told otherwise). A preview's snapshot
        alone does not count: it narrows a filter, it is not one."""
        return replace(self, upto_id=None, as_of=None, above_id=None) == JobFilter(time_field=self.time_field)

    @property
    def scans(self) -> bool:
        """It reads every row the other fields leave (text in the last error, an argument) and no exact key (ids,
        a business key) narrows those rows to a few."""
        return (self.error is not None or self.arg is not None) and not self.ids and self.ext is None


def _when(t: float) -> str:
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")


def when(value: str | None, flag: str, now: float) -> float | None:
    """A --since/--until value as epoch seconds: an age before now (2h, 2h ago), ISO-8601, or epoch seconds."""
    if value is None:
        return None
    age = _AGO_RE.match(value)
    if age:
        return now - validate.duration(age.group(1), flag)
    return validate.instant(value, flag)


def arg_filter(text: str | None, label: str) -> tuple[str, str] | None:
    """'order_id=123' (a form's field, a flag's value) as JobFilter.arg; `label` names it in the error."""
    if text is None:
        return None
    key, eq, value = text.partition("=")
    if not eq:
        raise InvalidInput(f"{label} is name=value, e.g. order_id=123, not {text[:40]!r}", "arg")
    return key.strip(), value.strip()


def _text(value: str | None, field_name: str, limit: int) -> str | None:
    if value is None:
        return None
    if not value:
        raise InvalidInput(f"{field_name} must not be empty", field_name)
    return validate.text(value, field_name, limit)
