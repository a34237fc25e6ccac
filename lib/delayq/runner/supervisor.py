"""The supervisor: starts worker processes, watches them, stops jobs past their time limit, and recovers the dead.

It runs no job and claims nothing. From its one thread it forks workers (worker.py, each in a
process of its own and a process group of its own) and solos (one job alone: at-most-once jobs,
and suspects of a crash), reads their ledgers (ledger.py), and acts:

  - a child that ended (waitpid, however it ended): its process group is killed (a job's forked
    child goes with it), its jobs are recovered at once through the one recovery path
    (postmortem.py decides, recovery.settle writes), and a worker is replaced;
  - a job past its time limit (its own running time: time when one thread held its worker's
    interpreter is not counted against the others): its worker stops taking jobs, a new worker
    takes its place, the jobs beside it finish, then the process is ended and the job recorded as
    timed out. A solo is ended at once;
  - SIGTERM: workers stop claiming and hand back what never started; running jobs have the grace
    period, then their processes are ended and the jobs recorded as interrupted. It always ends:
    every process it or its jobs started is gone before it exits (it is their subreaper);
  - a worker whose backend stopped answering: the runner stops at once and exits 1 with its one line.

It also beats the runner's heartbeat row. Every wait is bounded: a loop turn sleeps at most
LOOP seconds; each database call is bounded by DELAYQ_DB_TIMEOUT.
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

from .. import recovery
from ..errors import BackendError, DelayqError
from ..jobs import ISOLATED, Job, new_holder
from . import child, orphans, postmortem
from .ledger import DRAIN, ENDED, FINISH, RUN, RUNNING, STOP, TICK, Ledger
from .summary import Summary
from .worker import Worker, ledger_for

log = logging.getLogger("delayq.runner")
LOOP = 0.05                 # seconds between the supervisor's looks at its children (at most)
STALL = 0.25                # a worker whose ticker is this late has one thread holding its interpreter
RESCUE = 1.0                # ... this late: the outcomes its ended jobs wait with are written by the supervisor
MAX_DRAINING = 2            # workers finishing their jobs after a time limit, per worker wanted; older ones end
PR_SET_CHILD_SUBREAPER = 36
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class Child:
    """One forked process as the supervisor sees it."""

    pid: int
    solo: bool
    ledger: Ledger
    holder: str                                   # every claim token of its begins with this
    fault_file: str
    spawned: float
    draining: float | None = None                 # when it was told to drain (a time limit in it)
    killed: str | None = None                     # why the supervisor ended it, if it did
    timed_out: dict[int, float] = field(default_factory=dict)    # job id -> its limit: abandoned here
    credit: dict[tuple[int, int], float] = field(default_factory=dict)   # (slot, job) -> seconds not counted
    cpu: dict[int, float] = field(default_factory=dict)          # thread id -> CPU seconds, last read
    checked: float = 0.0                                          # when its ledger was last looked at
    rescued: float = 0.0                                          # when its ended jobs were last written for it


class Supervisor:
    def __init__(self, manager, reopen: Callable[[], object], queues: list[str], batch: int = 200, *,
                 processes: int = 1, concurrency: int = 16, timeout: float = 30.0, grace: float = 20.0,
                 pipeline: bool = True, queue_limits: dict[str, int] | None = None,
                 should_stop: Callable[[], bool] = lambda: False, beat: Callable[[], None] | None = None):
        self.manager = manager
        self.reopen = reopen                       # a fresh Manager, made in each child after the fork
        self.queues = queues
        self.batch = batch
        self.processes = processes
        self.concurrency = concurrency
        self.timeout = timeout
        self.grace = grace
        self.pipeline = pipeline
        self.limits = queue_limits or {}
        self.should_stop = should_stop
        self.beat = beat
        self.children: dict[int, Child] = {}
        self.solo_queue: list[tuple[int, str]] = []        # (job id, holder) handed off, not started yet
        self.summary = Summary()
        self.failure: str | None = None
        self._dir = tempfile.mkdtemp(prefix="delayq-runner-")
        self._ledgers: str | None = orphans.directory(manager.store)   # the workers' ledgers: files the next runner reads
        if not orphans.ours(self._ledgers):
            log.warning("%s is not this user's own folder: the workers' ledgers stay in memory (a runner that dies "
                        "whole leaves its jobs to their leases)", self._ledgers)
            self._ledgers = None
        self._handoff_r, self._handoff_w = os.pipe()
        os.set_blocking(self._handoff_r, False)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._buffer = b""
        self._deaths: list[float] = []
        self._oom = _oom_kills()
        self._spawned = 0
        self._kept_at = time.monotonic()
        self._stop_at: float | None = None
        _subreaper()

    # -- the runner's interface ---------------------------------------------------------
    def running_now(self) -> list[tuple[int, float]]:
        now, mono = self.manager.clock.now(), time.monotonic()
        return [(k.job_id, now - (mono - k.started)) for c in self.children.values() for k in c.ledger.running()]

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def run_for(self, seconds: float, interval: float = 1.0, one_pass: bool = False) -> Summary:
        """Keep `processes` workers claiming for `seconds` (one_pass: until nothing more is due), then end them."""
        self._plan = (seconds, interval, one_pass)
        end = time.monotonic() + seconds
        try:
            if self._ledgers is not None:         # a runner that died whole left these
                self.summary.count_recovered(orphans.recover(self.manager, self._ledgers))
            for _ in range(self.processes):
                self._spawn_worker()
            while self.children or self.solo_queue or self._window_open(end, one_pass):
                self._turn(time.monotonic() >= end and not one_pass, one_pass)
        except BaseException as exc:
            if isinstance(exc, DelayqError):
                self.failure = self.failure or str(exc)   # no recovery now: it would wait on the same backend
            self._end_all(postmortem.STOPPED)
            raise
        finally:
            self._sweep()
        if self.failure:
            raise BackendError(self.failure)
        return self.summary

    def _window_open(self, end: float, one_pass: bool) -> bool:
        """No child left, yet the runner goes on: its --for window is not over, nothing stops it, and a worker held
        back after deaths in a row (_replace) is still to come."""
        return not one_pass and time.monotonic() < end and self._stop_at is None and self.failure is None

    def close(self) -> None:
        for fd in (self._handoff_r, self._handoff_w, self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._dir, ignore_errors=True)
        if self._ledgers is not None:
            orphans.tidy(self._ledgers)

    # -- one turn of the loop ---------------------------------------------------------------
    def _turn(self, window_over: bool, one_pass: bool) -> None:
        """One look at the children; `window_over`: --for has run out (a one-pass worker ends on its own)."""
        self._wait(LOOP)
        self._reap()
        self._read_handoffs()
        if self.failure is not None:               # a backend stopped answering: end everything now, exit 1
            for c in list(self.children.values()):
                if not c.killed:
                    self._kill(c, postmortem.STOPPED)
            self.solo_queue = []
            return
        stopping = self.should_stop()
        if stopping and self._stop_at is None:
            self._stop_at = time.monotonic() + self.grace
            self._order(STOP)
        if window_over and not stopping:
            self._order(FINISH)
        self._limits()
        self._start_solos(stopping)
        if stopping:
            self._grace_over()
        elif not window_over and not one_pass:
            self._replace()
        self._keep_leases()
        if self.beat is not None:
            self.beat()

    def _keep_leases(self) -> None:
        """Every third of a lease: the leases of everything the live children hold move on, in one statement. Done
        here, not in the workers: a job holding its worker's interpreter (a C call, a hog) must not let its
        batch-mates' leases run out; a child that hangs as a whole is ended by the time limits, not by its leases."""
        now = time.monotonic()
        if now < self._kept_at + min(30.0, self.manager.lease / 3):
            return
        self._kept_at = now
        self.manager.keep_claims([c.holder for c in self.children.values() if not c.killed]
                                 + [holder for _, holder in self.solo_queue])

    def _wait(self, seconds: float) -> None:
        try:
            ready, _, _ = select.select([self._wake_r, self._handoff_r], [], [], seconds)
        except InterruptedError:
            return
        if self._wake_r in ready:
            try:
                os.read(self._wake_r, 4096)
            except OSError:
                pass

    def _order(self, order: int) -> None:
        for c in self.children.values():
            if c.ledger.order < order or (order == STOP and c.ledger.order == DRAIN):
                c.ledger.order = order

    # -- starting children ------------------------------------------------------------------
    def _spawn_worker(self) -> None:
        holder = new_holder(ISOLATED)
        ledger = orphans.create(self._ledgers, holder, lambda path: ledger_for(self.concurrency, path))
        seconds, interval, one_pass = self._plan
        share = max(1, self.batch // self.processes)
        nth = self._spawned % self.processes           # a queue's cap is shared out: the workers never exceed it
        self._spawned += 1
        limits = {q: n // self.processes + (nth < n % self.processes) for q, n in self.limits.items()}

        def main() -> None:
            manager = self.reopen()
            worker = Worker(manager, self.queues, share, concurrency=self.concurrency, pipeline=self.pipeline,
                            timeout=self.timeout, grace=self.grace, queue_limits=limits, ledger=ledger, holder=holder,
                            hand_off=self._hand_off_from(manager), supervised=True,
                            should_stop=lambda: ledger.order != RUN, orphaned=child.orphaned)
            child.on_wake(worker.wake)
            try:
                summary = worker.run_for(seconds, interval, one_pass)
            finally:
                worker.close()
            ledger.publish(summary)
        self._fork(ledger, holder, main, solo=False)

    def _hand_off_from(self, manager):
        """In a worker: pass a job that must run alone to the supervisor (a holder of its own, then a line on the
        hand-off pipe: one write, atomic)."""
        fd = self._handoff_w

        def hand_off(job: Job) -> bool:
            holder = new_holder(ISOLATED)
            if manager.hand_off(job, holder) is None:
                return False
            try:
                os.write(fd, f"{job.id} {holder}\n".encode())
            except OSError:
                pass          # the supervisor is gone: compensate hands the job back when its lease runs out
            return True
        return hand_off

    def _spawn_solo(self, job_id: int, holder: str) -> None:
        ledger = orphans.create(self._ledgers, holder, lambda path: Ledger(4, 1, path))

        def main() -> None:
            manager = self.reopen()
            jobs = [job for job in manager.held(holder) if job.id == job_id]
            worker = Worker(manager, [], 1, concurrency=1, timeout=self.timeout, ledger=ledger, holder=holder,
                            supervised=True, should_stop=lambda: False, orphaned=child.orphaned)
            child.on_wake(worker.wake)
            try:
                summary = worker.run_jobs(jobs)
            finally:
                worker.close()
            ledger.publish(summary)
        self._fork(ledger, holder, main, solo=True)

    def _fork(self, ledger: Ledger, holder: str, main: Callable[[], None], solo: bool) -> None:
        fault_file = os.path.join(self._dir, f"{holder}.fault")
        supervisor = os.getpid()
        pid = os.fork()
        if pid == 0:                                   # the child: never returns
            os.close(self._handoff_r)
            os.close(self._wake_r)
            child.setup(ledger, supervisor, fault_file)
            child.run(main, ledger)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass                                       # it set its own, or it is gone already
        self.children[pid] = Child(pid, solo, ledger, holder, fault_file, time.monotonic())

    def _replace(self) -> None:
        """Keep `processes` workers that take jobs (a draining one does not count)."""
        taking = sum(1 for c in self.children.values() if not c.solo and c.draining is None)
        for _ in range(self.processes - taking):
            self._deaths = [t for t in self._deaths if time.monotonic() - t < 10]
            if len(self._deaths) > 3 and time.monotonic() - self._deaths[-1] < min(5.0, 0.2 * 2 ** len(self._deaths)):
                return                                 # dying at start-up? don't fork in a tight loop
            self._spawn_worker()

    def _read_handoffs(self) -> None:
        try:
            data = os.read(self._handoff_r, 65536)
        except BlockingIOError:
            return
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            job, holder = line.split()
            self.solo_queue.append((int(job), holder.decode()))

    def _start_solos(self, stopping: bool) -> None:
        if stopping:
            for job_id, holder in self.solo_queue:      # never started: back to pending at once
                self._settle(holder, lambda job: None, lambda job: False)
            self.solo_queue = []
            return
        while self.solo_queue and sum(c.solo for c in self.children.values()) < self.concurrency:
            self._spawn_solo(*self.solo_queue.pop(0))

    # -- watching -------------------------------------------------------------------------
    def _limits(self) -> None:
        now = time.monotonic()
        for c in list(self.children.values()):
            if c.killed:
                continue
            running = c.ledger.running()
            stalled = now - c.ledger.ticked > STALL and c.ledger.ticked > 0
            if stalled:
                self._credit(c, running, now)
                self._rescue(c, now)
            else:
                c.cpu.clear()
            c.checked = now
            for k in running:
                ran = now - k.started - c.credit.get((k.slot, k.job_id), 0.0)
                if ran > k.limit and k.job_id not in c.timed_out and c.ledger.abandon(k.slot, k.job_id):
                    c.timed_out[k.job_id] = k.limit
                    log.warning("job %d ran past its time limit (%gs): stopping it%s", k.job_id, k.limit,
                                "" if c.solo else " once the jobs beside it end")
                    if c.solo:
                        self._kill(c, postmortem.TIMED_OUT)
                    elif c.draining is None:
                        c.draining = now
                        c.ledger.order = max(c.ledger.order, DRAIN)
            if c.killed:
                continue
            live = [k for k in running if k.job_id not in c.timed_out]
            if c.timed_out and not live and c.ledger.held() <= len(c.timed_out):
                self._kill(c, postmortem.TIMED_OUT)       # nothing left in it but what timed out
            elif stalled and running and now - c.ledger.ticked > max(k.limit for k in running) + 5:
                self._kill(c, postmortem.HUNG)            # stuck as a whole (a C call holding the interpreter)
        draining = sorted((c.draining, c.pid) for c in self.children.values() if c.draining and not c.killed)
        for _, pid in draining[:max(0, len(draining) - MAX_DRAINING * self.processes)]:
            self._kill(self.children[pid], postmortem.TIMED_OUT)

    def _credit(self, c: Child, running, now: float) -> None:
        """One thread holds the worker's interpreter (its ticker is late): the time goes to the thread burning CPU
        meanwhile (a hog: only the holder can run Python), not to the jobs waiting for the interpreter; when no
        thread burns any (a C call holding it while it waits, a machine too busy to run it), to none of them. A
        worker stuck that way for longer than its jobs may run is ended as hung (_limits)."""
        since = max(c.checked, c.ledger.ticked + TICK)       # the stall began when the next tick did not come
        step = max(0.0, now - since)
        used = {k.tid: _thread_cpu(c.pid, k.tid) for k in running}
        grew = {tid: cpu - c.cpu[tid] for tid, cpu in used.items() if cpu is not None and tid in c.cpu}
        c.cpu.update({tid: cpu for tid, cpu in used.items() if cpu is not None})
        if not grew or not step:
            return                                           # the first look: nothing to compare yet
        holder = max(grew, key=grew.get)
        if grew[holder] < 1 / _CLK_TCK:
            holder = None
        for k in running:
            if k.tid != holder:
                key = (k.slot, k.job_id)
                c.credit[key] = c.credit.get(key, 0.0) + step

    def _rescue(self, c: Child, now: float) -> None:
        """A worker whose interpreter one of its jobs has held for RESCUE seconds (a C call, a memory hog) cannot
        commit the outcomes of the jobs that ended before: the supervisor writes them, so that they are durable
        even if the supervisor dies before the worker moves again (then nobody keeps the leases, and compensate
        would run those jobs again). One recovery path: recovery.settle on the ledger's word, skipping rows the
        worker is writing now; when the worker moves again, its own commit finds them written (not held) and
        adds no second attempt row. A failure's error text stays in the worker (the ledger holds its kind)."""
        if c.solo or self._stop_at is not None or now - c.ledger.ticked < RESCUE or now - c.rescued < RESCUE:
            return
        c.rescued = now
        ticked = c.ledger.ticked
        ended = {k.job_id: k for k in c.ledger.known().values() if k.state == ENDED and not k.abandoned}
        if not ended:
            return
        held = self.manager.held(c.holder)
        if c.ledger.ticked != ticked:
            return           # the worker moved meanwhile: it commits them itself (and may have claimed one again)
        # still the claim that ran it (a claim made again after the run ended began after it), still ended there
        jobs = [job for job in held if job.id in ended and job.started_at is not None
                and job.started_at <= ended[job.id].finished and c.ledger.read(ended[job.id].slot) == ended[job.id]]
        why = "written by the supervisor while a batch-mate held its worker's interpreter"
        done = recovery.settle(self.manager, jobs, lambda job: postmortem.ended(job, ended[job.id], why))
        if done:
            log.info("worker %d: %d ended job(s) written by the supervisor while a job held the worker's "
                     "interpreter", c.pid, len(done))
        self.summary.count_recovered(done)

    def _grace_over(self) -> None:
        if self._stop_at is not None and time.monotonic() >= self._stop_at:
            for c in list(self.children.values()):
                if not c.killed:
                    self._kill(c, postmortem.GRACE)

    def _kill(self, c: Child, why: str) -> None:
        c.killed = why
        _killpg(c.pid)

    def _end_all(self, why: str) -> None:
        """Something failed in the supervisor itself: end every child, recover what can be."""
        for c in list(self.children.values()):
            if not c.killed:
                self._kill(c, why)
        deadline = time.monotonic() + 5
        while self.children and time.monotonic() < deadline:
            self._reap(block=0.05)

    # -- the dead -----------------------------------------------------------------------------
    def _reap(self, block: float = 0.0) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                if block and self.children:
                    time.sleep(block)
                    block = 0.0
                    continue
                return
            c = self.children.pop(pid, None)
            _killpg(pid)                               # what its jobs started ends with it
            if c is not None:
                self._dead(c, status)

    def _dead(self, c: Child, status: int) -> None:
        oom = _oom_kills()
        death = postmortem.Death(status, solo=c.solo, killed=c.killed, culprit_slot=c.ledger.culprit(),
                                 fault_ident=postmortem.fault_ident(_read(c.fault_file)),
                                 oom=oom > self._oom, timed_out=dict(c.timed_out))
        self._oom = oom
        self.summary.add_counts(c.ledger.counters())
        fatal = c.ledger.fatal()
        failed = fatal is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == postmortem.EXIT_FATAL
        if failed:
            self.failure = self.failure or fatal      # the runner's one line; the other children are ended now
        elif fatal and self.failure is None and c.killed is None:   # (a runner already failing says it in one line)
            log.warning("worker %d: %s", c.pid, fatal)
        known = c.ledger.known()
        expected = c.killed is None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == postmortem.EXIT_OK
        if not expected:
            self._deaths.append(time.monotonic())
        if not expected and not failed and self.failure is None and c.killed != postmortem.GRACE:
            running = sum(1 for k in known.values() if k.state == RUNNING)
            log.warning("%s %d %s with %d job(s) running", "solo process" if c.solo else "worker", c.pid,
                        death.describe(), running)
        try:
            os.unlink(c.fault_file)
        except OSError:
            pass
        if self.failure is None:   # else a backend stopped answering: no recovery now (it would wait on it)
            judge, solo = postmortem.judge(death, known, self.manager.clock.now(), time.monotonic())
            self._settle(c.holder, judge, solo, claims=not expected)
        # closed only now (while its lock is held here, no other runner takes the file over); the file goes if all it
        # held is recovered, else it stays for the next runner on this host (orphans.py) beside the leases
        c.ledger.close(remove=self.failure is None)

    def _settle(self, holder: str, judge, solo, claims: bool = False) -> None:
        """Recover what a dead child held (claims: and what its last claims left in flight, its rows pending)."""
        try:
            jobs = self.manager.held(holder)
            done = recovery.settle(self.manager, jobs, judge, solo)
            if claims:
                self.manager.requeue_claims(holder)
        except DelayqError as exc:      # the runner fails with it (compensate recovers these once leases run out)
            self.failure = self.failure or str(exc)
            return
        self.summary.count_recovered(done)

    def _sweep(self) -> None:
        """Before exiting: no process it or its jobs started is left (it is their subreaper)."""
        for _ in range(50):
            orphans = _children_of(os.getpid())
            if not orphans:
                return
            for pid in orphans:
                _killpg(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            end = time.monotonic() + 1
            while time.monotonic() < end and _children_of(os.getpid()):
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                c = self.children.pop(pid, None)
                if c is not None:
                    self._dead(c, status)
                if pid == 0:
                    time.sleep(0.01)


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _subreaper() -> None:
    """Linux: processes orphaned below us (a job's forked child whose worker died) become our children."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    except (OSError, AttributeError):
        pass


def _children_of(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return found


def _thread_cpu(pid: int, tid: int) -> float | None:
    """CPU seconds (user + system) a thread of another process used so far; None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def _oom_kills() -> int:
    """How many processes the kernel's OOM killer has killed since boot (Linux 4.13+; 0 where unknown)."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""
