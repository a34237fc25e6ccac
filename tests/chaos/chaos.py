"""`make chaos`: real processes, real MariaDB and Redis, faults injected; executions counted from outside.

Each scenario prints its figures and the promises it checked; the script exits 1
if any promise was broken. CHAOS_SCALE=short (CI) runs smaller counts.

    make chaos                      # full scale, figures for docs/RELIABILITY.md
    CHAOS_SCALE=short make chaos    # the short form, also run by `make test`
    .venv/bin/python tests/chaos/chaos.py failover-cluster clock-skew     # some scenarios only
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

from delayq import recovery
import delayq  # noqa: E402
from delayq.config import Config  # noqa: E402
from delayq.runner import orphans  # noqa: E402
from delayq.store.queries import TABLES  # noqa: E402
from delayq.errors import InvalidInput  # noqa: E402
from tests.chaos.servers import PrivateMariaDB, PrivateRedis  # noqa: E402

FULL = os.environ.get("CHAOS_SCALE", "full") != "short"
SHARED_MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
LEASE = 3
BIN = os.path.join(ROOT, "bin")


class World:
    """One prefix on one database and Redis, with a side-effect log."""

    def __init__(self, database_url: str, redis_url: str | None, tmp: str, allowed: str = "examples"):
        self.prefix = "chaos" + secrets.token_hex(3)
        self.config = Config(database_url=database_url, redis_url=redis_url, allowed_modules=tuple(allowed.split(",")),
                             prefix=self.prefix, lease=LEASE)
        self.q = delayq.open_manager(self.config)
        self.q.store.migrate(time.time())
        self.log = os.path.join(tmp, f"{self.prefix}.log")
        self.env = dict(os.environ, DELAYQ_DATABASE_URL=database_url, DELAYQ_PREFIX=self.prefix,
                        DELAYQ_ALLOWED_MODULES=allowed, DELAYQ_LEASE=str(LEASE), PYTHONPATH=ROOT)
        self.env.pop("DELAYQ_REDIS_URL", None)
        if redis_url:
            self.env["DELAYQ_REDIS_URL"] = redis_url

    def runner(self, *extra: str, **kw) -> subprocess.Popen:
        cmd = [sys.executable, os.path.join(BIN, "run_due.py"), "--for", "3600", "--interval", "0.1", *extra]
        return subprocess.Popen(cmd, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, **kw)

    def statuses(self) -> Counter:
        with self.q.store.tx() as cur:
            cur.execute(f"SELECT status, COUNT(*) FROM {self.prefix}_jobs GROUP BY status")
            return Counter(dict(cur.fetchall()))

    def rows(self) -> dict[int, tuple[str, str, str | None]]:
        with self.q.store.tx() as cur:
            cur.execute(f"SELECT id, callable, status, last_error FROM {self.prefix}_jobs")
            return {row[0]: row[1:] for row in cur.fetchall()}

    def executions(self) -> Counter:
        if not os.path.exists(self.log):
            return Counter()
        with open(self.log) as f:
            return Counter(int(line.split()[1]) for line in f if line.strip())

    def compensate(self) -> None:
        recovery.recover_expired(self.q)
        recovery.reconcile(self.q.store, self.q.index, self.q.clock)

    def wait_final(self, timeout: float, compensate_every: float = 1.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            counts = self.statuses()
            if not counts.get("pending") and not counts.get("running"):
                return True
            self.compensate()
            time.sleep(compensate_every)
        return False

    def drop(self) -> None:
        with self.q.store.tx() as cur:
            for table in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS {self.prefix}_{table}")
        shutil.rmtree(orphans.directory(self.q.store, make=False), ignore_errors=True)   # ledgers left behind
        self.q.close()


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def s1_kill(tmp: str, redis_url: str) -> dict:
    n, kills_wanted = (5000, 30) if FULL else (800, 6)
    w = World(SHARED_MYSQL, redis_url, tmp)
    once = set()
    items = []
    for i in range(n):
        if i % 10 == 0:
            items.append({"call": "examples.shop:charge", "args": {"path": w.log}})
        else:
            items.append({"call": "examples.shop:hang", "args": {"path": w.log, "seconds": 0.002}})
    ids = [r.id for r in w.q.enqueue_many(items)]
    once = {job for i, job in enumerate(ids) if i % 10 == 0}
    started = time.monotonic()
    runner, kills, next_compensate = w.runner("--batch", "20"), 0, time.monotonic() + 1
    while kills < kills_wanted:
        time.sleep(random.uniform(0.1, 0.6))
        kill(runner)
        kills += 1
        runner = w.runner("--batch", "20")
        if time.monotonic() > next_compensate:
            w.compensate()
            next_compensate = time.monotonic() + 1
    finished = w.wait_final(600)
    kill(runner)
    runs, rows = w.executions(), w.rows()
    ordinary = [job for job in ids if job not in once]
    unknown = sum(1 for job in once if rows[job][1] == "failed")
    result = {
        "jobs": n, "kills": kills, "seconds": round(time.monotonic() - started, 1),
        "ordinary_succeeded": sum(1 for job in ordinary if rows[job][1] == "succeeded"),
        "ordinary_never_ran": sum(1 for job in ordinary if runs[job] == 0),
        "ordinary_ran_twice_or_more": sum(1 for job in ordinary if runs[job] > 1),
        "at_most_once_jobs": len(once), "at_most_once_ran_twice": sum(1 for job in once if runs[job] > 1),
        "at_most_once_outcome_unknown": unknown,
        "at_most_once_failed_without_running": sum(1 for job in once if rows[job][1] == "failed" and runs[job] == 0),
    }
    result["promises"] = {
        "every job final": finished,
        "every ordinary job succeeded": result["ordinary_succeeded"] == len(ordinary),
        "every ordinary job ran at least once": result["ordinary_never_ran"] == 0,
        "no at-most-once job ran twice": result["at_most_once_ran_twice"] == 0,
        "no job lost": len(rows) == n,
    }
    w.drop()
    return result


def s2_flush(tmp: str, redis: PrivateRedis) -> dict:
    n = 5000 if FULL else 1000
    w = World(SHARED_MYSQL, redis.url, tmp)
    runner = w.runner("--batch", "100")
    w.q.enqueue_many({"call": "examples.shop:record", "args": {"path": w.log, "tag": "x"}, "delay": 1 + i % 3}
                     for i in range(n))
    time.sleep(1.5)
    runner.send_signal(signal.SIGSTOP)           # hold the runner still (maybe mid-batch) so the check is exact
    before = w.statuses()
    w.q.index.r.flushall()                       # our own private Redis: FLUSHALL is ours to do
    t0 = time.monotonic()
    rebuilt = recovery.reconcile(w.q.store, w.q.index, w.q.clock)
    seconds = time.monotonic() - t0
    with w.q.store.tx() as cur:
        cur.execute(f"SELECT id FROM {w.prefix}_jobs WHERE status = 'pending'")
        pending = {row[0] for row in cur.fetchall()}
    due = {int(m) for m in w.q.index.r.zrange(w.q.index.keys("default")[0], 0, -1)}
    runner.send_signal(signal.SIGCONT)
    finished = w.wait_final(300)
    kill(runner)
    counts, runs = w.statuses(), w.executions()
    result = {"jobs": n, "pending_at_flush": before.get("pending", 0), "restored": rebuilt.restored,
              "reconcile_seconds": round(seconds, 3), "pending_missing_after_one_run": len(pending - due),
              "succeeded": counts.get("succeeded", 0), "ran_twice": sum(1 for c in runs.values() if c > 1)}
    result["promises"] = {"one compensate run restores every pending job": not (pending - due),
                          "every job succeeded": finished and counts.get("succeeded") == n}
    w.drop()
    return result


def s3_mariadb_restart(tmp: str, redis_url: str) -> dict:
    n = 3000 if FULL else 600
    db = PrivateMariaDB()
    try:
        w = World(db.url, redis_url, tmp)
        w.q.enqueue_many({"call": "examples.shop:hang", "args": {"path": w.log, "seconds": 0.002}} for _ in range(n))
        runner = w.runner("--batch", "50", "-q", stderr=subprocess.PIPE, text=True)   # -q: a pipe read at the end must not fill
        time.sleep(1.0)
        db.stop()
        t0 = time.monotonic()
        code = runner.wait(timeout=120)
        message = runner.stderr.read().strip().splitlines()[-1:]
        again = subprocess.run([sys.executable, os.path.join(BIN, "run_due.py")], env=w.env, cwd=ROOT,
                               capture_output=True, text=True, timeout=60)
        db.start()
        w.q.store.close()
        down_seconds = time.monotonic() - t0
        runner = w.runner("--batch", "50")
        time.sleep(LEASE + 0.5)
        finished = w.wait_final(300)
        kill(runner)
        counts, runs = w.statuses(), w.executions()
        result = {"jobs": n, "runner_exit_when_db_stopped": code, "runner_message": message[0] if message else "",
                  "new_run_exit_while_down": again.returncode, "new_run_message": again.stderr.strip(),
                  "down_seconds": round(down_seconds, 1), "succeeded": counts.get("succeeded", 0),
                  "never_ran": sum(1 for job in w.rows() if runs[job] == 0),
                  "ran_twice": sum(1 for c in runs.values() if c > 1)}
        result["promises"] = {
            "run_due exits 1 naming MySQL": code == 1 and again.returncode == 1 and "MySQL at" in again.stderr,
            "no traceback": "Traceback" not in again.stderr,
            "everything completes after restart": finished and counts.get("succeeded") == n}
        w.drop()
        return result
    finally:
        db.remove()


def s4_four_runners(tmp: str, redis_url: str) -> dict:
    n = 10000 if FULL else 2000
    w = World(SHARED_MYSQL, redis_url, tmp)
    w.q.enqueue_many({"call": "examples.shop:record", "args": {"path": w.log, "tag": "x"}} for _ in range(n))
    t0 = time.monotonic()
    runners = [w.runner("--batch", "100") for _ in range(4)]
    finished = w.wait_final(300, compensate_every=0.2)
    seconds = time.monotonic() - t0
    for r in runners:
        kill(r)
    runs = w.executions()
    result = {"jobs": n, "runners": 4, "seconds": round(seconds, 2), "executed": sum(runs.values()),
              "distinct": len(runs), "ran_twice": sum(1 for c in runs.values() if c > 1)}
    result["promises"] = {"each job executed exactly once": finished and len(runs) == n and set(runs.values()) == {1}}
    w.drop()
    return result


def hostile_inputs(count: int, tmp: str) -> list[dict]:
    makers = [
        lambda i: {"call": "examples.shop:noop", "args": "{" * (i % 7 + 1)},
        lambda i: {"call": "examples.shop:noop", "args": f"[{i}]"},
        lambda i: {"call": ["os:system", "builtins:eval", "subprocess:run", "examples.shop:not_a_job",
                            "examples.shop:Orders._hidden", "examples:../../etc", "a:b:c", ""][i % 8]},
        lambda i: {"call": "examples.shop:noop", "args": {"blob": "x" * (70_000 + i)}},
        lambda i: {"call": "examples.shop:noop", "ext": ["\x00", "a\nb", "x" * 300, "\x1b[31m"][i % 4] + str(i)},
        lambda i: {"call": "examples.shop:noop", "delay": ["-1", "NaN", "inf", "1e999", "soon"][i % 5]},
        lambda i: {"call": "examples.shop:noop", "ladder": ["weekly", "exp:0:0:0", "-5,1"][i % 3]},
        lambda i: {"call": "examples.shop:noop", "queue": ["", "a b", "x" * 65, "q;DROP TABLE"][i % 4]},
    ]
    return [makers[i % len(makers)](i) for i in range(count)]


def s5_malformed(tmp: str, redis_url: str) -> dict:
    n = 1000 if FULL else 200
    w = World(SHARED_MYSQL, redis_url, tmp)
    refused = sum(1 for raw in hostile_inputs(n, tmp) if _refused(w.q, raw))
    cli_ok = 0
    for raw in hostile_inputs(40 if FULL else 8, tmp):
        args = ["--call", raw["call"] if isinstance(raw["call"], str) else "x"]
        for key in ("args", "ext", "delay", "ladder", "queue"):
            if key in raw:
                value = raw[key] if isinstance(raw[key], str) else json.dumps(raw[key])
                args += [f"--{key}", value.replace("\x00", "\x01")]   # argv cannot carry NUL
        done = subprocess.run([sys.executable, os.path.join(BIN, "enqueue_delayed.py"), *args], env=w.env, cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        cli_ok += done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    rows_after_hostile = len(w.rows())
    edits = ["os:system", "builtins:eval", "examples.gone:noop", "examples.shop:not_a_job", None, "[]"]
    bad = []
    for i in range(n // 10):
        good = w.q.enqueue("examples.shop:record", {"path": w.log, "tag": "good"})
        job = w.q.enqueue("examples.shop:noop", ladder="3600")
        edit = edits[i % len(edits)]
        with w.q.store.tx() as cur:
            if edit in (None, "[]"):
                cur.execute(f"UPDATE {w.prefix}_jobs SET args = %s WHERE id = %s", ("{bad" if edit is None else edit, job.id))
            else:
                cur.execute(f"UPDATE {w.prefix}_jobs SET callable = %s WHERE id = %s", (edit, job.id))
        bad.append((job.id, good.id))
    run = subprocess.run([sys.executable, os.path.join(BIN, "run_due.py"), "--batch", "1000", "--json"], env=w.env,
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    rows, runs = w.rows(), w.executions()
    clear = sum(1 for job, _ in bad if rows[job][2] and rows[job][2].splitlines()[0].split(":")[0] in
                ("CallableRefused", "ModuleNotFoundError", "Permanent"))
    result = {"hostile_inputs": n, "refused_with_message": refused, "cli_samples_exit_2_one_line": cli_ok,
              "rows_written_by_hostile_inputs": rows_after_hostile, "edited_rows": len(bad),
              "edited_rows_failed_with_clear_error": clear, "runner_exit": run.returncode,
              "good_jobs_succeeded": sum(1 for _, good in bad if rows[good][1] == "succeeded")}
    result["promises"] = {
        "every hostile input refused": refused == n and rows_after_hostile == 0,
        "the script refuses each with exit 2 and one line": cli_ok == (40 if FULL else 8),
        "every edited row fails with a clear error": clear == len(bad),
        "the runner never crashes": run.returncode == 0,
        "no other job affected": result["good_jobs_succeeded"] == len(bad) and len(runs) == len(bad),
        "nothing hostile ran": not any(rows[job][1] == "succeeded" for job, _ in bad)}
    w.drop()
    return result


def _refused(q, raw) -> bool:
    try:
        q.enqueue(**raw)
    except InvalidInput as exc:
        return bool(str(exc)) and "\n" not in str(exc)
    except TypeError:     # a non-string callable given to the Python API
        return True
    return False


SCENARIOS = {"kill": s1_kill, "flushall": s2_flush, "mariadb-restart": s3_mariadb_restart,
             "four-runners": s4_four_runners, "malformed": s5_malformed}


def scaleout_scenarios() -> dict:
    """Issue 13's scenarios (tests/chaos/scaleout.py): failover on Sentinel and Cluster, clock skew."""
    from tests.chaos import scaleout, skew

    return {"failover-sentinel": scaleout.s6_failover_sentinel, "failover-cluster": scaleout.s7_failover_cluster,
            "clock-skew": skew.s8_clock_skew}


def main(names: list[str]) -> int:
    SCENARIOS.update(scaleout_scenarios())
    redis = PrivateRedis()
    results, broken = {}, []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name in names or list(SCENARIOS):
                arg = redis if name == "flushall" else redis.url
                t0 = time.monotonic()
                result = SCENARIOS[name](tmp, arg)
                result["scenario_seconds"] = round(time.monotonic() - t0, 1)
                results[name] = result
                print(f"\n== {name}")
                for key, value in result.items():
                    if key != "promises":
                        print(f"  {key}: {value}")
                for promise, kept in result["promises"].items():
                    print(f"  [{'ok' if kept else 'BROKEN'}] {promise}")
                    if not kept:
                        broken.append(f"{name}: {promise}")
    finally:
        redis.stop()
    out = os.path.join(ROOT, "benchmarks", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "chaos-full.json" if FULL else "chaos-short.json"), "w") as f:
        json.dump({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "full": FULL, "results": results}, f,
                  indent=2, default=str)
    print("\nchaos: " + ("every promise kept" if not broken else "BROKEN: " + "; ".join(broken)))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
