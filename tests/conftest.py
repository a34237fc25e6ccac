"""Shared fixtures: real SQLite, MariaDB and Redis, isolated per test run.

Each run picks its own table/key prefix and Redis db number, so runs never
collide; each test cleans up only what it created (no FLUSHDB, no FLUSHALL).
A server that does not answer fails the test with how to start it: never a skip.
"""

from __future__ import annotations

import os
import random
import secrets

import pymysql
import pytest
import redis

from delayq.clock import FakeClock
from delayq.index import StoreIndex
from delayq.index.redis import RedisIndex
from delayq.manager import Manager
from delayq.registry import Registry
from delayq.store import open_store

RUN = "t" + secrets.token_hex(4)
REDIS_DB = int(os.environ.get("DELAYQ_TEST_REDIS_DB") or random.randint(1, 15))
MYSQL_URL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("DELAYQ_TEST_REDIS_URL", f"redis://127.0.0.1:6379/{REDIS_DB}")
ALLOWED = ("examples",)
BACKENDS = ["sqlite", "mysql", "mysql+redis"]
HOW_TO_START = {
    "mysql": "start MariaDB: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd "
             "(or run `make test`, which starts or installs it)",
    "redis": "start Redis: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no "
             "(or run `make test`, which starts or installs it)",
}
_counter = iter(range(1_000_000))


def new_prefix() -> str:
    return f"{RUN}_{next(_counter)}"


def require(service: str) -> None:
    try:
        if service == "mysql":
            from urllib.parse import urlsplit
            u = urlsplit(MYSQL_URL)
            pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                            password=u.password or "", database=u.path.lstrip("/"), connect_timeout=3).close()
        else:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except Exception as exc:
        pytest.fail(f"{service} is needed and not answering ({exc}); {HOW_TO_START[service]}", pytrace=False)


def drop_mysql(prefix: str) -> None:
    from urllib.parse import urlsplit
    u = urlsplit(MYSQL_URL)
    conn = pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                           password=u.password or "", database=u.path.lstrip("/"))
    with conn.cursor() as cur:
        for table in ("jobs", "attempts", "steps", "migrations"):
            cur.execute("DROP TABLE IF EXISTS `%s_%s`" % (prefix, table))  # our own generated prefix
    conn.close()


def drop_redis(prefix: str) -> None:
    r = redis.Redis.from_url(REDIS_URL)
    keys = [k for pattern in ("{" + prefix + ":*", "{" + prefix + "}:*") for k in r.scan_iter(match=pattern, count=1000)]
    if keys:
        r.delete(*keys)


class Backend:
    """One backend combination with its own prefix; builds managers sharing one clock."""

    def __init__(self, kind: str, tmp_path, clock: FakeClock):
        self.kind = kind
        self.prefix = new_prefix()
        self.clock = clock
        self.database_url = f"sqlite:///{tmp_path}/delayq.db" if kind == "sqlite" else MYSQL_URL
        self.redis_url = REDIS_URL if kind == "mysql+redis" else None
        self.managers: list[Manager] = []

    def manager(self, lease: float = 300.0, redis_url: str | None = None) -> Manager:
        store = open_store(self.database_url, self.prefix)
        url = redis_url or self.redis_url
        index = RedisIndex(url, self.prefix) if url else StoreIndex(store)
        m = Manager(store, index, Registry(ALLOWED), self.clock, lease=lease)
        self.managers.append(m)
        return m

    def env(self) -> dict[str, str]:
        env = dict(os.environ, DELAYQ_DATABASE_URL=self.database_url, DELAYQ_PREFIX=self.prefix,
                   DELAYQ_ALLOWED_MODULES=",".join(ALLOWED), PYTHONPATH=ROOT)
        env.pop("DELAYQ_REDIS_URL", None)
        if self.redis_url:
            env["DELAYQ_REDIS_URL"] = self.redis_url
        return env

    def cleanup(self) -> None:
        for m in self.managers:
            m.close()
        if self.kind != "sqlite":
            drop_mysql(self.prefix)
        if self.redis_url:
            drop_redis(self.prefix)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_backend(kind: str, tmp_path, clock: FakeClock) -> Backend:
    if kind != "sqlite":
        require("mysql")
    if kind == "mysql+redis":
        require("redis")
    backend = Backend(kind, tmp_path, clock)
    if kind != "sqlite":
        open_store(backend.database_url, backend.prefix).migrate(clock.now())
    return backend


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path, clock):
    b = make_backend(request.param, tmp_path, clock)
    yield b
    b.cleanup()


@pytest.fixture
def q(backend) -> Manager:
    """A manager on the parametrized backend, with the fake clock."""
    return backend.manager()
