"""Run one claimed job in the current thread and say what came of it (a Result), whatever the job does.

Anything a job raises is that job's outcome, BaseException included: a job that raises
SystemExit or KeyboardInterrupt fails like any other, and its batch-mates go on. Only a job
that ends its process (os._exit, a crash in a C extension, the OOM killer) escapes this: the
supervisor handles those (supervisor.py).
"""

from __future__ import annotations

import json
import traceback
from .. import context
from ..errors import CallableRefused, Permanent, Snooze
from ..jobs import Job
from ..registry import steps_of
from ..retries import ERROR, LATE, OK, PERMANENT, SKIPPED, SNOOZE, Result
from ..steps import run_steps

MAX_ERROR = 3000          # characters of an error kept (results cross a pipe from worker to supervisor)


def describe_error(exc: BaseException) -> str:
    """'Type: message', then the job's last frames (the runner's own frame left out), bounded in size."""
    head = f"{type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)[1:][-3:]
    text = head + ("\n" + "".join(traceback.format_list(frames)).rstrip() if frames else "")
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 20] + "\n...[truncated]"


def job_args(job: Job) -> dict:
    """The stored args as keyword arguments; a row edited into something else fails for good."""
    try:
        args = json.loads(job.args_json)
    except (ValueError, RecursionError) as exc:
        raise Permanent(f"args are not valid JSON: {exc}") from None
    if not isinstance(args, dict):
        raise Permanent("args must be a JSON object")
    return args


def run_job(manager, job: Job) -> Result:
    """Begin (at-most-once), call the job with its context, and classify what it raised."""
    clock = manager.clock
    started = clock.now()
    if job.deadline is not None and started > job.deadline:    # picked up only after its deadline (a backlog)
        return Result(job.id, LATE, started, started)
    if job.at_most_once and not manager.begin(job):
        return Result(job.id, SKIPPED, started, clock.now())
    ctx = context.JobContext(job.id, job.queue, job.ext, job.attempts, job.max_attempts,
                             lambda seconds: manager.extend(job, seconds))
    token = context.enter(ctx)
    try:
        _call(manager, job)
    except BaseException as exc:  # a job's failure is data, whatever it raised
        return _failed(job, exc, started, clock.now())
    finally:
        context.leave(token)
    return Result(job.id, OK, started, clock.now())


def _call(manager, job: Job) -> None:
    target = manager.registry.resolve(job.call)
    args = job_args(job)
    if isinstance(target, type) and steps_of(target) is not None:
        run_steps(manager.store, manager.clock, job, target, args, describe_error)
    else:
        target(**args)


def _failed(job: Job, exc: BaseException, started: float, finished: float) -> Result:
    if isinstance(exc, Snooze):
        return Result(job.id, SNOOZE, started, finished, snooze=exc.seconds)
    kind = PERMANENT if isinstance(exc, (Permanent, CallableRefused)) else ERROR
    return Result(job.id, kind, started, finished, error=describe_error(exc))
