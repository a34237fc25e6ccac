"""The store's verbs for recovery and operations: leases, steps, index rebuild, alerts, retry, purge.

Mixed into SqlStore; the same named-query and transaction rules apply.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInput
from .base import Expired, Recovery, Step


class RecoveryOps:
    q: Any
    tx: Any

    # -- leases --------------------------------------------------------------
    def begin_job(self, job_id: int, token: str, now: float) -> bool:
        with self.tx() as cur:
            cur.execute(self.q("begin_job"), (now, now, job_id, token, now))
            return cur.rowcount == 1

    def extend_lease(self, job_id: int, token: str, until: float, now: float) -> bool:
        with self.tx() as cur:
            cur.execute(self.q("extend_lease"), (until, now, job_id, token))
            return cur.rowcount == 1

    def expired(self, now: float, limit: int) -> list[Expired]:
        with self.tx() as cur:
            cur.execute(self.q("expired_leases"), (now, limit))
            return [Expired(*row) for row in cur.fetchall()]

    def recover(self, decisions: list[Recovery], now: float) -> list[Recovery]:
        applied = []
        with self.tx() as cur:
            for d in decisions:
                if d.status == "pending":
                    cur.execute(self.q("recover_pending"), (d.due_at, 0 if d.counts else 1, d.error, now, d.id, d.token))
                else:
                    cur.execute(self.q("recover_failed"), (now, d.error, now, d.id, d.token))
                if cur.rowcount != 1:
                    continue    # another compensate run (or the runner itself) got there first
                applied.append(d)
                cur.execute(self.q("recover_manual_steps"), (d.error, now, d.id))
                cur.execute(self.q("recover_auto_steps"), (now, d.id))
                if d.counts:
                    cur.execute(self.q("insert_attempts", rows=1), (d.id, d.attempt, d.started_at or now, now,
                                                                    "interrupted", d.error))
        return applied

    # -- steps ---------------------------------------------------------------
    def steps(self, job_id: int) -> list[Step]:
        with self.tx() as cur:
            cur.execute(self.q("select_steps"), (job_id,))
            return [Step(*row) for row in cur.fetchall()]

    def ensure_steps(self, job_id: int, declared: list[tuple[str, str]], now: float) -> None:
        with self.tx() as cur:
            cur.execute(self.q("select_steps"), (job_id,))
            known = {row[0] for row in cur.fetchall()}
            for position, (name, mode) in enumerate(declared):
                if name not in known:
                    cur.execute(self.q("insert_step"), (job_id, name, mode, position, now))

    def begin_step(self, job_id: int, name: str, token: str, now: float) -> bool:
        with self.tx() as cur:
            cur.execute(self.q("lock_job_claim"), (job_id, token, now))
            if cur.fetchone() is None:
                return False     # the claim was lost: recovery owns this job now
            cur.execute(self.q("begin_step"), (now, now, job_id, name))
            return cur.rowcount == 1

    def finish_step(self, job_id: int, name: str, status: str, error: str | None, now: float) -> None:
        with self.tx() as cur:
            cur.execute(self.q("finish_step"), (status, error, now, now, job_id, name))

    # -- index rebuild -------------------------------------------------------
    def pending_page(self, after_id: int, limit: int) -> list[tuple[int, str, float]]:
        with self.tx() as cur:
            cur.execute(self.q("pending_page"), (after_id, limit))
            packed = cur.fetchone()[0]
        rows = json.loads(packed) if packed else []
        return sorted((int(job), queue, float(due)) for job, queue, due in rows)

    def statuses(self, ids: list[int]) -> dict[int, str]:
        if not ids:
            return {}
        with self.tx() as cur:
            cur.execute(self.q("select_statuses", ids=len(ids)), list(ids))
            return {row[0]: row[1] for row in cur.fetchall()}

    # -- alerts --------------------------------------------------------------
    def alerts_due(self, limit: int) -> list[dict[str, Any]]:
        with self.tx() as cur:
            cur.execute(self.q("alerts_due"), (limit,))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def mark_alerted(self, ids: list[int], now: float) -> None:
        if ids:
            with self.tx() as cur:
                cur.execute(self.q("mark_alerted", ids=len(ids)), [now, *ids])

    # -- manual retry --------------------------------------------------------
    def retry(self, job_id: int, due_at: float, now: float, reset_attempts: bool, step: str | None) -> tuple[str, str] | None:
        """A failed job back to pending with its failed steps; None if no such job, else (status before, queue)."""
        with self.tx() as cur:
            cur.execute(self.q("lock_for_retry"), (job_id,))
            row = cur.fetchone()
            if row is None:
                return None
            _, queue, status, attempts, max_attempts = row
            if status != "failed":
                return status, queue
            attempts = 0 if reset_attempts else attempts
            try:
                cur.execute(self.q("retry_job"), (due_at, attempts, max(max_attempts, attempts + 1), now, job_id))
            except self.integrity_error:   # type: ignore[attr-defined]
                raise InvalidInput(f"job {job_id} was enqueued with --unique and another job with its queue and ext "
                                   "is live now: cancel that one first, or let it finish") from None
            cur.execute(self.q("retry_steps"), (1 if reset_attempts else 0, now, job_id, step, step))
            return status, queue

    # -- purge ---------------------------------------------------------------
    def purge_page(self, statuses: list[str], before: float, limit: int) -> list[int]:
        with self.tx() as cur:
            cur.execute(self.q("purge_page", statuses=len(statuses)), [*statuses, before, limit])
            return [row[0] for row in cur.fetchall()]

    def delete_with_history(self, ids: list[int]) -> None:
        if ids:
            with self.tx() as cur:
                for name in ("delete_attempts_of", "delete_steps_of", "delete_jobs"):
                    cur.execute(self.q(name, ids=len(ids)), list(ids))


    # -- the operator's view -------------------------------------------------
    def stats(self, now: float, since: float) -> list[tuple]:
        with self.tx() as cur:
            cur.execute(self.q("stats"), (now, now, since))
            return [tuple(row) for row in cur.fetchall()]

    def list_jobs(self, status: str | None, queue: str | None, ext_prefix: str | None, limit: int) -> list[dict[str, Any]]:
        like = None if ext_prefix is None else _escape_like(ext_prefix) + "%"
        with self.tx() as cur:
            cur.execute(self.q("list_jobs"), (status, status, queue, queue, like, like, limit))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def live_queues_like(self, pattern: str) -> list[str]:
        with self.tx() as cur:
            cur.execute(self.q("live_queues_like"), (pattern,))
            return [row[0] for row in cur.fetchall()]

    def failed_in_queue(self, queue: str, limit: int) -> list[int]:
        with self.tx() as cur:
            cur.execute(self.q("failed_in_queue"), (queue, limit))
            return [row[0] for row in cur.fetchall()]


def _escape_like(text: str) -> str:
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")
