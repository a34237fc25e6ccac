"""ControlStore on SQL: paused queues, runner heartbeats, the audit trail (small tables, one short transaction each)."""

from __future__ import annotations

from typing import Any

_AUDIT_COLUMNS = ("id", "at", "address", "actor", "action", "target", "jobs", "detail")
_WORKER_COLUMNS = ("id", "host", "pid", "queues", "concurrency", "every", "started_at", "last_seen", "stopped_at",
                   "running")


class ControlSql:
    run: Any
    tx: Any
    integrity_error: Any

    def pause(self, queue: str, reason: str | None, now: float) -> bool:
        with self.tx() as cur:
            if self.run(cur, "pause_again", queue=queue, reason=reason).rowcount:
                return False
            try:
                self.run(cur, "pause_queue", queue=queue, now=now, reason=reason)
            except self.integrity_error:     # paused by someone else at the same moment
                return False
        return True

    def resume(self, queue: str) -> bool:
        with self.tx() as cur:
            return self.run(cur, "resume_queue", queue=queue).rowcount > 0

    def paused(self) -> dict[str, tuple[float, str | None]]:
        with self.tx(write=False) as cur:
            return {queue: (float(at), reason) for queue, at, reason in self.run(cur, "paused_queues").fetchall()}

    def beat(self, worker: dict[str, Any], running: str, now: float) -> None:
        with self.tx() as cur:
            if self.run(cur, "beat_again", id=worker["id"], now=now, running=running).rowcount:
                return
            self.run(cur, "beat_first", now=now, running=running, **worker)   # one writer per id: no race

    def worker_stopped(self, worker_id: str, now: float) -> None:
        with self.tx() as cur:
            self.run(cur, "worker_stopped", id=worker_id, now=now)

    def workers(self) -> list[dict[str, Any]]:
        with self.tx(write=False) as cur:
            return [dict(zip(_WORKER_COLUMNS, row)) for row in self.run(cur, "select_workers").fetchall()]

    def forget_workers(self, before: float) -> int:
        with self.tx() as cur:
            return self.run(cur, "forget_workers", before=before).rowcount

    def record_action(self, row: dict[str, Any]) -> None:
        with self.tx() as cur:
            self.run(cur, "insert_audit", **{name: row.get(name) for name in _AUDIT_COLUMNS})

    def actions(self, before: float, limit: int) -> list[dict[str, Any]]:
        with self.tx(write=False) as cur:
            return [dict(zip(_AUDIT_COLUMNS, row)) for row in self.run(cur, "select_audit", before=before,
                                                                         limit=limit).fetchall()]
