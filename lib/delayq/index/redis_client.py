"""Redis connections from DELAYQ_REDIS_URL, and the retry that rides over a failover.

Forms (the `rediss` schemes are the same over TLS):
  redis://[[user]:password@]host:6379/0   rediss://...   unix:///path.sock?db=0   one server (redis-py parses it)
  redis+sentinel://[[user]:password@]host1:26379,host2:26379/<master-name>[/<db>][?sentinel_password=...]
  redis+cluster://[[user]:password@]host1:7000,host2:7001

The clients are redis-py's own (`Redis`, `Sentinel(...).master_for`, `RedisCluster`): nothing here
routes a command. The password in the URL is the data nodes'; sentinels with a requirepass of
their own take `sentinel_password` (redis-py sends the sentinels only what `sentinel_kwargs` holds).
TLS options: `ssl_ca_certs` (a CA file) and `ssl_cert_reqs` (required, optional or none).

redis-py alone does not ride over a master that dies: RedisCluster's retries do not wait, a
Sentinel master_for client does not retry, and a command in flight at the kill is retried on
the dead address (redis/redis-py#3874). `Failover.call` retries the errors a failover raises,
with a backoff, for a bounded time (docs/REDIS_TOPOLOGIES.md has the measured timings).
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

T = TypeVar("T")

SOCKET_TIMEOUT = 10.0       # seconds a command may wait for its reply
CONNECT_TIMEOUT = 5.0       # seconds to open a connection
FAILOVER_WAIT = 30.0        # seconds a call keeps retrying through a failover (Sentinel and Cluster forms)
SERVER, SENTINEL, CLUSTER = "redis", "redis+sentinel", "redis+cluster"
_DEFAULT_PORT = {SENTINEL: 26379, CLUSTER: 6379}
_OPTIONS = {"sentinel_password", "sentinel_username", "ssl_ca_certs", "ssl_cert_reqs"}
EXAMPLES = ("redis://host:6379/0, redis+sentinel://:password@host1:26379,host2:26379/mymaster/0 "
            "or redis+cluster://:password@host1:7000,host2:7001")


class RedisUrlError(ValueError):
    """A DELAYQ_REDIS_URL that cannot work; the message never holds a password."""


@dataclass(frozen=True)
class Target:
    """Where the index lives: the form, the hosts, and the credentials (kept out of repr)."""

    form: str                                   # SERVER, SENTINEL or CLUSTER
    tls: bool
    hosts: tuple[tuple[str, int], ...]
    url: str = field(repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    master: str = ""                            # Sentinel: the monitored master's name
    db: int = 0
    options: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def scheme(self) -> str:
        return ("rediss" if self.tls else "redis") + self.form[len("redis"):]

    def describe(self) -> str:
        """scheme://host:port[,host:port...][/master/db] with no user and no password, for messages."""
        if self.form == SERVER:
            return _describe_server(self.url)
        hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)
        tail = f"/{self.master}/{self.db}" if self.form == SENTINEL else ""
        return f"{self.scheme}://{hosts}{tail}"

    def secrets(self) -> list[str]:
        """Every password this target holds, to scrub from a driver's message."""
        return [s for s in (self.password, self.options.get("sentinel_password")) if s]


def parse(url: str) -> Target:
    """The Target a URL names, or RedisUrlError naming the form and host (never the password)."""
    scheme, sep, rest = url.partition("://")
    base, _, form = scheme.partition("+")
    if not sep or base not in ("redis", "rediss", "unix") or form not in ("", "sentinel", "cluster") \
            or (base == "unix" and form):
        raise RedisUrlError(f"{scheme or url[:20]!r} is not a supported form: use {EXAMPLES}")
    if not form:
        return _server(url)
    kind = SENTINEL if form == "sentinel" else CLUSTER
    shown = f"{base}+{form}://"
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hostlist = netloc.rpartition("@")
    username, password = _credentials(userinfo) if at else (None, None)
    hosts = tuple(_host(item, _DEFAULT_PORT[kind], shown) for item in hostlist.split(","))
    shown += ",".join(f"{h}:{p}" for h, p in hosts)
    options = _options(query, shown)
    master, db = "", 0
    parts = [p for p in path.split("/") if p]
    if kind == SENTINEL:
        if not parts or len(parts) > 2:
            raise RedisUrlError(f"{shown} needs the master's name, then an optional db: {shown}/mymaster/0")
        master = unquote(parts[0])
        db = _db(parts[1] if len(parts) > 1 else "0", shown)
    elif parts:
        raise RedisUrlError(f"{shown}/{path} has a path: a cluster has one database, so name only its hosts")
    return Target(kind, base == "rediss", hosts, url, username, password, master, db, options)


def _server(url: str) -> Target:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RedisUrlError(f"{_describe_server(url)} is not a valid URL ({exc}): use {EXAMPLES}") from None
    if parts.scheme != "unix" and not parts.hostname:
        raise RedisUrlError(f"{parts.scheme}:// names no host: use {EXAMPLES}")
    host = (parts.hostname or parts.path, port or 6379)
    return Target(SERVER, parts.scheme == "rediss", (host,), url, parts.username, parts.password)


def _credentials(userinfo: str) -> tuple[str | None, str | None]:
    user, colon, password = userinfo.partition(":")
    if not colon:      # redis://secret@host: redis-py's convention reads a lone word as the password
        return None, unquote(user) or None
    return unquote(user) or None, unquote(password) or None


def _host(item: str, default_port: int, shown: str) -> tuple[str, int]:
    item = item.strip()
    if item.startswith("["):                     # [::1]:7000
        host, _, port = item[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "")
    if not host or (":" in host and not item.startswith("[")):
        raise RedisUrlError(f"{shown} has a host it cannot read in its list: use host1:port,host2:port "
                            "([::1]:port for IPv6)")
    try:
        number = int(port) if port else default_port
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise RedisUrlError(f"{shown}{host}: port {port[:8]!r} is not a port number")
    return host, number


def _options(query: str, shown: str) -> dict[str, str]:
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise RedisUrlError(f"{shown}: unknown option {unknown[0][:40]!r}: use {', '.join(sorted(_OPTIONS))}")
    if options.get("ssl_cert_reqs", "required") not in ("required", "optional", "none"):
        raise RedisUrlError(f"{shown}: ssl_cert_reqs must be required, optional or none")
    return options


def _db(text: str, shown: str) -> int:
    if not text.isdigit():
        raise RedisUrlError(f"{shown}: the db after the master's name must be a number, not {text[:20]!r}")
    return int(text)


def _describe_server(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url.partition("://")[0] + "://<unparseable>"
    if parts.scheme == "unix":
        return f"unix://{parts.path}"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def connect(target: Target, socket_timeout: float = SOCKET_TIMEOUT, connect_timeout: float = CONNECT_TIMEOUT):
    """redis-py's client for the target. Timeouts in seconds (a node's reply; opening a connection).

    A RedisCluster asks its startup nodes for the slot map here: it raises when none answers.
    """
    import redis

    timeouts = {"socket_timeout": socket_timeout, "socket_connect_timeout": connect_timeout}
    if target.form == SERVER:
        return redis.Redis.from_url(target.url, **timeouts)
    tls = _tls(target)
    auth = {"username": target.username, "password": target.password}
    if target.form == CLUSTER:
        from redis.cluster import ClusterNode, RedisCluster
        from redis.exceptions import RedisClusterException

        try:
            return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in target.hosts], **auth, **tls,
                                **timeouts)
        except RedisClusterException as exc:
            # "cannot be connected": no startup node answered; its cause (refused, timed out, bad password)
            # is what Failover.call can judge
            if isinstance(exc.__cause__, redis.RedisError):
                raise exc.__cause__ from None
            raise
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    from redis.sentinel import Sentinel

    # Each sentinel asked once a discovery (the next sentinel is the retry); Failover.call waits and asks again.
    sentinel_kwargs = {"username": target.options.get("sentinel_username"),
                       "password": target.options.get("sentinel_password"), "retry": Retry(NoBackoff(), 0),
                       **tls, **timeouts}
    sentinels = Sentinel(list(target.hosts), sentinel_kwargs=sentinel_kwargs, **auth, **tls, **timeouts)
    return sentinels.master_for(target.master, db=target.db)


def _tls(target: Target) -> dict[str, Any]:
    if not target.tls:
        return {}
    options = {"ssl": True, "ssl_cert_reqs": target.options.get("ssl_cert_reqs", "required")}
    if "ssl_ca_certs" in target.options:
        options["ssl_ca_certs"] = target.options["ssl_ca_certs"]
    return options


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
    """Retry a call on the errors a failover raises, backing off from 0.05 s to 1 s, for `wait` seconds.

    Only for calls that are safe to repeat: idempotent writes (ZADD, ZREM, the reschedule and
    restore scripts), reads, and claims that carry a claim token (a repeated claim returns
    what the first one took). `on_recovered(seconds)` runs after a call succeeded on a retry,
    with the seconds since its first failure.
    """

    def __init__(self, wait: float, on_recovered: Callable[[float], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.wait = wait
        self.on_recovered = on_recovered
        self.sleep = sleep
        self.retried = 0        # calls that failed at least once, then succeeded (or ran out of time)

    def call(self, fn: Callable[[], T]) -> T:
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
                left = first_failure + self.wait - now
                if left <= 0:
                    raise
                self.sleep(min(delay * random.uniform(0.75, 1.25), left))
                delay = min(delay * 2, 1.0)
                continue
            if first_failure is not None and self.on_recovered is not None:
                self.on_recovered(time.monotonic() - first_failure)
            return result
