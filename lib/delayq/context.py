"""What a running job may know about itself, without changing its signature."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Callable

_current: contextvars.ContextVar["JobContext | None"] = contextvars.ContextVar("delayq_job", default=None)


@dataclass(frozen=True)
class JobContext:
    id: int
    queue: str
    ext: str | None
    attempt: int
    max_attempts: int
    _extend: Callable[[float], bool] = field(default=lambda seconds: False, repr=False, compare=False)

    def extend(self, seconds: float) -> bool:
        """Ask for `seconds` more before this attempt's lease runs out, counted from now.

        A long job calls this now and then; False means the claim is gone
        (recovery took the job over) and the job should stop.
        """
        return self._extend(seconds)


def current_job() -> JobContext | None:
    """The job being run in this thread, or None outside a job."""
    return _current.get()


def enter(ctx: JobContext) -> contextvars.Token:
    return _current.set(ctx)


def leave(token: contextvars.Token) -> None:
    _current.reset(token)
