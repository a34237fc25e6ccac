"""The store on MySQL 8 / MariaDB >= 10.6 through PyMySQL."""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Any

import pymysql
from pymysql.constants import CLIENT, SERVER_STATUS
from pymysql.protocol import MysqlPacket

from ..config import DEFAULT_DB_TIMEOUT, describe
from ..errors import BackendError
from ..mysql_urls import mysql_target
from .mysql_hosts import NO_SERVER, Hosts, LivePool, NoHostAnswered, lost, timed_out
from .queries import IntList
from .sql import SqlStore

_NO_TABLE = 1146
_ROLLED_BACK = (1213, 1205)            # a deadlock's victim; a lock wait that timed out (the transaction is retried)
_ACCESS_DENIED = (1045, 1698)          # wrong password; a user the server does not know over this transport
_NO_DATABASE = 1049
_DB_DENIED = 1044


_REFIT = 0.1                # seconds a socket's timeout may differ from the time left before it is set again


class _Deadline(threading.local):
    """This thread's deadline (time.monotonic()) for the store operation it is in; None between operations."""

    at: float | None = None


_deadline = _Deadline()


class _Bound:
    """DELAYQ_DB_TIMEOUT as one bound for a whole store operation (a transaction or a statement, with the connect,
    handshake, statements and COMMIT in it; retried()'s tries and pauses, all of them): PyMySQL's own timeouts apply to each socket wait, so one transaction
    of several statements could wait several times the setting. An operation inside another keeps the outer's
    deadline."""

    __slots__ = ("mine", "seconds")

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.mine = False

    def __enter__(self) -> "_Bound":
        self.mine = _deadline.at is None
        if self.mine:
            _deadline.at = time.monotonic() + self.seconds
        return self

    def left(self) -> float:
        """Seconds left of the operation (of the outermost one, inside another)."""
        return _deadline.at - time.monotonic() if _deadline.at is not None else self.seconds

    def __exit__(self, *exc: object) -> None:
        if self.mine:
            _deadline.at = None


_ESCAPES = (("\0", "\\0"), ("\n", "\\n"), ("\r", "\\r"), ("\x1a", "\\Z"), ('"', '\\"'), ("'", "\\'"))
_LONG = 256                 # characters from which escape() below beats PyMySQL's str.translate


def escape(text: str) -> str:
    """The same text as PyMySQL's converters.escape_string (backslash-escaped NUL, newline, return, ^Z, quotes
    and backslash), made by a few str.replace passes instead of str.translate with a table: 15x faster on
    long values, such as the JSON array of a group of outcomes or of a bulk enqueue (50 KB for 500 jobs)."""
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    for char, escaped in _ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


def _ints(values: IntList, mapping: Any = None) -> str:
    """IntList's literal: its items as integers, comma-separated (queries.IntList)."""
    return ",".join(map(str, map(int, values)))


LAST_LOOK = 0.05            # seconds a wait gets once its operation's deadline passed (an answer may be waiting)


class _Connection(pymysql.connections.Connection):
    """PyMySQL's connection, with the TLS context of its default PREFERRED mode made once per process, and
    long strings escaped faster.

    Without TLS options PyMySQL tries TLS without verifying the server (no CA given) and builds that context
    on every connect; building it loads the system's CA store (25-35 ms, 10x the rest of a local connect) for
    a context that never uses it. The context is the same each time, so one is shared: same security, cheap
    connects (each CLI command, each pool refill, each forked worker).

    Every socket wait also keeps to the deadline of the store operation it serves (see _Bound)."""

    _stale_at = float("-inf")       # time.monotonic() after which the socket's timeout is fitted again

    def __init__(self, *, per_wait: float, **options: Any):
        self._per_wait = per_wait           # seconds one wait may take outside an operation (closing, say)
        super().__init__(read_timeout=per_wait, write_timeout=per_wait, **options)
        self.encoders = {**self.encoders, IntList: _ints}

    def _execute_command(self, command: int, sql: Any) -> None:
        self._stale_at = float("-inf")      # a statement's first wait is fitted to its own operation's deadline
        super()._execute_command(command, sql)

    def _read_packet(self, packet_type: Any = MysqlPacket) -> Any:
        if time.monotonic() > self._stale_at:   # one clock read a packet: a claim of 200 jobs reads 200 rows
            self._fit_timeout()
        return super()._read_packet(packet_type)

    def _write_bytes(self, data: bytes) -> None:
        if time.monotonic() > self._stale_at:
            self._fit_timeout()
        super()._write_bytes(data)

    def hung_up(self) -> bool:
        """Whether the server closed this idle connection meanwhile (restarted, killed, a proxy's backend gone): its
        socket reads as ready, while an idle session has nothing to read. One poll(), no round trip."""
        if self._sock is None:
            return True
        poller = select.poll()
        poller.register(self._sock, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))

    def _fit_timeout(self) -> None:
        """The next waits get the time left of their operation (at most one wait's own bound) for the next _REFIT
        seconds; with none left, LAST_LOOK: an answer already there is read (this thread may have waited for the
        interpreter while another held it, a memory hog say), a server that is silent ends the operation as a
        timeout a moment later. The socket's timeout is set only when it is more than _REFIT off:
        settimeout() releases the GIL, which costs a busy runner's threads more than a wait 0.1 s late."""
        at, now = _deadline.at, time.monotonic()
        if at is None:
            wanted, self._stale_at = self._per_wait, float("inf")
        else:
            wanted, self._stale_at = min(self._per_wait, at - now), now + _REFIT
        wanted = max(wanted, LAST_LOOK)     # past the deadline: one short look (a GIL stall is not a silent server)
        current = self._current_timeout
        if self._sock is not None and (current is None or abs(current - wanted) > _REFIT):
            self._sock.settimeout(wanted)
            self._read_timeout = self._write_timeout = self._current_timeout = wanted

    def _escape_string(self, s: str) -> str:
        if len(s) < _LONG or self.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES:
            return super()._escape_string(s)
        return escape(s)

    _preferred: Any = None
    _making = threading.Lock()      # threads connecting at once (a worker's first jobs) make it once, not each

    def _create_ssl_ctx(self, sslp: Any) -> Any:
        if sslp != {}:
            return super()._create_ssl_ctx(sslp)
        if _Connection._preferred is None:
            with _Connection._making:
                if _Connection._preferred is None:
                    _Connection._preferred = super()._create_ssl_ctx(sslp)
        return _Connection._preferred


def _fresh_in_child() -> None:
    _Connection._making = threading.Lock()     # a thread of the parent may have held it at the fork
    _deadline.at = None                        # the child's operations are its own


os.register_at_fork(after_in_child=_fresh_in_child)


class MySQLStore(SqlStore):
    dialect = "mysql"
    backend = "MySQL"
    style = "pyformat"
    driver_errors = (pymysql.err.Error,)
    integrity_error = pymysql.err.IntegrityError

    def __init__(self, url: str, prefix: str, timeout: float = DEFAULT_DB_TIMEOUT):
        self._target = mysql_target(url)
        self._hosts = Hosts(self._target.hosts, _deadline, LAST_LOOK)     # where each new session goes
        self.timeout = timeout      # seconds one operation may take in all, and any one wait in it
        super().__init__(prefix, describe(url))
        self._pool = LivePool(self._connect_translated, self._close_quietly)
        # statement(): single enqueues and a group's rows (one writer a client at a time, grouping.py): few idle
        self._solo_pool = LivePool(lambda: self._connect_translated(autocommit=True), self._close_quietly, max_idle=8)

    def _tokens(self, prefix: str) -> dict[str, str]:
        return {"table_options": "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", "for_update": "FOR UPDATE",
                "skip_locked": "FOR UPDATE SKIP LOCKED", "jobs_ix": "",
                "scan_by_id": "FORCE INDEX (PRIMARY)", "not_by_id_order": "IGNORE INDEX FOR ORDER BY (PRIMARY)",
                "by_queue": "FORCE INDEX (by_queue)", "by_claim": "FORCE INDEX (by_claim)",
                "by_is_finished": "FORCE INDEX (by_is_finished)",
                "on_jobs": f"ON {prefix}_jobs"}

    def _connect(self, autocommit: bool = False) -> Any:
        """A new session: on the URL's host, or with several, on the first that answers (mysql_hosts.Hosts)."""
        return self._hosts.connect(lambda host, wait: self._open(host, autocommit, wait), self.timeout)

    def _open(self, host: tuple[str, int], autocommit: bool, connect_timeout: float) -> Any:
        conn = _Connection(
            host=host[0],
            port=host[1],
            user=self._target.user,
            # bytes: PyMySQL encodes a str password as latin-1, which fails on (and mangles) any other character;
            # the server hashed the UTF-8 bytes the password was created with (utf8mb4 connections)
            password=self._target.password.encode("utf-8"),
            database=self._target.database,
            charset="utf8mb4",
            autocommit=autocommit,
            # rowcount = rows matched, not rows changed: a conditional UPDATE that matched its row (its claim
            # still held) counts even when the values it sets are the ones already there.
            client_flag=CLIENT.FOUND_ROWS,
            # Every wait is bounded (DELAYQ_DB_TIMEOUT), and so is the operation it is part of: a paused or
            # black-holed server ends the script with exit 1 after about this long, instead of holding it (and
            # cron's next runs) indefinitely.
            connect_timeout=connect_timeout,
            per_wait=self.timeout,
        )
        try:
            with conn.cursor() as cur:
                # Each statement sees the latest committed rows: what a queue wants, and fewer gap locks.
                cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        except BaseException:
            conn._force_close()
            raise
        self.returning = self._supports_returning(conn)
        return conn

    def _bounded(self) -> _Bound:
        return _Bound(self.timeout)

    def _supports_returning(self, connection: Any) -> bool:
        """INSERT ... RETURNING: MariaDB has it, MySQL 8 does not."""
        return "mariadb" in connection.get_server_info().lower()

    def _begin(self, conn: Any, write: bool) -> None:
        """Nothing to send: the session runs with autocommit off, so the first statement begins the transaction
        (an explicit BEGIN was one more round trip for every transaction: a third of a single enqueue's)."""

    def _answered(self, exc: BaseException) -> bool:
        """The server's own errors have codes below 2000; 2000 and up (and none) are the client's: lost, timed out."""
        args = getattr(exc, "args", ())
        return bool(args) and isinstance(args[0], int) and 0 < args[0] < 2000

    def _rolled_back(self, exc: BaseException) -> bool:
        args = getattr(exc, "args", ())
        return bool(args) and args[0] in _ROLLED_BACK

    def _missing_table(self, exc: BaseException) -> bool:
        return bool(getattr(exc, "args", ())) and exc.args[0] == _NO_TABLE

    def _explain(self, exc: BaseException) -> str:
        """The server's own words for an error, or one line that names the cause and the fix (never the password)."""
        args = getattr(exc, "args", ())
        code = args[0] if args and isinstance(args[0], int) else None
        if code in _ACCESS_DENIED:
            return f"access denied for user {self._user()!r}: check the user and password in DELAYQ_DATABASE_URL"
        if code == _NO_DATABASE:
            return f"unknown database {self._database()!r}: create it, or fix the database name in DELAYQ_DATABASE_URL"
        if code == _DB_DENIED:
            return f"user {self._user()!r} may not use database {self._database()!r}: grant it, or use another user"
        if code == _NO_TABLE:
            return f"{args[1]}; create the tables with `delayq migrate`"
        if timed_out(args):
            return f"timed out after {self.timeout:g} s (DELAYQ_DB_TIMEOUT): ({args[0]}) {args[1]}"
        if len(args) >= 2:
            return f"({args[0]}) {args[1]}"
        return str(exc) or type(exc).__name__

    def _unreachable(self, exc: BaseException) -> BackendError:
        """A connection that failed: no server there (or no answer in time), or one that refused us and why."""
        args = getattr(exc, "args", ())
        if isinstance(exc, NoHostAnswered):
            return BackendError(f"{self.backend} at {self.where} is unreachable: {args[1]} (are the servers running, "
                                "and the hosts and ports in DELAYQ_DATABASE_URL right?)")
        if timed_out(args):
            return BackendError(f"{self.backend} at {self.where} is unreachable: {self._explain(exc)}")
        if args and args[0] in NO_SERVER:
            return BackendError(f"{self.backend} at {self.where} is unreachable: {args[1] if len(args) > 1 else exc} "
                                "(is the server running, and the host and port in DELAYQ_DATABASE_URL right?)")
        return BackendError(f"{self.backend} at {self.where}: {self._explain(exc)}")

    def _failed(self, exc: BaseException, more: str = "") -> BackendError:
        """As SqlStore's; with several hosts, a session lost also closes the idle ones (mysql_hosts.lost says why)."""
        if self._hosts.several and lost(exc):
            self._pool.close()
            self._solo_pool.close()
        return super()._failed(exc, more)

    def _user(self) -> str:
        return self._target.user

    def _database(self) -> str:
        return self._target.database or ""
