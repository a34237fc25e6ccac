"""Retry ladders: how long to wait before the next attempt, by attempt number.

A ladder spec is a name (`wechat`, `alipay`, `stepped`), an explicit list of
seconds ("15,15,30,3m"), or exponential backoff with jitter ("exp:BASE:CAP:COUNT",
e.g. "exp:5:3600:10"). Intervals are in seconds. After the last step a list
repeats its last interval; the job's max_attempts (by default one first attempt
plus one per step) or its deadline ends the retries.
"""

from __future__ import annotations

import functools
import math
import random
import re
from dataclasses import dataclass

from .errors import InvalidInput

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_STEP = 366 * 86400.0     # one step of a ladder: at most a year

NAMED: dict[str, str] = {
    # WeChat Pay's notify ladder (seed 004): 15 retries.
    "wechat": "15s,15s,30s,3m,10m,20m,30m,30m,30m,1h,3h,3h,3h,6h,6h",
    # Alipay's notify ladder (seed 001).
    "alipay": "4m,10m,10m,1h,2h,6h,15h",
    # Stepped polling (seed 001): 1 s x5, 5 s x5, 10 s x10, then 30 s.
    "stepped": ",".join(["1"] * 5 + ["5"] * 5 + ["10"] * 10 + ["30"]),
}
DEFAULT = "wechat"
_EXP_RE = re.compile(r"^exp:(\d+(?:\.\d+)?):(\d+(?:\.\d+)?):(\d+)$")


def parse_duration(text: str) -> float:
    """'15', '15s', '3m', '1.5h', '2d' -> seconds: a finite number (callers check its range)."""
    text = text.strip().lower()
    unit = _UNITS.get(text[-1:]) if text else None
    number = text[:-1].strip() if unit else text
    if not re.fullmatch(r"-?(\d+(\.\d*)?|\.\d+)", number):
        raise InvalidInput(f"{text[:40]!r} is not a duration: use seconds or 15s, 3m, 1h, 2d")
    value = float(number) * (unit or 1)
    if not math.isfinite(value):
        raise InvalidInput(f"duration {text[:40]!r} is too long")
    return value


@dataclass(frozen=True)
class Ladder:
    spec: str
    steps: tuple[float, ...]
    exp_cap: float | None = None

    @property
    def default_max_attempts(self) -> int:
        """One first attempt plus one retry per step."""
        return len(self.steps) + 1

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        index = min(max(attempt, 1), len(self.steps)) - 1
        if self.exp_cap is None:
            return self.steps[index]
        full = self.steps[index]
        return full / 2 + (rng or random).uniform(0, full / 2)   # "equal jitter": never below half


@functools.lru_cache(maxsize=512)
def parse(spec: str | None) -> Ladder:
    """A ladder from its spec (cached: ladders are few, jobs many); raises InvalidInput naming the known forms."""
    spec = (spec or DEFAULT).strip()
    if spec in NAMED:
        return Ladder(spec, _steps(NAMED[spec]))
    match = _EXP_RE.match(spec)
    if match:
        base, cap, count = float(match[1]), float(match[2]), int(match[3])
        if base <= 0 or cap < base or cap > MAX_STEP or not 1 <= count <= 100:
            raise InvalidInput(f"ladder {spec[:60]!r}: need 0 < BASE <= CAP <= {MAX_STEP:.0f} and 1 <= COUNT <= 100")
        return Ladder(spec, tuple(min(cap, base * 2**k) for k in range(count)), exp_cap=cap)
    if spec and (spec[0].isdigit() or spec[0] == "."):
        return Ladder(spec, _steps(spec))
    known = ", ".join(sorted(NAMED))
    raise InvalidInput(f"unknown ladder {spec!r}: use one of {known}, a list like '15,15,30,3m', or 'exp:5:3600:10'")


def _steps(text: str) -> tuple[float, ...]:
    parts = text.split(",")
    if not 1 <= len(parts) <= 1000:
        raise InvalidInput("a ladder needs between 1 and 1000 steps")
    steps = tuple(parse_duration(part) for part in parts)
    if max(steps) > MAX_STEP or min(steps) < 0:
        raise InvalidInput(f"a ladder step is between 0 and 366 days ({MAX_STEP:.0f} s)")
    return steps


@dataclass(frozen=True)
class Upcoming:
    """One attempt still to come, if the ones before it fail: its number and when (a range, for a jittered ladder)."""

    attempt: int
    earliest: float
    latest: float


def upcoming(spec: str | None, attempts: int, max_attempts: int, due_at: float, deadline: float | None,
             limit: int = 20) -> tuple[list[Upcoming], int]:
    """The attempts a pending job still has, each if the one before it fails: the next at `due_at`, then one per
    ladder step (run time not counted), up to max_attempts, none after the deadline. Returns (the first `limit`,
    how many more). A snooze or a retry by hand changes these; they are what the ladder promises now."""
    ladder = parse(spec)
    found: list[Upcoming] = []
    more = 0
    early = late = due_at
    for number in range(attempts + 1, max_attempts + 1):
        if number > attempts + 1:
            step = ladder.delay(number - 1, _Fixed(1.0))
            early += step / 2 if ladder.exp_cap is not None else step
            late += step
        if deadline is not None and early > deadline:
            break
        if len(found) < limit:
            found.append(Upcoming(number, early, late))
        else:
            more += 1
            if more > 10_000:
                break
    return found, more


class _Fixed(random.Random):
    """The top of the jitter range: delay() then returns a step's full length."""

    def __init__(self, fraction: float):
        super().__init__(0)
        self.fraction = fraction

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.fraction
