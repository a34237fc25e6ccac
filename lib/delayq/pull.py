"""Pull mode: the beanstalkd-like queue of seed 002, on delayq's own storage.

    q = delayq.Queue()                          # settings from the environment / .env
    q.put("sms", {"to": "+86..."}, delay=5, ttr=30)
    msg = q.reserve("sms", timeout=10)          # None when nothing came within 10 s
    ...                                         # handle msg.data
    q.delete(msg)                               # or q.release(msg, delay=60), or q.bury(msg)

For consumers that want messages, not callables (another service's loop). A
message is a job row in tube "~NAME" (run_due.py never runs those), so it has the
same guarantees: reserve claims atomically (the Lua claim, or SKIP LOCKED), the
TTR is the lease, and a message not deleted within its TTR becomes reservable
again: the seed's rPop that lost a job when its consumer died cannot happen.
Ids come from the table's auto-increment, never from a list's length.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import recovery
from . import jobs as J
from . import ladders, validate
from .errors import NotFound
from .jobs import Job, JobSpec, Outcome
from .manager import Manager

TUBE_MARK = "~"
MAX_ATTEMPTS = 10_000
POLL = 0.05
RECOVER_EVERY = 1.0      # seconds between lease recoveries while reserve() waits


@dataclass
class Message:
    """A reserved message: its data, and the reservation (token) that delete/release/bury need."""

    id: int
    tube: str
    data: Any
    reserves: int          # how many times it was reserved, this one included
    job: Job
    token: str


class Queue:
    def __init__(self, manager: Manager | None = None, ttr: float = 60.0):
        if manager is None:
            from .app import open_manager

            manager = open_manager()
        self.m = manager
        self.ttr = validate.duration(ttr, "ttr", 1, validate.MAX_LEASE)

    def put(self, tube: str, data: Any, delay: float = 0, priority: int = 0, ttr: float | None = None) -> int:
        """Store a message (any JSON value), reservable after `delay` seconds; returns its id."""
        text, delay, ttr, priority = validate.message(data, delay, ttr or self.ttr, priority)
        queue = _queue(tube)
        now = self.m.clock.now()
        spec = JobSpec(call="", args_json=text, due_at=now + delay, queue=queue, ladder=ladders.DEFAULT,
                       max_attempts=MAX_ATTEMPTS, priority=priority, lease=ttr)
        return self.m.insert([spec], now)[0].id

    def reserve(self, tube: str, timeout: float = 0) -> Message | None:
        """Claim the earliest due message of `tube`, waiting up to `timeout` seconds; None if none came."""
        queue = _queue(tube)
        end = self.m.clock.now() + timeout
        recovered_at = float("-inf")
        while True:
            claimed = self.m.claim([queue], 1)
            if claimed:
                job = claimed[0]
                return Message(job.id, tube, json.loads(job.args_json), job.attempts, job, job.token or "")
            now = self.m.clock.now()
            if now - recovered_at >= RECOVER_EVERY:   # a consumer died holding messages: their TTR ran out
                recovered_at = now
                if recovery.recover_expired(self.m):
                    continue
            if now >= end:
                return None
            nxt = self.m.next_due([queue])
            self.m.clock.sleep(min(end - now, POLL if nxt is None else max(0.0, min(nxt - now, 1.0))) or POLL)

    def delete(self, msg: Message) -> None:
        """Done with the message. NotFound if its reservation was lost (TTR ran out, reserved by another)."""
        self._finish(msg, J.SUCCEEDED, None, None, "deleted")

    def release(self, msg: Message, delay: float = 0) -> None:
        """Give the message back, reservable again after `delay` seconds."""
        self._finish(msg, J.PENDING, None, self.m.clock.now() + max(0.0, delay), "released")

    def bury(self, msg: Message, reason: str = "buried") -> None:
        """Put the message aside (status failed) until kick(); an alert is raised for it."""
        self._finish(msg, J.FAILED, f"buried: {reason}", None, "buried")

    def kick(self, tube: str, n: int = 1) -> int:
        """Make up to `n` buried messages of `tube` reservable again; returns how many."""
        ids = self.m.reports.failed_in_queue(_queue(tube), n)
        return sum(len(self.m.retry(job_id=job)) for job in ids)

    def jobs(self, tube: str, limit: int = 10_000) -> list[dict[str, Any]]:
        """The live messages of `tube` (pending or reserved), newest first."""
        rows = self.m.reports.list_jobs(queue=_queue(tube), limit=limit)
        return [row for row in rows if row["status"] in (J.PENDING, J.RUNNING)]

    def tubes(self) -> list[str]:
        """Tubes that have live messages."""
        return [q[len(TUBE_MARK):] for q in self.m.reports.live_queues_like(TUBE_MARK + "%")]

    def _finish(self, msg: Message, status: str, error: str | None, due: float | None, label: str) -> None:
        now = self.m.clock.now()
        outcome = Outcome(msg.job, status, now, now, error, due, label=label)
        if msg.id not in self.m.finish([outcome]):
            raise NotFound(f"message {msg.id}: the reservation was lost (its TTR ran out); it may be reserved again")


def _queue(tube: str) -> str:
    return TUBE_MARK + validate.queue(tube, "tube")
