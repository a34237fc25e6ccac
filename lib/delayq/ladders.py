"""Retry ladders: how long to wait before the next attempt, by attempt number.

A ladder spec is a name (`wechat`, `alipay`, `stepped`), an explicit list of
seconds ("15,15,30,3m"), or exponential backoff with jitter ("exp:BASE:CAP:COUNT",
e.g. "exp:5:3600:10"). Intervals are in seconds. After the last step a list
repeats its last interval; the job's max_attempts (by default one first attempt
plus one per step) or its deadline ends the retries.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

from .errors import InvalidInput

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

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
    """'15', '15s', '3m', '1h', '2d' -> seconds."""
    text = text.strip().lower()
    unit = _UNITS.get(text[-1:]) if text else None
    number = text[:-1] if unit else text
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise InvalidInput(f"{text!r} is not a duration: use seconds or 15s, 3m, 1h, 2d") from None
    if value < 0 or value != value:
        raise InvalidInput(f"duration {text!r} must not be negative")
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
        if base <= 0 or cap < base or not 1 <= count <= 100:
            raise InvalidInput(f"ladder {spec!r}: need 0 < BASE <= CAP and 1 <= COUNT <= 100")
        return Ladder(spec, tuple(min(cap, base * 2**k) for k in range(count)), exp_cap=cap)
    if spec and (spec[0].isdigit() or spec[0] == "."):
        return Ladder(spec, _steps(spec))
    known = ", ".join(sorted(NAMED))
    raise InvalidInput(f"unknown ladder {spec!r}: use one of {known}, a list like '15,15,30,3m', or 'exp:5:3600:10'")


def _steps(text: str) -> tuple[float, ...]:
    steps = tuple(parse_duration(part) for part in text.split(","))
    if not steps or len(steps) > 1000:
        raise InvalidInput("a ladder needs between 1 and 1000 steps")
    return steps
