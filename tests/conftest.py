"""Shared fixtures: real SQLite, MariaDB and Redis, isolated per test run.

Each run picks its own table/key prefix and Redis db number, so runs never
collide; each test cleans up only what it created (no FLUSHDB, no FLUSHALL).
A server that does not answer fails the test with how to start it: never a skip.
The Sentinel set and the Cluster (scripts/redis_topology.py) are private: started
once per session, on first use, and stopped at its end.
"""

from __future__ import annotations

import glob
import os
import random
import secrets

import shutil
import sqlite3
import tempfile

import pymysql
import pytest
import redis

from delayq.clock import FakeClock
from delayq.index import StoreIndex
from delayq.index.redis import RedisIndex
from delayq.manager import Manager
from delayq.registry import Registry
from delayq.runner import orphans
from delayq.store import open_store
from delayq.store.queries import TABLES

RUN = "t" + secrets.token_hex(4)
REDIS_DB = int(os.environ.get("DELAYQ_TEST_REDIS_DB") or random.randint(1, 15))
MYSQL_URL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("DELAYQ_TEST_REDIS_URL", f"redis://127.0.0.1:6379/{REDIS_DB}")
ALLOWED = ("examples",)
BACKENDS = ["sqlite", "mysql", "mysql+redis", "sqlite+redis"]
STORES = ["sqlite", "mysql", "mysql8"]       # the Store contract suite (mysql8: MariaDB as MySQL 8 runs it)
MYSQL8_SQL_MODE = ("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
                   "NO_ENGINE_SUBSTITUTION")   # MySQL 8.0's default sql_mode
TOPOLOGIES = {"mysql+sentinel": "sentinel", "mysql+cluster": "cluster"}   # private, one each per session
INDEXES = BACKENDS + list(TOPOLOGIES)        # the DueIndex contract suite: in-database, Redis, Sentinel, Cluster
REBUILDABLE = [kind for kind in INDEXES if "+" in kind]
TOPOLOGY_PASSWORD = "node-" + secrets.token_hex(4)
SENTINEL_PASSWORD = "sentinel-" + secrets.token_hex(4)
_topologies: dict = {}
HOW_TO_START = {
    "mysql": "start MariaDB: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd "
             "(or run `make test`, which starts or installs it)",
    "redis": "start Redis: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no "
             "(or run `make test`, which starts or installs it)",
    "topology": "install redis-server and redis-cli >= 7.0 (apt-get install redis-server; `make test` installs it)",
}
_counter = iter(range(1_000_000))


def new_prefix() -> str:
    return f"{RUN}_{next(_counter)}"


def topology(kind: str):
    """The session's private Sentinel set or Cluster for a backend kind, started on first use."""
    if kind not in _topologies:
        from scripts.redis_topology import Cluster, Sentinel

        if TOPOLOGIES[kind] == "cluster":
            _topologies[kind] = Cluster(masters=3, replicas=1, password=TOPOLOGY_PASSWORD)
        else:
            _topologies[kind] = Sentinel(password=TOPOLOGY_PASSWORD, sentinel_password=SENTINEL_PASSWORD)
    return _topologies[kind]


def topology_url(kind: str) -> str:
    t = topology(kind)
    if TOPOLOGIES[kind] != "sentinel":
        return t.url
    return t.url + ("&" if "?" in t.url else "?") + f"sentinel_password={SENTINEL_PASSWORD}"


def pytest_sessionfinish(session, exitstatus):
    for t in _topologies.values():
        t.stop()
    _topologies.clear()


_layer_seconds: dict[str, list[float]] = {}     # tests/<layer> -> [seconds (setup + call + teardown), tests]


def pytest_runtest_logreport(report):
    parts = report.nodeid.split("/")
    layer = parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0].split("::")[0]
    seconds = _layer_seconds.setdefault(layer, [0.0, 0])
    seconds[0] += report.duration
    seconds[1] += report.when == "call"


def pytest_terminal_summary(terminalreporter):
    """make test prints where its time went, one line per layer (tests/unit, tests/integration, ...)."""
    if not _layer_seconds:
        return
    terminalreporter.section("duration per layer")
    for layer, (seconds, tests) in sorted(_layer_seconds.items(), key=lambda item: -item[1][0]):
        terminalreporter.write_line(f"{layer:<12} {seconds:8.1f} s  {tests:5d} tests")


def require(service: str) -> None:
    if service == "topology":
        if not shutil.which("redis-server") or not shutil.which("redis-cli"):
            pytest.fail(f"redis-server and redis-cli are needed; {HOW_TO_START['topology']}", pytrace=False)
        return
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


def mysql8_store(prefix: str):
    """A MySQLStore on MariaDB held to what MySQL 8 has: its default sql_mode on every connection
    (ONLY_FULL_GROUP_BY, STRICT_TRANS_TABLES, ...) and no INSERT ... RETURNING (one insert_job a row)."""
    from delayq.store.mysql import MySQLStore

    class MySQL8Mode(MySQLStore):
        def _connect(self, autocommit: bool = False):
            conn = super()._connect(autocommit)
            with conn.cursor() as cur:
                cur.execute("SET SESSION sql_mode = %s", (MYSQL8_SQL_MODE,))
            return conn

        def _supports_returning(self, connection) -> bool:
            return False

    return MySQL8Mode(MYSQL_URL, prefix)


def raw_mysql(database: str | None = None) -> "pymysql.connections.Connection":
    """A plain PyMySQL connection (autocommit off) to the test MariaDB: as an application, an operator or another
    process would hold one. `database`: another one than MYSQL_URL's."""
    from urllib.parse import urlsplit
    u = urlsplit(MYSQL_URL)
    return pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root", password=u.password or "",
                           database=database or u.path.lstrip("/"), autocommit=False)


def mysql_database(name: str, create: bool = True) -> None:
    """A database of the test MariaDB made (create) or dropped: a sample application's own, named by the test."""
    conn = raw_mysql()
    try:
        with conn.cursor() as cur:          # our own generated name
            cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4" if create else
                        f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        conn.close()


def app_rows(sql: str, *params, sqlite_path: str | None = None, database: str | None = None) -> list[tuple]:
    """Rows of one query on a sample application's database: a SQLite file, or a database of the test MariaDB
    (`?` marks a bound parameter on either)."""
    if sqlite_path is not None:
        with sqlite3.connect(sqlite_path) as conn:
            return [tuple(row) for row in conn.execute(sql, params).fetchall()]
    conn = raw_mysql(database=database)
    try:
        with conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params or None)
            return [tuple(row) for row in cur.fetchall()]
    finally:
        conn.close()


def drop_mysql(prefix: str) -> None:
    conn = raw_mysql()
    with conn.cursor() as cur:
        for table in TABLES:
            cur.execute("DROP TABLE IF EXISTS `%s_%s`" % (prefix, table))  # our own generated prefix
    conn.close()


def drop_redis(prefix: str, url: str = REDIS_URL) -> None:
    from delayq.index.redis_client import connect
    from delayq.redis_urls import parse

    r = connect(parse(url))
    keys = [k for pattern in ("{" + prefix + ":*", "{" + prefix + "}:*") for k in r.scan_iter(match=pattern, count=1000)]
    for key in keys:          # one at a time: on a cluster the keys live in many slots
        r.delete(key)
    r.close()


class Backend:
    """One backend combination with its own prefix; builds managers sharing one clock."""

    def __init__(self, kind: str, tmp_path, clock: FakeClock):
        self.kind = kind
        self.prefix = new_prefix()
        self.clock = clock
        self.database_url = f"sqlite:///{tmp_path}/delayq.db" if kind.startswith("sqlite") else MYSQL_URL
        self.redis_url = REDIS_URL if kind.endswith("+redis") else topology_url(kind) if kind in TOPOLOGIES else None
        self.managers: list[Manager] = []

    def manager(self, lease: float = 300.0, redis_url: str | None = None) -> Manager:
        store = open_store(self.database_url, self.prefix)
        url = redis_url or self.redis_url
        index = RedisIndex(url, self.prefix, store) if url else StoreIndex(store)
        m = Manager(store, index, Registry(ALLOWED), self.clock, lease=lease)
        self.managers.append(m)
        return m

    def sql(self, text: str, *params) -> list:
        """Raw SQL on this backend's tables, as an operator (or an attacker with SQL access) would run it.

        {jobs}/{attempts}/{steps} become the prefixed tables; ? marks a bound parameter on either dialect.
        """
        store = self.managers[0].store if self.managers else open_store(self.database_url, self.prefix)
        text = text.format(jobs=f"{self.prefix}_jobs", attempts=f"{self.prefix}_attempts", steps=f"{self.prefix}_steps")
        if not self.database_url.startswith("sqlite"):
            text = text.replace("%", "%%").replace("?", "%s")
        with store.tx() as cur:
            cur.execute(text, params)
            return list(cur.fetchall()) if cur.description else []

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
        # ledgers of runners killed by a test and never read by a next runner (runner/orphans.py)
        shutil.rmtree(orphans.directory(open_store(self.database_url, self.prefix), make=False), ignore_errors=True)
        if not self.database_url.startswith("sqlite"):
            drop_mysql(self.prefix)
        if self.redis_url:
            drop_redis(self.prefix, self.redis_url)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_backend(kind: str, tmp_path, clock: FakeClock) -> Backend:
    if kind.startswith("mysql"):
        require("mysql")
    if kind.endswith("+redis"):
        require("redis")
    if kind in TOPOLOGIES:
        require("topology")
    backend = Backend(kind, tmp_path, clock)
    # Migrated, as an operator leaves a database (`delayq migrate`): a command that does not enqueue never creates
    # SQLite's tables (tests/acceptance/test_which_database.py: the embedded default's first use)
    open_store(backend.database_url, backend.prefix).migrate(clock.now())
    return backend


@pytest.fixture(scope="session", autouse=True)
def no_ledgers_left():
    """After the session, no ledger folder of this run's prefixes is left in the host's memory: a test that ends a
    runner on a paused server leaves its ledgers for a next runner that never comes (runner/orphans.py)."""
    yield
    for base in {"/dev/shm", tempfile.gettempdir()}:
        for folder in glob.glob(os.path.join(base, f"delayq-{os.getuid()}-{RUN}_*")):
            shutil.rmtree(folder, ignore_errors=True)


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
