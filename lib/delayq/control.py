"""What the operator steers and sees of the runners: paused queues, the runners' heartbeats, the dashboard's
audit trail, the alert digest and the roll-up of attempts the long charts read, over the store's ControlStore
(and MaintenanceStore for the last two). The manager asks `active()` before each claim.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any, Mapping

from . import validate
from .clock import Clock
from .store import Store
from .reports import COUNT_EVERY, LIVE_UPTO
from .store.base import ROLLUP
from .workers import Worker

PAUSED_FOR = 1.0            # seconds a process trusts its last read of the paused queues
FORGET_WORKERS = 86400.0    # seconds after its last beat a runner's row is deleted
SETTLE = 300.0              # seconds after a bucket ends before it is rolled up (outcomes committed late land first)
AGAIN = 1800.0              # seconds of buckets rolled up again each run (outcomes recovered late, from a ledger)
KEEP = 8 * 86400.0          # rolled-up buckets kept (the longest chart shows 7 days)
ROLL_AT_MOST = 86400.0      # seconds of attempts rolled up in one transaction


class Control:
    def __init__(self, store: Store, clock: Clock):
        self.store = store
        self.clock = clock
        self._paused_read: tuple[float, frozenset[str]] = (float("-inf"), frozenset())

    # -- paused queues -----------------------------------------------------------
    def pause(self, queue: str, reason: str | None = None) -> bool:
        """Stop claiming `queue` on every runner (within a second); enqueue goes on. False if already paused."""
        validate.queue(queue, "queue", tube=True)
        reason = validate.text(reason, "--reason", 255) if reason else None
        paused = self.store.pause(queue, reason, self.clock.now())
        self._paused_read = (float("-inf"), frozenset())
        return paused

    def resume(self, queue: str) -> bool:
        """Claim `queue` again; False if it was not paused."""
        validate.queue(queue, "queue", tube=True)
        resumed = self.store.resume(queue)
        self._paused_read = (float("-inf"), frozenset())
        return resumed

    def paused_queues(self) -> dict[str, tuple[float, str | None]]:
        """queue -> (paused since, reason), read now."""
        return self.store.paused()

    def active(self, queues: list[str], now: float) -> list[str]:
        """Those of `queues` not paused; the paused set is read from the store at most once per PAUSED_FOR seconds."""
        read_at, paused = self._paused_read
        if not read_at <= now < read_at + PAUSED_FOR:
            paused = frozenset(self.store.paused())
            self._paused_read = (now, paused)
        return [queue for queue in queues if queue not in paused]

    # -- runners' heartbeats -------------------------------------------------------
    def heartbeat(self, worker: Mapping[str, Any], running: list[tuple[int, float]]) -> None:
        """Record that a runner is alive now and runs these (job id, started at) (workers.Heartbeat calls it)."""
        self.store.beat(dict(worker), json.dumps([[job, started] for job, started in running]), self.clock.now())

    def worker_stopped(self, worker_id: str) -> None:
        self.store.worker_stopped(worker_id, self.clock.now())

    def forget_workers(self) -> int:
        """Delete the rows of runners gone for a day."""
        return self.store.forget_workers(self.clock.now() - FORGET_WORKERS)

    def workers(self) -> list[Worker]:
        """Every runner row as a workers.Worker, live or not (state and how long ago it stopped beating)."""
        now = self.clock.now()
        return [Worker.from_row(row, now) for row in self.store.workers()]

    # -- the audit trail and the alert digest ------------------------------------------
    def record_action(self, address: str, actor: str, action: str, target: str, jobs: int,
                      detail: str | None = None) -> None:
        """Write one audit row for an action taken on the dashboard (after the action committed)."""
        self.store.record_action({"id": secrets.token_hex(16), "at": self.clock.now(), "address": address[:64],
                                  "actor": actor[:64], "action": action[:32], "target": target, "jobs": int(jobs),
                                  "detail": detail})

    def send_alerts(self, alerter, limit: int = 1000) -> int:
        """One digest for the failed jobs not alerted yet; returns how many it covered (0 if not delivered)."""
        jobs = self.store.alerts_due(limit)
        if not jobs or not alerter.send(jobs, len(jobs), more=len(jobs) == limit):
            return 0
        self.store.mark_alerted([job["id"] for job in jobs], self.clock.now())
        return len(jobs)

    def count_jobs(self, budget: float = 5.0) -> int:
        """Count the queues' big groups (more than reports.LIVE_UPTO jobs of one status) whose count is a minute
        old or missing, for `budget` seconds at most (compensate, every run): what the overview and `delayq
        stats` show for them. Returns the groups counted."""
        return self.store.count_groups(self.clock.now(), LIVE_UPTO, COUNT_EVERY, budget)

    def roll_up(self, budget: float = 10.0) -> int:
        """The attempts of the 5-minute buckets that ended SETTLE seconds ago or more and are not rolled up yet,
        into the table the long charts read (compensate, every run), a day of attempts a transaction, for
        `budget` seconds at most (a first run after a busy week catches up over a few runs); returns the bucket
        rows written."""
        now = self.clock.now()
        until = (now - SETTLE) // ROLLUP * ROLLUP
        last = self.store.rolled_upto()
        since = max(min(last + ROLLUP, until - AGAIN) if last is not None else 0.0, until - KEEP)
        written, began = 0, time.monotonic()
        while since < until and time.monotonic() - began < budget:
            end = min(until, since + ROLL_AT_MOST)
            written += self.store.roll_up(since, end, now - KEEP)
            since = end
        return written
