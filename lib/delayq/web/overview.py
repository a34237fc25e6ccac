"""The overview: per queue what waits, what is due, running and failed, which queues are paused, the oldest
due job; charts of the attempts and their lateness over the last hour, 24 hours or 7 days, of one queue or all
(?window=1h|24h|7d&queue=NAME); the runners that beat, with the jobs they run; each queue's rate and max_running
(DELAYQ_QUEUES) and how many of its jobs wait on a limit (limits.py). Its parts marked data-live are fetched again
every few seconds by static/live.js (no reload)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import Flask, abort, current_app, render_template, request

from ..errors import InvalidInput
from ..jobs import TIMEOUT_FAILED, TIMEOUT_RETRY
from ..limits import QueueLimit
from ..reports import LIVE_UPTO, WINDOWS
from . import charts, display, forms

FAILURES = ("retry", "failed", "interrupted", TIMEOUT_RETRY, TIMEOUT_FAILED)     # attempt outcomes as stored


@dataclass
class QueueRow:
    name: str
    counts: dict[str, int] = field(default_factory=dict)      # status -> jobs
    counted_at: dict[str, float | None] = field(default_factory=dict)   # big groups: compensate's count, when
    due_now: int = 0
    oldest_due: float | None = None
    paused: tuple[float, str | None] | None = None
    hour_ok: int = 0
    hour_failures: int = 0
    late_max: float | None = None
    limit: QueueLimit | None = None         # its rate and max_running across runners, if it has any
    waiting_on_limit: int = 0               # pending jobs a limit held back (its own, or their keys')

    def count_cell(self, status: str) -> tuple[str, str]:
        """(text, title) of a count: exact; compensate's count of a group above LIVE_UPTO jobs (~, and when it
        was made); or, for a group that grew past LIVE_UPTO since, a floor."""
        n = self.counts.get(status, 0)
        if status not in self.counted_at:
            return display.number(n), ""
        at = self.counted_at[status]
        if at is None:
            return f"> {LIVE_UPTO:,}", f"more than {LIVE_UPTO:,}; compensate counts it within a minute"
        return f"~{display.number(n)}", f"counted by compensate at {display.when(at)} (a group this big is not counted on every page)"

    def due_cell(self) -> str:
        return f"> {LIVE_UPTO:,}" if self.due_now > LIVE_UPTO else display.number(self.due_now)

    @property
    def limit_parts(self) -> list[tuple[str, str, bool]]:
        """The limit cell's parts, (text, its title, whether it warns): 10/s · max 3 running · 4 waiting."""
        parts = []
        if self.limit and self.limit.rate:
            parts.append((display.rate(self.limit.rate),
                          "at most this many of its jobs start, across all runners (rate)", False))
        if self.limit and self.limit.max_running:
            parts.append((f"max {self.limit.max_running:,} running",
                          "at most this many of its jobs run at once, across all runners (max_running)", False))
        if self.waiting_on_limit:
            parts.append((f"{self.waiting_on_limit:,} waiting", "pending jobs a limit held back (the queue's or "
                          "their limit_key's): not failed, no attempt counted, due again when it lets them", True))
        return parts


def queues(counts: list[tuple], paused: dict[str, tuple[float, str | None]], recent: list[tuple],
           limits: dict[str, QueueLimit] | None = None, waiting: dict[str, int] | None = None) -> list[QueueRow]:
    """One row per queue with live or failed jobs, paused, or with attempts in the last hour; a limited queue with
    none of these has no row (its limit shows with its first job)."""
    rows: dict[str, QueueRow] = {}

    def row(name: str) -> QueueRow:
        return rows.setdefault(name, QueueRow(name))

    for g in counts:
        if g.status not in ("pending", "running", "failed"):
            continue
        r = row(g.queue)
        r.counts[g.status] = g.count
        if g.counted_at is not None or g.at_least:
            r.counted_at[g.status] = g.counted_at
        if g.status == "pending":
            r.due_now, r.oldest_due = g.due_now, g.oldest_due
    for queue, since_reason in paused.items():
        row(queue).paused = since_reason
    for queue, outcome, hour, _minute, _late_avg, late_max in recent:
        r = row(queue or "")
        if outcome == "succeeded":
            r.hour_ok += int(hour)
        elif outcome in FAILURES:
            r.hour_failures += int(hour)
        if late_max is not None:
            r.late_max = max(float(late_max), r.late_max or 0.0)
    for queue, n in (waiting or {}).items():           # held jobs are pending: their queue has a row already
        row(queue).waiting_on_limit = int(n)
    for queue, limit in (limits or {}).items():
        if queue in rows:
            rows[queue].limit = limit
    return sorted(rows.values(), key=lambda r: r.name)


def page() -> Any:
    manager = current_app.extensions["delayq"]
    window, queue = request.args.get("window", "1h"), request.args.get("queue") or None
    try:
        act = manager.reports.activity(window, queue)
    except InvalidInput as exc:
        abort(400, forms.in_page_words(str(exc)))
    now, counts = manager.reports.queue_figures()
    workers = sorted(manager.control.workers(), key=lambda w: (w.state != "live", -w.last_seen))
    rows = queues(counts, manager.control.paused_queues(), manager.reports.recent_attempts(), manager.limits,
                  manager.reports.waiting_on_limits())
    return render_template("overview.html", now=now, queues=rows, windows=list(WINDOWS), window=window,
                           queue=queue, attempts_chart=charts.attempts(act), lateness_chart=charts.lateness(act),
                           workers=workers)


def register(app: Flask) -> None:
    app.add_url_rule("/", "overview", page)
