"""The words every surface uses for what a run or a job came to, and how the database spells them.

Two different things were both called "timed out". Each now has one word, the same in the run summary, the
log lines, the metrics, `list --status` (and the other filters), `show`, `stats` and the dashboard:

  timed_out  a run hit its time limit (DELAYQ_TIMEOUT, --timeout, @delayq.job(timeout=)): it was stopped and
             counts as a failure, so its job is retried on its ladder or fails for good. What a run came to,
             not a job status: as a --status filter it means "jobs whose last attempt timed out".
  expired    the job's deadline (deadline=) ended it: its next poll would have fallen after the deadline, it was
             picked up only after it, or (without a deadline) it snoozed on its last allowed attempt. A final
             status, not a failure (no alert); its on_timeout handler is queued with it.

The database keeps the spellings it had: renaming a stored value would rewrite every attempts row in a
migration. There, a job status or attempt outcome `timed_out` is the deadline's (shown `expired`), and an
attempt that hit its time limit is `timeout_retry` or `timeout_failed` (shown `timed_out`). The library's values
(Job.status, Attempt.outcome, jobs.TIMED_OUT) are the stored ones; what prints or serves them translates here,
once: give shown() stored values only (a shown `timed_out` is not the stored one).
"""

from __future__ import annotations

from typing import Iterable

from .errors import InvalidInput
from .jobs import CANCELLED, FAILED, PENDING, RUNNING, SUCCEEDED, TIMEOUT_FAILED, TIMEOUT_RETRY
from .jobs import TIMED_OUT as STORED_EXPIRED

TIMED_OUT = "timed_out"
EXPIRED = "expired"
RETRY = "retry"
STATUSES = (PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED, EXPIRED)      # a job's status, as shown
FILTER_WORDS = STATUSES + (TIMED_OUT,)                                    # what --status takes
TIME_LIMIT = (TIMEOUT_RETRY, TIMEOUT_FAILED)                              # stored outcomes shown as timed_out
_SHOWN = {STORED_EXPIRED: EXPIRED, TIMEOUT_RETRY: TIMED_OUT, TIMEOUT_FAILED: TIMED_OUT}
_STORED_STATUS = {EXPIRED: STORED_EXPIRED}


def shown(value: str) -> str:
    """A stored job status or attempt outcome as every surface shows it; any other value as it is."""
    return _SHOWN.get(value, value)


def counted_as(outcome: str) -> tuple[str, ...]:
    """The shown words a stored attempt outcome counts under: a run that hit its time limit is timed_out, and also
    retry or failed (as the run summary counts it), so that the failure counters keep every failure."""
    if outcome == TIMEOUT_RETRY:
        return TIMED_OUT, RETRY
    if outcome == TIMEOUT_FAILED:
        return TIMED_OUT, FAILED
    return (shown(outcome),)


def status_filter(values: Iterable[str] | None) -> tuple[tuple[str, ...], bool]:
    """--status words (each repeated or comma-separated) as (the stored statuses, whether the job's last attempt must
    have timed out). timed_out narrows: with other statuses, those of their jobs whose last attempt timed out.
    InvalidInput naming the words it takes."""
    words = [w.strip() for value in values or () for w in value.split(",") if w.strip()]
    bad = sorted(set(words) - set(FILTER_WORDS))
    if bad:
        raise InvalidInput(f"--status {', '.join(bad)} is unknown: use {', '.join(FILTER_WORDS)} (timed_out: jobs "
                           "whose last attempt ran past its time limit; expired: jobs their deadline ended)", "status")
    statuses = tuple(dict.fromkeys(_STORED_STATUS.get(w, w) for w in words if w != TIMED_OUT))
    return statuses, TIMED_OUT in words
