"""The store on a three-node Galera cluster, one node killed mid-run and brought back (issue 26), checked from what
really ran.

Three MariaDB nodes (tests/chaos/galera.py), migrated with bin/migrate.py. The jobs (tests/chaos/faultjobs.py: each
run writes its own start and end line; each job's ext says which item it is) fall due over --span seconds: two
thirds enqueued before the runners start, a third by a producer during the run, one at a time; one in ten
at-most-once, one in ten raising (retried twice on a 1 s ladder, then failed), the others 5-50 ms. Three cron-like
loops each start `bin/run_due.py --for 30` again when the last one ends, each with a DELAYQ_DATABASE_URL that lists
the three nodes, its own node first (--order same: node 1 first for every process); `bin/compensate.py` every 2 s,
as cron would, from a third node; the due index is the database (--redis URL: Redis). --kill-at seconds in
(default a quarter of the span), node 1 (the first host of one runner and of the producer) is SIGKILLed; --down
seconds later it is started again and rejoins (IST, else SST by rsync). Then the checker reads the tables and the
jobs' own history:

  - lost: jobs the clients were told were enqueued with no row, and rows not final at the end     must be 0
  - enqueues that returned an id that is not their job's                                          must be 0
  - at-most-once jobs that ran twice                                                              must be 0
  - runs without their attempt row (the fault check's invariant 2)                                must be 0
  - every ordinary 5-50 ms job succeeded; every raising one failed after its 3 attempts           must hold
  - the three nodes hold the same jobs and attempts (CHECKSUM TABLE)                              must hold
and reports as figures: re-runs of ordinary jobs, at-most-once jobs failed as "outcome unknown", the runners'
exits and their last lines, the deadlock errors (1213) the store's transactions met, by store method, and the
operations that used up their tries on them (a sitecustomize in the runners' path writes each down; nothing else
changes), Galera's certification failures and
brute-force aborts, the longest pause in job starts around the kill, and how long the killed node took to be
Synced again, and how it rejoined.

    .venv/bin/python -m tests.chaos.galera_check                       # 3,000 jobs: the run of record (make chaos)
    .venv/bin/python -m tests.chaos.galera_check --jobs 600 --span 20  # the short form

Prints a short summary, then one JSON line of the figures; exits 1 if an invariant was broken.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

import delayq  # noqa: E402
from delayq.config import Config  # noqa: E402
from delayq.errors import DelayqError  # noqa: E402
from delayq.store.sql import DEADLOCK_TRIES  # noqa: E402

from tests.chaos import faultjobs  # noqa: E402
from tests.chaos.checker import Checker, Limits  # noqa: E402
from tests.chaos.faultworld import ONCE_CALL, RUN_CALL  # noqa: E402
from tests.chaos.galera import Galera  # noqa: E402
from tests.chaos.limits_check import kill_tree  # noqa: E402
from tests.chaos.observed import AttemptRow, Row, read_rows, read_statuses  # noqa: E402

BIN = os.path.join(ROOT, "bin")
LEASE = 5.0
DB_TIMEOUT = 5.0
KILLED = 1                      # the node killed: the first host of runner 1 and of the producer
FINAL = ("succeeded", "failed", "timed_out", "cancelled")
UNKNOWN = "outcome unknown"


class Loop(threading.Thread):
    """A cron-like loop of one command: started again as soon as the last run ends (after `pause` s), until told to
    stop; each exit code counted, and the last stderr line of each run that failed kept."""

    def __init__(self, name: str, argv: list[str], env: dict, tmp: str, pause: float = 0.2):
        super().__init__(daemon=True, name=name)
        self.argv, self.env, self.pause = argv, env, pause
        self.err = os.path.join(tmp, f"{name}.err")
        self.halt, self.exits, self.failures = threading.Event(), Counter(), []
        self.proc: subprocess.Popen | None = None

    def run(self) -> None:
        while not self.halt.is_set():
            with open(self.err, "w") as err:
                self.proc = subprocess.Popen(self.argv, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
                                             start_new_session=True)
                code = self.proc.wait()
            self.exits[code] += 1
            if code and not self.halt.is_set():        # (a run ended by stop() is not a failure)
                with open(self.err, errors="replace") as err:
                    lines = [line.strip() for line in err if line.strip()]
                self.failures.append((round(time.time(), 2), code, lines[-1][:300] if lines else ""))
            self.halt.wait(self.pause)

    def stop(self) -> None:
        """No new run; the one under way ends as at cron's end of the minute: SIGTERM, then its whole tree."""
        self.halt.set()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill_tree(proc.pid)
        self.join(timeout=60)


class Producer(threading.Thread):
    """Enqueues its share of the jobs one at a time over the span (as an application's requests do), from a client
    whose first host is the node that will be killed: its enqueues ride over the kill to the next host (an enqueue
    whose reply was lost is counted as unknown: it may be in the table or not)."""

    def __init__(self, config: Config, items: list[dict], span: float):
        super().__init__(daemon=True, name="producer")
        self.q = delayq.open_manager(config)
        self.items, self.span = items, span
        self.told: dict[str, int] = {}        # ext -> the id the client was given
        self.errors: list[str] = []
        self.unknown = 0

    def run(self) -> None:
        start = time.monotonic()
        for n, item in enumerate(self.items):
            time.sleep(max(0.0, start + self.span * n / max(1, len(self.items)) - time.monotonic()))
            for _ in range(20):              # a client's own retry, 0.25 s apart, for at most 5 s
                try:
                    [result] = self.q.enqueue_many([item])
                    self.told[item["ext"]] = result.id
                    break
                except DelayqError as exc:
                    self.errors.append(f"{time.time():.2f} {str(exc)[:200]}")
                    if "may or may not" in str(exc):
                        self.unknown += 1
                        break                # not sent again: a second copy would be a second job
                    time.sleep(0.25)
        self.q.close()


def items(n: int, path: str, span: float, rng: random.Random) -> list[dict]:
    """n jobs falling due over `span` seconds: 1 in 10 at most once, 1 in 10 raising (3 attempts), the others ok."""
    out = []
    for i in range(n):
        item = {"delay": round(span * i / n, 3), "ext": f"galera:{i}"}      # ext: which item a row is
        if i % 10 == 0:
            item.update(call=ONCE_CALL, args={"path": path, "kind": "ok", "ms": 10})
        elif i % 10 == 5:
            item.update(call=RUN_CALL, args={"path": path, "kind": "raise"}, ladder="1,1")
        else:
            item.update(call=RUN_CALL, args={"path": path, "kind": "ok", "ms": rng.choice([5, 10, 20, 50])})
        out.append(item)
    rng.shuffle(out)
    return out


def wsrep_counts(cluster: Galera) -> dict[int, dict[str, int]]:
    """Per live node: its certification failures and brute-force aborts so far (since the node last started)."""
    counts = {}
    for node in cluster.nodes:
        if node.pid is None:
            continue
        try:
            status = node.status()
        except Exception:      # noqa: BLE001 - a node that does not answer has no figures
            continue
        counts[node.index] = {"cert_failures": int(status.get("wsrep_local_cert_failures", 0)),
                              "bf_aborts": int(status.get("wsrep_local_bf_aborts", 0))}
    return counts


def read_exts(q) -> dict[int, str]:
    with q.store.tx(write=False) as cur:
        cur.execute(f"SELECT id, ext FROM {q.store.prefix}_jobs")
        return dict(cur.fetchall())


def compensate_once(env: dict) -> int:
    return subprocess.run([sys.executable, os.path.join(BIN, "compensate.py")], env=env, cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120).returncode


def longest_pause(starts: list[float], since: float, until: float) -> float:
    """The longest time between two job starts (or from `since` to the first) within [since, until]."""
    inside = [since] + sorted(t for t in starts if since <= t <= until)
    return max((b - a for a, b in zip(inside, inside[1:])), default=until - since)


def rejoin(cluster: Galera, index: int, offset: int) -> str:
    """How the node came back, from what its log says after `offset`: IST (the others' write-set cache held what it
    missed) or a full SST."""
    with open(os.path.join(cluster.nodes[index].dir, "server.log"), errors="replace") as f:
        f.seek(offset)
        log = f.read()
    if "IST received" in log or "Receiving IST" in log:
        return "IST"
    return "SST" if "SST" in log else "unknown"


def log_size(cluster: Galera, index: int) -> int:
    return os.path.getsize(os.path.join(cluster.nodes[index].dir, "server.log"))


def judge(rows: list[Row], attempts: list[AttemptRow], history: list[dict], told: dict[str, int],
          exts: dict[int, str]) -> dict:
    """The figures and invariants from the rows, the attempts, the jobs' history and what the clients were told
    (each job's ext -> the id enqueue returned; exts: each row's ext)."""
    checker = Checker(history, rows, attempts, [], [], Limits(lease=LEASE, compensate_every=2.0, time_limit=30.0))
    by_id = {row.id: row for row in rows}
    runs = checker.runs
    ids_of: dict[str, list[int]] = {}
    for job_id, ext in exts.items():
        ids_of.setdefault(ext, []).append(job_id)
    missing = sorted(ext for ext in told if ext not in ids_of)
    wrong = sorted((ext, told[ext], ids_of[ext]) for ext in told if ext in ids_of and ids_of[ext] != [told[ext]])
    not_final = sorted(row.id for row in rows if row.status not in FINAL)
    once = [row for row in rows if row.once]
    ordinary_ok = [row for row in rows if not row.once and row.kind == "ok"]
    raising = [row for row in rows if not row.once and row.kind == "raise"]
    without_row = {job: reasons for job in runs for reasons in [checker.attempt_rows(job, by_id.get(job), runs[job])]
                   if reasons}
    twice = {row.id: checker.once_at_most(row, runs.get(row.id, [])) for row in once
             if checker.once_at_most(row, runs.get(row.id, []))}
    return {
        "rows": len(rows), "statuses": dict(Counter(row.status for row in rows)),
        "lost": len(missing) + len(not_final), "missing_rows": missing[:10], "not_final": not_final[:10],
        "ids_told_wrong": len(wrong), "ids_told_wrong_examples": [f"{e}: told {t}, rows {r}" for e, t, r in wrong[:5]],
        "enqueued_twice": sum(1 for ids in ids_of.values() if len(ids) > 1),
        "at_most_once": len(once), "at_most_once_ran_twice": len(twice),
        "at_most_once_outcome_unknown": sum(1 for row in once if row.status == "failed"
                                            and UNKNOWN in (row.last_error or "")),
        "at_most_once_succeeded": sum(1 for row in once if row.status == "succeeded"),
        "runs": sum(len(r) for r in runs.values()),
        "runs_without_attempt_row": len(without_row),
        "ordinary_ran_twice_or_more": sum(1 for row in ordinary_ok if len(runs.get(row.id, [])) > 1),
        "ordinary_not_succeeded": [row.id for row in ordinary_ok if row.status != "succeeded"][:10],
        "raising_not_failed_after_3": [row.id for row in raising if row.status != "failed" or row.attempts != 3][:10],
        "examples": [f"job {j}: {'; '.join(r)}" for j, r in list(twice.items())[:3]]
                    + [f"job {j}: {'; '.join(r)}" for j, r in list(without_row.items())[:3]],
    }


def violations(f: dict) -> list[str]:
    out = [] if f["nodes_identical"] else ["the three nodes do not hold the same rows (CHECKSUM TABLE)"]
    if f["lost"]:
        out.append(f"{f['lost']} job(s) lost: rows missing {f['missing_rows']}, not final {f['not_final']}")
    if f["ids_told_wrong"]:
        out.append(f"{f['ids_told_wrong']} enqueue(s) returned an id that is not their job's: "
                   f"{f['ids_told_wrong_examples'][:2]}")
    if f["at_most_once_ran_twice"]:
        out.append(f"{f['at_most_once_ran_twice']} at-most-once job(s) ran twice")
    if f["runs_without_attempt_row"]:
        out.append(f"{f['runs_without_attempt_row']} job(s) with a run but no attempt row")
    if f["ordinary_not_succeeded"]:
        out.append(f"ordinary jobs not succeeded: {f['ordinary_not_succeeded']}")
    if f["raising_not_failed_after_3"]:
        out.append(f"raising jobs not failed after 3 attempts: {f['raising_not_failed_after_3']}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=3000, help="jobs in all (default 3000)")
    p.add_argument("--span", type=float, default=40.0, help="seconds over which the jobs fall due (default 40)")
    p.add_argument("--kill-at", type=float, default=None, help="seconds in at which node 1 is killed (span/4)")
    p.add_argument("--down", type=float, default=8.0, help="seconds node 1 stays down (default 8)")
    p.add_argument("--order", choices=("different", "same"), default="different",
                   help="different (default): each runner's URL starts at its own node; same: every process lists "
                        "the nodes in one order, node 1 (the one killed) first, so that one node takes every write")
    p.add_argument("--redis", default="none", help="the due index: none (default: the database) or a Redis URL")
    p.add_argument("--concurrency", type=int, default=8, help="threads of each runner (default 8)")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    tmp = tempfile.mkdtemp(prefix="delayq-galera-check-")
    started = time.monotonic()
    with Galera() as cluster:
        up = round(time.monotonic() - started, 1)
        figures = Run(cluster, args, seed, tmp).go()
        figures["cluster_up_s"] = up
    figures.update(seconds=round(time.monotonic() - started, 1), seed=seed, jobs=args.jobs, span_s=args.span,
                   down_s=args.down, order=args.order, backend="galera" + ("+redis" if args.redis != "none" else ""))
    figures["violations"] = violations(figures)
    if figures["violations"]:
        figures["kept"] = tmp                # the jobs' history and the runners' last stderr, for a look
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print(summary(figures))
    print(json.dumps(figures))
    return 1 if figures["violations"] else 0


# Loaded by every runner and compensate of the run (PYTHONPATH): each deadlock or lock-wait error a transaction of
# the store met is written down with the store method it was in, whether it was retried or not, and each operation
# whose retries gave up on such errors (all its tries used, or no time left for one more: "gave-up METHOD"). Nothing
# else changes.
TRACER = """
import os, traceback
try:
    from delayq.store import sql as _sql
    def _note(what):
        ops = [f.name for f in traceback.extract_stack() if os.path.basename(f.filename).startswith("sql_")]
        fd = os.open(os.environ["GALERA_CONFLICTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{what} {ops[0] if ops else '?'}\\n".encode())
        os.close(fd)
    _failed = _sql.SqlStore._failed
    def _traced(self, exc, more=""):
        args = getattr(exc, "args", ())
        if args and args[0] in (1213, 1205):
            _note(args[0])
        return _failed(self, exc, more)
    _sql.SqlStore._failed = _traced
    _retried = _sql.SqlStore.retried
    def _counted(self, body, write=True):
        try:
            return _retried(self, body, write)
        except _sql.BackendError as exc:
            if exc.retryable:
                _note("gave-up")
            raise
    _sql.SqlStore.retried = _counted
except Exception:
    pass
"""


class Run:
    """One run on a started cluster: the tables, the jobs, the loops, the kill and the restart, then the figures."""

    def __init__(self, cluster: Galera, args: argparse.Namespace, seed: int, tmp: str):
        self.cluster, self.args, self.rng, self.tmp = cluster, args, random.Random(seed), tmp
        self.prefix = "galera" + secrets.token_hex(3)
        self.history = os.path.join(tmp, f"{self.prefix}.history")
        self.conflicts = os.path.join(tmp, "conflicts.log")
        self.redis_url = None if args.redis == "none" else args.redis
        with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
            f.write(TRACER)
        base = {k: v for k, v in os.environ.items() if not k.startswith("DELAYQ_")}
        base.update(DELAYQ_PREFIX=self.prefix, DELAYQ_ALLOWED_MODULES="tests.chaos", DELAYQ_LEASE=f"{LEASE:g}",
                    DELAYQ_DB_TIMEOUT=f"{DB_TIMEOUT:g}", GALERA_CONFLICTS=self.conflicts,
                    PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "lib"), ROOT, tmp]))
        if self.redis_url:
            base["DELAYQ_REDIS_URL"] = self.redis_url
        # which node each process tries first: runner i its own (or all the killed one), the producer the killed one
        first = [0, 1, 2] if args.order == "different" else [KILLED] * 3
        self.env = [dict(base, DELAYQ_DATABASE_URL=cluster.url(n)) for n in first]
        self.compensate_env = dict(base, DELAYQ_DATABASE_URL=cluster.url(2 if args.order == "different" else KILLED))
        self.config = Config(database_url=cluster.url(0), redis_url=self.redis_url, allowed_modules=("tests.chaos",),
                             prefix=self.prefix, lease=LEASE, db_timeout=DB_TIMEOUT)

    def go(self) -> dict:
        migrated = subprocess.run([sys.executable, os.path.join(BIN, "migrate.py")], env=self.env[0], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
        if migrated.returncode:
            raise RuntimeError(f"migrate failed: {migrated.stderr.strip()[-300:]}")
        self.q = delayq.open_manager(self.config)     # reads and the first enqueue: node 0, never killed
        try:
            return self._go()
        finally:
            self.q.close()
            if self.redis_url:                         # the tables go with the cluster; the index keys go here
                import redis

                r = redis.Redis.from_url(self.redis_url)
                for pattern in ("{" + self.prefix + ":*", "{" + self.prefix + "}:*"):
                    for key in r.scan_iter(match=pattern, count=1000):
                        r.delete(key)
                r.close()

    def _go(self) -> dict:
        args = self.args
        jobs = items(args.jobs, self.history, args.span, self.rng)
        first, later = jobs[:len(jobs) * 2 // 3], jobs[len(jobs) * 2 // 3:]
        for item in later:
            item["delay"] = 0        # the producer enqueues these when they are due
        told = {item["ext"]: r.id for item, r in zip(first, self.q.enqueue_many(first))}
        runner = [sys.executable, os.path.join(BIN, "run_due.py"), "--for", "30", "--interval", "0.2",
                  "--concurrency", str(args.concurrency), "--grace", "5", "--quiet"]
        loops = [Loop(f"runner{i}", runner, self.env[i], self.tmp) for i in range(3)]
        loops.append(Loop("compensate", [sys.executable, os.path.join(BIN, "compensate.py")], self.compensate_env,
                          self.tmp, pause=2.0))
        producer = Producer(dataclasses.replace(self.config, database_url=self.cluster.url(KILLED)), later, args.span)
        t0 = time.time()
        for loop in loops:
            loop.start()
        producer.start()
        try:
            kill = self._kill_and_restart(t0 + (args.kill_at if args.kill_at is not None else args.span / 4))
            producer.join(timeout=args.span + 120)
            deadline = time.monotonic() + args.span + 180
            while time.monotonic() < deadline and set(read_statuses(self.q.store)) - set(FINAL):
                time.sleep(1.0)
        finally:
            producer.join(timeout=30)
            for loop in loops:
                loop.stop()
        self._finish_leftovers()
        figures = self._figures(told, producer, loops, kill, t0)
        return figures

    def _kill_and_restart(self, at: float) -> dict:
        time.sleep(max(0.0, at - time.time()))
        before = wsrep_counts(self.cluster)
        killed_at = time.time()
        self.cluster.kill(KILLED)
        time.sleep(self.args.down)
        restarted_at, offset = time.time(), log_size(self.cluster, KILLED)
        self.cluster.restart(KILLED)
        return {"before": before, "killed_at": killed_at, "restarted_at": restarted_at, "synced_at": time.time(),
                "rejoined_by": rejoin(self.cluster, KILLED, offset)}

    def _finish_leftovers(self) -> None:
        """What the loops left (a runner stopped mid-job): its lease runs out, then compensate and one more pass."""
        for _ in range(30):
            if not set(read_statuses(self.q.store)) - set(FINAL):
                return
            compensate_once(self.env[0])
            subprocess.run([sys.executable, os.path.join(BIN, "run_due.py"), "--quiet"], env=self.env[0], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            time.sleep(1.0)

    def _figures(self, told: dict[str, int], producer: Producer, loops: list[Loop], kill: dict, t0: float) -> dict:
        after = wsrep_counts(self.cluster)
        rows, attempts = read_rows(self.q.store)
        history = faultjobs.read(self.history)
        figures = judge(rows, attempts, history, {**told, **producer.told}, read_exts(self.q))
        starts = [r["t"] for r in history if r["e"] == "start"]
        by_op, gave_up = Counter(), Counter()
        if os.path.exists(self.conflicts):
            with open(self.conflicts) as f:
                for line in filter(None, map(str.strip, f)):
                    if line.startswith("gave-up "):
                        gave_up[line.partition(" ")[2]] += 1
                    else:
                        by_op[line] += 1
        ended = [(loop.name, line) for loop in loops for _, _, line in loop.failures]
        figures.update(
            enqueued=len(told) + len(producer.told), producer_errors=len(producer.errors),
            producer_unknown=producer.unknown, producer_error_lines=producer.errors[:3],
            killed_node=KILLED, killed_at_s=round(kill["killed_at"] - t0, 1),
            restarted_at_s=round(kill["restarted_at"] - t0, 1),
            synced_after_s=round(kill["synced_at"] - kill["restarted_at"], 1), rejoined_by=kill["rejoined_by"],
            longest_start_pause_around_kill_s=round(longest_pause(starts, kill["killed_at"] - 1.0,
                                                                  kill["killed_at"] + 20.0), 2),
            last_start_s=round(max(starts) - t0, 1) if starts else None,
            **{key: sum(c[key] for c in after.values()) + kill["before"].get(KILLED, {}).get(key, 0)
               for key in ("cert_failures", "bf_aborts")},
            deadlock_errors_by_operation=dict(by_op.most_common()),
            deadlock_errors=sum(by_op.values()),
            operations_out_of_tries=sum(gave_up.values()), operations_out_of_tries_by_operation=dict(gave_up),
            tries=DEADLOCK_TRIES,
            deadlock_errors_that_ended_a_run=sum(1 for _, line in ended if "(1213)" in line or "(1205)" in line),
            exits={loop.name: {str(k): v for k, v in sorted(loop.exits.items())} for loop in loops},
            exit_lines=[f"{name}: {line}" for name, line in ended][:8],
            nodes_identical=identical(self.cluster, self.prefix))
        return figures


def identical(cluster: Galera, prefix: str) -> bool:
    """Whether the three nodes hold the same jobs and attempts (CHECKSUM TABLE on each, once their appliers caught
    up: asked again for a few seconds)."""
    tables = f"test.{prefix}_jobs, test.{prefix}_attempts"
    for _ in range(10):
        sums = [tuple(row[1] for row in cluster.sql(i, f"CHECKSUM TABLE {tables}")) for i in range(3)]
        if len(set(sums)) == 1:
            return True
        time.sleep(1.0)
    return False


def summary(f: dict) -> str:
    lines = [
        f"galera check ({f['backend']}, runners' first nodes {f['order']}, seed {f['seed']}): {f['enqueued']} jobs "
        f"on 3 nodes in {f['seconds']} s (cluster up in {f['cluster_up_s']} s); node {f['killed_node']} SIGKILLed at "
        f"{f['killed_at_s']} s, started again at {f['restarted_at_s']} s, Synced {f['synced_after_s']} s later "
        f"({f['rejoined_by']})",
        f"  lost {f['lost']}; at-most-once ran twice {f['at_most_once_ran_twice']} (of {f['at_most_once']}; "
        f"{f['at_most_once_outcome_unknown']} failed as outcome unknown); runs without their attempt row "
        f"{f['runs_without_attempt_row']}; ordinary jobs re-run {f['ordinary_ran_twice_or_more']}; nodes identical "
        f"{f['nodes_identical']}",
        f"  statuses {f['statuses']}; deadlock errors {f['deadlock_errors']} ({f['deadlock_errors_that_ended_a_run']}"
        f" ended a run) by operation {f['deadlock_errors_by_operation']}; operations out of their {f['tries']} tries "
        f"{f['operations_out_of_tries']} {f['operations_out_of_tries_by_operation']}; certification failures "
        f"{f['cert_failures']}, brute-force aborts {f['bf_aborts']}",
        f"  longest pause in job starts around the kill {f['longest_start_pause_around_kill_s']} s; exits "
        f"{f['exits']}; producer errors {f['producer_errors']} ({f['producer_unknown']} jobs unknown)",
    ]
    lines += [f"  {line}" for line in f["exit_lines"][:4]]
    lines += [f"  VIOLATION: {v}" for v in f["violations"]] or ["  no violation"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
