"""The processes the fault check (tests/chaos/faultcheck.py) starts, watches from outside and always ends.

Every runner is started with an environment tag (DELAYQ_FAULTCHECK_TAG) that its workers, the children its jobs
fork and the processes they start all inherit: after a runner exits, the processes still carrying its tag are
exactly the ones it left behind. They are recorded (invariant 5) and then ended by pid; nothing is ended by name.
Worker pids are read from /proc/<pid>/task/*/children every WATCH_EVERY seconds, and each is checked by its start
time so that a reused pid is never taken for it.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import subprocess
import sys
import threading
import time
from typing import Callable

from tests.chaos.observed import RunnerLife, Worker

TAG_VAR = "DELAYQ_FAULTCHECK_TAG"
WATCH_EVERY = 0.05
DESCENDANT_GRACE = 1.0      # seconds after a runner's exit before what it left behind is counted
STDERR_LINES = 5000         # lines of a runner's stderr kept (the first ones)


# -- /proc ------------------------------------------------------------------------------------------------------
def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks) of a process, None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rindex(")") + 2:].split()
    return rest[0], int(rest[19])


def alive(pid: int, starttime: int | None = None) -> bool:
    """Running (not a zombie), and the same process as the one first seen if its start time is given."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] != "Z" and (starttime is None or stat[1] == starttime)


def children(pid: int) -> list[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            continue
    return out


def tagged(tag: str, prefix: bool = False) -> list[int]:
    """Live processes whose environment carries TAG_VAR=tag (with prefix=True: a tag starting with it)."""
    needle = f"\0{TAG_VAR}={tag}".encode() + (b"" if prefix else b"\0")
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = b"\0" + f.read()
        except OSError:
            continue
        if needle in environ and alive(int(name)):
            out.append(int(name))
    return out


def kill_pids(pids: list[int]) -> list[int]:
    """SIGKILL each pid; returns those that were alive to be hit."""
    hit = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            hit.append(pid)
        except ProcessLookupError:
            continue
    return hit


# -- one runner -------------------------------------------------------------------------------------------------
class Runner:
    """One bin/run_due.py process and its RunnerLife: three threads read its stdout and stderr and wait for its
    exit; after the exit, what it left behind is recorded and ended. `done` is set when all of that is over."""

    def __init__(self, name: str, argv: list[str], env: dict, cwd: str, grace: float, for_seconds: float,
                 time_limit: float, exit_slack: float):
        self.tag = name
        self.life = RunnerLife(name, 0, time.time(), grace=grace, for_seconds=for_seconds)
        self.time_limit, self.exit_slack = time_limit, exit_slack
        self.proc = subprocess.Popen(argv, env={**env, TAG_VAR: name}, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.life.pid = self.proc.pid
        stat = proc_stat(self.proc.pid)
        self.starttime = stat[1] if stat else None
        self.worker_starts: dict[int, int] = {}
        self.done = threading.Event()
        self._eof = threading.Event()
        for target in (self._read_stdout, self._read_stderr, self._wait):
            threading.Thread(target=target, daemon=True, name=f"{name}-{target.__name__}").start()

    @property
    def running(self) -> bool:
        return self.life.exited is None and self.life.sigterm is None and self.life.killed is None

    def _read_stdout(self) -> None:
        fd = self.proc.stdout.fileno()
        try:
            while os.read(fd, 65536):
                pass
        except OSError:
            return
        self.life.eof = time.time()
        self._eof.set()

    def _read_stderr(self) -> None:
        try:
            for raw in self.proc.stderr:
                if len(self.life.stderr) < STDERR_LINES:
                    self.life.stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))
        except (OSError, ValueError):
            return

    def hard_deadline(self) -> float:
        """When the harness stops waiting and SIGKILLs it (recorded as forced): well past every bound checked."""
        life = self.life
        if life.sigterm is not None:
            return life.sigterm + life.grace + self.exit_slack + 10
        return life.started + life.for_seconds + self.time_limit + life.grace + self.exit_slack + 30

    def _wait(self) -> None:
        while True:
            try:
                code = self.proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if time.time() > self.hard_deadline() and not self.life.forced:
                    self.life.forced = True
                    self.proc.kill()
        self.life.exited, self.life.code = time.time(), code
        try:
            self._after_exit()
        finally:
            self.done.set()

    def _after_exit(self) -> None:
        life = self.life
        eof_by = max(life.exited + DESCENDANT_GRACE,
                     life.sigterm + life.grace + self.exit_slack if life.sigterm is not None else 0.0)
        self._eof.wait(max(0.0, eof_by - time.time()))
        time.sleep(max(0.0, life.exited + DESCENDANT_GRACE - time.time()))
        life.left = tagged(self.tag)
        ended = time.time()
        for pid in kill_pids(life.left):
            if pid in life.workers and life.workers[pid].gone_at is None:
                life.workers[pid].gone_at = ended
        self._eof.wait(5.0)
        self.watch(time.time())

    def watch(self, now: float) -> None:
        """Note new worker processes while the runner lives, and the moment each known one is first seen gone."""
        if self.life.exited is None and alive(self.life.pid, self.starttime):
            for pid in children(self.life.pid):
                stat = proc_stat(pid)
                if pid not in self.life.workers and stat and stat[0] != "Z":
                    self.life.workers[pid] = Worker(pid, now)
                    self.worker_starts[pid] = stat[1]
        for worker in list(self.life.workers.values()):       # (the injector reads it from its own thread)
            if worker.gone_at is None and not alive(worker.pid, self.worker_starts.get(worker.pid)):
                worker.gone_at = now

    def live_workers(self) -> list[int]:
        # a copy: the watcher thread adds workers while the injector's thread reads them
        return [w.pid for w in list(self.life.workers.values()) if w.gone_at is None and alive(w.pid)]

    def signal(self, sig: int) -> float | None:
        """Send sig if the runner is alive (not a zombie); returns when, or None if it hit nothing."""
        if self.life.exited is not None or not alive(self.life.pid, self.starttime):
            return None
        try:
            os.kill(self.life.pid, sig)
        except ProcessLookupError:
            return None
        return time.time()


# -- keeping runners going --------------------------------------------------------------------------------------
class Keeper(threading.Thread):
    """Keeps `slots` runners going, as cron would: a slot whose runner ended, was SIGTERMed or killed gets a new
    one at once. Watches every runner's workers until its `done`."""

    def __init__(self, spawn: Callable[[str], Runner], slots: int = 2):
        super().__init__(daemon=True, name="keeper")
        self.spawn, self.halt, self.lock = spawn, threading.Event(), threading.Lock()
        self.slots: list[Runner | None] = [None] * slots
        self.runners: list[Runner] = []
        self.spawn_errors: list[str] = []

    def run(self) -> None:
        while not self.halt.is_set():
            with self.lock:
                self._refill()
            now = time.time()
            for runner in list(self.runners):
                if not runner.done.is_set():
                    runner.watch(now)
            self.halt.wait(WATCH_EVERY)

    def _refill(self) -> None:
        for i, runner in enumerate(self.slots):
            if runner is None or not runner.running:
                try:
                    self.slots[i] = self.spawn(f"r{len(self.runners) + 1}")
                except OSError as exc:     # out of processes or memory: try again next round, counted
                    self.spawn_errors.append(str(exc)[:200])
                    self.slots[i] = None
                    continue
                self.runners.append(self.slots[i])

    def pick(self) -> Runner | None:
        """A random runner that is running now (started at least half a second ago: past its imports)."""
        with self.lock:
            live = [r for r in self.slots if r is not None and r.running and time.time() - r.life.started > 0.5]
        return random.choice(live) if live else None

    def sigterm(self, runner: Runner) -> float | None:
        with self.lock:
            at = runner.signal(signal.SIGTERM)
            if at is not None:
                runner.life.sigterm = at
            return at

    def kill9(self, runner: Runner) -> float | None:
        with self.lock:
            at = runner.signal(signal.SIGKILL)
            if at is not None:
                runner.life.killed = at
            return at

    def stopping(self) -> list[Runner]:
        """Runners told to stop (SIGTERM) that have not ended yet."""
        return [r for r in self.runners if r.life.sigterm is not None and not r.done.is_set()]

    def stop(self, timeout: float) -> None:
        """No more restarts; SIGTERM every runner still going (as a deploy would); wait for all of them to be done
        (each one's own hard deadline SIGKILLs it if it does not end)."""
        self.halt.set()
        self.join(timeout=5)
        with self.lock:
            for runner in self.runners:
                if runner.life.exited is None and runner.life.sigterm is None and runner.life.killed is None:
                    at = runner.signal(signal.SIGTERM)
                    runner.life.sigterm = at if at is not None else runner.life.sigterm
        deadline = time.time() + timeout
        for runner in self.runners:
            runner.done.wait(max(0.0, deadline - time.time()))
            if not runner.done.is_set() and runner.life.exited is None:
                runner.life.forced = True
                runner.proc.kill()
                runner.done.wait(10)
        now = time.time()
        for runner in self.runners:
            runner.watch(now)


# -- compensate every "cron minute" -----------------------------------------------------------------------------
class Compensator(threading.Thread):
    """bin/compensate.py every `every` seconds, each run bounded (killed by pid after `limit` seconds)."""

    def __init__(self, argv: list[str], env: dict, cwd: str, every: float, limit: float = 60.0):
        super().__init__(daemon=True, name="compensator")
        self.argv, self.env, self.cwd, self.every, self.limit = argv, env, cwd, every, limit
        self.halt = threading.Event()
        self.ok, self.failures = 0, []

    def run(self) -> None:
        while not self.halt.wait(self.every):
            self.once()

    def once(self) -> None:
        try:
            done = subprocess.run(self.argv, env=self.env, cwd=self.cwd, capture_output=True, text=True,
                                  timeout=self.limit, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.failures.append(f"ran past {self.limit:g} s (killed)")
            return
        if done.returncode == 0:
            self.ok += 1
        else:
            self.failures.append(f"exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1][:200]}")

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=self.limit + 5)


# -- load beside it ---------------------------------------------------------------------------------------------
def cpu_loops(count: int, env: dict) -> list[subprocess.Popen]:
    """Busy CPU loops beside the system (a loaded machine). Started from the main thread, they get SIGKILL from
    the kernel if the harness dies without its finally blocks (prctl PR_SET_PDEATHSIG): they never run on."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], env=env, stdin=subprocess.DEVNULL,
                             preexec_fn=_die_with_parent) for _ in range(count)]


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def end(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
