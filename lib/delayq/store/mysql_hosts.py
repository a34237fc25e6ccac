"""Where a new MySQL session goes: the URL's host, or with several (a Galera cluster's nodes), the first that answers
from the one that last did (issue 26). And what a failed connect or a lost session means for the next one.

mysql.py's MySQLStore opens each session through Hosts.connect, and its pools are LivePools. The deadline Hosts keeps
to is the store operation's (mysql.py's _Bound), handed in: each try gets an equal share of what is left of it.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import pymysql
from pymysql.constants import CR

from ..mysql_urls import shown_host
from .pool import Pool

NO_SERVER = (2003, 2005, 2006, 2013)    # cannot connect, unknown host, gone away, lost during the handshake
LOST = (2006, 2013)                     # gone away, lost during a statement
NOT_READY = 1047                        # a Galera node outside the primary component, or still joining
TIMED_OUT = "Lost connection to MySQL server during query (timed out)"
# each new session of a multi-host URL: a Galera node (a provider loaded) that is not ready? (No rows: MySQL 8.)
_PROBE = "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_provider_name', 'wsrep_ready')"

Host = tuple[str, int]


class Hosts:
    """The hosts of the URL, and the one that last answered a connect (its index): the next connect starts there
    and goes on in the URL's order, passing over a host with no server (or none in time, or a cluster node not
    ready). Each try gets an equal share of the operation's time left, its handshake included, so that a silent
    host cannot eat the time of the ones after it. One host: it alone, with the time left.

    `deadline` is the store's thread-local deadline (its `at`: time.monotonic(), None between operations);
    `shortest` the seconds below which a share is not worth a try."""

    def __init__(self, hosts: tuple[Host, ...], deadline: Any, shortest: float):
        self.hosts, self.current = hosts, 0
        self._deadline, self._shortest = deadline, shortest

    @property
    def several(self) -> bool:
        return len(self.hosts) > 1

    def connect(self, open_one: Callable[[Host, float], Any], timeout: float) -> Any:
        """open_one(host, connect timeout in seconds) on a host that answers; `timeout` is DELAYQ_DB_TIMEOUT. Raises
        open_one's error (one host, or an error that is the server's answer), or NoHostAnswered."""
        if not self.several:
            return open_one(self.hosts[0], self.time_left(timeout))
        at = self._deadline.at if self._deadline.at is not None else time.monotonic() + timeout
        first, n, failures = self.current, len(self.hosts), []
        for step in range(n):
            host = self.hosts[(first + step) % n]
            share = (at - time.monotonic()) / (n - step)
            if share < self._shortest:
                failures.append((host, None))
                continue
            outer, self._deadline.at = self._deadline.at, time.monotonic() + share
            try:
                conn = _ready(open_one(host, min(timeout, share)))
            except pymysql.err.OperationalError as exc:
                if not moves_on(exc):
                    raise
                failures.append((host, exc))
                continue
            finally:
                self._deadline.at = outer
            self.current = (first + step) % n
            return conn
        raise NoHostAnswered(failures)

    def time_left(self, timeout: float) -> float:
        """The time left of the operation that connects (a pool refill inside tx() or statement())."""
        if self._deadline.at is None:
            return timeout
        left = self._deadline.at - time.monotonic()
        if left <= 0:
            raise pymysql.err.OperationalError(CR.CR_SERVER_LOST, TIMED_OUT)
        return min(timeout, left)


def _ready(conn: Any) -> Any:
    """The connection, if its server is ready. A Galera node answers connects while outside the primary component
    (or joining), but refuses every query on a table (1047): such a node counts as no server (the connection is
    closed), and the next host is tried. A server without a Galera provider (none named) is always ready."""
    try:
        with conn.cursor() as cur:
            cur.execute(_PROBE)
            status = {str(name).lower(): str(value) for name, value in cur.fetchall()}
        if status.get("wsrep_provider_name") and status.get("wsrep_ready", "").upper() != "ON":
            raise pymysql.err.OperationalError(NOT_READY, "a cluster node that is not ready (wsrep_ready OFF: "
                                               "outside the primary component, or still joining)")
    except BaseException:
        conn._force_close()
        raise
    return conn


class NoHostAnswered(pymysql.err.OperationalError):
    """Every host of a multi-host URL failed to connect, or the operation's time ran out before some were tried:
    one line, each host and why (never the password: the driver's messages hold none)."""

    def __init__(self, failures: list[tuple[Host, BaseException | None]]):
        tried = "; ".join(f"{shown_host(host)} {_why(exc)}" for host, exc in failures)
        super().__init__(CR.CR_CONN_HOST_ERROR, f"no host answered: {tried}")


def _why(exc: BaseException | None) -> str:
    if exc is None:
        return "(not tried: the operation's time, DELAYQ_DB_TIMEOUT, ran out)"
    args = getattr(exc, "args", ())
    return f"({args[0]}) {args[1]}" if len(args) >= 2 else (str(exc) or type(exc).__name__)


def timed_out(args: tuple) -> bool:
    """A driver error that says a wait ran out of time (PyMySQL's message, or TIMED_OUT when no time was left)."""
    return len(args) >= 2 and "timed out" in str(args[1])


def moves_on(exc: BaseException) -> bool:
    """A connect that found no server there (or none in time, or a cluster node not ready): try the next host."""
    args = getattr(exc, "args", ())
    return bool(args) and (args[0] in NO_SERVER or args[0] == NOT_READY or timed_out(args))


def lost(exc: BaseException) -> bool:
    """A session that is gone (or timed out, or whose node left the cluster's primary component): not the server's
    verdict. With several hosts the store then closes its idle sessions, which went to the same host: the next
    operation connects afresh, to that host if it answers, else to the next. A slow answer alone does not move a
    process to another host: the processes of a runner stay on one node, where SKIP LOCKED sees each other's row
    locks (on Galera, locks are each node's own)."""
    args = getattr(exc, "args", ())
    return bool(args) and (args[0] in LOST or args[0] == NOT_READY or timed_out(args))


class LivePool(Pool):
    """The pool, with each idle connection looked at before it is handed out: one whose server hung up while it was
    idle is closed and another taken (or made), so that the operation runs on a live server (with several hosts
    in the URL, the next one) instead of failing on a dead socket."""

    def acquire(self) -> Any:
        for _ in range(self._max_idle + 1):      # each idle one at most once; then the pool makes a new one
            conn = super().acquire()
            if not conn.hung_up():
                return conn
            self.release(conn, broken=True)
        return super().acquire()
