"""Issue 16, item 4, and issue 21, invariant 6: every wait has a bound, and so has each operation as a whole.

A paused server (SIGSTOP: it accepts TCP connections and never answers, as a hung or swapping host does) ends
each script with exit 1 and one line naming the backend and "timed out after N s (SETTING)", within
DELAYQ_DB_TIMEOUT / DELAYQ_REDIS_TIMEOUT (Sentinel and Cluster: DELAYQ_REDIS_FAILOVER_WAIT) of its start, so
cron never piles runners up. The bound is one for the whole operation: a transaction of several statements, a
Redis call with its reconnects and retries, never one per wait (PyMySQL's and redis-py's own timeouts).

The servers are private (tests/acceptance/conftest.py, scripts/redis_topology.py): ours to pause, ended by their
pid. The tests use DELAYQ_DB_TIMEOUT=3 and DELAYQ_REDIS_TIMEOUT=2; DELAYQ_TEST_PAUSE_TIMEOUT=default runs the
script tests with the shipped defaults (20 s and 10 s) and, with -s, prints the seconds each script took: the
figures in docs/RELIABILITY.md. run_due.py is checked as a pause meets it mid-run
(test_a_server_paused_under_a_running_runner); how the runner starts on a paused server belongs with the
runner's own tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

import pytest

from delayq import config
from delayq.errors import BackendError
from delayq.store.mysql import MySQLStore
from tests.chaos.servers import resume
from tests.conftest import MYSQL_URL, ROOT, drop_mysql, new_prefix, require
from tests.helpers import command, script, until

DEFAULTS = os.environ.get("DELAYQ_TEST_PAUSE_TIMEOUT") == "default"
DB_BOUND = config.DEFAULT_DB_TIMEOUT if DEFAULTS else 3.0
REDIS_BOUND = config.DEFAULT_REDIS_TIMEOUT if DEFAULTS else 2.0
SLACK = 2.0          # a script's interpreter start-up on a small busy machine, and its exit
RUNNER_SLACK = 3.0   # a runner's own way out once a wait failed (its threads, its worker process)
ENQUEUE = ["enqueue_delayed.py", "--call", "examples.shop:noop"]
SCRIPTS = [ENQUEUE, ["stats.py"], ["compensate.py"]]


@contextlib.contextmanager
def paused(proc):
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        resume(proc)


def environment(database_url: str, redis_url: str | None) -> dict[str, str]:
    env = dict(os.environ, DELAYQ_DATABASE_URL=database_url, DELAYQ_PREFIX=new_prefix(),
               DELAYQ_ALLOWED_MODULES="examples", PYTHONPATH=ROOT)
    for name in ("DELAYQ_REDIS_URL", "DELAYQ_DB_TIMEOUT", "DELAYQ_REDIS_TIMEOUT"):
        env.pop(name, None)
    if redis_url:
        env["DELAYQ_REDIS_URL"] = redis_url
    if not DEFAULTS:
        env.update(DELAYQ_DB_TIMEOUT=f"{DB_BOUND:g}", DELAYQ_REDIS_TIMEOUT=f"{REDIS_BOUND:g}")
    return env


def run_all(env, scripts=SCRIPTS) -> list[tuple[list[str], int, str, float]]:
    """Run each script, one after the other (several interpreters starting at once on a small busy machine would
    measure their start-up, not delayq's bound); (command, exit code, stderr, seconds from its start to its exit)."""
    results = []
    for cmd in scripts:
        started = time.monotonic()
        done = script(env, *cmd, timeout=120)
        results.append((cmd, done.returncode, done.stderr, time.monotonic() - started))
    return results


def check_bounded(results, backend: str, bound: float, setting: str, label: str, *also: str) -> None:
    """Each script exited 1 within the bound (plus start-up) with one line: the backend, "timed out after N s
    (SETTING)" (or one of `also`: what else the last attempt may have met), no traceback."""
    for cmd, code, err, seconds in results:
        print(f"paused {label}: {' '.join(cmd)} exit {code} after {seconds:.2f} s: {err.strip()}")
    for cmd, code, err, seconds in results:
        assert code == 1, (cmd, err)
        assert err.count("\n") == 1 and "Traceback" not in err and f"{backend} at " in err, (cmd, err)
        assert any(says in err for says in (f"timed out after {bound:g} s ({setting})", *also)), (cmd, err)
        assert seconds < bound + SLACK, (cmd, seconds)


@pytest.mark.parametrize("with_redis", [False, True], ids=["db-index", "redis-index"])
def test_a_paused_mariadb_ends_every_script_within_the_bound(mariadb, redis_server, with_redis):
    env = environment(mariadb.url, redis_server.url if with_redis else None)
    script(env, "migrate.py", check=0)
    script(env, *ENQUEUE, check=0)
    with paused(mariadb.proc):
        results = run_all(env)
    check_bounded(results, "MySQL", DB_BOUND, "DELAYQ_DB_TIMEOUT",
                  f"MariaDB ({'Redis index' if with_redis else 'in-database index'})")
    script(env, "list.py", check=0)                 # resumed: the next run works as before
    script(env, *ENQUEUE, check=0)


@pytest.mark.parametrize("store", ["sqlite", "mysql"])
def test_a_paused_redis_ends_every_script_within_the_bound(redis_server, tmp_path, store):
    if store == "mysql":
        require("mysql")
    env = environment(f"sqlite:///{tmp_path}/delayq.db" if store == "sqlite" else MYSQL_URL, redis_server.url)
    try:
        script(env, "migrate.py", check=0)
        script(env, *ENQUEUE, check=0)
        # stats reads the database alone, and its clock from Redis only over SQLite (MariaDB has a clock of its own)
        waiting = SCRIPTS if store == "sqlite" else [ENQUEUE, ["compensate.py"]]
        with paused(redis_server.proc):
            results = run_all(env, waiting)
            stats = [] if store == "sqlite" else run_all(env, [["stats.py"]])
        check_bounded(results, "Redis", REDIS_BOUND, "DELAYQ_REDIS_TIMEOUT", f"Redis ({store} store)")
        assert all(code == 0 and seconds < REDIS_BOUND + SLACK for _, code, _, seconds in stats), stats
        listed = script(env, "list.py", "--json", check=0).stdout
        assert listed.count('"id"') == 1          # the refused enqueue left no row behind
    finally:
        if store == "mysql":
            drop_mysql(env["DELAYQ_PREFIX"])


@pytest.mark.parametrize("which", ["mariadb", "redis"])
def test_a_server_paused_under_a_running_runner(mariadb, redis_server, which):
    """The pause comes while `run_due.py --for 55` holds open connections between passes: its next wait ends it."""
    env = environment(mariadb.url, redis_server.url)
    script(env, "migrate.py", check=0)
    job = script(env, "enqueue_delayed.py", "--call", "examples.shop:noop", check=0).stdout.strip()
    runner = subprocess.Popen(command("run_due.py", "--for", "55", "--interval", "0.2"), env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def passed() -> bool:       # a pass went through (the runner still running while it has not)
        if '"succeeded"' in script(env, "show.py", "--id", job, "--json").stdout:
            return True
        assert runner.poll() is None, runner.returncode
        return False

    try:
        until(passed, timeout=60, every=0)
        server = mariadb if which == "mariadb" else redis_server
        with paused(server.proc):
            started = time.monotonic()
            until(lambda: runner.poll() is not None, timeout=120, every=0.02)
            seconds = time.monotonic() - started
    finally:
        if runner.poll() is None:
            runner.kill()
    err = runner.communicate()[1]
    backend, bound = ("MySQL", DB_BOUND) if which == "mariadb" else ("Redis", REDIS_BOUND)
    print(f"paused {which} under run_due.py --for 55: exit {runner.returncode} after {seconds:.2f} s: {err.strip()}")
    last = err.strip().splitlines()[-1]
    assert runner.returncode == 1 and f"{backend} at " in last and "timed out" in last, err
    assert seconds < bound + RUNNER_SLACK


def test_a_failover_wait_on_one_redis_server_bounds_the_call_with_all_its_retries(redis_server, tmp_path):
    """DELAYQ_REDIS_FAILOVER_WAIT=4 on one server (riding over a restart): the call retries, but its first attempt,
    every retry and every wait in them end 4 s after it began, not 4 s after its first failure, then a last
    attempt's timeout (6.4 s with a 2 s timeout before)."""
    wait = 2 * REDIS_BOUND
    env = dict(environment(f"sqlite:///{tmp_path}/delayq.db", redis_server.url), DELAYQ_REDIS_FAILOVER_WAIT=f"{wait:g}")
    script(env, "migrate.py", check=0)
    with paused(redis_server.proc):
        results = run_all(env, [ENQUEUE, ["compensate.py"]])
    check_bounded(results, "Redis", wait, "DELAYQ_REDIS_FAILOVER_WAIT", "Redis, one server with a failover wait")


def test_a_transaction_whose_server_pauses_midway_ends_within_one_bound(mariadb):
    """A transaction of several statements: a slow answer (half the bound), then the server pauses.
    Each wait alone is within DELAYQ_DB_TIMEOUT; the transaction as a whole is not, so it ends at the bound."""
    store = MySQLStore(mariadb.url, new_prefix(), timeout=DB_BOUND)
    started = time.monotonic()
    with pytest.raises(BackendError) as failed:
        with store.tx() as cur:
            cur.execute("SELECT SLEEP(%s)", (DB_BOUND / 2,))
            with paused(mariadb.proc):
                cur.execute("SELECT 1")
    seconds = time.monotonic() - started
    assert seconds < DB_BOUND + 1, seconds
    message = str(failed.value)
    assert f"MySQL at {config.describe(mariadb.url)} failed: timed out after {DB_BOUND:g} s (DELAYQ_DB_TIMEOUT)" \
        in message and "\n" not in message, message
    with store.tx() as cur:                 # resumed: the pool connects afresh
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    store.close()


def test_a_redis_call_whose_server_pauses_midway_ends_within_one_bound(redis_server):
    """One call of the index (through its Failover) with two waits: a reply that takes 3/4 of the bound (BLPOP's
    own wait), then a command to a paused server. The second wait gets what the first left of DELAYQ_REDIS_TIMEOUT."""
    import redis

    from delayq.index.redis import RedisIndex

    index = RedisIndex(redis_server.url, new_prefix(), None, socket_timeout=REDIS_BOUND, connect_timeout=REDIS_BOUND,
                       failover_wait=0)

    def two_waits() -> None:
        index.r.blpop([index.prefix + ":never"], timeout=REDIS_BOUND * 0.75)
        with paused(redis_server.proc):
            index.r.ping()

    started = time.monotonic()
    with pytest.raises(redis.TimeoutError):
        index.failover.call(two_waits)
    seconds = time.monotonic() - started
    assert REDIS_BOUND * 0.75 <= seconds < REDIS_BOUND + 0.5, seconds
    index.check()                           # resumed: the next call connects afresh
    index.close()


@pytest.mark.parametrize("form", ["cluster", "sentinel"])
def test_a_paused_cluster_or_sentinel_master_ends_every_script_within_the_failover_wait(form, tmp_path):
    """Sentinel and Cluster ride over a failover for DELAYQ_REDIS_FAILOVER_WAIT: one bound for the whole call too.
    Every cluster node paused (redis-py would ask each for the slot map, then retry each command itself), or the
    Sentinel set's master paused with no replica to promote (each attempt discovers it again)."""
    from scripts.redis_topology import Cluster, Sentinel

    require("topology")
    wait = 2 * REDIS_BOUND
    topology = Cluster(masters=3, replicas=0) if form == "cluster" else Sentinel(replicas=0, sentinels=1)
    try:
        env = dict(environment(f"sqlite:///{tmp_path}/delayq.db", topology.url),
                   DELAYQ_REDIS_FAILOVER_WAIT=f"{wait:g}")
        script(env, "migrate.py", check=0)
        script(env, *ENQUEUE, check=0)
        ports = topology.ports if form == "cluster" else [topology.master_port]
        with contextlib.ExitStack() as stack:
            for port in ports:
                stack.enter_context(paused(topology.procs[port]))
            results = run_all(env, [ENQUEUE, ["compensate.py"]])
        # the sentinel flags a paused master down: later discoveries find none, and that may be the last word
        check_bounded(results, "Redis", wait, "DELAYQ_REDIS_FAILOVER_WAIT", f"Redis {form}",
                      *(["is unreachable: No master found for 'mymaster'"] if form == "sentinel" else []))
    finally:
        topology.stop()


def test_a_claim_under_way_when_a_worker_stops_fails_it_with_one_line_and_no_warning(redis_server, caplog):
    """Issue 21, invariant 6 (the long fault check's event f): a worker stops (its window ended, SIGTERM) while a
    claim of its waits on a Redis that stopped answering. That claim's error is the worker's one fatal line (the
    runner exits 1 with it), not a warning printed before the same error from elsewhere."""
    require("mysql")
    from delayq.clock import SystemClock
    from delayq.index.redis import RedisIndex
    from delayq.manager import Manager
    from delayq.registry import Registry
    from delayq.runner.worker import Worker
    from delayq.runner.summary import Summary
    from delayq.store import open_store

    prefix = new_prefix()
    store = open_store(MYSQL_URL, prefix)
    manager = Manager(store, RedisIndex(redis_server.url, prefix, store, socket_timeout=1.0), Registry(("examples",)),
                      SystemClock())
    try:
        store.migrate(time.time())
        manager.next_due(["default"])                      # the index connected: the pause meets a live connection
        stop = []
        worker = Worker(manager, ["default"], should_stop=lambda: bool(stop))
        with paused(redis_server.proc):
            worker.claimer.start(10, worker.wake)
            stop.append(True)
            with caplog.at_level("WARNING", logger="delayq"), pytest.raises(BackendError) as failed:
                worker._stop(Summary(), grace=None)
        assert "Redis at " in str(failed.value) and "timed out" in str(failed.value)
        assert not [r for r in caplog.records if r.levelname == "WARNING"], caplog.text
    finally:
        worker.close()
        manager.close()
        drop_mysql(prefix)
