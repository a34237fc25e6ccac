"""Redis connections from DELAYQ_REDIS_URL, and the retry that rides over a failover.

Forms (the `rediss` schemes are the same over TLS):
  redis://[[user]:password@]host:6379/0   rediss://...   unix:///path.sock?db=0   one server (redis-py parses it)
  redis+sentinel://[[user]:password@]host1:26379,host2:26379/<master-name>[/<db>][?sentinel_password=...]
  redis+cluster://[[user]:password@]host1:7000,host2:7001

The clients are redis-py's own (`Redis`, `Sentinel(...).master_for`, `RedisCluster`): nothing here
routes a command. The password in the URL is the data nodes'; sentinels with a requirepass of
their own take `sentinel_password` (redis-py sends the sentinels only what `sentinel_kwargs` holds).
Query options (_ACCEPTED; any other is refused with one line saying why): `client_name`, `socket_keepalive`,
`health_check_interval` (not on a cluster), `db` (one server; a Sentinel URL has it after the master's name),
`sentinel_password` and `sentinel_username` (Sentinel), and over TLS alone `ssl_ca_certs`, `ssl_ca_path`,
`ssl_cert_reqs` (required, optional or none), `ssl_check_hostname`, `ssl_certfile` and `ssl_keyfile`.

redis-py alone does not ride over a master that dies: RedisCluster's retries do not wait, a
Sentinel master_for client does not retry, and a command in flight at the kill is retried on
the dead address (redis/redis-py#3874). `Failover.call` retries the errors a failover raises,
with a backoff, for a bounded time (docs/REDIS_TOPOLOGIES.md has the measured timings). That time is
one bound for the whole call: every socket wait in it (connecting, the handshake, each reply, redis-py's
own retries and re-reading of a cluster's slots) gets only what is left of it (_Bounded).
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from typing import Any, Callable, TypeVar

from ..redis_urls import BOOLEANS, CLUSTER, SERVER, TLS_OPTIONS, Target

T = TypeVar("T")

SOCKET_TIMEOUT = 10.0       # seconds a command may wait for its reply
CONNECT_TIMEOUT = 5.0       # seconds to open a connection
FAILOVER_WAIT = 30.0        # seconds a call keeps retrying through a failover (Sentinel and Cluster forms)


def connect(target: Target, socket_timeout: float = SOCKET_TIMEOUT, connect_timeout: float = CONNECT_TIMEOUT):
    """redis-py's client for the target. Timeouts in seconds (a node's reply; opening a connection): each wait's
    own bound, which a call through Failover shortens to the time it has left.

    A RedisCluster asks its startup nodes for the slot map here: it raises when none answers.
    """
    import redis

    timeouts = {"socket_timeout": socket_timeout, "socket_connect_timeout": connect_timeout}
    if target.form == SERVER:
        client = redis.Redis.from_url(target.url, **timeouts)
        _bind(client.connection_pool)
        return client
    if target.form == CLUSTER:
        return _cluster(target, timeouts)
    return _sentinel(target, timeouts)


def disconnect(client: Any) -> None:
    """Close every connection a client of connect() holds: redis-py's close() only hands a cluster's node
    connections back to their pools, and leaves a Sentinel client's connections to the sentinels open."""
    if hasattr(client, "get_nodes"):           # RedisCluster
        pools = [node.redis_connection.connection_pool for node in client.get_nodes() if node.redis_connection]
    else:
        pools = [client.connection_pool]
        sentinels = getattr(client.connection_pool, "sentinel_manager", None)
        pools += [sentinel.connection_pool for sentinel in (sentinels.sentinels if sentinels else [])]
    client.close()
    for pool in pools:
        pool.disconnect()


def _cluster(target: Target, timeouts: dict[str, float]) -> Any:
    """A RedisCluster made through redis-py's url= route, the one that gives every node's connections a class of
    ours (bounded waits). Its own retries (10, as redis-py's default) serve a caller of the client itself; inside
    Failover.call there are none (_RetryOutsideCalls), since a CLUSTERDOWN sleeps 0.25 s in each of them past any
    bound: Failover.call is then the one retry."""
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.cluster import ClusterNode, RedisCluster
    from redis.connection import Connection, SSLConnection
    from redis.exceptions import RedisClusterException

    host, port = target.hosts[0]
    first = f"redis://[{host}]:{port}" if ":" in host else f"redis://{host}:{port}"
    try:
        return RedisCluster(url=first, startup_nodes=[ClusterNode(h, p) for h, p in target.hosts],
                            connection_class=bounded(SSLConnection if target.tls else Connection),
                            retry=_retry_outside_calls(ExponentialBackoff(cap=1.0, base=0.01), 10),
                            username=target.username, password=target.password,
                            **_tls(target), **_client_options(target), **timeouts)
    except RedisClusterException as exc:
        # "cannot be connected": no startup node answered; its cause (refused, timed out, bad password)
        # is what Failover.call can judge
        if isinstance(exc.__cause__, redis.RedisError):
            raise exc.__cause__ from None
        raise


def _sentinel(target: Target, timeouts: dict[str, float]) -> Any:
    """The master's client through the sentinels. Each sentinel is asked once a discovery (the next sentinel is
    the retry); Failover.call waits and asks again."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    from redis.sentinel import Sentinel

    tls = {"ssl": True, **_tls(target)} if target.tls else {}     # the master's pool takes the ssl flag off
    sentinel_kwargs = {"username": target.options.get("sentinel_username"),
                       "password": target.options.get("sentinel_password"), "retry": Retry(NoBackoff(), 0),
                       **tls, **timeouts}
    sentinels = Sentinel(list(target.hosts), sentinel_kwargs=sentinel_kwargs, username=target.username,
                         password=target.password, **tls, **_client_options(target), **timeouts)
    for client in sentinels.sentinels:
        _bind(client.connection_pool)
    master = sentinels.master_for(target.master, db=target.db)
    _bind(master.connection_pool)
    return master


def _tls(target: Target) -> dict[str, Any]:
    """The TLS options for a Sentinel or Cluster client (redis-py reads a single server's from its URL)."""
    if not target.tls:
        return {}
    options: dict[str, Any] = {"ssl_cert_reqs": "required"}
    for name in TLS_OPTIONS:
        if name in target.options:
            options[name] = BOOLEANS[target.options[name].lower()] if name == "ssl_check_hostname" \
                else target.options[name]
    return options


def _client_options(target: Target) -> dict[str, Any]:
    """client_name, health_check_interval and socket_keepalive for a Sentinel or Cluster client, as redis-py types."""
    convert: dict[str, Callable[[str], Any]] = {"client_name": str, "health_check_interval": int,
                                                "socket_keepalive": lambda text: BOOLEANS[text.lower()]}
    return {name: convert[name](value) for name, value in target.options.items() if name in convert}


# -- one bound for a whole call ---------------------------------------------------------------------
_REFIT = 0.1            # seconds a socket's timeout may differ from the time left before it is set again
_MIN_ATTEMPT = 0.1      # seconds of the bound below which Failover.call makes no further attempt


LAST_LOOK = 0.05            # seconds a wait gets once its call's bound passed (a reply may be waiting)


class _Deadline(threading.local):
    """This thread's deadline (time.monotonic()) for the Redis call it is in; None between calls."""

    at: float | None = None


_deadline = _Deadline()


def _fresh_in_child() -> None:
    _deadline.at = None         # a fork inside a call: the child's calls are its own


os.register_at_fork(after_in_child=_fresh_in_child)


class _Bounded:
    """Mixed into the redis-py connection classes delayq uses: every wait of a connection (connecting, the TLS and
    RESP handshake, a health check, sending, each reply) takes at most the time left of the call it serves, so
    the several waits of one call (a reconnect, NOSCRIPT then SCRIPT LOAD, a cluster re-reading its slots, a
    discovery through the sentinels) share one bound. Outside a call each wait has its own socket timeout.

    The socket's timeout is fitted for each call, then again only after _REFIT seconds and only when it is more
    than _REFIT off: settimeout() releases the GIL, which costs a busy runner's threads more than a wait 0.1 s
    late."""

    _fitted_for: float | None = None    # the deadline the socket's timeout was last fitted to
    _stale_at = float("-inf")           # time.monotonic() after which it is fitted again

    def _connect(self) -> Any:
        at = _deadline.at
        if at is None:
            return super()._connect()  # type: ignore[misc]
        left = max(at - time.monotonic(), LAST_LOOK)     # past the bound: one short look, not none
        given = self.socket_connect_timeout, self.socket_timeout      # type: ignore[attr-defined]
        self.socket_connect_timeout, self.socket_timeout = (_within(t, left) for t in given)
        self._fitted_for, self._stale_at = at, time.monotonic() + _REFIT
        try:
            return super()._connect()  # type: ignore[misc]
        finally:
            self.socket_connect_timeout, self.socket_timeout = given

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if _deadline.at != self._fitted_for or time.monotonic() > self._stale_at:
            self._fit_socket()
        super().send_packed_command(command, check_health)  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        if _deadline.at != self._fitted_for or time.monotonic() > self._stale_at:
            self._fit_socket()
        return super().read_response(*args, **kwargs)  # type: ignore[misc]

    def _fit_socket(self) -> None:
        """The open socket's timeout, set to the time left of the call (its own timeout outside one), LAST_LOOK at
        least."""
        at, now = _deadline.at, time.monotonic()
        self._fitted_for, self._stale_at = at, (now + _REFIT if at is not None else float("inf"))
        sock = self._sock  # type: ignore[attr-defined]
        if sock is None:
            self._stale_at = float("-inf")      # not connected: _connect fits the new socket
            return
        own = self.socket_timeout  # type: ignore[attr-defined]
        # past the bound: LAST_LOOK, so that a reply already there is read (this thread may have waited for the
        # interpreter while another held it) and a silent server ends the call a moment later
        wanted = own if at is None else _within(own, max(at - now, LAST_LOOK))
        current = sock.gettimeout()
        if current != wanted and (current is None or wanted is None or abs(current - wanted) > _REFIT):
            sock.settimeout(wanted)


def _retry_outside_calls(backoff: Any, retries: int) -> Any:
    """A redis-py Retry of `retries` for a caller of the client itself, of none inside a Failover.call (which
    retries within its bound). redis-py reads the count as `_retries` (get_retries, call_with_retry)."""
    from redis.retry import Retry

    class RetryOutsideCalls(Retry):
        @property  # type: ignore[override]
        def _retries(self) -> int:
            return 0 if _deadline.at is not None else self._outside

        @_retries.setter
        def _retries(self, value: int) -> None:
            self._outside = value

    return RetryOutsideCalls(backoff, retries)


def _within(seconds: float | None, left: float) -> float:
    return left if seconds is None else min(seconds, left)


_BOUNDED: dict[type, type] = {}


def bounded(cls: type) -> type:
    """The connection class `cls` with _Bounded mixed in (made once per class)."""
    if issubclass(cls, _Bounded):
        return cls
    made = _BOUNDED.get(cls)
    if made is None:
        made = _BOUNDED.setdefault(cls, type(cls.__name__, (_Bounded, cls), {"__module__": __name__}))
    return made


def _bind(pool: Any) -> None:
    """The pool's connections, all made after this (redis-py connects on first use), are bounded."""
    pool.connection_class = bounded(pool.connection_class)


def transient_errors() -> tuple[type[BaseException], ...]:
    """What a failover raises: a dead or demoted master, a cluster re-electing, a replica still loading."""
    from redis import exceptions as e

    return (e.ConnectionError, e.TimeoutError, e.ClusterDownError, e.TryAgainError, e.ReadOnlyError,
            e.BusyLoadingError, e.SlotNotCoveredError)


def permanent(exc: BaseException) -> bool:
    """A ConnectionError that no wait will cure: bad credentials or missing permissions, the node's or
    (a MasterNotFoundError listing what each sentinel said) the sentinels'."""
    from redis import exceptions as e

    if isinstance(exc, (e.AuthenticationError, e.AuthorizationError)):
        return True
    return type(exc).__name__ == "MasterNotFoundError" and "AuthenticationError" in str(exc)


def short(exc: BaseException) -> str:
    """The driver's message in one line; a MasterNotFoundError's list of sentinel clients reduced to what
    they raised (its text holds a repr of every client)."""
    text = str(exc) or type(exc).__name__
    if type(exc).__name__ == "MasterNotFoundError" and " : " in text:
        head, _, detail = text.partition(" : ")
        raised = sorted(set(re.findall(r"\b(\w+(?:Error|Exception))\b", detail)))
        text = f"{head} (the sentinels raised {', '.join(raised) or 'errors'})"
    return " ".join(text.split())


class Failover:
    """Retry a call on the errors a failover raises, backing off from 0.05 s to 1 s, for `wait` seconds after
    its first failure; and end the whole call, its first attempt, every retry and every wait in each, within
    `bound` seconds of its start: the larger of `wait` and `timeout` (one wait's own bound). A call then ends
    within one bound however the server fails (paused, slow, refusing, failing over), not one per retry.

    Only for calls that are safe to repeat: idempotent writes (ZADD, ZREM, the reschedule and
    restore scripts), reads, and claims that carry a claim token (a repeated claim returns
    what the first one took). `on_recovered(seconds)` runs after a call succeeded on a retry,
    with the seconds since its first failure, inside the call's bound.
    """

    def __init__(self, wait: float, on_recovered: Callable[[float], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep, timeout: float = SOCKET_TIMEOUT):
        self.wait = wait
        self.bound = max(wait, timeout)
        self.on_recovered = on_recovered
        self.sleep = sleep
        self.retried = 0        # calls that failed at least once, then succeeded (or ran out of time)

    def call(self, fn: Callable[[], T]) -> T:
        if _deadline.at is not None:        # a call inside another (the client made on first use): the outer bound
            return self._retried(fn)
        _deadline.at = time.monotonic() + self.bound
        try:
            return self._retried(fn)
        finally:
            _deadline.at = None

    def _retried(self, fn: Callable[[], T]) -> T:
        transient = transient_errors()
        first_failure, delay = None, 0.05
        while True:
            try:
                result = fn()
            except transient as exc:
                if permanent(exc):
                    raise
                now = time.monotonic()
                if first_failure is None:
                    first_failure = now
                    self.retried += 1
                pause = self._pause(delay, first_failure + self.wait - now)
                if pause is None:
                    raise
                self.sleep(pause)
                delay = min(delay * 2, 1.0)
                continue
            if first_failure is not None and self.on_recovered is not None:
                self.on_recovered(time.monotonic() - first_failure)
            return result

    def _pause(self, delay: float, wait_left: float) -> float | None:
        """Seconds to back off before the next attempt, or None when the wait is over or the call's bound leaves
        no time for another attempt (the last error is then the one raised, not a timeout of our own)."""
        bound_left = (_deadline.at or 0.0) - time.monotonic() - _MIN_ATTEMPT
        if wait_left <= 0 or bound_left <= 0:
            return None
        return min(delay * random.uniform(0.75, 1.25), wait_left, bound_left)
