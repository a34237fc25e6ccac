"""Rate and concurrency limits, across every runner on every host: what they are and who may start. Pure.

    DELAYQ_QUEUES={"psp": {"rate": "10/s"}, "sms": {"rate": "600/m", "max_running": 20}}

    @delayq.job(limit_key="order:{order_id}", limit=1)      # one running job per order
    def auto_confirm(order_id: int) -> None: ...

A queue's `rate` starts at most that many of its jobs a second (a minute, an hour) across all runners: a token
bucket that holds at most BURST seconds' worth of starts (at least one), so no second starts more than the rate
plus that. A queue's `max_running` (today's `concurrency` is per runner, a number of threads) is how many of its
jobs run at once across all runners. A job's `limit_key`, computed from its arguments when it is enqueued, allows
`limit` running jobs per key.

They are enforced where a job starts, in the store's transaction (store/sql_claims.py): the gates' rows locked, the
running jobs counted (those whose lease has not run out: a dead holder's slot comes back when its lease does),
the tokens taken. A job a gate holds back is not started, not counted as an attempt, and moves out of the way:
due again when its queue's next token comes (rate) or in RECHECK seconds (a running slot), so that the jobs
behind it, of other keys and queues, go on. `decide` is that choice, given what the gates allow.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, field
from string import Formatter
from typing import Any, Mapping, Sequence

from .errors import InvalidInput

BURST = 0.1          # seconds of a queue's rate a bucket holds (at least one start): bounds any second's starts
RECHECK = 1.0        # seconds a job held back for a running slot waits before it is looked at again
KEY_LOCKS = 4096     # per-key counts are guarded by one of this many lock rows (the key's hash)
MAX_KEY = 191
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|m|h)\s*$")
_PER = {"s": 1.0, "m": 60.0, "h": 3600.0}


def rate(value: Any, field: str = "rate") -> float:
    """"10/s", "600/m", "100/h" -> starts per second (a number is taken as starts per second: checked again)."""
    match = _RATE_RE.match(value) if isinstance(value, str) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        per_second = float(value)
    else:
        per_second = float(match.group(1)) / _PER[match.group(2)] if match else 0.0
    if not 0 < per_second <= 100_000 or per_second != per_second:
        raise InvalidInput(f"{field} must be starts per second, minute or hour, such as 10/s, 600/m or 100/h "
                           "(at most 100000/s)", field)
    return per_second


@dataclass(frozen=True)
class QueueLimit:
    """A queue's limits across all runners: `rate` starts a second, `max_running` jobs at once (None: none)."""

    rate: float | None = None
    max_running: int | None = None

    @property
    def burst(self) -> float:
        return max(1.0, (self.rate or 0.0) * BURST)


def queue_limits(queues: Mapping[str, Mapping[str, Any]]) -> dict[str, QueueLimit]:
    """The limited queues of DELAYQ_QUEUES (already validated: rate as starts a second)."""
    return {name: QueueLimit(d.get("rate"), d.get("max_running")) for name, d in queues.items()
            if d.get("rate") is not None or d.get("max_running") is not None}


def claim_size(queues: Sequence[str], limits: Mapping[str, QueueLimit], asked: int) -> int:
    """How many jobs a claim of `queues` asks for: `asked`, or fewer when every queue is limited (a claim of more
    than its queues may start soon would only hold the rest back again): half a second of each one's rate (and its
    burst), or its max_running."""
    caps = []
    for queue in queues:
        limit = limits.get(queue)
        if limit is None:
            return asked
        soon = math.ceil(limit.rate * 0.5 + limit.burst) if limit.rate else asked
        caps.append(min(soon, limit.max_running or asked))
    return max(1, min(asked, sum(caps))) if caps else asked


def check_key_template(template: Any, limit: Any) -> None:
    """`@delayq.job(limit_key=..., limit=...)`: a format string naming arguments ("order:{order_id}"), 1-10000."""
    if template is None:
        if limit is not None:
            raise TypeError("@delayq.job(limit=...) needs limit_key=: the key the limit counts by")
        return
    if not isinstance(template, str) or not template or len(template) > MAX_KEY:
        raise TypeError("@delayq.job(limit_key=...) is a format string of the job's arguments, e.g. 'order:{order_id}'")
    for _, name, spec, conversion in Formatter().parse(template):
        if name is not None and (not name.isidentifier() or spec or conversion):
            raise TypeError(f"@delayq.job(limit_key={template!r}): name arguments only, as {{order_id}}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000):
        raise TypeError("@delayq.job(limit=...) takes 1 to 10000 running jobs per key")


def key_of(template: str, args: Mapping[str, Any], call: str) -> str:
    """A job's limit key from its arguments; InvalidInput if one it names is missing or the key is too long."""
    try:
        key = template.format_map({k: v for k, v in args.items()})
    except KeyError as exc:
        raise InvalidInput(f"{call}: its limit_key {template!r} names argument {exc.args[0]!r}, which this job "
                           "does not have", "args") from None
    if len(key) > MAX_KEY:
        raise InvalidInput(f"{call}: its limit key is longer than {MAX_KEY} characters", "args")
    return key


def lock_of(key: str) -> str:
    """The lock row that guards a key's count (keys share KEY_LOCKS rows: the table stays small)."""
    return f"key#{zlib.crc32(key.encode('utf-8')) % KEY_LOCKS}"


@dataclass
class Candidate:
    """A pending job a claim would start, with what limits it."""

    id: int
    queue: str
    priority: int
    key: str | None = None
    key_limit: int | None = None


@dataclass
class Allowance:
    """What the gates allow now: starts left by rate (tokens), running slots left per queue and per key."""

    tokens: dict[str, float] = field(default_factory=dict)        # queue -> tokens in its bucket now
    rates: dict[str, float] = field(default_factory=dict)         # queue -> its rate
    queue_slots: dict[str, int] = field(default_factory=dict)     # queue -> max_running - running now
    queue_max: dict[str, int] = field(default_factory=dict)       # queue -> its max_running
    key_running: dict[str, int] = field(default_factory=dict)     # key -> running now


@dataclass
class Decision:
    start: list[int] = field(default_factory=list)
    held: list[tuple[Candidate, float]] = field(default_factory=list)     # (job, due again at)
    used: dict[str, float] = field(default_factory=dict)                 # queue -> tokens taken


def decide(candidates: Sequence[Candidate], allowed: Allowance, now: float) -> Decision:
    """Which candidates start (in the order given), and when the others are due again."""
    out = Decision()
    tokens = dict(allowed.tokens)
    slots = dict(allowed.queue_slots)
    running = dict(allowed.key_running)
    waiting: dict[str, int] = {}       # queue -> jobs held for a token so far
    behind: dict[str, int] = {}        # a key or a queue -> jobs held for one of its running slots so far
    for job in candidates:
        by_rate = job.queue in tokens and tokens[job.queue] < 1.0 - 1e-3     # (epoch floats: 0.1 s is 0.0999999)
        by_slot = job.queue in slots and slots[job.queue] <= 0
        by_key = job.key is not None and running.get(job.key, 0) >= (job.key_limit or 1)
        if not (by_rate or by_slot or by_key):
            out.start.append(job.id)
            if job.queue in tokens:
                tokens[job.queue] -= 1.0
                out.used[job.queue] = out.used.get(job.queue, 0.0) + 1.0
            if job.queue in slots:
                slots[job.queue] -= 1
            if job.key is not None:
                running[job.key] = running.get(job.key, 0) + 1
            continue
        due = now
        if by_slot or by_key:
            # a backlog of one key (or one full queue) is spread a RECHECK per `limit` jobs: looked at again all at
            # once, it would be held again all at once, each second, in the way of the jobs behind it
            gate, room = (f"key:{job.key}", job.key_limit or 1) if by_key else (
                f"queue:{job.queue}", allowed.queue_max.get(job.queue, 1))
            nth = behind[gate] = behind.get(gate, 0) + 1
            due = now + RECHECK * (1 + (nth - 1) // room)
        if by_rate:
            nth = waiting[job.queue] = waiting.get(job.queue, 0) + 1
            due = max(due, now + (nth - tokens[job.queue]) / allowed.rates[job.queue])
        out.held.append((job, due))
    return out


def refill(tokens: float, at: float, now: float, limit: QueueLimit) -> float:
    """A bucket's tokens at `now`, from `tokens` at `at` (capped at its burst)."""
    return min(limit.burst, tokens + max(0.0, now - at) * (limit.rate or 0.0))


def ceil_due(due: float) -> float:
    """Due times of held jobs, to the millisecond above (a due time is never before the token it waits for)."""
    return math.ceil(due * 1000) / 1000
