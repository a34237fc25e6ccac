"""When a recurring schedule's slots fall: cron expressions in a time zone, and plain intervals.

    Cron.parse("30 2 * * *").after(t, ZoneInfo("Europe/Berlin"))   # the slots after t, epoch seconds, in order
    Every(900).after(t)                                             # every 15 minutes, on the UTC clock

Five fields: minute hour day-of-month month day-of-week. Each is `*`, a number, a range `a-b`, a list `a,b`, or a
step `*/n`, `a-b/n`, `a/n`; months and weekdays may be named (jan-dec, sun-sat); a weekday is 0-7 (0 and 7 are
Sunday). When both day-of-month and day-of-week are restricted, a day matching either runs (cron's rule). Macros:
@yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly.

Daylight-saving time is cron's (Debian's cron(8)): "If the time has moved forwards, those jobs which would have run
in the time that was skipped will be run soon after the change. Conversely, if the time has moved backwards by less
than 3 hours, those jobs that fall into the repeated time will not be re-run. Only jobs that run at a particular
time (not specified as @hourly, nor with '*' in the hour or minute specifier) are affected by these special cases.
Jobs that are specified with wildcards are run based on the new time immediately." So a fixed-time schedule runs a
slot that falls in a skipped hour at the first instant after the change, once however many of its slots fell there,
and a repeated wall time once (the first); a wildcard schedule skips the slots of a skipped hour and runs those of
a repeated hour twice. An interval (`Every`) counts seconds on the UTC clock and knows no daylight-saving time.

A slot is a whole epoch second. Pure functions of their input: the scheduler passes the time in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Iterator
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import InvalidInput

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
MONTHS = {name: i for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
WEEKDAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
FIELDS = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}), ("month", 1, 12, MONTHS),
          ("day of week", 0, 7, WEEKDAYS))
DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)     # February's 29th exists, once in four years
HORIZON_DAYS = 366 * 8 + 2     # the longest a valid expression waits for its next day (Feb 29 over a century year)
_PART_RE = re.compile(r"^(\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(\d+))?$")
UTC = timezone.utc


def zone(name: str, field: str = "tz") -> ZoneInfo:
    """An IANA time zone ("Europe/Berlin", "UTC"), or InvalidInput naming it."""
    if not isinstance(name, str) or not name or len(name) > 64:
        raise InvalidInput(f"{field} must be an IANA time zone name such as Europe/Berlin or UTC", field)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInput(f"{field} {name!r} is not a time zone this system knows (an IANA name such as "
                           "Asia/Shanghai; install tzdata if none is found)", field) from None


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression (parse() checks it); `after(t, tz)` yields its slots."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]        # 0 Sunday .. 6 Saturday
    any_day: bool                   # the day-of-month field starts with `*` (`*`, `*/2`): cron(8) ANDs it, not ORs
    any_weekday: bool               # the day-of-week field starts with `*`
    wildcard: bool                  # the minute or hour field starts with `*`: daylight-saving time's special cases do
                                    # not apply (cron(8)'s test: the field's first character)

    @classmethod
    def parse(cls, text: str, field: str = "cron") -> "Cron":
        if not isinstance(text, str) or len(text) > 200:
            raise InvalidInput(f"{field} must be a cron expression such as '*/5 * * * *' or '@daily'", field)
        spec = MACROS.get(text.strip().lower(), text.strip().lower())
        parts = spec.split()
        if len(parts) != 5:
            raise InvalidInput(f"{field} {text!r} must have 5 fields (minute hour day-of-month month day-of-week) "
                               f"or be one of {', '.join(MACROS)}", field)
        values = [_field(part, name, lo, hi, names, text, field) for part, (name, lo, hi, names) in zip(parts, FIELDS)]
        weekdays = frozenset(d % 7 for d in values[4])
        cron = cls(text.strip(), tuple(sorted(values[0])), tuple(sorted(values[1])), frozenset(values[2]),
                   frozenset(values[3]), weekdays, parts[2].startswith("*"), parts[4].startswith("*"),
                   parts[0].startswith("*") or parts[1].startswith("*"))
        if cron.any_weekday or cron.any_day:
            possible = any(d <= DAYS_IN_MONTH[m - 1] for m in cron.months for d in cron.days)
            if not possible and cron.any_weekday:
                raise InvalidInput(f"{field} {text!r} never runs: no month has that day", field)
        return cron

    @property
    def fixed(self) -> bool:
        """Runs at particular times: daylight-saving time's special cases apply (see the module's docstring)."""
        return not self.wildcard

    def runs_on(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        on_day, on_weekday = day.day in self.days, day.isoweekday() % 7 in self.weekdays
        if self.any_day or self.any_weekday:       # cron(8): either field starting with '*': both must match
            return on_day and on_weekday
        return on_day or on_weekday                # both restricted: either

    def after(self, t: float, tz: ZoneInfo) -> Iterator[int]:
        """The slots strictly after epoch second `t`, in order, as epoch seconds (see the module's docstring for
        daylight-saving time). Ends only if no day in HORIZON_DAYS runs (parse() refuses such an expression)."""
        day = datetime.fromtimestamp(t, tz).date() - timedelta(days=1)   # a skipped slot of the day before moves on
        last = t
        for _ in range(HORIZON_DAYS):
            if self.runs_on(day):
                for slot in self.on(day, tz):
                    if slot > last:
                        last = slot
                        yield slot
            day += timedelta(days=1)

    def on(self, day: date, tz: ZoneInfo) -> list[int]:
        """The slots of one local day, sorted (a repeated hour's second pass comes after the first)."""
        start = datetime(day.year, day.month, day.day, tzinfo=tz)
        following = start + timedelta(days=1)
        offset = start.utcoffset()
        if offset == following.utcoffset() and offset == datetime(day.year, day.month, day.day, 12, tzinfo=tz).utcoffset():
            # no change of offset this day (the common case): every wall time is one instant
            base = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() - offset.total_seconds())
            return [base + h * 3600 + m * 60 for h in self.hours for m in self.minutes]
        slots: set[int] = set()
        for h in self.hours:
            for m in self.minutes:
                slots.update(self._instants(datetime(day.year, day.month, day.day, h, m), tz))
        return sorted(slots)

    def _instants(self, wall: datetime, tz: ZoneInfo) -> list[int]:
        first, second = wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1)
        if _exists(first, wall):
            if first.utcoffset() != second.utcoffset():            # a repeated wall time
                both = [int(first.timestamp()), int(second.timestamp())]
                return both if self.wildcard else both[:1]
            return [int(first.timestamp())]
        if self.wildcard:                                          # skipped: wildcards run on the new time
            return []
        return [_gap_end(wall, tz)]                                # skipped: soon after the change


def _exists(local: datetime, wall: datetime) -> bool:
    return local.astimezone(UTC).astimezone(local.tzinfo).replace(tzinfo=None) == wall


def _gap_end(wall: datetime, tz: ZoneInfo) -> int:
    """The first instant after a skipped wall time: the first wall minute after it that exists."""
    probe = wall
    for _ in range(24 * 60):
        probe += timedelta(minutes=1)
        local = probe.replace(tzinfo=tz)
        if _exists(local, probe):
            return int(local.timestamp())
    raise ValueError(f"no time after {wall} exists in {tz}")     # no zone skips a day


def _field(part: str, name: str, lo: int, hi: int, names: dict[str, int], text: str, field: str) -> set[int]:
    found: set[int] = set()
    for item in part.split(","):
        match = _PART_RE.match(item)
        if not match:
            raise InvalidInput(f"{field} {text!r}: {name} field {item!r} is not *, N, A-B or a step such as */5",
                               field)
        span, step = match.group(1), int(match.group(2) or 1)
        if span == "*":
            first, last = lo, hi
        else:
            a, _, b = span.partition("-")
            first = _value(a, name, lo, hi, names, text, field)
            last = _value(b, name, lo, hi, names, text, field) if b else (hi if match.group(2) else first)
        if first > last or not 1 <= step <= hi - lo + 1:
            raise InvalidInput(f"{field} {text!r}: {name} field {item!r} is out of order or its step out of range",
                               field)
        found.update(range(first, last + 1, step))
    return found


def _value(token: str, name: str, lo: int, hi: int, names: dict[str, int], text: str, field: str) -> int:
    number = names.get(token) if token in names else (int(token) if token.isdigit() else None)
    if number is None or not lo <= number <= hi:
        raise InvalidInput(f"{field} {text!r}: {name} {token!r} is not {lo}-{hi}"
                           + (f" or a name ({', '.join(names)})" if names else ""), field)
    return number


@dataclass(frozen=True)
class Every:
    """A slot every `seconds`, counted on the UTC clock from the epoch (every 15 minutes: :00, :15, :30, :45 UTC)."""

    seconds: int

    @property
    def text(self) -> str:
        return f"every {self.seconds}s"

    def after(self, t: float, tz: ZoneInfo | None = None) -> Iterator[int]:
        slot = (int(t) // self.seconds + 1) * self.seconds
        while True:
            yield slot
            slot += self.seconds
