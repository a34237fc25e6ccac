"""Charts drawn on the server as SVG: geometry here, markup in templates/_chart.html (escaped like any page).

Attempts per minute over the last hour, stacked: succeeded at the bottom, failures (a retry, a final failure,
a run that timed out, an interrupted run) above them, the rest (snoozes, expired jobs, pull-mode outcomes) on top.
"""

from __future__ import annotations

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
    width: int = WIDTH
    height: int = HEIGHT
    bars: list[Bar] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)       # (y, label)
    x_ticks: list[tuple[float, str, str]] = field(default_factory=list)  # (x, label, text-anchor)
    totals: dict[str, int] = field(default_factory=dict)
    plot: tuple[float, float, float, float] = (LEFT, TOP, WIDTH - LEFT - 4, HEIGHT - TOP - BOTTOM)


def per_minute(start: float, series: dict[str, list[int]], minutes: int) -> Chart:
    """The stacked bar chart of Manager.throughput's (start, outcome -> counts per minute)."""
    columns = minutes + 1
    stacks = [[0, 0, 0] for _ in range(columns)]
    for outcome, counts in series.items():
        kind = next((i for i, (_, _, names) in enumerate(SERIES) if names and outcome in names), 2)
        for minute, n in enumerate(counts[:columns]):
            stacks[minute][kind] += n
    chart = Chart(totals={name: sum(s[i] for s in stacks) for i, (name, _, _) in enumerate(SERIES)})
    left, top, width, height = chart.plot
    peak = nice_ceiling(max((sum(s) for s in stacks), default=0))
    slot = width / columns
    for minute, stack in enumerate(stacks):
        x = left + minute * slot + 0.5
        base = top + height
        label = datetime.fromtimestamp(start + minute * 60).astimezone().strftime("%H:%M")
        for n, (name, css, _) in zip(stack, SERIES):
            if not n:
                continue
            h = height * n / peak
            base -= h
            chart.bars.append(Bar(round(x, 1), round(base, 1), round(max(slot - 1, 1), 1), round(h, 1), css,
                                  f"{label}: {n:,} {name}"))
    chart.y_ticks = [(round(top + height * (1 - f), 1), compact(round(peak * f))) for f in (0, 0.5, 1)]
    step = max(1, minutes // 4)
    chart.x_ticks = [(round(left + m * slot + (slot if m == minutes else 0), 1),
                      datetime.fromtimestamp(start + m * 60).astimezone().strftime("%H:%M"),
                      "end" if m == minutes else "start") for m in range(0, columns, step)]
    return chart


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
