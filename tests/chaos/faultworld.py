"""One world of the fault check (tests/chaos/faultcheck.py): its servers, its tables, the job stream, the faults.

A world is a database and a Redis that nothing else uses (a private MariaDB and Redis that may be paused, or
the shared MariaDB beside a private Sentinel set or Cluster that may fail over), one table/key prefix, one
history file the jobs write, and the log of the faults injected into it. Every fault is recorded only if it hit a
live process, with the moment it hit.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

import delayq
from delayq.config import Config
from delayq.runner import orphans
from delayq.store.queries import TABLES

from tests.chaos.faultprocs import Keeper, Runner, alive, proc_stat
from tests.chaos.observed import AttemptRow, Fault, Row, read_rows, read_statuses
from tests.chaos.servers import PrivateMariaDB, PrivateRedis, resume

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
PASSWORD, SENTINEL_PASSWORD = "fault-node-pw", "fault-sentinel-pw"
RUN_CALL, ONCE_CALL = "tests.chaos.faultjobs:run", "tests.chaos.faultjobs:once"
CULPRITS = ("exit", "segv", "fork", "term_proof", "spin", "block_c", "hog", "hang")


@dataclass(frozen=True)
class Settings:
    """What the system runs with (the checker's Limits come from here) and the sizes of the faults."""
    lease: float = 5.0
    time_limit: float = 5.0
    grace: float = 3.0
    compensate_every: float = 5.0
    db_timeout: float = 3.0
    redis_timeout: float = 2.0
    exit_slack: float = 5.0
    wait_slack: float = 4.0
    concurrency: int = 8
    for_range: tuple[float, float] = (15.0, 40.0)
    rate: float = 10.0                     # innocent jobs a second
    hog_mb: int = 512
    fork_seconds: float = 30.0
    term_proof_seconds: float = 30.0


# -- servers ----------------------------------------------------------------------------------------------------
@dataclass
class Servers:
    """What a world runs on; `stop` ends exactly what was started here (paused servers are resumed first)."""
    kind: str
    database_url: str = SHARED_MYSQL
    redis_url: str | None = None
    db: PrivateMariaDB | None = None
    redis: PrivateRedis | None = None
    topology: object | None = None

    @classmethod
    def start(cls, kind: str) -> "Servers":
        servers = cls(kind)
        try:
            servers._start()
        except BaseException:
            servers.stop()
            raise
        return servers

    def _start(self) -> None:
        from scripts.redis_topology import Cluster, Sentinel

        if self.kind == "main":
            self.db = PrivateMariaDB()
            self.database_url = self.db.url
            self.redis = PrivateRedis()
            self.redis_url = self.redis.url
        elif self.kind == "sentinel":
            self.topology = Sentinel(password=PASSWORD, sentinel_password=SENTINEL_PASSWORD)
            self.redis_url = self.topology.url + f"?sentinel_password={SENTINEL_PASSWORD}"
        else:
            self.topology = Cluster(masters=3, replicas=1, password=PASSWORD)
            self.redis_url = self.topology.url

    def resume(self) -> None:
        for server in (self.db, self.redis):
            if server is not None:
                resume(server.proc)

    def stop(self) -> None:
        self.resume()
        for stop in (self.redis and self.redis.stop, self.db and self.db.remove, self.topology and self.topology.stop):
            if stop:
                try:
                    stop()
                except Exception as exc:      # keep ending the others; say what failed
                    print(f"faultcheck: stopping a server failed: {exc}", file=sys.stderr)


# -- the world --------------------------------------------------------------------------------------------------
@dataclass
class World:
    servers: Servers
    settings: Settings
    tmp: str
    prefix: str = field(default_factory=lambda: "fc" + secrets.token_hex(4))
    faults: list[Fault] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.history = os.path.join(self.tmp, f"{self.prefix}.history")
        s = self.settings
        self.config = Config(database_url=self.servers.database_url, redis_url=self.servers.redis_url,
                             allowed_modules=("tests.chaos",), prefix=self.prefix, lease=s.lease,
                             db_timeout=s.db_timeout, redis_timeout=s.redis_timeout)
        self.q = delayq.open_manager(self.config)
        try:
            self.q.store.migrate(time.time())
        except BaseException:
            self.drop()
            raise
        self.env = self._env()

    def _env(self) -> dict:
        """The runners' environment: this world's settings, nothing inherited from DELAYQ_* of the caller."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DELAYQ_")}
        s = self.settings
        env.update(DELAYQ_DATABASE_URL=self.servers.database_url, DELAYQ_PREFIX=self.prefix,
                   DELAYQ_ALLOWED_MODULES="tests.chaos", DELAYQ_LEASE=str(s.lease), DELAYQ_DB_TIMEOUT=str(s.db_timeout),
                   DELAYQ_REDIS_TIMEOUT=str(s.redis_timeout), DELAYQ_LOG_FORMAT="json",
                   PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "lib"), ROOT]))
        if self.servers.redis_url:
            env["DELAYQ_REDIS_URL"] = self.servers.redis_url
        return env

    def spawn_runner(self, name: str) -> Runner:
        s = self.settings
        seconds = round(random.uniform(*s.for_range), 1)
        argv = [sys.executable, os.path.join(ROOT, "bin", "run_due.py"), "--for", f"{seconds:g}", "--concurrency",
                str(s.concurrency), "--processes", random.choice(["1", "2"]), "--timeout", f"{s.time_limit:g}",
                "--grace", f"{s.grace:g}", "--interval", "0.2", "--quiet"]
        return Runner(f"{self.prefix}-{name}", argv, self.env, ROOT, s.grace, seconds, s.time_limit, s.exit_slack)

    def compensate_argv(self) -> list[str]:
        return [sys.executable, os.path.join(ROOT, "bin", "compensate.py"), "--json"]

    def statuses(self) -> dict[str, int]:
        return read_statuses(self.q.store)

    def rows(self) -> tuple[list[Row], list[AttemptRow]]:
        return read_rows(self.q.store)

    def drop(self) -> None:
        """This world's tables (its Redis keys live on private servers that are stopped with it)."""
        try:
            with self.q.store.tx() as cur:
                for table in TABLES:
                    cur.execute(f"DROP TABLE IF EXISTS {self.prefix}_{table}")
        finally:
            shutil.rmtree(orphans.directory(self.q.store, make=False), ignore_errors=True)   # ledgers left behind
            self.q.close()


# -- the job stream ---------------------------------------------------------------------------------------------
class Producer(threading.Thread):
    """Enqueues `rate` innocent jobs a second (due at once) and each culprit at its planned moment."""

    def __init__(self, world: World, culprits: list[tuple[float, str]], seed: int):
        super().__init__(daemon=True, name="producer")
        self.world, self.s, self.rng = world, world.settings, random.Random(seed)
        self.q = delayq.open_manager(world.config)
        self.culprits = sorted(culprits)
        self.halt = threading.Event()
        self.enqueued, self.errors, self.n = 0, [], 0

    def run(self) -> None:
        credit, last = 0.0, time.time()
        while not self.halt.wait(0.1):
            now = time.time()
            credit = min(credit + (now - last) * self.s.rate, self.s.rate)    # a pause does not make a burst
            last = now
            items = [self.innocent() for _ in range(int(credit))]
            credit -= int(credit)
            while self.culprits and self.culprits[0][0] <= now:
                items.append(self.culprit(self.culprits.pop(0)[1]))
            self.put(items)

    def put(self, items: list[dict]) -> None:
        if not items:
            return
        try:
            self.enqueued += len(self.q.enqueue_many(items))
        except Exception as exc:       # a paused or failing server: counted (the rows were withdrawn or not written)
            self.errors.append(f"{type(exc).__name__}: {str(exc)[:160]}")

    def item(self, once: bool, **args) -> dict:
        self.n += 1
        return {"call": ONCE_CALL if once else RUN_CALL, "args": {"path": self.world.history, **args},
                "ladder": "1,1"}

    def innocent(self) -> dict:
        r, once = self.rng.random(), self.rng.random() < 0.3
        if r < 0.85:
            return self.item(once, kind="ok", ms=self.rng.choice([2, 5, 10, 50, 200, 500, 1000, 2000]))
        if r < 0.93:
            return self.item(once, kind="raise")
        return self.item(once, kind="sleep", seconds=self.rng.choice([0.5, 1.0, 2.0]))

    def culprit(self, kind: str) -> dict:
        s, once = self.s, self.n % 2 == 0
        sizes = {"fork": {"seconds": s.fork_seconds}, "term_proof": {"seconds": s.term_proof_seconds},
                 "spin": {"seconds": self.rng.choice([2.0, s.time_limit + 2])},
                 "block_c": {"seconds": self.rng.choice([2.0, s.time_limit + 2])},
                 "hog": {"mb": s.hog_mb, "seconds": 1.0}, "hang": {"seconds": s.time_limit + 3}}
        return self.item(once, kind="sleep" if kind == "hang" else kind, **sizes.get(kind, {}))

    def stop(self) -> None:
        """Idempotent: the phase stops it before settling and again in its finally block."""
        if self.halt.is_set():
            return
        self.halt.set()
        self.join(timeout=30)
        self.q.close()


# -- the faults -------------------------------------------------------------------------------------------------
class Faults:
    """Injects one fault at a time into a world and logs it (Fault.hit False when its target was already gone)."""

    def __init__(self, world: World, keeper: Keeper):
        self.world, self.keeper, self.s = world, keeper, world.settings
        self.failovers = 0
        self.killed: set[int] = set()     # pids already sent SIGKILL: a second kill of a dying one is no fault

    def inject(self, kind: str) -> None:
        getattr(self, kind)()

    def log(self, kind: str, at: float | None, pid: int | None, **kw) -> None:
        self.world.faults.append(Fault(kind, at if at is not None else time.time(), pid, hit=at is not None, **kw))

    def kill9_supervisor(self) -> None:
        runner = self._pick()
        self.log("kill9_supervisor", runner and self.keeper.kill9(runner), runner and runner.life.pid)

    def sigterm(self) -> None:
        runner = self._pick()
        self.log("sigterm", runner and self.keeper.sigterm(runner), runner and runner.life.pid)

    def kill9_worker(self) -> None:
        """A worker of a running runner, as the OOM killer would pick one."""
        runner = self._pick(lambda r: [p for p in r.live_workers() if p not in self.killed])
        workers = [p for p in runner.live_workers() if p not in self.killed] if runner else []
        if not workers:
            self.log("kill9_worker", None, None, note="no worker to kill")
            return
        pid = random.choice(workers)
        self.killed.add(pid)
        self.log("kill9_worker", _kill(pid), pid)

    def _pick(self, having=lambda runner: True, limit: float = 3.0):
        """A running runner (that has what `having` asks for), waiting up to `limit` s for one: after a kill,
        its replacement is still importing."""
        deadline = time.time() + limit
        while time.time() < deadline:
            runner = self.keeper.pick()
            if runner is not None and having(runner):
                return runner
            time.sleep(0.05)
        return None

    def stop_mariadb(self) -> None:
        self._pause("stop_mariadb", self.world.servers.db.proc, self.s.db_timeout)

    def stop_redis(self) -> None:
        self._pause("stop_redis", self.world.servers.redis.proc, self.s.redis_timeout)

    def _pause(self, kind: str, proc, timeout: float) -> None:
        """SIGSTOP a server for longer than the bound the checker holds runners to, then SIGCONT it (always)."""
        self._quiet()
        if proc.poll() is not None:
            self.log(kind, None, proc.pid, note="server not running")
            return
        at = time.time()
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            time.sleep(timeout + self.s.time_limit + self.s.wait_slack + 1.0)    # the checker's bound, and 1 s
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        self.log(kind, at, proc.pid, until=time.time())

    def _quiet(self, limit: float = 20.0) -> None:
        """Let runners told to stop end first, so that a server fault does not decide how they end."""
        deadline = time.time() + limit
        while self.keeper.stopping() and time.time() < deadline:
            time.sleep(0.1)

    def failover_sentinel(self) -> None:
        self._failover("failover_sentinel", lambda t: t.failover(), lambda t: t.master_address()[1],
                       lambda t: t.kill_master())

    def failover_cluster(self) -> None:
        key = self.world.q.index.keys("default")[0]
        self._failover("failover_cluster", lambda t: t.failover(key), lambda t: t.owner(key),
                       lambda t: t.kill_master(key))

    def _failover(self, kind: str, graceful, master_of, kill_master) -> None:
        """Every other one a graceful failover, else SIGKILL of the master (a replica promoted) and its restart."""
        import redis

        from scripts.redis_topology import TopologyError
        from tests.chaos.scaleout import _settled

        topology, how = self.world.servers.topology, ("failover", "kill_master")[self.failovers % 2]
        self.failovers += 1
        self._quiet()
        try:
            _settled(topology)
            at = time.time()
            if how == "failover":
                graceful(topology)
            else:
                port = master_of(topology)
                kill_master(topology)
                topology.restart(port)
        except (TopologyError, redis.RedisError, OSError) as exc:
            self.log(kind, None, None, note=f"{how}: {str(exc)[:160]}")
            return
        self.log(kind, at, None, until=time.time(), note=how)


def _kill(pid: int) -> float | None:
    """SIGKILL a live (not zombie) process; when it was hit, or None."""
    stat = proc_stat(pid)
    if stat is None or not alive(pid):
        return None
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return None
    return time.time()
