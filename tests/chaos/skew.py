"""Chaos scenario of scale-out (issue 13), part of `make chaos`: runners, clients and compensate on hosts whose
clocks are off by +-30 s (libfaketime on real processes); when each job ran is timed by a UDP observer with an
unskewed clock, so a runner under faketime cannot misreport it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time

from tests.chaos.chaos import FULL, ROOT, SHARED_MYSQL, World
from tests.chaos.scaleout import Compensator, Supervisor, _wait_final

FAKETIME_HINT = "faketime (libfaketime) is needed: apt-get install faketime (scripts/ensure_services.sh does it)"


class Observer(threading.Thread):
    """A UDP socket on this host: each datagram (a job id) is timed on arrival with this process's clock."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.seen: list[tuple[int, float]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                data = self.sock.recv(64)
            except socket.timeout:
                continue
            self.seen.append((int(data), time.time()))

    def stop(self) -> None:
        self.halt.set()
        self.join()
        self.sock.close()


def skewed(offset: str) -> list[str]:
    return ["faketime", "-f", offset]


def s8_clock_skew(tmp: str, redis_url: str) -> dict:
    """Runners at +30 s and -30 s, clients enqueueing at +30 s, -30 s and on time, compensate at +30 s (every
    second) while jobs with a 6 s lease run for 3 s, claimed one at a time, so that any takeover is early:
    due times and leases go by the database's clock."""
    if not shutil.which("faketime"):
        raise RuntimeError(FAKETIME_HINT)
    count, seconds = (300, 20) if FULL else (60, 6)
    w = World(SHARED_MYSQL, redis_url, tmp, allowed="examples,tests.chaos")
    observer = Observer()
    observer.start()
    runners = [Supervisor(w, 1, "--queue", "default", prefix=skewed("+30s")),
               Supervisor(w, 1, "--queue", "default", prefix=skewed("-30s")),
               Supervisor(w, 1, "--queue", "slow", "--batch", "1", prefix=skewed("-30s"))]   # each within its lease
    compensator = Compensator(w, every=1.0, prefix=skewed("+30s"))
    for thread in (*runners, compensator):
        thread.start()
    slow = [r.id for r in w.q.enqueue_many({"call": "examples.shop:hang", "args": {"path": w.log, "seconds": 3},
                                            "queue": "slow", "lease": 6, "delay": 1} for _ in range(4 if FULL else 2))]
    clients = [subprocess.Popen([*prefix, sys.executable, os.path.join(ROOT, "tests", "chaos", "skew_enqueue.py"),
                                 str(observer.port), str(count), str(seconds)], env=w.env, cwd=ROOT)
               for prefix in (skewed("+30s"), skewed("-30s"), [])]
    codes = [c.wait(timeout=seconds + 120) for c in clients]
    finished = _wait_final(w, 60)
    for thread in (*runners, compensator):
        thread.stop()
    observer.stop()
    return _skew_result(w, observer, runners, compensator, slow, codes, finished, 3 * count)


def _skew_result(w: World, observer: Observer, runners: list[Supervisor], compensator: Compensator,
                 slow: list[int], codes: list[int], finished: bool, expected: int) -> dict:
    with w.q.store.tx() as cur:
        cur.execute(f"SELECT id, due_at, crashes, attempts FROM {w.prefix}_jobs")
        rows = {job: (due, crashes, attempts) for job, due, crashes, attempts in cur.fetchall()}
    offsets = sorted(at - rows[job][0] for job, at in observer.seen)
    runs = w.executions()
    result = {
        "pings_enqueued": expected, "pings_run": len(observer.seen), "distinct": len({j for j, _ in observer.seen}),
        "ran_early_by_more_than_1s": sum(1 for d in offsets if d < -1.0),
        "ran_late_by_more_than_1s": sum(1 for d in offsets if d > 1.0),
        "earliest_s": round(offsets[0], 3) if offsets else None, "latest_s": round(offsets[-1], 3) if offsets else None,
        "median_s": round(offsets[len(offsets) // 2], 3) if offsets else None,
        "leased_jobs": len(slow), "leases_taken_early": sum(1 for job in slow if rows[job][1] > 0 or rows[job][2] > 1),
        "leased_jobs_ran": sum(runs[job] for job in slow),
        "compensate_runs": len(compensator.runs), "compensate_requeued": compensator.total("requeued"),
        "runner_exits": sum(len(r.exits) for r in runners),
    }
    result["promises"] = {
        "every ping ran once": finished and len(observer.seen) == expected == result["distinct"] and all(
            code == 0 for code in codes),
        "0 runs early by more than 1 s (the database's clock)": result["ran_early_by_more_than_1s"] == 0,
        "0 runs late by more than 1 s": result["ran_late_by_more_than_1s"] == 0,
        "0 leases taken over early by a compensate 30 s ahead":
            result["leases_taken_early"] == 0 and result["compensate_requeued"] == 0 and compensator.runs != [],
        "each leased job ran once": result["leased_jobs_ran"] == len(slow),
    }
    w.drop()
    return result
