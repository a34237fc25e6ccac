"""The schedules page: every recurring schedule (schedules.py) declared in DELAYQ_SCHEDULE_MODULES or once run by
a runner, with its rule, zone, job, next and last slot, last job and its outcome, and what came of its slots
(scheduler.status). Its Pause and Resume buttons are POSTs in actions.py. The modules are imported here as run-due
imports them; one that cannot be is one message on the page."""

from __future__ import annotations

from typing import Any

from flask import Flask, current_app, render_template

from .. import config, scheduler, schedules
from ..errors import DelayqError
from ..schedules import Schedule


def declared(modules: tuple[str, ...] | None = None) -> dict[str, Schedule]:
    """The schedules the modules of DELAYQ_SCHEDULE_MODULES (default: schedule_modules()) declare, each module
    under the manager's DELAYQ_ALLOWED_MODULES, by name. InvalidInput, in one line, for a module that is refused
    or cannot be imported, whatever it raised."""
    modules = schedule_modules() if modules is None else modules
    return schedules.load(modules, current_app.extensions["delayq"].registry.allowed)


def schedule_modules() -> tuple[str, ...]:
    """DELAYQ_SCHEDULE_MODULES as the dashboard was given it, or (not given) as the environment and .env say."""
    given = current_app.extensions["delayq.settings"].schedule_modules
    return tuple(given) if given is not None else config.load().schedule_modules


def page() -> Any:
    manager = current_app.extensions["delayq"]
    error, rows, modules = None, [], ()
    try:
        modules = schedule_modules()
        rows = scheduler.status(manager, declared(modules))
    except DelayqError as exc:              # a module refused or not importable: one line on the page
        error = str(exc)
    return render_template("schedules.html", rows=rows, error=error, modules=modules, now=manager.clock.now(),
                           ext_prefix=schedules.EXT_PREFIX)


def slot(at: int | None, tz: str | None) -> str:
    """A slot as its jobs' business keys show it (schedules.shown_slot), "-" for none."""
    return schedules.shown_slot(at, tz) or "-"


def of_job(ext: str | None) -> str | None:
    """The schedule whose slot a job is (its ext: schedule:NAME:SLOT), or None (any other business key, or one
    that only looks like it)."""
    if not ext or not ext.startswith(schedules.EXT_PREFIX):
        return None
    name = ext[len(schedules.EXT_PREFIX):].partition(":")[0]     # a name has no ':', its slot's time does
    return name if schedules.NAME_RE.match(name) else None


def register(app: Flask) -> None:
    app.jinja_env.filters["slot"] = slot
    app.add_url_rule("/schedules", "schedules", page)
