"""Recurring schedules, declared in the application's code beside its jobs (no scheduler process).

    import delayq

    @delayq.job
    def poll_payments() -> None: ...

    delayq.schedule("poll-payments", poll_payments, every="1m")
    delayq.schedule("nightly-report", "shop.reports:nightly", cron="0 3 * * *", tz="Europe/Berlin",
                    args={"kind": "daily"}, queue="reports")

The modules that declare them are named in DELAYQ_SCHEDULE_MODULES (each under DELAYQ_ALLOWED_MODULES); every
`run-due` imports them and, on each pass, enqueues the slots that have come due (scheduler.py). One job per slot,
however many runners on however many hosts: the database says which slot is taken (a unique key on schedule and
slot). The job carries the ext `schedule:NAME:SLOT`, SLOT the slot's time in ISO-8601 with its offset in the
schedule's zone, and is found, shown and cancelled like any job.

Options:
  overlap    False (default): while the schedule's previous job is pending or running, a slot is skipped (counted);
             True: every slot runs.
  catch_up   what runs of the slots that came due while no runner looked (more than ON_TIME seconds ago: after
             downtime): "latest" (default: only the most recent of them, and only if no slot is on time), "none"
             (none of them), "all" (each of them, at most `catch_up_limit`, the most recent ones). The rest are
             counted missed.
  queue, priority, ladder, max_attempts, timeout: the job's, as enqueue's.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Mapping
from zoneinfo import ZoneInfo

from . import validate
from .cron import Cron, Every, zone
from .errors import CallableRefused, DelayqError, InvalidInput
from .registry import check_name, is_allowed, name_of

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
CATCH_UP = ("latest", "none", "all")
JOB_OPTIONS = {"queue", "priority", "ladder", "max_attempts", "timeout"}
ON_TIME = 10          # seconds: a slot at most this old when a runner looks is on time; older ones were missed
LOOK_BACK = 8 * 86400  # slots further back than this are not enumerated after downtime (counted from there)
EXT_PREFIX = "schedule:"
_declared: dict[str, "Schedule"] = {}


@dataclass(frozen=True)
class Schedule:
    """One declared schedule: `when` (a Cron or an Every) in `tz`, and the job it enqueues."""

    name: str
    call: str
    when: Cron | Every
    tz: ZoneInfo
    args: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    overlap: bool = False
    catch_up: str = "latest"
    catch_up_limit: int = 10
    module: str = ""        # the module that declared it

    @property
    def spec(self) -> str:
        return self.when.text

    def after(self, t: float) -> Any:
        """Its slots after epoch second t (an iterator, in order)."""
        return self.when.after(t, self.tz)

    def next_slot(self, t: float) -> int:
        return next(iter(self.after(t)))

    def ext(self, slot: int) -> str:
        return f"{EXT_PREFIX}{self.name}:{slot_text(slot, self.tz)}"

    def job(self, slot: int) -> dict[str, Any]:
        """The job of one slot, as enqueue's keys (the scheduler validates it and sets its due time to the slot)."""
        return {"call": self.call, "args": dict(self.args), "ext": self.ext(slot), **self.options}


def slot_text(slot: int, tz: ZoneInfo) -> str:
    """A slot as ISO-8601 with its offset in the schedule's zone: 2026-03-29T03:00:00+02:00."""
    return datetime.fromtimestamp(slot, tz).isoformat()


def shown_slot(slot: int | None, tz: str | None) -> str | None:
    """A slot as operators read it: in its schedule's zone (as its jobs' ext shows it), in local time for a schedule
    removed from the code (its zone is no longer known); None for none."""
    if slot is None:
        return None
    if tz:
        return slot_text(slot, zone(tz))
    return datetime.fromtimestamp(slot).astimezone().isoformat()


def schedule(name: str, call: str | Callable[..., Any], *, cron: str | None = None, every: Any = None,
             tz: str = "UTC", args: Mapping[str, Any] | None = None, overlap: bool = False,
             catch_up: str = "latest", catch_up_limit: int = 10, **options: Any) -> Schedule:
    """Declare a recurring schedule (see the module's docstring); returns it. A mistake in the declaration
    (an unknown option, a bad cron expression, a name used twice by different code) raises at import."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidInput(f"schedule name {name!r} is invalid: use 1-100 letters, digits, '_', '.' or '-'", "name")
    unknown = set(options) - JOB_OPTIONS
    if unknown:
        raise TypeError(f"delayq.schedule({name!r}): unknown option(s) {', '.join(sorted(unknown))}; "
                        f"a job option is one of {', '.join(sorted(JOB_OPTIONS))}")
    if (cron is None) == (every is None):
        raise TypeError(f"delayq.schedule({name!r}): give cron= or every=, one of them")
    if catch_up not in CATCH_UP:
        raise InvalidInput(f"schedule {name!r}: catch_up must be one of {', '.join(CATCH_UP)}", "catch_up")
    limit = validate.integer(catch_up_limit, "catch_up_limit", 1, 1000)
    when: Cron | Every = (Cron.parse(cron, f"schedule {name!r} cron") if cron is not None
                          else Every(int(validate.duration(every, f"schedule {name!r} every", 1, 366 * 86400))))
    call_name = call if isinstance(call, str) else name_of(call)
    check_name(call_name)
    if args is not None and not isinstance(args, Mapping):
        raise InvalidInput(f"schedule {name!r}: args must be a dict of the job's keyword arguments", "args")
    validate.args_json(dict(args or {}))
    found = Schedule(name, call_name, when, zone(tz, f"schedule {name!r} tz"), dict(args or {}), dict(options),
                     bool(overlap), catch_up, limit, _caller_module())
    before = _declared.get(name)
    if before is not None and before.module != found.module:
        raise InvalidInput(f"schedule {name!r} is declared twice: in {before.module} and {found.module}", "name")
    _declared[name] = found
    return found


def _caller_module() -> str:
    frame = sys._getframe(2)
    return str(frame.f_globals.get("__name__", ""))


def load(modules: tuple[str, ...], allowed: tuple[str, ...]) -> dict[str, Schedule]:
    """Import `modules` (each under `allowed`) and return the schedules they declared, by name."""
    for name in modules:
        if not is_allowed(name, allowed):
            raise CallableRefused(f"schedule module {name!r} is not under DELAYQ_ALLOWED_MODULES")
        try:
            importlib.import_module(name)
        except DelayqError as exc:       # a declaration refused (a bad cron expression, a name used twice)
            raise type(exc)(f"schedule module {name!r}: {exc}") from None
        except Exception as exc:         # ImportError, a SyntaxError, an unknown option (TypeError): one line
            raise InvalidInput(f"schedule module {name!r} cannot be imported: {type(exc).__name__}: {exc}") from None
    return {s.name: s for s in _declared.values() if is_allowed(s.module, modules)}


@dataclass(frozen=True)
class State:
    """A schedule's row as the scheduler reads it under its lock."""

    last_slot: float                 # the latest slot taken (run, skipped or missed), epoch seconds
    last_job: int | None = None
    last_status: str | None = None   # the status of that job now
    paused: bool = False


@dataclass(frozen=True)
class Plan:
    """What one look at a schedule does: run these slots, count these, move last_slot here."""

    last_slot: float
    run: tuple[int, ...] = ()
    skipped: int = 0                 # not run: the previous job still pending or running, or (no overlap) a newer
                                     # slot of the same look ran instead
    missed: int = 0                  # not run: they came due while no runner ran


def plan(schedule: Schedule, state: State, now: float) -> Plan:
    """What comes of each slot due in (state.last_slot, now]: run, skipped or missed, each slot exactly one (see
    the module's docstring). Pure.

    A slot at most ON_TIME seconds old is on time: it runs (a runner's look may be that late on a loaded machine).
    Older slots came due while no runner looked: catch_up says which of them run. Without overlap, one look
    enqueues one job, the newest (catch_up="all" excepted), and none while the previous job is pending or running.
    """
    since = max(state.last_slot, now - LOOK_BACK)
    due: list[int] = []
    for slot in schedule.after(since):
        if slot > now:
            break
        due.append(slot)
    if not due:     # (after more than LOOK_BACK down: the slots before `since` are gone; its next is after it)
        return Plan(max(state.last_slot, since))
    newest = due[-1]
    if state.paused:
        return Plan(newest)
    recent = [slot for slot in due if slot >= now - ON_TIME]
    stale = due[:len(due) - len(recent)]
    if schedule.catch_up == "all":
        run = due[-schedule.catch_up_limit:]
    elif schedule.catch_up == "latest":
        run = recent or stale[-1:]
    else:
        run = recent
    missed = len(due) - len(run)
    if schedule.overlap:
        return Plan(newest, tuple(run), missed=missed)
    if state.last_status in ("pending", "running"):
        return Plan(newest, skipped=len(run), missed=missed)
    if schedule.catch_up != "all":
        return Plan(newest, tuple(run[-1:]), skipped=max(len(run) - 1, 0), missed=missed)
    return Plan(newest, tuple(run), missed=missed)
