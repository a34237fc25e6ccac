"""Recurring schedules under three runners and kills (issue 23): one job per slot, none missed.

Three cron-like loops each start `bin/run_due.py --for STEP` again as soon as the last one ends, on one store
(MariaDB, with Redis or alone), with DELAYQ_SCHEDULE_MODULES=examples.schedules: a schedule every second (overlap
allowed) and one every minute (cron `* * * * *`, no overlap). The first loop kills its runner (SIGKILL, the whole
runner: supervisor and worker) at a random moment of each pass. Then the checker reads what really happened:

  - duplicates: slots with more than one job (by the jobs' ext, schedule:NAME:SLOT)      must be 0
  - missed: slots between the first and the last one taken that have no job, and the
    schedules rows' `missed` count                                                   must be 0
  - every slot's job ran (its line in the side-effect log) and ended succeeded

    .venv/bin/python -m tests.chaos.schedules_check --seconds 300            # the run of record (make chaos)
    .venv/bin/python -m tests.chaos.schedules_check --seconds 30 --step 5    # make test's short form

Prints one JSON object of the figures; exits 1 if an invariant was broken.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime

from tests.chaos.chaos import BIN, ROOT, SHARED_MYSQL, World

SCHEDULES = {"every-second": 1, "every-minute": 60}


class Loop(threading.Thread):
    """A cron-like loop: run-due --for STEP, again and again, until told to stop; `killer` kills each pass."""

    def __init__(self, env: dict, step: float, killer: bool, seed: int):
        super().__init__(daemon=True)
        self.env, self.step, self.killer, self.rng = env, step, killer, random.Random(seed)
        self.halt, self.passes, self.kills, self.exits = threading.Event(), 0, 0, Counter()

    def run(self) -> None:
        while not self.halt.is_set():
            proc = subprocess.Popen([sys.executable, os.path.join(BIN, "run_due.py"), "--for", str(self.step),
                                     "--interval", "0.2", "--quiet", "--grace", "5"], env=self.env, cwd=ROOT,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            self.passes += 1
            deadline = time.monotonic() + (self.rng.uniform(0.3, self.step) if self.killer else self.step + 60)
            while proc.poll() is None and time.monotonic() < deadline and not self.halt.is_set():
                time.sleep(0.05)
            if proc.poll() is None and self.killer and not self.halt.is_set():
                os.killpg(proc.pid, signal.SIGKILL)      # the whole runner: supervisor and worker
                self.kills += 1
            elif proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            self.exits[proc.wait()] += 1


def slot_of(ext: str) -> int:
    """schedule:NAME:SLOT -> the slot (a name has no colon; the slot's ISO-8601 has)."""
    return int(datetime.fromisoformat(ext.split(":", 2)[2]).timestamp())


def check(w: World, log: str) -> dict:
    with w.q.store.tx() as cur:
        cur.execute(f"SELECT id, ext, status FROM {w.prefix}_jobs WHERE ext LIKE 'schedule:%'")
        jobs = cur.fetchall()
        cur.execute(f"SELECT name, ran, skipped, missed FROM {w.prefix}_schedules")
        rows = {name: (ran, skipped, missed) for name, ran, skipped, missed in cur.fetchall()}
    ran = Counter(line.split()[1] for line in open(log)) if os.path.exists(log) else Counter()
    figures: dict = {"jobs": len(jobs), "violations": []}
    for name, every in SCHEDULES.items():
        exts = [ext for _, ext, _ in jobs if ext.startswith(f"schedule:{name}:")]
        per_slot = Counter(slot_of(ext) for ext in exts)
        taken = sorted(per_slot)
        expected = set(range(taken[0], taken[-1] + 1, every)) if taken else set()
        duplicates = sum(n - 1 for n in per_slot.values())
        missing = sorted(expected - set(taken))
        not_run = [ext for ext in exts if not ran[ext]]
        not_succeeded = [(i, ext, status) for i, ext, status in jobs if ext in exts and status != "succeeded"]
        counted = rows.get(name, (0, 0, 0))
        figures[name] = {"slots": len(taken), "duplicates": duplicates, "missing": len(missing),
                         "missed_counted": counted[2], "skipped_counted": counted[1], "not_run": len(not_run),
                         "not_succeeded": len(not_succeeded), "ran_twice": sum(1 for e in exts if ran[e] > 1)}
        if duplicates:
            figures["violations"].append(f"{name}: {duplicates} slot(s) with a second job")
        if missing or counted[2]:
            figures["violations"].append(f"{name}: missed slots {missing[:5]} (counted {counted[2]})")
        if not_run or not_succeeded:
            figures["violations"].append(f"{name}: jobs not run {not_run[:3]} or not succeeded {not_succeeded[:3]}")
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=300.0, help="how long the three loops run (default 300)")
    p.add_argument("--step", type=float, default=10.0, help="each pass's --for (default 10 s)")
    p.add_argument("--redis", default=os.environ.get("DELAYQ_TEST_REDIS_URL", "redis://127.0.0.1:6379/9"),
                   help="the due index (none: MariaDB alone)")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    tmp = tempfile.mkdtemp(prefix="delayq-schedules-")
    w = World(SHARED_MYSQL, None if args.redis == "none" else args.redis, tmp)
    log = os.path.join(tmp, "ran.log")
    env = dict(w.env, DELAYQ_SCHEDULE_MODULES="examples.schedules", EXAMPLE_SCHEDULE_LOG=log)
    loops = [Loop(env, args.step, killer=i == 0, seed=seed + i) for i in range(3)]
    started = time.time()
    for loop in loops:
        loop.start()
    time.sleep(args.seconds)                        # the run itself: nothing to wait for but time
    for loop in loops:
        loop.halt.set()
    for loop in loops:
        loop.join(timeout=args.step + 90)
    # after the loops: one runner without schedules finishes the jobs they left (killed mid-run: by the lease)
    final = dict(w.env, EXAMPLE_SCHEDULE_LOG=log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and w.statuses().keys() - {"succeeded"}:
        w.compensate()
        subprocess.run([sys.executable, os.path.join(BIN, "run_due.py"), "--for", "2", "--quiet"], env=final,
                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    figures = check(w, log)
    figures.update(seed=seed, seconds=round(time.time() - started, 1), backend="mariadb" + (
        "+redis" if args.redis != "none" else ""), passes=sum(loop.passes for loop in loops),
        kills=loops[0].kills, exits={str(k): v for k, v in sum((loop.exits for loop in loops), Counter()).items()})
    print(json.dumps(figures))
    return 1 if figures["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
