"""Every change made from the dashboard: a POST (CSRF-checked in security.py) that calls one manager verb (or the
scheduler's pause or resume, for a schedule), writes one audit row (when, from which address, who, what, how many
jobs; refusals too, with why), then redirects to a page that shows the outcome. Bulk actions first show what they
would do (bulk.preview) on a confirmation page; only its form acts."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable

from flask import Flask, abort, current_app, flash, g, redirect, render_template, request, url_for

from .. import bulk, scheduler, words
from ..bulk import BulkResult, done_text, dry_text
from ..errors import BackendError, DelayqError, InvalidInput, NotFound
from ..search import JobFilter
from . import forms
from . import schedules as schedule_pages
from .display import as_params

BULK = {"retry": "retried", "cancel": "cancelled", "purge": "deleted"}


def manager() -> Any:
    return current_app.extensions["delayq"]


def audit(action: str, target: str, jobs: int, detail: str | None = None) -> None:
    manager().control.record_action(request.remote_addr or "?", g.actor or "?", action, target, jobs, detail)


def act(action: str, target: str, back: str, do: Callable[[], tuple[int, str]]) -> Any:
    """Run one verb; flash and audit what it did, or why it refused (a DelayqError's one line)."""
    try:
        jobs, text = do()
    except BackendError:
        raise
    except DelayqError as exc:
        audit(action, target, 0, f"refused: {exc}")
        flash(forms.in_page_words(str(exc)), "error")
        return redirect(back)
    audit(action, target, jobs, text)
    flash(text, "ok")
    return redirect(back)


def confirmation(job_id: int, verb: str, step: str | None = None) -> Any:
    """The page that asks first, for a job whose second run could do harm (it runs at most once: a refund, a
    gift) and for a manual step (a person's work): None when the form says it was confirmed, or nothing asks."""
    if request.form.get("confirmed") == "yes":
        return None
    job = manager().reports.get(job_id)
    if job is None:
        return None                        # the verb says what is wrong
    if step and any(s.name == step and s.mode == "manual" for s in manager().reports.steps(job_id)):
        why = (f"Step {step} of job {job_id} is a manual step: a person's work. Retrying it runs it again: check "
               "that it did not take effect (or that doing it twice is harmless) first.")
    elif job.at_most_once and not step:
        why = (f"Job {job_id} runs at most once: a second run could pay or send twice. " + (
            "Check that its last run did not take effect (the payment, the message) before retrying it." if
            verb == "retry" else "Cancelling it means it never runs: make sure nothing waits for it."))
    else:
        return None
    return render_template("confirm_job.html", job=job, verb=verb, step=step, why=why,
                           action=url_for(verb, job_id=job_id), back=url_for("job", job_id=job_id))


def retry(job_id: int) -> Any:
    step = request.form.get("step") or None
    target = f"job {job_id}" + (f" step {step}" if step else "")
    asked = confirmation(job_id, "retry", step)
    if asked is not None:
        return asked

    def do() -> tuple[int, str]:
        ids = manager().retry(job_id=job_id, step=step)
        return len(ids), f"retried {target}: pending again, due now"
    return act("retry_step" if step else "retry", target, url_for("job", job_id=job_id), do)


def cancel(job_id: int) -> Any:
    asked = confirmation(job_id, "cancel")
    if asked is not None:
        return asked

    def do() -> tuple[int, str]:
        result = manager().cancel(job_id=job_id)
        if not result.cancelled:
            raise InvalidInput(f"job {job_id} is {words.shown(result.untouched[0][1])}: only a pending job can be "
                               "cancelled")
        return len(result.cancelled), f"cancelled job {job_id}"
    return act("cancel", f"job {job_id}", url_for("job", job_id=job_id), do)


def run_now(job_id: int) -> Any:
    def do() -> tuple[int, str]:
        job = manager().run_now(job_id)
        return 1, f"job {job.id} is due now: the next runner pass on queue {job.queue} runs it"
    return act("run_now", f"job {job_id}", url_for("job", job_id=job_id), do)


def bulk_confirm(action: str) -> Any:
    check_action(action)
    if current_app.extensions["delayq.settings"].read_only:
        abort(403, "the dashboard runs read-only (--read-only): no bulk action")
    preview, error, snapshot = None, None, []
    try:
        f = forms.job_filter(request.args, manager().clock.now())
        described = f.describe()
        # the jobs as they are now: the confirmation acts on these only (not on a filter run again later)
        f = replace(f, upto_id=manager().reports.newest_job_id(), as_of=manager().clock.now())
        preview = bulk.preview(manager(), action, f)
        snapshot = [("upto_id", str(f.upto_id)), ("as_of", repr(f.as_of)), ("expected", str(preview.total))]
    except InvalidInput as exc:
        error, described = forms.in_page_words(str(exc)), ""
    return render_template("confirm.html", action=action, preview=preview, error=error, described=described,
                           given=forms.fields(request.args) + snapshot,
                           summary=dry_text(action, preview) if preview else "",
                           back=url_for("jobs", **as_params(forms.fields(request.args)))), 400 if error else 200


def bulk_run(action: str) -> Any:
    check_action(action)
    given = forms.fields(request.form)
    back = url_for("jobs", **as_params(given))
    try:
        f = forms.job_filter(request.form, manager().clock.now())
        expected = forms.count(request.form.get("expected"), "expected")     # what the preview showed
    except InvalidInput as exc:
        flash(forms.in_page_words(str(exc)), "error")
        return redirect(back)
    target = f"filter: {f.describe()}"

    def do() -> tuple[int, str]:
        result: BulkResult = getattr(bulk, action)(manager(), f)
        gone = expected - result.total if f.upto_id is not None and expected > result.total else 0
        since = f" ({gone:,} of the {expected:,} confirmed left alone: they changed since the preview)" if gone else ""
        return result.total, done_text(action, result) + _per_queue(result) + since
    return act(f"bulk_{action}", target, back, do)


def pause() -> Any:
    queue = (request.form.get("queue") or "").strip()
    reason = (request.form.get("reason") or "").strip() or None

    def do() -> tuple[int, str]:
        if queue and not manager().reports.search(JobFilter(queues=(queue,)), limit=1):   # a typo: no phantom pause
            raise InvalidInput(f"queue {queue[:64]!r} has no job: nothing to pause (the command line can pause a "
                               "queue before its first job: delayq pause)", "queue")
        new = manager().control.pause(queue, reason)
        return 0, (f"paused queue {queue}" if new else f"queue {queue} was paused already") + (
            f" ({reason})" if reason else "") + ": runners stop claiming its jobs within a second"
    return act("pause", f"queue {queue}", url_for("overview"), do)


def resume() -> Any:
    queue = (request.form.get("queue") or "").strip()

    def do() -> tuple[int, str]:
        if not manager().control.resume(queue):
            raise InvalidInput(f"queue {queue} is not paused")
        return 0, f"resumed queue {queue}: runners claim its jobs again"
    return act("resume", f"queue {queue}", url_for("overview"), do)


def pause_schedule() -> Any:
    name = schedule_name()

    def do() -> tuple[int, str]:
        if scheduler.pause(manager(), schedule_pages.declared(), name):
            return 0, f"paused schedule {name}: no runner enqueues its slots until it is resumed"
        return 0, f"schedule {name} was paused already"
    return act("pause", f"schedule {name}", url_for("schedules"), do)


def resume_schedule() -> Any:
    name = schedule_name()

    def do() -> tuple[int, str]:
        if not scheduler.resume(manager(), schedule_pages.declared(), name):
            raise InvalidInput(f"schedule {name} is not paused")
        return 0, f"resumed schedule {name}: its next slot runs (none of those that passed while it was paused)"
    return act("resume", f"schedule {name}", url_for("schedules"), do)


def schedule_name() -> str:
    """The form's schedule name, cut at 101 characters: a name has 100 at most, so a longer one stays unknown, and
    the messages and audit row that quote it stay short."""
    return (request.form.get("name") or "").strip()[:101]


def audit_page() -> Any:
    try:
        at = forms.seconds(request.args.get("before"), "before")      # nan, inf, 1e400: refused, never sent on
    except InvalidInput as exc:
        abort(400, str(exc))
    rows = manager().reports.actions(before=at, limit=100)
    return render_template("audit.html", rows=rows, more=rows[-1]["at"] if len(rows) == 100 else None)


def check_action(action: str) -> None:
    if action not in BULK:
        abort(404, f"no bulk action {action[:20]!r}: use retry, cancel or purge")


def _per_queue(result: BulkResult) -> str:
    return "" if not result.per_queue else " " + json.dumps({"per_queue": result.per_queue}, sort_keys=True)


def register(app: Flask) -> None:
    app.add_url_rule("/jobs/<int:job_id>/retry", "retry", retry, methods=["POST"])
    app.add_url_rule("/jobs/<int:job_id>/cancel", "cancel", cancel, methods=["POST"])
    app.add_url_rule("/jobs/<int:job_id>/run-now", "run_now", run_now, methods=["POST"])
    app.add_url_rule("/bulk/<action>", "bulk_confirm", bulk_confirm, methods=["GET"])
    app.add_url_rule("/bulk/<action>", "bulk_run", bulk_run, methods=["POST"])
    app.add_url_rule("/queues/pause", "pause", pause, methods=["POST"])
    app.add_url_rule("/queues/resume", "resume", resume, methods=["POST"])
    app.add_url_rule("/schedules/pause", "pause_schedule", pause_schedule, methods=["POST"])
    app.add_url_rule("/schedules/resume", "resume_schedule", resume_schedule, methods=["POST"])
    app.add_url_rule("/audit", "audit", audit_page)

    @app.errorhandler(BackendError)
    def backend_down(exc: BackendError) -> Any:
        return render_template("error.html", code=503, message=str(exc)), 503

    @app.errorhandler(DelayqError)
    def refused(exc: DelayqError) -> Any:
        code = 404 if isinstance(exc, NotFound) else 400
        return render_template("error.html", code=code, message=str(exc)), code

    for code in (400, 401, 403, 404, 405, 413, 429, 500):
        app.register_error_handler(code, _http_error)


def _http_error(exc: Any) -> Any:
    code = getattr(exc, "code", 500) or 500
    message = getattr(exc, "description", None) if code != 500 else None
    return render_template("error.html", code=code, message=message or "internal error (see the server's log)"), code
