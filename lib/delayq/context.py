"""What a running job may know about itself, without changing its signature."""

from __future__ import annotations

import contextvars
from typing import Callable, NamedTuple

_current: contextvars.ContextVar["JobContext | None"] = contextvars.ContextVar("delayq_job", default=None)


class JobContext(NamedTuple):
    """What a running job may know about itself: read-only (a tuple: made for every job, so cheaply)."""

    id: int
    queue: str
    ext: str | None
    attempt: int
    max_attempts: int
    extend_lease: Callable[[float], bool] = lambda seconds: False

    def extend(self, seconds: float) -> bool:
        """Ask for `seconds` more before this attempt's lease runs out, counted from now.

        A long job calls this now and then; False means the claim is gone
        (recovery took the job over) and the job should stop.
        """
        return self.extend_lease(seconds)

    def __repr__(self) -> str:
        return (f"JobContext(id={self.id}, queue={self.queue!r}, ext={self.ext!r}, attempt={self.attempt}, "
                f"max_attempts={self.max_attempts})")


def current_job() -> JobContext | None:
    """The job being run in this thread, or None outside a job."""
    return _current.get()


def enter(ctx: JobContext) -> contextvars.Token:
    return _current.set(ctx)


def leave(token: contextvars.Token) -> None:
    _current.reset(token)
