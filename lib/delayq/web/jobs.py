"""The job search (keyset pages: the next page's link carries before=<the last id>, never an OFFSET) and a job's
page: its arguments, every attempt with its duration and whole traceback, the ladder with the times of the next
attempts, the deadline, its steps, and an "outcome unknown" warning saying what to check."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flask import Flask, abort, current_app, render_template, request

from .. import ladders, words
from ..errors import InvalidInput
from ..jobs import FAILED, PENDING
from ..search import JobFilter
from . import display, forms
from .schedules import of_job

TOTAL_UPTO = 10_000     # a search's total is counted this far at most (a bounded read however big the table)
SCAN_WINDOW = 10_000    # ids a page of a scanning search reads at most (text in the error, an argument)


def search() -> Any:
    manager = current_app.extensions["delayq"]
    now = manager.clock.now()
    error, rows, f, more, total, window = None, [], JobFilter(), None, None, None
    try:
        f = forms.job_filter(request.args, now)
        before, limit = forms.page(request.args)
        if f.scans:      # no index narrows it: a page reads one window of ids, and "older" goes on below it
            top = before if before is not None else manager.reports.newest_job_id() + 1
            f = replace(f, above_id=max(0, top - 1 - SCAN_WINDOW), upto_id=top - 1)    # its total: that window
            window = (f.above_id + 1, top - 1)
        rows = manager.reports.search(f, before=before, limit=limit + 1)     # one more: is there a next page?
        more = rows[limit - 1]["id"] if len(rows) > limit else None
        if window is not None and more is None and window[0] > 1:
            more = window[0]
        rows = rows[:limit]
        total = manager.reports.count_upto(f, TOTAL_UPTO + 1) if not f.empty else None   # "more than 10,000" past that
    except InvalidInput as exc:
        error = forms.in_page_words(str(exc))
    given = forms.fields(request.args)
    return render_template("jobs.html", rows=rows, error=error, now=now, given=given, more=more, total=total,
                           total_upto=TOTAL_UPTO, window=window,
                           described=f.describe(), filtered=not f.empty, args=request.args, statuses=words.FILTER_WORDS,
                           time_fields=("due", "created", "finished"),
                           first_page=bool(request.args.get("before"))), 400 if error else 200


def job_page(job_id: int) -> Any:
    manager = current_app.extensions["delayq"]
    job = manager.reports.get(job_id)
    if job is None:
        abort(404, f"no job with id {job_id}")
    now = manager.clock.now()
    attempts = manager.reports.attempts(job_id)
    steps = manager.reports.steps(job_id)
    upcoming, more = ([], 0)
    if job.status == PENDING:
        upcoming, more = ladders.upcoming(job.ladder, job.attempts, job.max_attempts, job.due_at, job.deadline)
    unknown = [name for name, error in [("the job", job.last_error)] + [(f"step {s.name}", s.last_error) for s in steps]
               if display.outcome_unknown(error)] if job.status == FAILED else []
    return render_template("job.html", job=job, now=now, attempts=attempts, steps=steps, upcoming=upcoming, more=more,
                           ladder=ladder_text(job.ladder), unknown=unknown, schedule=of_job(job.ext),
                           failed_steps=[s.name for s in steps if s.status in ("failed", "running")],
                           can_retry=job.status == FAILED, can_cancel=job.status == PENDING,
                           can_run_now=job.status == PENDING and job.due_at > now)


def ladder_text(spec: str) -> str:
    """The ladder's steps as durations: 'wechat: 15s, 15s, 30s, 3m, ...'."""
    try:
        ladder = ladders.parse(spec)
    except InvalidInput:
        return spec
    steps = ", ".join(display.span(s) for s in ladder.steps[:20]) + (", ..." if len(ladder.steps) > 20 else "")
    jitter = " (each step between half and all of it: jitter)" if ladder.exp_cap is not None else ""
    return f"{spec}: {steps}{jitter}, then the last step again"


def register(app: Flask) -> None:
    app.add_url_rule("/jobs", "jobs", search)
    app.add_url_rule("/jobs/<int:job_id>", "job", job_page)
