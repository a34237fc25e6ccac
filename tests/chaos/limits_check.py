"""Rate and concurrency limits under three runners (issue 23), checked from what really ran.

  rate:  DELAYQ_QUEUES={"psp": {"rate": "10/s"}}, 1,500 jobs due now, three runners of 16 threads for 60 s:
         the jobs started in the 60 s after the first start (must be 570-630), and the most started in any one
         second (sliding, must be at most 12).
  key:   2,000 jobs of confirm_order (limit_key order:{order_id}, limit 1; 200 orders, 10 jobs each, 20-60 ms),
         three runners of 16 threads until all are done; one runner killed (SIGKILL, whole) mid-run and not
         restarted: runs of one order that overlap in time (must be 0), and how long after the kill the killed
         holder's order started its next job (must be within its lease, 5 s, plus RECHECK).

    .venv/bin/python -m tests.chaos.limits_check               # both, as docs/RELIABILITY.md records them
    .venv/bin/python -m tests.chaos.limits_check --short       # make test's form: 20 s, 300 jobs

Prints one JSON object; exits 1 if a bound was broken.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

from tests.chaos.chaos import BIN, ROOT, SHARED_MYSQL, World

LEASE = 5


def runner(env: dict, queue: str, seconds: float, tmp: str) -> subprocess.Popen:
    err = tempfile.NamedTemporaryFile("w", dir=tmp, prefix="runner-", suffix=".err", delete=False)
    proc = subprocess.Popen([sys.executable, os.path.join(BIN, "run_due.py"), "--queue", queue, "--for", str(seconds),
                             "--concurrency", "16", "--interval", "0.2", "--quiet"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    proc.err_path = err.name        # type: ignore[attr-defined]
    return proc


def kill_tree(pid: int) -> None:
    """SIGKILL a runner and every process below it at once (its workers are in process groups of their own)."""
    parents: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(f.read().rsplit(")", 1)[1].split()[1])].append(int(entry))
            except OSError:
                continue
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += parents.get(tree[-1], [])
    for member in tree:
        try:
            os.kill(member, signal.SIGKILL)
        except ProcessLookupError:
            pass


def errors(procs: list[subprocess.Popen]) -> list[str]:
    """The runners' last lines on stderr, where one exited non-zero."""
    return [open(p.err_path).read()[-300:] for p in procs if p.returncode]     # type: ignore[attr-defined]


def lines(log: str) -> list[list[str]]:
    return [line.split() for line in open(log)] if os.path.exists(log) else []


def rate_run(w: World, tmp: str, seconds: float, jobs: int) -> dict:
    log = os.path.join(tmp, "rate.log")
    env = dict(w.env, DELAYQ_QUEUES=json.dumps({"psp": {"rate": "10/s"}}), EXAMPLE_LIMITS_LOG=log)
    w.q.enqueue_many([{"call": "examples.limits:poll_payment", "args": {"order_id": i}, "queue": "psp"}
                      for i in range(jobs)])
    procs = [runner(env, "psp", seconds, tmp) for _ in range(3)]
    try:
        for proc in procs:
            proc.wait(timeout=seconds + 120)
    finally:
        for proc in procs:                      # whatever happened, no runner of ours outlives the check
            if proc.poll() is None:
                kill_tree(proc.pid)
    starts = sorted(float(parts[3]) for parts in lines(log) if parts[0] == "start")
    first = starts[0] if starts else 0.0
    window = [t for t in starts if t < first + seconds]
    busiest = max((sum(1 for u in window if t <= u < t + 1.0) for t in window), default=0)
    target = 10 * seconds
    figures = {"seconds": seconds, "started": len(window), "bounds": [round(target * 0.95), round(target * 1.05)],
               "busiest_second": busiest, "exits": [p.returncode for p in procs], "stderr": errors(procs)}
    figures["ok"] = figures["bounds"][0] <= len(window) <= figures["bounds"][1] and busiest <= 12
    return figures


def key_run(w: World, tmp: str, jobs: int, orders: int) -> dict:
    log = os.path.join(tmp, "key.log")
    env = dict(w.env, EXAMPLE_LIMITS_LOG=log)
    w.q.enqueue_many([{"call": "examples.limits:confirm_order", "args": {"order_id": i % orders,
                                                                          "seconds": 0.1 + (i % 5) * 0.05}}
                      for i in range(jobs)])
    procs = [runner(env, "default", 600, tmp) for _ in range(3)]
    try:
        return _keyed(w, log, jobs, orders, procs)
    finally:
        for proc in procs:                      # whatever happened, no runner of ours outlives the check
            if proc.poll() is None:
                kill_tree(proc.pid)


def _keyed(w: World, log: str, jobs: int, orders: int, procs: list[subprocess.Popen]) -> dict:
    deadline = time.monotonic() + 60            # the run under way: kill one runner, whole, in the middle of it
    while time.monotonic() < deadline and sum(1 for parts in lines(log) if parts[0] == "start") < jobs // 10:
        time.sleep(0.05)
    kill_tree(procs[0].pid)
    killed_at = time.time()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and w.statuses().get("succeeded", 0) < jobs:
        w.compensate()                          # cron's compensate: the killed runner's jobs, by their lease
        time.sleep(1.0)
    # each run: a start and the end after it (a run killed with its runner has no end: it ended at the kill;
    # a worker may finish its run after its supervisor's death: that run has its end, and its slot came back then)
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    open_runs: dict[str, tuple[str, float]] = {}
    cut: dict[str, str] = {}
    for what, job, key, at, _ in lines(log):
        if what == "start":
            if job in open_runs:                # its run before never ended: killed with its runner
                cut[job], began = open_runs[job]
                spans[cut[job]].append((began, killed_at))
            open_runs[job] = (key, float(at))
        elif job in open_runs:
            key, began = open_runs.pop(job)
            spans[key].append((began, float(at)))
    for job, (key, began) in open_runs.items():
        cut[job] = key
        spans[key].append((began, killed_at))
    overlaps = 0
    for key, items in spans.items():
        items.sort()
        overlaps += sum(1 for (_, end), (start, _) in zip(items, items[1:]) if start < end - 1e-3)
    back = [min((s for s, _ in spans[key] if s > killed_at), default=None) for key in set(cut.values())]
    came_back = [round(t - killed_at, 2) for t in back if t is not None]
    figures = {"jobs": jobs, "orders": orders, "succeeded": w.statuses().get("succeeded", 0),
               "runs": sum(len(items) for items in spans.values()),
               "overlaps": overlaps, "holders_killed": len(cut), "slot_back_after_s": sorted(came_back),
               "lease_s": LEASE}
    figures["ok"] = (overlaps == 0 and figures["succeeded"] == jobs
                     and all(t <= LEASE + 2 for t in came_back) and len(came_back) == len(set(cut.values())))
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--short", action="store_true", help="make test's form: 20 s of rate, 300 keyed jobs")
    p.add_argument("--redis", default=os.environ.get("DELAYQ_TEST_REDIS_URL", "redis://127.0.0.1:6379/9"),
                   help="the due index (none: MariaDB alone)")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="delayq-limits-")
    redis_url = None if args.redis == "none" else args.redis
    seconds, jobs = (20.0, 300) if args.short else (60.0, 2000)
    w = World(SHARED_MYSQL, redis_url, tmp)
    w.env["DELAYQ_LEASE"] = str(LEASE)
    figures = {"backend": "mariadb" + ("+redis" if redis_url else ""),
               "rate": rate_run(w, tmp, seconds, int(seconds * 25))}
    w = World(SHARED_MYSQL, redis_url, tmp)
    w.env["DELAYQ_LEASE"] = str(LEASE)
    figures["key"] = key_run(w, tmp, jobs, jobs // 10)
    print(json.dumps(figures))
    return 0 if figures["rate"]["ok"] and figures["key"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
