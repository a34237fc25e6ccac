"""Issue 16, item 4: every wait has a bound. A paused server (SIGSTOP: it accepts TCP connections and never
answers, as a hung or swapping host does) ends each script with exit 1 and one line naming the backend and
"timed out", after about DELAYQ_DB_TIMEOUT / DELAYQ_REDIS_TIMEOUT seconds, so cron never piles runners up.

The servers are private (tests/acceptance/conftest.py): ours to pause, ended by their pid. The tests use a 2 s
bound; DELAYQ_TEST_PAUSE_TIMEOUT=default runs them with the shipped defaults (20 s and 10 s) and, with -s,
prints the seconds each script took: the figures in docs/RELIABILITY.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from delayq import config
from tests.chaos.servers import resume
from tests.conftest import MYSQL_URL, ROOT, drop_mysql, new_prefix, require

BIN = os.path.join(ROOT, "bin")
GIVEN = os.environ.get("DELAYQ_TEST_PAUSE_TIMEOUT", "2")
DB_BOUND = config.DEFAULT_DB_TIMEOUT if GIVEN == "default" else float(GIVEN)
REDIS_BOUND = config.DEFAULT_REDIS_TIMEOUT if GIVEN == "default" else float(GIVEN)
SLACK = 3.0          # interpreter start-up of several scripts at once on a small machine, and the exit
SCRIPTS = [["run_due.py"], ["run_due.py", "--for", "55"], ["enqueue_delayed.py", "--call", "examples.shop:noop"],
           ["compensate.py"]]


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
    if GIVEN != "default":
        env.update(DELAYQ_DB_TIMEOUT=GIVEN, DELAYQ_REDIS_TIMEOUT=GIVEN)
    return env


def script(env, *args, check=None):
    done = subprocess.run([sys.executable, os.path.join(BIN, args[0]), *args[1:]], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if check is not None:
        assert done.returncode == check, (done.stdout, done.stderr)
    return done


def run_all(env) -> list[tuple[list[str], int, str, float]]:
    """Start every script at once; (command, exit code, stderr, seconds from its start to its exit)."""
    procs = [(cmd, time.monotonic(), subprocess.Popen([sys.executable, os.path.join(BIN, cmd[0]), *cmd[1:]], env=env,
                                                      cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                                      text=True)) for cmd in SCRIPTS]
    ended: dict[int, float] = {}
    limit = time.monotonic() + 120
    while len(ended) < len(procs) and time.monotonic() < limit:
        for i, (_, _, proc) in enumerate(procs):
            if i not in ended and proc.poll() is not None:
                ended[i] = time.monotonic()
        time.sleep(0.02)
    results = []
    for i, (cmd, started, proc) in enumerate(procs):
        if i not in ended:
            proc.kill()
        err = proc.communicate()[1]
        results.append((cmd, proc.returncode, err, ended.get(i, float("inf")) - started))
    return results


def check_bounded(results, backend: str, bound: float, label: str) -> None:
    for cmd, code, err, seconds in results:
        print(f"paused {label}: {' '.join(cmd)} exit {code} after {seconds:.2f} s: {err.strip()}")
    for cmd, code, err, seconds in results:
        assert code == 1, (cmd, err)
        assert err.count("\n") == 1 and f"{backend} at " in err and "timed out" in err, (cmd, err)
        assert seconds < bound + SLACK, (cmd, seconds)


@pytest.mark.parametrize("with_redis", [False, True], ids=["db-index", "redis-index"])
def test_a_paused_mariadb_ends_every_script_within_the_bound(mariadb, redis_server, with_redis):
    env = environment(mariadb.url, redis_server.url if with_redis else None)
    script(env, "migrate.py", check=0)
    script(env, "enqueue_delayed.py", "--call", "examples.shop:noop", check=0)    # due: run_due has work
    with paused(mariadb.proc):
        results = run_all(env)
    check_bounded(results, "MySQL", DB_BOUND, f"MariaDB ({'Redis index' if with_redis else 'in-database index'})")
    script(env, "list.py", check=0)                 # resumed: the next run works as before
    script(env, "enqueue_delayed.py", "--call", "examples.shop:noop", check=0)


@pytest.mark.parametrize("store", ["sqlite", "mysql"])
def test_a_paused_redis_ends_every_script_within_the_bound(redis_server, tmp_path, store):
    if store == "mysql":
        require("mysql")
    env = environment(f"sqlite:///{tmp_path}/delayq.db" if store == "sqlite" else MYSQL_URL, redis_server.url)
    try:
        script(env, "migrate.py", check=0)
        script(env, "enqueue_delayed.py", "--call", "examples.shop:noop", check=0)
        with paused(redis_server.proc):
            results = run_all(env)
        check_bounded(results, "Redis", REDIS_BOUND, f"Redis ({store} store)")
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
    runner = subprocess.Popen([sys.executable, os.path.join(BIN, "run_due.py"), "--for", "55", "--interval", "0.2"],
                              env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        limit = time.monotonic() + 60
        while '"succeeded"' not in script(env, "show.py", "--id", job, "--json").stdout:   # a pass went through
            assert time.monotonic() < limit and runner.poll() is None
        server = mariadb if which == "mariadb" else redis_server
        with paused(server.proc):
            started = time.monotonic()
            while runner.poll() is None and time.monotonic() - started < 120:
                time.sleep(0.02)
            seconds = time.monotonic() - started
    finally:
        if runner.poll() is None:
            runner.kill()
    err = runner.communicate()[1]
    backend, bound = ("MySQL", DB_BOUND) if which == "mariadb" else ("Redis", REDIS_BOUND)
    print(f"paused {which} under run_due.py --for 55: exit {runner.returncode} after {seconds:.2f} s: {err.strip()}")
    last = err.strip().splitlines()[-1]
    assert runner.returncode == 1 and f"{backend} at " in last and "timed out" in last, err
    assert seconds < bound + SLACK
