"""The store on a SQL database: its transactions, and the parts mixed together.

Each concern lives in its own module (sql_schema, sql_jobs, sql_claims, sql_outcomes, sql_steps, sql_maintenance,
sql_reporting, sql_control); the dialects (mysql.py, sqlite.py) add the connection and the few
tokens where the SQL differs. All SQL text comes from store/sql/ by name.
"""

from __future__ import annotations

import random
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Callable, Iterator, TypeVar

from ..errors import BackendError
from .base import Store
from .pool import Pool
from .queries import Queries
from .sql_claims import ClaimsSql
from .sql_control import ControlSql
from .sql_counts import CountsSql
from .sql_jobs import JobsSql
from .sql_limits import LimitsSql
from .sql_maintenance import MaintenanceSql
from .sql_outcomes import OutcomesSql
from .sql_reporting import ReportingSql
from .sql_schedules import SchedulesSql
from .sql_schema import SchemaSql
from .sql_steps import StepsSql

_UNBOUNDED = nullcontext()


T = TypeVar("T")
DEADLOCK_TRIES = 5
DEADLOCK_PAUSE = 0.005      # seconds: before try n + 2, a pause of uniform(0, DEADLOCK_PAUSE * 2**n) (5, 10, 20, 40 ms)


class SqlStore(SchemaSql, JobsSql, ClaimsSql, LimitsSql, OutcomesSql, StepsSql, MaintenanceSql, ReportingSql,
               CountsSql, ControlSql, SchedulesSql, Store):
    dialect = ""
    style = "pyformat"                                   # the driver's parameter style
    driver_errors: tuple[type[BaseException], ...] = ()
    integrity_error: type[BaseException] = Exception
    returning = True                                     # INSERT ... RETURNING (MariaDB, SQLite; not MySQL 8)

    def __init__(self, prefix: str, where: str):
        self.prefix = prefix
        self.where = where
        self.tokens = self._tokens(prefix)
        self.q = Queries(self.dialect, prefix, self.style, self.tokens)
        self._pool = Pool(self._connect_translated, self._close_quietly)
        self._solo_pool: Pool | None = None         # connections that commit each statement (statement())

    # -- dialect hooks -------------------------------------------------------
    def _tokens(self, prefix: str) -> dict[str, str]:
        """The dialect's values for the {table_options}, {for_update}, {skip_locked}, {jobs_ix}, {scan_by_id},
        {not_by_id_order}, {by_queue}, {by_claim} and {on_jobs} tokens (sql/queries.sql says what each is)."""
        raise NotImplementedError

    def _connect(self) -> Any:
        raise NotImplementedError

    def _begin(self, conn: Any, write: bool) -> None:
        raise NotImplementedError

    def _explain(self, exc: BaseException) -> str:
        return str(exc) or type(exc).__name__

    def _answered(self, exc: BaseException) -> bool:
        """Whether a driver error is the server's answer to the statement (so it was not applied), not a connection
        lost or timed out while the statement was in flight."""
        return True

    def _missing_table(self, exc: BaseException) -> bool:
        """Whether a driver error says a table does not exist (the schema was never migrated)."""
        return False

    def _unreachable(self, exc: BaseException) -> BackendError:
        return BackendError(f"{self.backend} at {self.where} is unreachable: {self._explain(exc)}")

    def _bounded(self) -> AbstractContextManager[Any]:
        """The deadline of one operation, tx() or statement() with the connect it may make (or retried() with every
        try), for dialects whose waits have one bound for the whole operation (MySQL: DELAYQ_DB_TIMEOUT); as a
        context manager whose value has left(), the seconds left of it. SQLite's one wait is its own busy timeout
        (its value: None)."""
        return _UNBOUNDED

    # -- connections and transactions ---------------------------------------
    def _connect_translated(self, **options: Any) -> Any:
        try:
            return self._connect(**options)
        except self.driver_errors as exc:
            raise self._unreachable(exc) from None

    def _close_quietly(self, conn: Any) -> None:
        try:
            conn.close()
        except self.driver_errors:
            pass

    @contextmanager
    def statement(self) -> Iterator[Any]:
        """A cursor for one statement that commits itself (autocommit): one round trip where a transaction takes
        two (the statement, then COMMIT; a single enqueue's write went from about 290 to 190 µs). A single
        statement is atomic on its own. A dialect without such connections (SQLite) runs it in a transaction.
        Like tx(), it keeps to one deadline, its connect included."""
        if self._solo_pool is None:
            with self.tx() as cur:
                yield cur
            return
        with self._bounded():
            conn = self._solo_pool.acquire()
            broken = False
            try:
                yield conn.cursor()
            except BaseException as exc:
                broken = True               # cut short anywhere (an interrupt mid-reply): the session is not reused
                if isinstance(exc, self.driver_errors):
                    # As with a COMMIT whose reply is lost: the server may have applied the statement or not
                    raise self._failed(exc, "" if self._answered(exc) else
                                       " (the reply was lost: it may or may not have been applied)") from None
                raise
            finally:
                self._solo_pool.release(conn, broken)

    @contextmanager
    def tx(self, write: bool = True) -> Iterator[Any]:
        """One transaction on a pooled connection: commit on success, roll back and translate driver errors.

        write=False for a transaction that only reads (SQLite then begins deferred, not IMMEDIATE). The whole of
        it, the connect included, keeps to one deadline where the dialect has one (_bounded).
        """
        with self._bounded():
            conn = self._pool.acquire()
            broken = False
            try:
                self._begin(conn, write)
                cur = conn.cursor()
                yield cur
                conn.commit()
            except BaseException as exc:
                # an interrupt may have cut a reply short: the session is then out of step, never reused
                broken = not self._rollback(conn) or not isinstance(exc, Exception)
                if isinstance(exc, self.driver_errors):
                    raise self._failed(exc) from None
                raise
            finally:
                self._pool.release(conn, broken)

    def _failed(self, exc: BaseException, more: str = "") -> BackendError:
        """A driver error as the one error callers see: the backend, where, the cause (never the password)."""
        error = BackendError(f"{self.backend} at {self.where} failed: {self._explain(exc)}{more}")
        error.retryable = self._rolled_back(exc)
        return error

    def _rolled_back(self, exc: BaseException) -> bool:
        """Whether the server rolled the whole transaction back by its own choice (a deadlock's victim)."""
        return False

    def retried(self, body: Callable[[Any], T], write: bool = True) -> T:
        """body(cursor) in one transaction, run again (DEADLOCK_TRIES in all) when the server chose it as a
        deadlock's victim and rolled it back whole: for the runner's writes, which meet each other on the same
        rows (claims, outcomes, leases), where a deadlock is a normal event, not a failure. On Galera, with
        writers on several nodes, it is a frequent one (a claim's certification failure is a 1213 too): the tries
        are spread by a short random pause, so that the same claims do not meet again at once. Every try, and
        every pause, keeps to the one deadline of the whole (_bounded: DELAYQ_DB_TIMEOUT on MySQL); a pause that
        would reach it is not taken, and the last error is raised."""
        with self._bounded() as bound:
            for attempt in range(DEADLOCK_TRIES):
                try:
                    with self.tx(write) as cur:
                        return body(cur)
                except BackendError as exc:
                    if not exc.retryable or attempt == DEADLOCK_TRIES - 1 or not _paused(attempt, bound):
                        raise
        raise AssertionError("unreachable")

    def run(self, cur: Any, query: str, /, **params: Any) -> Any:
        """Execute the named query with bound parameters; returns the cursor."""
        cur.execute(*self.q(query, **params))
        return cur

    def _rollback(self, conn: Any) -> bool:
        try:
            conn.rollback()
            return True
        except self.driver_errors:
            return False

    def close(self) -> None:
        self._pool.close()
        if self._solo_pool is not None:
            self._solo_pool.close()


def _paused(attempt: int, bound: Any) -> bool:
    """The pause after try `attempt` (from 0) of retried(), taken if the operation's deadline is further away than
    the pause (then the next try has what is left); False if not (bound: _bounded()'s value, None for no deadline)."""
    pause = random.uniform(0, DEADLOCK_PAUSE * 2 ** attempt)
    if bound is not None and bound.left() <= pause:
        return False
    time.sleep(pause)
    return True
