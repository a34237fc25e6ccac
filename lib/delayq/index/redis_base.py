"""The Redis index's connection: the keys of one prefix, every call through a failover for a bounded time
(safe-to-repeat calls only), errors named with the form and hosts and never a password, the Lua scripts
(index/lua/*.lua, loaded by name), and the score that orders a due set (redis.py's docstring)."""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from importlib import resources
from typing import Callable, Iterable, TypeVar

import redis
from redis.exceptions import RedisClusterException

from ..errors import BackendError
from ..redis_urls import CLUSTER, SERVER, parse
from . import redis_client

T = TypeVar("T")
log = logging.getLogger(__name__)
BAND = float(2 ** 35)
MAX_PER_CALL = 1000
CLAIM_WINDOW = 30.0       # seconds a claimer may take from its Redis claim to its rows' update (beyond a failover)


def score(due_at: float, priority: int) -> float:
    return due_at - priority * BAND


def due_of(raw: float) -> float:
    return raw - math.floor(raw / BAND) * BAND


def timeouts(seconds: float) -> dict[str, float]:
    """redis-py's bounds for one wait: connecting and each command's answer (DELAYQ_REDIS_TIMEOUT)."""
    return {"socket_timeout": seconds, "socket_connect_timeout": seconds}


def load_scripts(client: redis.Redis) -> dict:
    lua = resources.files(__package__) / "lua"
    return {item.name[:-4]: client.register_script(item.read_text(encoding="utf-8"))
            for item in lua.iterdir() if item.name.endswith(".lua")}


class RedisBase:
    """What RedisIndex's claims and its rebuild (redis_rebuild.py) share: the client, the keys, the call."""

    backend = "Redis"

    def __init__(self, url: str, prefix: str, store, client: redis.Redis | None = None,
                 socket_timeout: float = redis_client.SOCKET_TIMEOUT,
                 connect_timeout: float = redis_client.CONNECT_TIMEOUT, failover_wait: float | None = None):
        """`failover_wait`: seconds a call keeps retrying through a failover (default: FAILOVER_WAIT for
        the Sentinel and Cluster forms, 0 for one server). Connects on first use."""
        self.target = parse(url)
        self.where = self.target.describe()
        self.prefix = prefix
        self.store = store          # ClaimStore (start) and MaintenanceStore (outbox) parts
        self._timeouts = (socket_timeout, connect_timeout)
        self.timeout = socket_timeout
        if failover_wait is None:
            failover_wait = 0.0 if self.target.form == SERVER else redis_client.FAILOVER_WAIT
        # one bound for a whole call, its retries and every wait in them: the failover wait, at least one timeout
        self.failover = redis_client.Failover(failover_wait, self._rode_over, timeout=socket_timeout)
        # a claim's record outlives every retry of it: a retry can start up to failover_wait after the first
        # failure, and the first attempt may have run up to a socket timeout before that
        self._record_seconds = int(failover_wait + socket_timeout) + 5
        self._client = client
        self._scripts: dict = {}
        self._caught_up = float("-inf")

    @property
    def r(self):
        """redis-py's client (Redis, a Sentinel-managed Redis, or RedisCluster), made on first use."""
        if self._client is None:
            self._client = self._call(lambda: redis_client.connect(self.target, *self._timeouts))
        if not self._scripts:
            self._scripts = load_scripts(self._client)
        return self._client

    def keys(self, queue: str) -> tuple[str, str]:
        tag = "{" + self.prefix + ":" + queue + "}"
        return tag + ":due", tag + ":inflight"

    def _record(self, queue: str, token: str) -> str:
        return "{" + self.prefix + ":" + queue + "}:claim:" + token

    def _marker(self) -> str:
        return "{" + self.prefix + "}:rebuilt"

    def _fail(self, exc: Exception) -> BackendError:
        """One line naming the cause (no server there, a refused login, a database number the server lacks),
        the form and the hosts, never a password."""
        text = redis_client.short(exc)
        for secret in self.target.secrets():
            text = text.replace(secret, "***")
        if isinstance(exc, redis.AuthenticationError) or text.startswith(("WRONGPASS", "NOAUTH", "invalid username")):
            return BackendError(f"Redis at {self.where}: authentication failed: check the user and password in "
                                "DELAYQ_REDIS_URL")
        if "DB index is out of range" in text:
            return BackendError(f"Redis at {self.where}: no such database number on this server: fix the /N at the "
                                "end of DELAYQ_REDIS_URL (the server's `databases` setting)")
        if isinstance(exc, redis.TimeoutError):
            setting = "DELAYQ_REDIS_FAILOVER_WAIT" if self.failover.wait > self.timeout else "DELAYQ_REDIS_TIMEOUT"
            return BackendError(f"Redis at {self.where} timed out after {self.failover.bound:g} s ({setting}): {text}")
        if isinstance(exc, redis.ConnectionError):
            return BackendError(f"Redis at {self.where} is unreachable: {text} (is the server running, and the host "
                                "and port in DELAYQ_REDIS_URL right?)")
        return BackendError(f"Redis at {self.where} failed: {text}")

    def check(self) -> None:
        """One PING: the server answers, accepted our login and has our database (through a failover)."""
        self._call(lambda: self.r.ping())

    def _call(self, fn: Callable[[], T]) -> T:
        """Run fn (safe to repeat) through a failover, a backend error naming the form and host if it lasts."""
        try:
            return self.failover.call(fn)
        except (redis.RedisError, RedisClusterException) as exc:
            raise self._fail(exc) from None

    def _rode_over(self, seconds: float) -> None:
        """A call succeeded after a failover: writes acknowledged by the old master may be gone, so the
        next compensate rebuilds the index now rather than in --rebuild-every seconds."""
        log.warning("Redis at %s: a call succeeded after %.1f s of failover errors; the next compensate "
                    "rebuilds the due index", self.where, seconds)
        try:
            self.r.delete(self._marker())
        except (redis.RedisError, RedisClusterException):
            pass    # the rebuild then waits for --rebuild-every: late, never lost

    def _script(self, name: str, keys: list[str], args: list) -> object:
        client = self.r
        return self._call(lambda: self._scripts[name](keys=keys, args=args, client=client))

    def _pipeline(self, fill: Callable[[object], None]) -> list:
        """One pipeline (split per node on a cluster), filled and sent again whole if a failover cut it."""
        def send() -> list:
            with self.r.pipeline(transaction=False) as pipe:
                fill(pipe)
                return pipe.execute()
        return self._call(send)

    def _each(self, name: str, calls: list[tuple[list[str], list]]) -> list:
        """A read-only script once per (keys, args): one pipeline on a server or a Sentinel master, one call
        each on a cluster (its pipelines refuse EVALSHA; every call goes to the node that owns its slot)."""
        if self.target.form == CLUSTER:
            return [self._script(name, keys, args) for keys, args in calls]

        def fill(pipe) -> None:
            for keys, args in calls:
                self._scripts[name](keys=keys, args=args, client=pipe)
        return self._pipeline(fill)

    def server_time(self) -> float:
        seconds, micros = self._call(lambda: self.r.time())
        return seconds + micros / 1e6

    def close(self) -> None:
        """Close every connection the index opened (the next use connects again)."""
        client, self._client, self._scripts = self._client, None, {}
        if client is not None:
            redis_client.disconnect(client)


def _by_queue(entries: Iterable[tuple]) -> list[tuple[str, list[tuple[int, float, int]]]]:
    grouped: dict[str, list[tuple[int, float, int]]] = defaultdict(list)
    for job, queue, due, priority in entries:
        grouped[queue].append((job, due, priority))
    return list(grouped.items())


def _chunks(items: list, size: int = MAX_PER_CALL) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
