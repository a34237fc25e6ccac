"""How values read on a page: times in local time with their offset (as the scripts print them), how long ago or
from now, durations, the first line of an error. Registered as Jinja filters; every value stays text, escaped by
the templates' autoescaping."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from flask import Flask, current_app

from .. import words

# by the word shown (words.shown): job statuses, then attempt outcomes
STATUS_CLASS = {status: f"st-{status.replace('_', '-')}" for status in words.STATUSES}
STATUS_CLASS.update({"retry": "st-retry", "snoozed": "st-pending", "interrupted": "st-failed",
                     "timed_out": "st-failed"})
OUTCOME_MARK = ("outcome unknown",)      # retries.UNKNOWN says it (every recovery path writes it)


def register(app: Flask) -> None:
    app.jinja_env.filters.update(when=when, relative=relative, duration=duration, first_line=first_line,
                                 status_class=status_class, word=words.shown, pretty=pretty, number=number,
                                 as_params=as_params)
    app.jinja_env.globals.update(now=lambda: current_app.extensions["delayq"].clock.now())


def when(t: float | None) -> str:
    """Local time to the second, with the offset: 2026-11-23 14:05:09 +01:00."""
    if t is None:
        return "-"
    try:
        return datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
    except (OverflowError, OSError, ValueError):
        return f"{t!r} (out of range)"


def relative(t: float | None, now: float) -> str:
    """'in 3m' or '5m ago' (or 'now')."""
    if t is None:
        return ""
    seconds = t - now
    if abs(seconds) < 1:
        return "now"
    text = span(abs(seconds))
    return f"in {text}" if seconds > 0 else f"{text} ago"


def span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def duration(seconds: float | None) -> str:
    """A run time: 3.2 ms, 1.25 s, 2m 5s."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 120:
        return f"{seconds:.2f} s"
    return f"{int(seconds // 60)}m {seconds % 60:.0f}s"


def rate(per_second: float) -> str:
    """A queue's rate (starts a second) as DELAYQ_QUEUES would say it: 10/s, 90/m, 100/h (whole where it can)."""
    for unit, seconds in (("s", 1), ("m", 60), ("h", 3600)):
        n = per_second * seconds
        if n >= 1 and abs(n - round(n)) <= 1e-6 * n:
            return f"{round(n)}/{unit}"
    for unit, seconds in (("s", 1), ("m", 60)):
        if per_second * seconds >= 1:
            return f"{per_second * seconds:.3g}/{unit}"
    return f"{per_second * 3600:.3g}/h"


def first_line(text: str | None, limit: int = 140) -> str:
    line = (text or "").strip().split("\n")[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def status_class(status: str) -> str:
    """A CSS class from a fixed map (never built from the value itself), for a status or outcome as stored (the
    `word` filter shows it)."""
    return STATUS_CLASS.get(words.shown(status), "st-other")


def pretty(args_json: str) -> str:
    """A job's arguments as indented JSON (as stored, if they do not parse)."""
    try:
        return json.dumps(json.loads(args_json), indent=2, ensure_ascii=False, sort_keys=True)
    except ValueError:
        return args_json


def number(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else str(n)


def outcome_unknown(*texts: str | None) -> bool:
    """Whether an error says the outcome of an at-most-once job or manual step is unknown."""
    return any(mark in (text or "") for text in texts for mark in OUTCOME_MARK)


def as_params(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """[(name, value), ...] as url_for's keyword arguments (a repeated name keeps every value)."""
    out: dict[str, list[str]] = {}
    for name, value in pairs:
        out.setdefault(name, []).append(value)
    return out
