"""delayq under `bin/loop.sh` with real cron timing (issue 11): a 50 s job at second 56, a job that hangs.

A driver stands in for cron: at each real minute boundary it starts `bin/loop.sh 2 bin/run_due.py`
(as `* * * * * bin/loop.sh 2 bin/run_due.py` would), each loop in its own process group, with a lock
file of its own (DELAYQ_LOOP_LOCK) and delayq's defaults otherwise (DELAYQ_LOOP_SLOTS 2, one pass a
tick, 16 threads, a 30 s time limit). Meanwhile a producer enqueues a steady stream of no-op jobs
(`rate` a second, each due 1 s after its enqueue, in bulk every 0.5 s) and, for each minute, one special
job due at second 56:

- slow: examples.shop:slow(seconds=50), which declares its own 120 s time limit: it holds its run (and
  that run's slot) until second 46 of the next minute;
- hang: examples.shop:hang(seconds=1e6), a job that never ends (max_attempts 1, so it is one new hang
  a minute, not also its retries): it is stopped at its 30 s time limit.

Measured: the lateness (attempt start - due, from the database) of the no-op jobs, and for the hang
case the delayq processes alive, counted every second from /proc (processes running bin/run_due.py
with this scenario's DELAYQ_PREFIX): runs (a run_due.py started by a tick) and their forked workers.
The stream stops 4 s before the last minute ends, so the last ticks run its jobs; then every loop's
process group is killed (a slow job still running included).

`minute` shortens the minute for `make bench-quick` (loop.sh's DELAYQ_LOOP_SECONDS; the special jobs'
times and the time limit scaled with it): the same mechanism, not real cron timing.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from delayq_side import NOOP, ROOT, World, _pct

import delayq

SLOW = "examples.shop:slow"
HANG = "examples.shop:hang"


class Scenario:
    """One prefix, its loops (one a minute), its producer and its process counter."""

    def __init__(self, name: str, database_url: str, redis_url: str | None, minutes: int, minute: float,
                 rate: float):
        self.name, self.minutes, self.minute, self.rate = name, minutes, minute, rate
        self.w = World(database_url, redis_url)
        self.tmp = tempfile.mkdtemp(prefix=f"delayq-cron-{name}-")
        # bin/run_due.py runs under the python3 found on PATH (issue 10: no re-exec into a venv): this one's
        path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
        self.env = dict(self.w.env, PATH=path, DELAYQ_LOOP_LOCK=os.path.join(self.tmp, "loop.lock"),
                        DELAYQ_LOOP_SECONDS=str(round(minute)))
        if minute != 60:
            self.env["DELAYQ_TIMEOUT"] = str(max(1, round(30 * minute / 60)))
        self.loops: list[subprocess.Popen] = []
        self.samples: list[tuple[float, int, int]] = []       # (time, runs, workers)
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.start = self.end = 0.0

    def prepare(self, start: float) -> None:
        """Enqueue the special jobs (one a minute, due at second 56) and start the producer and the counter."""
        self.start, self.end = start, start + self.minutes * self.minute
        path = os.path.join(self.tmp, "effects.log")
        at = 56 * self.minute / 60
        if self.name == "slow":
            special = {"call": SLOW, "args": {"path": path, "seconds": 50 * self.minute / 60}}
        else:
            special = {"call": HANG, "args": {"path": path, "seconds": 1e6}, "max_attempts": 1}
        self.w.q.enqueue_many({**special, "at": start + k * self.minute + at} for k in range(self.minutes))
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._count, daemon=True)]
        for t in self.threads:
            t.start()

    def start_loop(self) -> None:
        """What cron does at the minute: `bin/loop.sh 2 bin/run_due.py` from the application's directory."""
        self.loops.append(subprocess.Popen(["bash", os.path.join(ROOT, "bin", "loop.sh"), "2",
                                            os.path.join(ROOT, "bin", "run_due.py")],
                                           env=self.env, cwd=ROOT, start_new_session=True,
                                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))

    def _produce(self) -> None:
        producer = delayq.open_manager(self.w.config)
        try:
            _sleep_until(self.start)
            sent = 0
            while not self.stopping.is_set() and time.time() < self.end - 4:
                now = producer.clock.now()
                count = int(self.rate * (now - self.start)) - sent
                if count > 0:
                    producer.enqueue_many({"call": NOOP, "at": now + 1 + i / self.rate} for i in range(count))
                    sent += count
                time.sleep(0.5)
        finally:
            producer.close()

    def _count(self) -> None:
        _sleep_until(self.start)
        while not self.stopping.is_set() and time.time() < self.end + 2:
            runs, workers = delayq_processes(self.w.prefix)
            self.samples.append((time.time(), runs, workers))
            time.sleep(1.0)

    def finish(self) -> dict:
        """Stop the loops (and whatever they still run), then read what happened from the database."""
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=10)
        self._wait_stream_done()
        for loop in self.loops:
            try:
                os.killpg(loop.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            loop.wait()
        try:
            return self._figures()
        finally:
            self._close()

    def abandon(self) -> None:
        self.stopping.set()
        for loop in self.loops:
            try:
                os.killpg(loop.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._close()

    def _close(self) -> None:
        """Drop the prefix's tables and keys, and the lock and effects files."""
        try:
            self.w.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _wait_stream_done(self, timeout: float = 15) -> None:
        """The last ticks may still be running the stream's last jobs: wait for them (bounded)."""
        deadline = time.monotonic() + timeout
        query = "SELECT COUNT(*) FROM {jobs} WHERE callable = %s AND status IN ('pending', 'running')"
        while self.w.sql(query.replace("%s", self.w.placeholder), (NOOP,))[0][0] and time.monotonic() < deadline:
            time.sleep(0.2)

    def _figures(self) -> dict:
        rows = self.w.sql("SELECT j.callable, j.status, a.started_at - j.due_at, j.last_error FROM {jobs} j "
                          "LEFT JOIN {attempts} a ON a.job_id = j.id ORDER BY j.due_at")
        late = sorted(s * 1000 for call, _, s, _ in rows if call == NOOP and s is not None)
        not_run = sum(1 for call, status, s, _ in rows if call == NOOP and s is None)
        special = [(status, s, error) for call, status, s, error in rows if call != NOOP]
        out = {"minutes": self.minutes, "minute_s": self.minute, "jobs": len(late), "not_run": not_run,
               "p50_ms": round(_pct(late, 50), 1) if late else None,
               "p99_ms": round(_pct(late, 99), 1) if late else None, "max_ms": round(late[-1], 1) if late else None,
               "special": [{"status": st, "late_s": None if s is None else round(s, 2),
                            "error": (e or "").split("\n")[0][:80] or None} for st, s, e in special]}
        if self.samples:
            out["max_runs"] = max(r for _, r, _ in self.samples)
            out["max_processes"] = max(r + w for _, r, w in self.samples)
            out["seconds_with_2_runs_or_more"] = sum(1 for _, r, _ in self.samples if r >= 2)
        return out


def delayq_processes(prefix: str) -> tuple[int, int]:
    """(runs, workers): python processes running bin/run_due.py with DELAYQ_PREFIX=prefix (not the flock
    that started one); a worker is one whose parent is such a process too (forked by its run)."""
    marker = f"DELAYQ_PREFIX={prefix}".encode()
    ours: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if not f.read().startswith("python"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"run_due.py" not in f.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ours[int(entry)] = int(stat[stat.rfind(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
    workers = sum(1 for ppid in ours.values() if ppid in ours)
    return len(ours) - workers, workers


def _sleep_until(moment: float) -> None:
    pause = moment - time.time()
    if pause > 0:
        time.sleep(pause)


def run(database_url: str, redis_url: str | None, plan: list[tuple[str, int]], minute: float = 60,
        rate: float = 5, together: bool = False) -> dict:
    """Scenarios `plan` [(slow|hang, minutes)], one after the other from the next real minute boundary
    (together: all at once, from now: the shortened-minute form). Returns their figures by name."""
    first = math.ceil(time.time() / minute) * minute if minute == 60 else time.time() + 1
    if first - time.time() < 3:            # room to prepare before the first boundary
        first += minute
    scenarios: list[Scenario] = []
    results: dict = {}
    start = first
    try:
        for name, minutes in plan:
            scenario = Scenario(name, database_url, redis_url, minutes, minute, rate)
            scenarios.append(scenario)
            scenario.prepare(start)
            if not together:
                start += minutes * minute
        boundary, last = first, max(s.end for s in scenarios)
        while boundary < last - 1e-6:
            _sleep_until(boundary)
            for s in scenarios:
                if s.start - 1e-6 <= boundary < s.end - 1e-6:
                    s.start_loop()
            _sleep_until(boundary + 3)    # a scenario whose last minute just ended: its last ticks had room
            for s in scenarios:
                if abs(s.end - boundary) < 1e-6:
                    results[s.name] = s.finish()
            boundary += minute
        _sleep_until(last + 3)
        for s in scenarios:
            if s.name not in results:
                results[s.name] = s.finish()
        return results
    finally:
        for s in scenarios:            # after an error: nothing of ours keeps running, no table stays
            if s.name not in results:
                s.abandon()
