"""The store on a SQL database; dialects (mysql.py, sqlite.py) add the connection.

All SQL text comes from sql/<dialect>/queries.sql by name.
"""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from ..errors import BackendError
from ..jobs import FAILED, PENDING, SUCCEEDED, TIMED_OUT, Attempt, Job, JobSpec, Outcome
from .base import Cancelled, Inserted, Store
from .queries import Queries, migrations
from .sql_recovery import RecoveryOps

CHUNK = 500
_JOB_FIELDS = {
    "id": "id", "queue": "queue", "callable": "call", "args": "args_json", "status": "status",
    "attempts": "attempts", "max_attempts": "max_attempts", "ladder": "ladder", "due_at": "due_at",
    "ext": "ext", "deadline": "deadline", "priority": "priority", "last_error": "last_error",
    "created_at": "created_at", "started_at": "started_at", "finished_at": "finished_at",
    "updated_at": "updated_at", "at_most_once": "at_most_once", "lease_until": "lease_until",
    "on_timeout": "on_timeout", "event": "event", "event_id": "event_id",
}


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class _NotAllHeld(Exception):
    """Rolls back the fast path of finish() when a claim no longer holds every job."""


class SqlStore(RecoveryOps, Store):
    dialect = ""
    placeholder = "%s"
    driver_errors: tuple[type[BaseException], ...] = ()
    integrity_error: type[BaseException] = Exception
    returning = True

    def __init__(self, prefix: str, where: str):
        self.prefix = prefix
        self.q = Queries(self.dialect, prefix, self.placeholder)
        self.where = where
        self._conn: Any = None

    # -- dialect hooks -------------------------------------------------------
    def _connect(self) -> Any:
        raise NotImplementedError

    def _begin(self, conn: Any) -> None:
        raise NotImplementedError

    def _explain(self, exc: BaseException) -> str:
        return str(exc)

    # -- transactions --------------------------------------------------------
    @property
    def conn(self) -> Any:
        if self._conn is None:
            try:
                self._conn = self._connect()
            except self.driver_errors as exc:
                raise BackendError(f"{self.backend} at {self.where} is unreachable: {self._explain(exc)}") from None
        return self._conn

    @contextmanager
    def tx(self) -> Iterator[Any]:
        """One transaction: commit on success, roll back and translate driver errors on failure."""
        conn = self.conn
        try:
            self._begin(conn)
            cur = conn.cursor()
            yield cur
            conn.commit()
        except BaseException as exc:
            self._rollback(conn)
            if isinstance(exc, self.driver_errors):
                raise BackendError(f"{self.backend} at {self.where} failed: {self._explain(exc)}") from None
            raise

    def _rollback(self, conn: Any) -> None:
        try:
            conn.rollback()
        except self.driver_errors:
            self.close()

    def clone(self) -> "SqlStore":
        """The same store on a connection of its own (connections are not shared between threads)."""
        twin = copy.copy(self)
        twin._conn = None
        return twin

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except self.driver_errors:
                pass
            self._conn = None

    # -- schema --------------------------------------------------------------
    def migrate(self, now: float) -> list[int]:
        with self.tx() as cur:
            cur.execute(self.q("create_migrations"))
            cur.execute(self.q("applied_migrations"))
            applied = {row[0] for row in cur.fetchall()}
        done = []
        for version, statements in migrations(self.dialect, self.prefix):
            if version in applied:
                continue
            with self.tx() as cur:
                for statement in statements:
                    cur.execute(statement)
                try:
                    cur.execute(self.q("record_migration"), (version, now))
                except self.integrity_error:
                    continue   # another process applied it at the same moment
            done.append(version)
        return done

    def server_time(self) -> float:
        with self.tx() as cur:
            cur.execute(self.q("server_time"))
            return float(cur.fetchone()[0])

    # -- enqueue -------------------------------------------------------------
    def insert_jobs(self, specs: list[JobSpec], now: float) -> list[Inserted]:
        results: list[Inserted | None] = [None] * len(specs)
        with self.tx() as cur:
            plain = [i for i, spec in enumerate(specs) if not spec.unique]
            for part in chunks(plain):
                ids = self._insert(cur, [specs[i] for i in part], now)
                for i, job_id in zip(part, ids):
                    results[i] = Inserted(job_id, PENDING, specs[i].due_at, True)
            for i, spec in enumerate(specs):
                if spec.unique:
                    results[i] = self._insert_unique(cur, spec, now)
        return results  # type: ignore[return-value]

    def _insert(self, cur: Any, specs: Sequence[JobSpec], now: float) -> list[int]:
        """Ids of the inserted rows, in the order of `specs`."""
        rows = [self._row(spec) for spec in specs]
        if self.returning:
            # All rows travel as one JSON parameter: one value to escape instead of ~16 per job.
            cur.execute(self.q("insert_jobs_json"), (now, now, json.dumps(rows, ensure_ascii=False)))
            # Ids grow in the order rows were inserted (ORDER BY in the query); RETURNING's own order is not promised.
            return sorted(row[0] for row in cur.fetchall())
        ids = []
        for row in rows:
            cur.execute(self.q("insert_jobs_plain", rows=1), (*row, now, now))
            ids.append(cur.lastrowid)
        return ids

    @staticmethod
    def _row(spec: JobSpec) -> list:
        return [spec.queue, spec.ext, 1 if spec.unique else None, 1 if spec.unique else 0, spec.call, spec.args_json,
                spec.max_attempts, spec.ladder, spec.due_at, spec.deadline, spec.priority, spec.lease,
                1 if spec.at_most_once else 0, spec.on_timeout, spec.event, spec.event_id]

    def _insert_unique(self, cur: Any, spec: JobSpec, now: float) -> Inserted:
        for _ in range(5):
            try:
                job_id = self._insert(cur, [spec], now)[0]
                return Inserted(job_id, PENDING, spec.due_at, True)
            except self.integrity_error:
                cur.execute(self.q("find_live_unique"), (spec.queue, spec.ext))
                row = cur.fetchone()
                if row:
                    return Inserted(row[0], row[1], row[2], False)
        raise BackendError(f"{self.backend}: unique job {spec.queue}/{spec.ext} kept changing; try again")

    def delete_jobs(self, ids: list[int]) -> None:
        with self.tx() as cur:
            for part in chunks(ids):
                cur.execute(self.q("delete_jobs", ids=len(part)), list(part))

    # -- claim ---------------------------------------------------------------
    def start(self, ids: list[int], token: str, now: float, lease: float) -> list[Job]:
        if not ids:
            return []
        with self.tx() as cur:
            return self._start(cur, ids, token, now, lease)

    def _start(self, cur: Any, ids: Sequence[int], token: str, now: float, lease: float) -> list[Job]:
        cur.execute(self.q("start_jobs", ids=len(ids)), [token, now, lease, now, now, *ids])
        cur.execute(self.q("select_claimed", ids=len(ids)), [*ids, token])
        return self._jobs(cur)

    def claim_due(self, queues: list[str], now: float, limit: int, token: str, lease: float) -> list[Job]:
        with self.tx() as cur:
            cur.execute(self.q("lock_due", queues=len(queues)), [*queues, now, limit])
            ids = [row[0] for row in cur.fetchall()]
            return self._start(cur, ids, token, now, lease) if ids else []

    def next_due(self, queues: list[str]) -> float | None:
        with self.tx() as cur:
            cur.execute(self.q("next_due", queues=len(queues)), list(queues))
            row = cur.fetchone()
            return None if row is None or row[0] is None else float(row[0])

    # -- outcomes ------------------------------------------------------------
    def finish(self, outcomes: list[Outcome], token: str, now: float) -> tuple[set[int], list[tuple[int, str, float]]]:
        if not outcomes:
            return set(), []
        try:   # the usual case: the token still holds every job, checked by the update counts
            with self.tx() as cur:
                updated, followups = self._write_outcomes(cur, outcomes, outcomes, token, now)
                if updated != len(outcomes):
                    raise _NotAllHeld
            return {o.job.id for o in outcomes}, followups
        except _NotAllHeld:
            pass
        ids = [o.job.id for o in outcomes]
        with self.tx() as cur:   # some lease was taken over: lock the rows, write only those still held
            cur.execute(self.q("lock_held", ids=len(ids)), [*ids, token])
            held = {row[0] for row in cur.fetchall()}
            _, followups = self._write_outcomes(cur, [o for o in outcomes if o.job.id in held], outcomes, token, now)
        return held, followups

    def _write_outcomes(self, cur: Any, mine: list[Outcome], ran: list[Outcome], token: str,
                        now: float) -> tuple[int, list[tuple[int, str, float]]]:
        """Outcome updates for `mine` (conditional on the token), attempt rows for every run.

        Returns the rows updated, and the timeout-handler jobs inserted for jobs the deadline ended.
        """
        updated = 0
        done = [o.job.id for o in mine if o.status == SUCCEEDED]
        if done:
            cur.execute(self.q("finish_succeeded", ids=len(done)), [now, now, *done, token])
            updated += cur.rowcount
        for status, name in ((PENDING, "finish_retry"), (FAILED, "finish_failed"), (TIMED_OUT, "finish_timed_out")):
            rows = [(o.due_at if status == PENDING else now, o.error, now, o.job.id, token)
                    for o in mine if o.status == status]
            if rows:
                cur.executemany(self.q(name), rows)
                updated += cur.rowcount
        rows = [(o.job.id, o.job.attempts, o.started_at, o.finished_at, o.attempt_outcome, o.error) for o in ran]
        cur.execute(self.q("insert_attempts_json"), (json.dumps(rows, ensure_ascii=False),))   # one parameter
        handlers = [o.followup for o in mine if o.followup is not None]
        ids = self._insert(cur, handlers, now) if handlers else []
        return updated, [(i, spec.queue, spec.due_at) for i, spec in zip(ids, handlers)]

    # -- cancel and read -----------------------------------------------------
    def cancel(self, now: float, job_id: int | None = None, ext: str | None = None, queue: str | None = None) -> Cancelled:
        with self.tx() as cur:
            if job_id is not None:
                cur.execute(self.q("lock_for_cancel_by_id"), (job_id, queue, queue))
            else:
                cur.execute(self.q("lock_for_cancel_by_ext"), (ext, queue, queue))
            rows = cur.fetchall()
            pending = [(row[0], row[1]) for row in rows if row[2] == PENDING]
            if pending:
                ids = [job for job, _ in pending]
                cur.execute(self.q("cancel_jobs", ids=len(ids)), [now, now, *ids])
        return Cancelled(pending, [(row[0], row[2]) for row in rows if row[2] != PENDING])

    def get(self, job_id: int) -> Job | None:
        with self.tx() as cur:
            cur.execute(self.q("select_job"), (job_id,))
            jobs = self._jobs(cur)
        return jobs[0] if jobs else None

    def by_event(self, event_id: str) -> list[Job]:
        with self.tx() as cur:
            cur.execute(self.q("select_by_event"), (event_id,))
            return self._jobs(cur)

    def by_ext(self, ext: str, queue: str | None = None) -> list[Job]:
        with self.tx() as cur:
            cur.execute(self.q("select_by_ext"), (ext, queue, queue))
            return self._jobs(cur)

    def attempts(self, job_id: int) -> list[Attempt]:
        with self.tx() as cur:
            cur.execute(self.q("select_attempts"), (job_id,))
            return [Attempt(*row) for row in cur.fetchall()]

    @staticmethod
    def _jobs(cur: Any) -> list[Job]:
        names = [d[0] for d in cur.description]
        jobs = []
        for row in cur.fetchall():
            data = {_JOB_FIELDS[n]: v for n, v in zip(names, row) if n in _JOB_FIELDS}
            jobs.append(Job(**data))
        return jobs
