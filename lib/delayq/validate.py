"""Raw input to a valid job, or one precise error: delayq's one validation boundary.

Every way in passes here before anything is written: the client (`enqueue`), the CLI's
flags, each line of a bulk file, `emit`, the pull API's `put`, and DELAYQ_QUEUES. An
error is an InvalidInput naming the field (and, for a bulk file, the line).

Documented ranges (both stores and Python's datetime hold every value admitted):
  times (at, deadline)   epoch 0 .. 3000-01-01T00:00:00Z; a naive time is in the local time zone
  delay, deadline        0 .. 100 years from now; "90", "90s", "15m", "2h", "1d" (decimals allowed)
  ladder steps           finite, 0 .. 366 days each, 1 .. 1000 steps (ladders.py); the spec at most 255 characters
  lease, timeout         1 s .. 7 days
  max_attempts           1 .. 10,000          priority  -1000 .. 1000
  args                   a JSON object, at most 64 KiB as UTF-8, nested at most 64 deep, valid Unicode
  ext                    1 .. 191 printable characters        queue  1 .. 64 of A-Z a-z 0-9 _ . -
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Mapping

from . import ladders, limits
from .errors import InvalidInput, shown
from .jobs import MAX_PRIORITY, JobSpec
from .registry import Registry, check_name, steps_of

MAX_TIME = 32_503_680_000.0           # 3000-01-01T00:00:00Z
MAX_DELAY = 100 * 365 * 86400.0
MAX_LEASE = 7 * 86400.0
MAX_EXT = 191
MAX_LADDER = 255                      # the ladder column's width
MAX_ARGS_BYTES = 65_535
MAX_DEPTH = 64
MAX_ATTEMPTS = 10_000
AT_TOLERANCE = 60.0                   # an `at` this far in the past still means "now" (clock skew, slow scripts)
QUEUE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
TUBE_RE = re.compile(r"^~[A-Za-z0-9_.-]{1,64}$")       # a pull-mode tube's queue (pull.py)
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
SPEC_KEYS = {"call", "args", "delay", "at", "ext", "queue", "ladder", "max_attempts", "deadline", "priority", "unique",
             "lease", "timeout", "on_timeout"}
QUEUE_DEFAULT_KEYS = {"ladder", "max_attempts", "lease", "timeout", "priority", "concurrency", "rate", "max_running"}
QUEUE_LIMIT_KEYS = ("concurrency", "rate", "max_running")      # the runners', not a job's


# -- single values ------------------------------------------------------------------
def text(value: Any, field: str, limit: int = 1000) -> str:
    """A string that is valid Unicode (no lone surrogates, e.g. from a non-UTF-8 command line)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} is not valid UTF-8 text", field) from None
    if len(value) > limit:
        raise InvalidInput(f"{field} is {len(value)} characters long: at most {limit}", field)
    return value


def queue(value: Any, field: str = "queue", tube: bool = False) -> str:
    """A queue name; with tube=True also a pull-mode tube's queue (~NAME), which listings may name."""
    if isinstance(value, str) and tube and TUBE_RE.match(value):
        return value
    if not isinstance(value, str) or not QUEUE_RE.match(value):
        quoted = text(value, field, 10**6)[:80] if isinstance(value, str) else shown(value, 80)
        raise InvalidInput(f"{field} {quoted!r} is invalid: use 1-64 letters, digits, '_', '.' or '-'", field)
    return value


def ext(value: Any, field: str = "ext") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field} must be a non-empty string, e.g. order:123", field)
    text(value, field, MAX_EXT)
    if _CONTROL_RE.search(value):
        raise InvalidInput(f"{field} must not contain control characters", field)
    return value


def integer(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str, float)):
        raise InvalidInput(f"{field} must be an integer from {lo} to {hi}", field)
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (ValueError, OverflowError):
        number = None
    if number is None or not lo <= number <= hi:
        raise InvalidInput(f"{field} must be an integer from {lo} to {hi}, not {shown(value)!r}", field)
    return number


def duration(value: Any, field: str, lo: float = 0.0, hi: float = MAX_DELAY) -> float:
    """Seconds from a number, a timedelta, or text such as 90, 90s, 15m, 2h, 1d."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = _float(value)
    elif isinstance(value, str):
        try:
            seconds = ladders.parse_duration(text(value, field, 40))
        except InvalidInput as exc:
            raise InvalidInput(f"{field}: {exc}", field) from None
    else:
        raise InvalidInput(f"{field} must be seconds or a duration like 90s, 15m, 2h, 1d", field)
    if not math.isfinite(seconds) or not lo <= seconds <= hi:
        raise InvalidInput(f"{field} must be between {_human(lo)} and {_human(hi)}, not {shown(value)!r}", field)
    return seconds


def instant(value: Any, field: str) -> float:
    """Epoch seconds from a datetime, a number, digits, or ISO-8601 text; a naive time is local time."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return _in_range(_float(value), field, value)
    elif isinstance(value, str) and re.fullmatch(r"\s*\d{1,12}(\.\d+)?\s*", value):
        return _in_range(float(value), field, value)
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(text(value, field, 64).strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"{field} {value[:40]!r} is not an ISO-8601 time, e.g. 2026-12-01T08:00:00+08:00 "
                               "(without an offset: local time)", field) from None
    else:
        raise InvalidInput(f"{field} must be a time: ISO-8601 text, a datetime or epoch seconds", field)
    try:
        stamp = (when if when.tzinfo else when.astimezone()).timestamp()
    except (OverflowError, OSError, ValueError):
        stamp = math.inf
    return _in_range(stamp, field, value)


def _float(number: int | float) -> float:
    """A Python int may be too large for a float (10**400): it is then out of every range, not an OverflowError."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def _in_range(stamp: float, field: str, value: Any) -> float:
    if not math.isfinite(stamp) or not 0 <= stamp <= MAX_TIME:
        raise InvalidInput(f"{field} {shown(value)!r} is out of range: times go from 1970 to 3000", field)
    return stamp


def args_json(value: Any, field: str = "args") -> str:
    """The job's keyword arguments (a mapping or JSON text) as canonical JSON text of an object."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        text(value, field, 10 * MAX_ARGS_BYTES)
        if deeper_than(value, MAX_DEPTH):       # refused before parsing: json.loads would recurse that deep
            raise InvalidInput(f"{field} is nested more than {MAX_DEPTH} deep", field)
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise InvalidInput(f"{field} is not valid JSON: {exc}", field) from None
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field} must be a JSON object, e.g. '{{\"order_id\": 123}}'", field)
    _check_depth(value, field)
    try:
        dumped = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        size = len(dumped.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} holds text that is not valid Unicode (a lone surrogate)", field) from None
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} cannot be stored as JSON: {exc}", field) from None
    if size > MAX_ARGS_BYTES:
        raise InvalidInput(f"{field} is {size} bytes as JSON: at most {MAX_ARGS_BYTES}", field)
    return dumped


def deeper_than(text: str, most: int) -> bool:
    """Whether JSON text nests arrays and objects more than `most` deep: brackets counted outside strings, in one
    pass. A parser recurses once a level: thousands deep, it exhausts the stack (RecursionError), and a finalizer
    that runs meanwhile fails with it. Texts with few brackets (nearly all) are not scanned."""
    if text.count("[") + text.count("{") <= most:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > most:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def _check_depth(value: Any, field: str) -> None:
    """Refuse containers nested more than MAX_DEPTH deep ({"a": 1} is 1 deep), without recursing (a deep
    value would overflow the stack, here or in whoever reads the JSON next)."""
    level = [value] if isinstance(value, (Mapping, list, tuple)) else []
    for _ in range(MAX_DEPTH):
        level = [child for item in level for child in _children(item)]
        if not level:
            return
    raise InvalidInput(f"{field} is nested more than {MAX_DEPTH} deep", field)


def _children(item: Any) -> Iterable[Any]:
    if isinstance(item, Mapping):
        return [v for v in item.values() if isinstance(v, (Mapping, list, tuple))]
    if isinstance(item, (list, tuple)):
        return [v for v in item if isinstance(v, (Mapping, list, tuple))]
    return ()


def ladder(value: Any, field: str = "ladder") -> ladders.Ladder:
    """A ladder from its name or spec text, or a list of step durations (client)."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(duration(step, f"{field} step", 0, ladders.MAX_STEP)) for step in value)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{field} must be a name (wechat, alipay, stepped), a list like '15,30,3m' or exp:...", field)
    try:
        parsed = ladders.parse(value if value is None else text(value, field, 4000))
    except InvalidInput as exc:
        raise InvalidInput(str(exc), field) from None
    if len(parsed.spec) > MAX_LADDER:
        # the stored spec: MySQL's VARCHAR(255) column would cut a longer one short, silently
        raise InvalidInput(f"{field} is {len(parsed.spec)} characters as stored: at most {MAX_LADDER} "
                           "(use fewer steps, or exp:BASE:CAP:COUNT)", field)
    return parsed


# -- a whole job ------------------------------------------------------------------------
def queue_defaults(config: Mapping[str, Any]) -> dict[str, dict]:
    """DELAYQ_QUEUES, each value checked as enqueue would check it (a bad one is refused, never dropped)."""
    checked = {}
    for name, values in config.items():
        queue(name, "DELAYQ_QUEUES key")
        if not isinstance(values, Mapping):
            raise InvalidInput(f"DELAYQ_QUEUES[{name!r}] must be an object, e.g. {{\"lease\": 3600}}")
        unknown = set(values) - QUEUE_DEFAULT_KEYS
        if unknown:
            raise InvalidInput(f"DELAYQ_QUEUES[{name!r}]: unknown key(s) {', '.join(sorted(map(repr, unknown)))}; "
                               f"use {', '.join(sorted(QUEUE_DEFAULT_KEYS))}")
        where = f"DELAYQ_QUEUES[{name!r}]"
        out: dict[str, Any] = {}
        if "ladder" in values:
            out["ladder"] = ladder(values["ladder"], f"{where}.ladder").spec
        if "max_attempts" in values:
            out["max_attempts"] = integer(values["max_attempts"], f"{where}.max_attempts", 1, MAX_ATTEMPTS)
        for key in ("lease", "timeout"):
            if key in values:
                out[key] = duration(values[key], f"{where}.{key}", 1, MAX_LEASE)
        if "priority" in values:
            out["priority"] = integer(values["priority"], f"{where}.priority", -MAX_PRIORITY, MAX_PRIORITY)
        if "concurrency" in values:
            out["concurrency"] = integer(values["concurrency"], f"{where}.concurrency", 1, 1024)
        if "rate" in values:
            out["rate"] = limits.rate(values["rate"], f"{where}.rate")
        if "max_running" in values:
            out["max_running"] = integer(values["max_running"], f"{where}.max_running", 1, 100_000)
        checked[name] = out
    return checked


def job(raw: Mapping[str, Any], now: float, registry: Registry,
        defaults: Mapping[str, Mapping[str, Any]] | None = None) -> JobSpec:
    """One job from the flags' names (a dict), its queue's defaults under it, or InvalidInput naming the field.

    The callable must be allowed, marked and importable here; its arguments must fit its
    signature (each step's, for a multi-step job). An at-most-once job gets one attempt.
    """
    if type(raw) is not dict and not isinstance(raw, Mapping):     # (a dict is the common case: no ABC check)
        raise InvalidInput("a job must be a JSON object whose keys are the flags' names")
    unknown = set(raw) - SPEC_KEYS
    if unknown:
        raise InvalidInput(f"unknown key(s) {', '.join(sorted(repr(shown(key)) for key in unknown))}: "
                           f"use {', '.join(sorted(SPEC_KEYS))}")
    name = queue(raw.get("queue") or "default")
    merged = {**(defaults or {}).get(name, {}), **{k: v for k, v in raw.items() if v is not None}}
    for key in QUEUE_LIMIT_KEYS:
        merged.pop(key, None)
    call = merged.get("call")
    if not call:
        raise InvalidInput("call is required: 'package.module:function'", "call")
    target = _resolve(registry, call, "call")
    if raw.get("timeout") is None and registry.timeout(call) is not None:
        merged["timeout"] = registry.timeout(call)        # the code's own limit beats the queue's
    args_text = args_json(merged.get("args"))
    names = _arg_names(merged.get("args"), args_text)
    bind(target, names, call)
    due_at = due(merged, now)
    spec_ladder = ladder(merged.get("ladder"))
    at_most_once = registry.at_most_once(call) and steps_of(target) is None
    on_timeout = merged.get("on_timeout")
    deadline = None if merged.get("deadline") is None else deadline_of(merged["deadline"], now, due_at)
    if on_timeout is not None:
        if deadline is None:
            raise InvalidInput("on_timeout needs a deadline: when the deadline passes, it runs once", "on_timeout")
        bind(_resolve(registry, on_timeout, "on_timeout"), names, on_timeout)
    key = ext(merged.get("ext"))
    unique = _flag(merged.get("unique", False), "unique")
    if unique and key is None:
        raise InvalidInput("unique needs ext: the business key that must have one live job, e.g. --ext order:123",
                           "unique")
    return JobSpec(
        call=call, args_json=args_text, due_at=due_at, queue=name, ext=key, ladder=spec_ladder.spec,
        max_attempts=1 if at_most_once else spec_ladder.default_max_attempts if merged.get("max_attempts") is None
        else integer(merged["max_attempts"], "max_attempts", 1, MAX_ATTEMPTS),
        at_most_once=at_most_once, deadline=deadline,
        priority=integer(merged.get("priority") or 0, "priority", -MAX_PRIORITY, MAX_PRIORITY),
        unique=unique, lease=_optional(merged.get("lease"), "lease"), timeout=_optional(merged.get("timeout"), "timeout"),
        on_timeout=on_timeout, **_limit(registry, call, args_text),
    )


def _limit(registry: Registry, call: str, args_text: str) -> dict[str, Any]:
    """limit_key and limit_max of a job whose code declares a per-key limit (none otherwise)."""
    declared = registry.limit(call)
    if declared is None:
        return {}
    template, most = declared
    return {"limit_key": limits.key_of(template, json.loads(args_text), call), "limit_max": most}


def due(raw: Mapping[str, Any], now: float) -> float:
    """The first due time from `delay` (seconds from now) or `at` (a time), never before now."""
    if raw.get("delay") is not None and raw.get("at") is not None:
        raise InvalidInput("give delay or at, not both", "at")
    if raw.get("at") is None:
        return now + duration(raw.get("delay") or 0, "delay")
    when = instant(raw["at"], "at")
    if when < now - AT_TOLERANCE:
        raise InvalidInput(f"at is {now - when:.0f} s in the past; use a future time or delay", "at")
    return max(when, now)


def deadline_of(value: Any, now: float, due_at: float) -> float:
    """A deadline as seconds from now (a number or a duration) or a time; after the first due time."""
    relative = not isinstance(value, (str, datetime)) or (
        isinstance(value, str) and bool(re.fullmatch(r"\s*[\d.]+\s*[smhd]?\s*", value)))
    when = now + duration(value, "deadline") if relative else instant(value, "deadline")
    if when <= due_at:
        raise InvalidInput("deadline is not after the job's first due time: it could never run", "deadline")
    return when


def _arg_names(value: Any, args_text: str) -> tuple[str, ...]:
    """The keyword names a job's args pass (all that binding them to a signature looks at): the mapping's own
    keys when they are all text, else the names its stored JSON has."""
    if type(value) is dict and all(type(key) is str for key in value):
        return tuple(value)
    return tuple(json.loads(args_text))


def bind(target: Any, args: Mapping[str, Any] | tuple[str, ...], call: str) -> None:
    """The keyword arguments (or just their names) must fit the callable (every step of a multi-step job), as a
    call would need. Whether they fit depends on the names alone: a fit is remembered for the next job."""
    names = tuple(args)
    try:
        _fits(target, names, call)
    except TypeError:     # an unhashable callable: read its signatures each time
        _check_fit(_signatures_of(target), names, call)


@functools.lru_cache(maxsize=4096)
def _fits(target: Any, names: tuple[str, ...], call: str) -> None:
    """bind() of a hashable callable: a fit is remembered; a refusal raises, and is not."""
    _check_fit(_cached_signatures(target), names, call)


def _check_fit(checked: tuple[tuple[str | None, inspect.Signature], ...], names: tuple[str, ...], call: str) -> None:
    kwargs = dict.fromkeys(names)
    for label, signature in checked:
        try:
            signature.bind(**kwargs)
        except TypeError as exc:
            where = f"{call} step {label}" if label else call
            raise InvalidInput(f"args do not fit {where}{signature}: {exc}", "args") from None


@functools.lru_cache(maxsize=1024)
def _cached_signatures(target: Any) -> tuple[tuple[str | None, inspect.Signature], ...]:
    """The signatures of a job's callable, read once (inspect.signature was a fifth of a single enqueue's CPU)."""
    return _signatures_of(target)


def _signatures_of(target: Any) -> tuple[tuple[str | None, inspect.Signature], ...]:
    found = []
    for label, func, method in _signatures(target):
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            continue      # no signature to check (a builtin): the call itself will tell
        if method:
            signature = signature.replace(parameters=list(signature.parameters.values())[1:])   # drop self
        found.append((label, signature))
    return tuple(found)


def _signatures(target: Any) -> list[tuple[str | None, Callable, bool]]:
    """(step name or None, function, whether it takes self) for the callable, or each step of a steps class."""
    steps = steps_of(target)
    if steps is None:
        return [(None, target, False)]
    found = []
    for name in steps:
        raw = inspect.getattr_static(target, name)
        plain = not isinstance(raw, (staticmethod, classmethod))
        found.append((name, raw if plain else getattr(target, name), plain))
    return found


def _resolve(registry: Registry, call: Any, field: str) -> Any:
    check_name(text(call, field, 255) if isinstance(call, str) else call)
    try:
        return registry.resolve(call)
    except ImportError as exc:
        raise InvalidInput(f"{field} {call!r} cannot be imported: {exc}", field) from None


def _optional(value: Any, field: str) -> float | None:
    return None if value is None else duration(value, field, 1, MAX_LEASE)


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool) and value not in (0, 1):
        raise InvalidInput(f"{field} must be true or false", field)
    return bool(value)


def _human(seconds: float) -> str:
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit if seconds != size else unit[:-1]}"
    return f"{seconds:g} s"


def message(data: Any, delay: Any, ttr: Any, priority: Any) -> tuple[str, float, float, int]:
    """A pull-mode message: (data as JSON text, delay seconds, ttr seconds, priority)."""
    _check_depth(data, "data")
    try:
        dumped = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        size = len(dumped.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput("data holds text that is not valid Unicode (a lone surrogate)", "data") from None
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"data cannot be stored as JSON: {exc}", "data") from None
    if size > MAX_ARGS_BYTES:
        raise InvalidInput(f"data is {size} bytes as JSON: at most {MAX_ARGS_BYTES}", "data")
    return (dumped, duration(delay or 0, "delay"), duration(ttr, "ttr", 1, MAX_LEASE),
            integer(priority or 0, "priority", -MAX_PRIORITY, MAX_PRIORITY))
