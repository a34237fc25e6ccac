"""Charts drawn on the server as SVG: geometry here, markup in templates/_chart.html (escaped like any page).

Over a window (an hour by minute, 24 hours by quarter hour, 7 days by hour; reports.Activity), of one queue or of
all: the attempts per bucket, stacked: succeeded at the bottom, failures (a retry, a final failure, a run that
timed out, an interrupted run) above them, the rest (snoozes, expired jobs, pull-mode outcomes) on top; and the
lateness (from due to started) per bucket, on average, the largest in each bar's title.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from ..jobs import TIMEOUT_FAILED, TIMEOUT_RETRY

WIDTH, HEIGHT = 720, 180
LEFT, BOTTOM, TOP = 44, 22, 10
SERIES = (  # (name, CSS class, the attempt outcomes it adds up, as stored)
    ("succeeded", "bar-ok", ("succeeded", "deleted")),
    ("failures", "bar-fail", ("retry", "failed", "interrupted", TIMEOUT_RETRY, TIMEOUT_FAILED)),
    ("other", "bar-other", None),
)


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass
class Chart:
    title: str = ""
    legend: list[tuple[str, str]] = field(default_factory=list)          # (CSS class, label)
    width: int = WIDTH
    height: int = HEIGHT
    bars: list[Bar] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)       # (y, label)
    x_ticks: list[tuple[float, str, str]] = field(default_factory=list)  # (x, label, text-anchor)
    totals: dict[str, int] = field(default_factory=dict)
    plot: tuple[float, float, float, float] = (LEFT, TOP, WIDTH - LEFT - 4, HEIGHT - TOP - BOTTOM)


def _label(at: float, bucket: int) -> str:
    return datetime.fromtimestamp(at).astimezone().strftime("%a %H:%M" if bucket >= 3600 else "%H:%M")


def _axes(chart: Chart, start: float, bucket: int, columns: int, peak: float, label=None) -> None:
    left, top, width, height = chart.plot
    slot = width / columns
    chart.y_ticks = [(round(top + height * (1 - f), 1), (label or compact)(peak * f)) for f in (0, 0.5, 1)]
    last = columns - 1
    chart.x_ticks = [(round(left + b * slot + (slot if b == last else 0), 1), _label(start + b * bucket, bucket),
                      "end" if b == last else "start") for b in range(0, columns, max(1, last // 4))]


def attempts(act) -> Chart:
    """The stacked bars of an Activity's attempts per bucket."""
    columns = len(act.late_avg)
    stacks = [[0, 0, 0] for _ in range(columns)]
    for outcome, counts in act.counts.items():
        kind = next((i for i, (_, _, names) in enumerate(SERIES) if names and outcome in names), 2)
        for b, n in enumerate(counts[:columns]):
            stacks[b][kind] += n
    totals = {name: sum(s[i] for s in stacks) for i, (name, _, _) in enumerate(SERIES)}
    chart = Chart(title=f"Attempts per {_bucket_words(act.bucket)}, {WINDOW_WORDS[act.window]}: "
                        f"{totals['succeeded']:,} succeeded, {totals['failures']:,} failures, {totals['other']:,} other",
                  legend=[("bar-ok", f"succeeded {totals['succeeded']:,}"),
                          ("bar-fail", f"failures (retry, failed, interrupted) {totals['failures']:,}"),
                          ("bar-other", f"other (snoozed, expired, ...) {totals['other']:,}")], totals=totals)
    left, top, width, height = chart.plot
    peak = nice_ceiling(max((sum(s) for s in stacks), default=0))
    slot = width / columns
    for b, stack in enumerate(stacks):
        x = left + b * slot + 0.5
        base = top + height
        label = _label(act.start + b * act.bucket, act.bucket)
        for n, (name, css, _) in zip(stack, SERIES):
            if not n:
                continue
            h = height * n / peak
            base -= h
            chart.bars.append(Bar(round(x, 1), round(base, 1), round(max(slot - 1, 1), 1), round(h, 1), css,
                                  f"{label}: {n:,} {name}"))
    _axes(chart, act.start, act.bucket, columns, peak, lambda v: compact(round(v)))
    return chart


def lateness(act) -> Chart:
    """An Activity's lateness per bucket: a bar of the average, the largest in its title."""
    columns = len(act.late_avg)
    seen = [v for v in act.late_avg if v is not None]
    worst = max((v for v in act.late_max if v is not None), default=None)
    chart = Chart(title=f"Lateness per {_bucket_words(act.bucket)}, {WINDOW_WORDS[act.window]} (from due to "
                        f"started, on average): the largest {seconds_text(worst) if worst is not None else 'none'}",
                  legend=[("bar-late", "average lateness (a bar's title: the largest)")])
    left, top, width, height = chart.plot
    peak = nice_ceiling_seconds(max(seen, default=0.0))
    slot = width / columns
    for b, avg in enumerate(act.late_avg):
        if avg is None or avg <= 0:
            continue
        h = height * min(avg, peak) / peak
        label = _label(act.start + b * act.bucket, act.bucket)
        most = act.late_max[b]
        chart.bars.append(Bar(round(left + b * slot + 0.5, 1), round(top + height - h, 1), round(max(slot - 1, 1), 1),
                              round(h, 1), "bar-late", f"{label}: {seconds_text(avg)} on average"
                              + (f", the largest {seconds_text(most)}" if most is not None else "")))
    _axes(chart, act.start, act.bucket, columns, peak, seconds_text)
    return chart


WINDOW_WORDS = {"1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days"}


def _bucket_words(bucket: int) -> str:
    return {60: "minute", 900: "quarter hour", 3600: "hour"}.get(bucket, f"{bucket} s")


def seconds_text(v: float) -> str:
    """A lateness on an axis or in a title: 0.35s, 12s, 4.5m, 2.0h (five characters or so)."""
    if v < 10:
        return f"{v:.2g}s" if v else "0"
    if v < 120:
        return f"{v:.0f}s"
    if v < 7200:
        return f"{v / 60:.1f}m"
    return f"{v / 3600:.1f}h"


def nice_ceiling_seconds(v: float) -> float:
    """1, 2, 5 x 10^k seconds at or above v (at least 1 s)."""
    return float(nice_ceiling(math.ceil(v)))


def compact(n: int) -> str:
    """An axis label that fits the chart's left margin (five characters at most): 9,999, 25k, 100k, 2.5M, 1G."""
    if n >= 1_000_000_000:
        return f"{n / 1_000_000_000:.3g}G"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    if n >= 10_000:
        return f"{n / 1000:.3g}k"
    return f"{n:,}"


def nice_ceiling(n: int) -> int:
    """The smallest of 1, 2, 5 x 10^k at or above n (at least 1): round numbers on the axis."""
    bound = 1
    while True:
        for factor in (1, 2, 5):
            if bound * factor >= n:
                return bound * factor
        bound *= 10
