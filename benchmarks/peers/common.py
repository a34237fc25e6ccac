"""Shared pieces of the peer benchmark: the jobs' completion signals, timing,
percentiles and the handling of worker processes.

Imported both by run.py (the driver) and by the peers' workers (through the
<peer>_peer.py modules), so it imports nothing heavy and no peer library.

Completion is observed from outside the worker, the same way for every peer:
each job does one Redis command on the benchmark's own Redis db:
  burst:    job i of N does nothing but count itself. The worker keeps the set of
            job numbers that ran in memory and adds its runs to KEY_COUNT every FLUSH
            jobs, so a burst job costs one round trip per FLUSH jobs (the issue asks
            for no-op jobs); the job that makes N distinct numbers writes time.time()
            into KEY_DONE (and the first one writes its start into KEY_FIRST); a job
            run twice leaves KEY_COUNT above N. RQ forks a work horse per job, which
            keeps no memory: its jobs INCR KEY_COUNT and SADD KEY_SEEN each (shared=True);
  lateness: RPUSH of (start time - due time) onto KEY_LATE;
  wait:     (issue 11) sleeps `ms` milliseconds, as a job waiting on an upstream, then counts itself as
            burst does; with shared=True (a worker of several processes: its counts cannot be pooled in
            one process's memory) it counts in Redis, as RQ's jobs do;
  mixed:    (issue 11) an ordinary job RPUSHes its lateness onto KEY_LATE as a lateness job does; a slow
            one (one in `every`) sleeps `slow_ms` first, then RPUSHes its own lateness onto KEY_SLOW;
  ready:    SET KEY_READY (one immediate job, to know the worker is consuming).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from typing import Iterator
from urllib.parse import urlparse

REDIS_URL_ENV = "PEERBENCH_REDIS_URL"

KEY_COUNT = "peerbench:count"
KEY_FIRST = "peerbench:first"
KEY_DONE = "peerbench:done"
KEY_LATE = "peerbench:late"
KEY_READY = "peerbench:ready"
KEY_SEEN = "peerbench:seen"      # RQ only: the burst job numbers that ran
KEY_SLOW = "peerbench:slow"      # mixed: lateness of the slow jobs, pushed when they end


def redis_url() -> str:
    url = os.environ.get(REDIS_URL_ENV)
    if not url:
        raise RuntimeError(f"{REDIS_URL_ENV} is not set")
    return url


# ---------------------------------------------------------------- job bodies

def mark_ready(r) -> None:
    r.set(KEY_READY, "1")


FLUSH = 100
_counter = {"runs": 0, "unflushed": 0}
_seen: set[int] = set()
_lock = threading.Lock()


def _count_locally(n: int, i: int) -> tuple[int, int, int]:
    """(distinct jobs run so far, runs so far, how many runs to add to KEY_COUNT now). Runs go to KEY_COUNT
    every FLUSH jobs, at the first job, and at every job once N distinct jobs ran or a job ran again (so a
    job run twice shows as KEY_COUNT > N, however the runs interleave)."""
    with _lock:
        again = i in _seen
        _seen.add(i)
        _counter["runs"] += 1
        _counter["unflushed"] += 1
        distinct, runs = len(_seen), _counter["runs"]
        if runs == 1 or again or distinct >= n or _counter["unflushed"] >= FLUSH:
            add, _counter["unflushed"] = _counter["unflushed"], 0
            return distinct, runs, add
        return distinct, runs, 0


def _unflush(add: int) -> None:
    """The INCRBY failed: keep its counts for the next one."""
    with _lock:
        _counter["unflushed"] += add


def mark_burst(r, n: int, i: int, shared: bool = False) -> None:
    """Job i of n ran. The job that makes N distinct jobs writes KEY_DONE; the first writes KEY_FIRST."""
    start = time.time()
    if shared:      # no memory across jobs (RQ): the set of job numbers lives in Redis
        with r.pipeline(transaction=True) as pipe:
            runs, _, distinct = pipe.incr(KEY_COUNT).sadd(KEY_SEEN, i).scard(KEY_SEEN).execute()
    else:
        distinct, runs, add = _count_locally(n, i)
        if add:
            try:
                r.incrby(KEY_COUNT, add)
            except Exception:
                _unflush(add)
                raise
    if runs == 1:
        r.set(KEY_FIRST, repr(start))
    if distinct == n and not r.exists(KEY_DONE):
        r.set(KEY_DONE, repr(time.time()))


def mark_late(r, due: float) -> None:
    r.rpush(KEY_LATE, repr(time.time() - due))


def wait_then_mark(r, n: int, i: int, ms: float, shared: bool) -> None:
    """An I/O-bound job: waits `ms` as on an upstream call (using no CPU), then counts itself."""
    time.sleep(ms / 1000.0)
    mark_burst(r, n, i, shared=shared)


def is_slow(i: int, every: int) -> bool:
    """Job i of a mixed stream is a slow one: one in `every`, the first in the middle of the first `every`."""
    return every > 0 and i % every == every // 2


def mark_mixed(r, due: float, slow_ms: float) -> None:
    """An ordinary job records its lateness at once; a slow one takes slow_ms, then records its own apart."""
    if not slow_ms:
        mark_late(r, due)
        return
    late = time.time() - due
    time.sleep(slow_ms / 1000.0)
    r.rpush(KEY_SLOW, repr(late))


async def amark_ready(r) -> None:
    await r.set(KEY_READY, "1")


async def amark_burst(r, n: int, i: int) -> None:
    start = time.time()
    distinct, runs, add = _count_locally(n, i)
    if add:
        try:
            await r.incrby(KEY_COUNT, add)
        except Exception:
            _unflush(add)
            raise
    if runs == 1:
        await r.set(KEY_FIRST, repr(start))
    if distinct == n and not await r.exists(KEY_DONE):
        await r.set(KEY_DONE, repr(time.time()))


async def amark_late(r, due: float) -> None:
    await r.rpush(KEY_LATE, repr(time.time() - due))


# ---------------------------------------------------------------- safety

def check_redis_url(url: str) -> None:
    """Refuse the shared Redis (port 6379, db 0): run.py FLUSHDBs its db."""
    u = urlparse(url)
    if u.scheme not in ("redis", "rediss"):
        raise SystemExit(f"--redis-url must be redis://host:port/db, got {url!r}")
    port = u.port or 6379
    path = (u.path or "/").strip("/")
    db = int(path) if path else 0
    if port == 6379 and db == 0:
        raise SystemExit("refusing redis on port 6379 db 0: this benchmark FLUSHDBs its db; "
                         "pass a private redis-server (or at least another db)")


# ---------------------------------------------------------------- timing

class Deadline:
    def __init__(self, seconds: float, label: str = ""):
        self.at = time.monotonic() + seconds
        self.seconds = seconds
        self.label = label

    def left(self) -> float:
        return self.at - time.monotonic()

    def check(self, what: str) -> None:
        if time.monotonic() > self.at:
            label = self.label or f"within {self.seconds:.0f} s"
            raise TimeoutError(f"did not finish {label} ({what})")


def items_fixed_due(n: int, args_of, due_at: float, deadline: Deadline | None = None) -> Iterator[tuple[tuple, float]]:
    """n jobs, all due at the absolute time due_at."""
    for i in range(n):
        if deadline is not None and i % 1000 == 0:
            deadline.check("enqueue")
        yield args_of(i), due_at


def items_relative_due(n: int, args_of, delay: float, deadline: Deadline | None = None) -> Iterator[tuple[tuple, float]]:
    """n jobs, each due `delay` seconds after its own enqueue."""
    for i in range(n):
        if deadline is not None and i % 1000 == 0:
            deadline.check("enqueue")
        yield args_of(i), time.time() + delay


def items_paced(n: int, rate: float, delay: float, stats: dict, deadline: Deadline | None = None,
                args_of=lambda i, due: (due,)) -> Iterator[tuple[tuple, float]]:
    """A steady stream: job i is enqueued at start + i/rate and is due `delay` s after
    its enqueue; its due time is also its (first) argument. Records the achieved pacing."""
    start = time.time() + 0.05
    behind = 0.0
    for i in range(n):
        target = start + i / rate
        now = time.time()
        if target > now:
            time.sleep(target - now)
        else:
            behind = max(behind, now - target)
        if deadline is not None and i % 1000 == 0:
            deadline.check("enqueue stream")
        due = time.time() + delay
        stats["last_due"] = due
        yield args_of(i, due), due
    stats["stream_s"] = time.time() - start
    stats["max_behind_s"] = behind


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    if lo == hi:
        return sorted_values[lo]
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


# ---------------------------------------------------------------- processes

class WorkerProcess:
    """One worker, started in its own session (process group) so that the worker and
    whatever it forks (RQ's scheduler and work horses, Dramatiq's worker process) are
    ended together by the group id of the process we started."""

    def __init__(self, argv: list[str], env: dict, cwd: str, log_path: str):
        self.argv = argv
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.pgid = self.proc.pid  # leader of its new session and group

    def alive(self) -> bool:
        return self.proc.poll() is None

    def group_pids(self) -> list[int]:
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 2 and int(fields[2]) == self.pgid:
                pids.append(int(entry))
        return pids

    def peak_rss_mb(self) -> float | None:
        """Largest VmHWM (peak RSS) among the live processes of the worker's group."""
        best = None
        for pid in self.group_pids():
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            kb = int(line.split()[1])
                            best = max(best or 0, kb)
            except OSError:
                continue
        return None if best is None else round(best / 1024, 1)

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to the group, SIGKILL to whatever is left after `grace` seconds."""
        self._signal_group(signal.SIGTERM)
        end = time.monotonic() + grace
        while time.monotonic() < end:
            if self.proc.poll() is not None and not self.group_pids():
                break
            time.sleep(0.05)
        self._signal_group(signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()

    def log_tail(self, chars: int = 1500) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - chars))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""


def wait_for(predicate, deadline: Deadline, what: str, worker: WorkerProcess | None = None,
             interval: float = 0.02) -> None:
    while not predicate():
        if worker is not None and not worker.alive():
            raise RuntimeError(f"worker exited with code {worker.proc.returncode} while waiting for {what}: "
                               f"{worker.log_tail(600)}")
        deadline.check(what)
        time.sleep(interval)

