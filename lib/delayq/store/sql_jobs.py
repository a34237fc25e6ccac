"""JobStore on SQL: write, cancel and read jobs."""

from __future__ import annotations

import json
import logging
from dataclasses import fields
from typing import Any, Sequence

from ..errors import BackendError, InvalidInput
from ..jobs import PENDING, Attempt, Job, JobSpec
from . import caller
from .base import Cancelled, Changed, Inserted

log = logging.getLogger(__name__)
CHUNK = 500
_JOB_FIELDS = {
    "id": "id", "queue": "queue", "callable": "call", "args": "args_json", "status": "status",
    "attempts": "attempts", "max_attempts": "max_attempts", "ladder": "ladder", "due_at": "due_at",
    "ext": "ext", "deadline": "deadline", "priority": "priority", "last_error": "last_error",
    "created_at": "created_at", "started_at": "started_at", "finished_at": "finished_at",
    "updated_at": "updated_at", "at_most_once": "at_most_once", "lease_until": "lease_until",
    "lease_seconds": "lease", "timeout_seconds": "timeout", "crashes": "crashes", "claim_token": "token",
    "on_timeout": "on_timeout", "event": "event", "event_id": "event_id", "solo": "solo",
    "manual_running": "manual_running",
}


def skipped(ids: Sequence[int], rows: Sequence[Sequence], wanted: Sequence[str]) -> list[tuple[int, str]]:
    """(id, reason) for the ids a bulk change leaves alone: their status when not a wanted one, "gone" when deleted."""
    seen = {row[0]: row[2] for row in rows}
    return [(job, seen.get(job, "gone")) for job in ids if seen.get(job) not in wanted]


def chunks(ids: Sequence[int], size: int = CHUNK) -> list[list[int]]:
    return [list(ids[start:start + size]) for start in range(0, len(ids), size)]


# The columns of select_claimed and select_claimed_packed, in their order.
CLAIMED = ("id", "queue", "ext", "callable", "args", "attempts", "max_attempts", "ladder", "due_at", "deadline",
           "priority", "at_most_once", "lease_until", "lease_seconds", "timeout_seconds", "crashes", "on_timeout",
           "claim_token", "solo")
_CLAIMED_FIELDS = tuple(_JOB_FIELDS[name] for name in CLAIMED)


_DEFAULTS = {f.name: f.default for f in fields(Job)}
_new_job = object.__new__


def _claimed(row: list) -> Job:
    """A Job from one packed row in CLAIMED's order, without a keyword call of __init__ for each: a claim of 500
    jobs made them in a sixth of the worker's time (the values come from our own query, in our own order)."""
    job = _new_job(Job)
    values = _DEFAULTS.copy()
    values.update(zip(_CLAIMED_FIELDS, row))
    job.__dict__ = values
    return job


def rows_to_jobs(cur: Any) -> list[Job]:
    """Job values from a cursor over jobs rows (any subset of the columns), or over one `packed` value: a JSON
    array of rows in CLAIMED's order (NULL: none). ValueError if a packed value is not valid JSON (cut short)."""
    names = [d[0] for d in cur.description]
    if names == ["packed"]:
        value = cur.fetchone()[0]
        rows = json.loads(value) if value is not None else []
        return [_claimed(row) for row in rows]
    keep = [(i, _JOB_FIELDS[n]) for i, n in enumerate(names) if n in _JOB_FIELDS]
    return [Job(**{field: row[i] for i, field in keep}) for row in cur.fetchall()]


_warned_extra_ids = False     # returned_ids logged its warning in this process


def returned_ids(reply: Sequence[int], sent: int) -> list[int]:
    """The ids of `sent` rows inserted by one INSERT ... RETURNING, in the rows' order, from the ids of its reply.

    Ids grow in the order rows were inserted (the query's ORDER BY); RETURNING's own order is not promised: sorted.
    On Galera, an autocommit statement that fails certification is run again by the server itself
    (wsrep_retry_autocommit, on by default), and the reply then holds the ids of every run, the first run's rolled
    back. The run that committed is the last, and its ids the highest (a node's auto-increment only grows): the last
    `sent` ids are this statement's. Logged as a warning once a process (it is handled; each conflict storm would
    repeat it)."""
    global _warned_extra_ids
    ids = sorted(reply)
    if len(ids) > sent:
        if not _warned_extra_ids:
            _warned_extra_ids = True
            log.warning("an INSERT ... RETURNING of %d rows returned %d ids (the server ran it again after a "
                        "Galera certification conflict, wsrep_retry_autocommit): the last %d are its rows' ids",
                        sent, len(ids), sent)
        ids = ids[-sent:]
    return ids


def _row(spec: JobSpec, index_pending: bool) -> list:
    """A job as the positional array the JSON insert reads (see insert_jobs_json)."""
    return [spec.queue, spec.ext, 1 if spec.unique else None, 1 if spec.unique else 0, spec.call, spec.args_json,
            spec.max_attempts, spec.ladder, spec.due_at, spec.deadline, spec.priority, spec.lease, spec.timeout,
            1 if spec.at_most_once else 0, spec.on_timeout, spec.event, spec.event_id, 1 if index_pending else None,
            spec.limit_key, spec.limit_max]


def _named(spec: JobSpec, index_pending: bool) -> dict[str, Any]:
    return {"queue": spec.queue, "ext": spec.ext, "unique_live": 1 if spec.unique else None,
            "is_unique": 1 if spec.unique else 0, "callable": spec.call, "args": spec.args_json,
            "max_attempts": spec.max_attempts, "ladder": spec.ladder, "due_at": spec.due_at, "deadline": spec.deadline,
            "priority": spec.priority, "lease_seconds": spec.lease, "timeout_seconds": spec.timeout,
            "at_most_once": 1 if spec.at_most_once else 0, "on_timeout": spec.on_timeout, "event": spec.event,
            "event_id": spec.event_id, "index_pending": 1 if index_pending else None, "limit_key": spec.limit_key,
            "limit_max": spec.limit_max}


class JobsSql:
    q: Any
    run: Any
    tx: Any
    returning: bool
    integrity_error: Any
    backend: str
    dialect: str

    def insert_jobs(self, specs: list[JobSpec], now: float, index_pending: bool = False) -> list[Inserted]:
        if len(specs) <= CHUNK and (len(specs) == 1 or self.returning) and not any(s.unique for s in specs):
            with self.statement() as cur:
                # one INSERT, atomic by itself: committed with it, no COMMIT to send. Whether the server has
                # RETURNING is known once connected (until then: assumed); without it (MySQL 8) several rows are
                # several INSERTs, in the transaction below
                if len(specs) == 1 or self.returning:
                    return self._insert_all(cur, specs, now, index_pending, self.returning)
        with self.tx() as cur:
            return self._insert_all(cur, specs, now, index_pending, self.returning)

    def insert_jobs_on(self, connection: Any, specs: list[JobSpec], now: float,
                       index_pending: bool) -> list[Inserted]:
        connection = caller.dbapi(connection, self.dialect, self.backend)   # InvalidInput if not one we take
        if not getattr(connection, "in_transaction", False):
            # (the embedded SQLite makes its tables on first use, on a connection of its own: never while the
            # caller's transaction may hold the one write lock, which it would wait for; missing tables are then
            # the error below)
            self.ready()
        cur = connection.cursor()
        try:   # the caller's own connection: RETURNING only where its server has it
            return self._insert_all(cur, specs, now, index_pending, self._supports_returning(connection),
                                    connection.IntegrityError)   # the caller's driver's (PyMySQL or mysqlclient)
        except Exception as exc:
            if self._missing_table(exc):
                raise InvalidInput(f"connection= is on a database without delayq's tables (prefix {self.prefix!r}): "
                                   f"it must be the database DELAYQ_DATABASE_URL names ({self.where}), "
                                   "migrated with `delayq migrate`", "connection") from None
            narrow = caller.narrow_charset(connection, exc)
            if narrow:
                raise narrow from None
            raise
        finally:
            cur.close()

    def _insert_all(self, cur: Any, specs: list[JobSpec], now: float, index_pending: bool,
                    returning: bool, integrity_error: Any = None) -> list[Inserted]:
        results: list[Inserted | None] = [None] * len(specs)
        plain = [i for i, spec in enumerate(specs) if not spec.unique]
        for start in range(0, len(plain), CHUNK):
            part = plain[start:start + CHUNK]
            ids = self._insert(cur, [specs[i] for i in part], now, index_pending, returning)
            for i, job_id in zip(part, ids):
                results[i] = Inserted(job_id, PENDING, specs[i].due_at, True)
        for i, spec in enumerate(specs):
            if spec.unique:
                results[i] = self._insert_unique(cur, spec, now, index_pending, returning,
                                                 integrity_error or self.integrity_error)
        return results  # type: ignore[return-value]

    def _insert(self, cur: Any, specs: Sequence[JobSpec], now: float, index_pending: bool,
                returning: bool) -> list[int]:
        """Ids of the inserted rows, in the order of `specs`. One job (a single enqueue) is one plain INSERT whose
        id comes back in the OK packet: no JSON to build and parse, no result set to read."""
        if returning and len(specs) > 1:
            # All rows travel as one JSON parameter: one value to escape instead of ~18 per job.
            rows = json.dumps([_row(spec, index_pending) for spec in specs], ensure_ascii=False)
            self.run(cur, "insert_jobs_json", now=now, rows=rows)
            return returned_ids([row[0] for row in cur.fetchall()], len(specs))
        ids = []
        for spec in specs:
            self.run(cur, "insert_job", now=now, **_named(spec, index_pending))
            ids.append(cur.lastrowid)
        return ids

    def _insert_unique(self, cur: Any, spec: JobSpec, now: float, index_pending: bool, returning: bool,
                       integrity_error: Any) -> Inserted:
        """One live job per queue and ext: any live one (whatever its flags) is returned instead of a new one; two
        unique enqueues at once meet at the uniq_live key, and the loser returns the winner's job."""
        for _ in range(5):
            row = self.run(cur, "find_live_ext", queue=spec.queue, ext=spec.ext).fetchone()
            if row:
                return Inserted(row[0], row[1], row[2], False)
            try:
                job_id = self._insert(cur, [spec], now, index_pending, returning)[0]
                return Inserted(job_id, PENDING, spec.due_at, True)
            except integrity_error:
                continue
        raise BackendError(f"{self.backend}: unique job {spec.queue}/{spec.ext} kept changing; try again")

    def _supports_returning(self, connection: Any) -> bool:
        return self.returning

    def delete_jobs(self, ids: list[int]) -> None:
        with self.tx() as cur:
            for start in range(0, len(ids), CHUNK):
                self.run(cur, "delete_jobs", ids=ids[start:start + CHUNK])

    def cancel(self, now: float, job_id: int | None = None, ext: str | None = None,
               queue: str | None = None) -> Cancelled:
        with self.tx() as cur:
            if job_id is not None:
                rows = self.run(cur, "lock_for_cancel_by_id", id=job_id, queue=queue).fetchall()
            else:
                rows = self.run(cur, "lock_for_cancel_by_ext", ext=ext, queue=queue).fetchall()
            pending = [(row[0], row[1]) for row in rows if row[2] == PENDING]
            for start in range(0, len(pending), CHUNK):
                self.run(cur, "cancel_jobs", now=now, ids=[job for job, _ in pending[start:start + CHUNK]])
        return Cancelled(pending, [(row[0], row[2]) for row in rows if row[2] != PENDING])

    def cancel_ids(self, ids: list[int], now: float) -> Changed:
        with self.tx() as cur:
            rows = [row for part in chunks(ids) for row in self.run(cur, "lock_keys", ids=part).fetchall()]
            pending = [(row[0], row[1], row[3]) for row in rows if row[2] == PENDING]
            for part in chunks([job for job, _, _ in pending]):
                self.run(cur, "cancel_jobs", now=now, ids=part)
        return Changed(pending, skipped(ids, rows, (PENDING,)))

    def get(self, job_id: int) -> Job | None:
        with self.tx(write=False) as cur:
            jobs = rows_to_jobs(self.run(cur, "select_job", id=job_id))
        return jobs[0] if jobs else None

    def by_ext(self, ext: str, queue: str | None = None) -> list[Job]:
        with self.tx(write=False) as cur:
            return rows_to_jobs(self.run(cur, "select_by_ext", ext=ext, queue=queue))

    def by_event(self, event_id: str) -> list[Job]:
        with self.tx(write=False) as cur:
            return rows_to_jobs(self.run(cur, "select_by_event", event_id=event_id))

    def attempts(self, job_id: int) -> list[Attempt]:
        with self.tx(write=False) as cur:
            return [Attempt(*row) for row in self.run(cur, "select_attempts", id=job_id).fetchall()]

    def make_due(self, job_id: int, now: float) -> bool:
        with self.tx() as cur:
            return self.run(cur, "make_due", id=job_id, now=now).rowcount > 0

    def statuses(self, ids: list[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        if ids:
            with self.tx(write=False) as cur:
                for start in range(0, len(ids), CHUNK):
                    found.update(self.run(cur, "select_statuses", ids=ids[start:start + CHUNK]).fetchall())
        return found
