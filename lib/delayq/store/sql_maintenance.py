"""MaintenanceStore on SQL: leases and recovery, the index's rebuild and outbox, alerts, retry by hand, purge.

(The schema itself, migrate and check_schema, lives with the transactions in sql.py.)
"""

from __future__ import annotations

import json
from typing import Any

from ..jobs import FAILED, PENDING, Job
from .base import UNIQUE_TAKEN, Changed
from .sql_jobs import CHUNK, chunks, rows_to_jobs, skipped


class _RolledMeanwhile(Exception):
    """roll_up met the rows another host's roll-up of the same buckets has just committed."""


class MaintenanceSql:
    run: Any
    tx: Any
    integrity_error: Any
    _fold_tallies: Any

    # -- leases --------------------------------------------------------------
    def expired(self, now: float, limit: int) -> list[Job]:
        with self.tx(write=False) as cur:
            return rows_to_jobs(self.run(cur, "expired_leases", now=now, limit=limit))

    # -- the due index: rebuild and outbox -----------------------------------
    def pending_page(self, after_id: int, upto_id: int, limit: int) -> list[tuple[int, str, float, int]]:
        with self.tx(write=False) as cur:
            packed = self.run(cur, "pending_page", after=after_id, upto=upto_id, limit=limit).fetchone()[0]
        rows = json.loads(packed) if packed else []
        return sorted((int(job), queue, float(due), int(priority)) for job, queue, due, priority in rows)

    def newer_rows(self, after_id: int, before: float, limit: int) -> tuple[list[tuple[int, str, float, int]], int]:
        with self.tx(write=False) as cur:
            rows = self.run(cur, "newer_rows", after=after_id, limit=limit).fetchall()
        seen = []
        for row in rows:              # in id order, up to the first one too new to judge (its entry may be coming)
            if float(row[5]) > before:
                break
            seen.append(row)
        pending = [(int(r[0]), r[2], float(r[3]), int(r[4])) for r in seen if r[1] == PENDING]
        return pending, (int(seen[-1][0]) if seen else after_id)

    def max_job_id(self) -> int:
        with self.tx(write=False) as cur:
            return int(self.run(cur, "max_job_id").fetchone()[0])

    def pending_entries(self, ids: list[int]) -> list[tuple[int, str, float, int]]:
        with self.tx(write=False) as cur:
            rows = [row for part in chunks(ids) for row in self.run(cur, "pending_entries", ids=part).fetchall()]
        return [(int(r[0]), r[1], float(r[2]), int(r[3])) for r in rows]

    def outbox(self, limit: int) -> list[tuple[int, str, float, int]]:
        with self.tx(write=False) as cur:
            rows = self.run(cur, "outbox_page", limit=limit).fetchall()
        return [(int(r[0]), r[1], float(r[2]), int(r[3])) for r in rows]

    def outbox_done(self, ids: list[int]) -> None:
        if ids:
            with self.tx() as cur:
                for start in range(0, len(ids), CHUNK):
                    self.run(cur, "outbox_clear", ids=ids[start:start + CHUNK])

    # -- alerts --------------------------------------------------------------
    def alerts_due(self, limit: int) -> list[dict[str, Any]]:
        with self.tx(write=False) as cur:
            self.run(cur, "alerts_due", limit=limit)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def mark_alerted(self, ids: list[int], now: float) -> None:
        if ids:
            with self.tx() as cur:
                for start in range(0, len(ids), CHUNK):
                    self.run(cur, "mark_alerted", now=now, ids=ids[start:start + CHUNK])

    def roll_up(self, since: float, until: float, keep: float) -> int:
        try:
            with self.tx() as cur:
                self.run(cur, "clear_rollups", since=since, until=until, keep=keep)
                try:
                    return self.run(cur, "roll_up", since=since, until=until).rowcount
                except self.integrity_error:
                    raise _RolledMeanwhile from None
        except _RolledMeanwhile:
            # another host rolled the same buckets up at the same moment (a DELETE of buckets not written yet
            # locks nothing to wait on): this transaction is rolled back whole, and that host's rows stand
            return 0

    # -- retry by hand ------------------------------------------------------
    def retry_ids(self, ids: list[int], due_at: float, now: float, reset_attempts: bool, step: str | None) -> Changed:
        with self.tx() as cur:
            rows = [row for part in chunks(ids) for row in self.run(cur, "lock_keys", ids=part).fetchall()]
            failed = [(row[0], row[1], row[3]) for row in rows if row[2] == FAILED]
            left = skipped(ids, rows, (FAILED,))
            if step is not None and failed:
                have = {row[0] for part in chunks([job for job, _, _ in failed])
                        for row in self.run(cur, "jobs_with_step", ids=part, step=step).fetchall()}
                left += [(job, f"no step {step!r}") for job, _, _ in failed if job not in have]
                failed = [row for row in failed if row[0] in have]
            done = self._retry_rows(cur, failed, due_at, now, reset_attempts)
            retried = {job for job, _, _ in done}
            left += [(job, UNIQUE_TAKEN) for job, _, _ in failed if job not in retried]
            reset = 1 if reset_attempts else 0
            for part in chunks([job for job, _, _ in done]):
                self.run(cur, "retry_steps", reset=reset, now=now, ids=part, step=step)
        return Changed(done, left)

    def _retry_rows(self, cur: Any, rows: list[tuple[int, str, int]], due_at: float, now: float,
                    reset_attempts: bool) -> list[tuple[int, str, int]]:
        """Each chunk in one UPDATE; where a unique job's queue+ext is live again elsewhere, that chunk one row
        at a time, skipping the job (a failed statement alone is undone: the transaction goes on)."""
        params = {"due_at": due_at, "now": now, "reset": 1 if reset_attempts else 0}
        done = []
        for start in range(0, len(rows), CHUNK):
            part = rows[start:start + CHUNK]
            try:
                self.run(cur, "retry_jobs", ids=[job for job, _, _ in part], **params)
                done += part
                continue
            except self.integrity_error:
                pass
            for row in part:
                try:
                    self.run(cur, "retry_jobs", ids=[row[0]], **params)
                    done.append(row)
                except self.integrity_error:
                    continue
        return done

    def step_names(self, job_id: int) -> list[str]:
        with self.tx(write=False) as cur:
            return [row[0] for row in self.run(cur, "step_names", id=job_id).fetchall()]

    # -- purge ---------------------------------------------------------------
    def purge_ids(self, ids: list[int], statuses: list[str]) -> Changed:
        with self.tx() as cur:
            rows = [row for part in chunks(ids) for row in self.run(cur, "lock_keys", ids=part).fetchall()]
            gone = [row for row in rows if row[2] in statuses]
            for start in range(0, len(gone), CHUNK):
                part = [row[0] for row in gone[start:start + CHUNK]]
                self._fold_tallies(cur, gone[start:start + CHUNK], part)
                for name in ("delete_attempts_of", "delete_steps_of", "delete_jobs"):
                    self.run(cur, name, ids=part)
        return Changed([(row[0], row[1], row[3]) for row in gone], skipped(ids, rows, statuses))
