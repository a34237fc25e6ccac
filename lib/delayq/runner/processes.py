"""Running jobs in worker processes: a job that ends its process takes only its worker down.

Each worker is forked from the supervisor and runs `concurrency` threads. Jobs reach it in
batches. Shared memory tells the supervisor, even after the worker died, which of the jobs
sent it has taken (a byte per place in the order sent: taken, or succeeded with its start and
end times beside it) and the id and start time of the job each thread runs. Results go back
the moment a job ends: a sender thread sends whatever has ended since its last send in one
message (one write for many no-op jobs, at once for a slow one). A success is written to
shared memory before the thread moves on; any other result is waited for until it is sent,
so a job's thread takes its next job only once its last outcome is safe. So when a worker
dies, each of its jobs without a result is known to have succeeded (marked so), to be running
(in the table), to have ended otherwise with its result unsent (taken, not in the table), or
never started (not taken).

- A worker that dies (os._exit, a segfault, the OOM killer): its jobs not yet started go to
  another worker; a job that ended but whose result was not sent yet is interrupted (an
  ordinary job runs again at once; an at-most-once one fails as "outcome unknown"); the ones
  running are suspects. One suspect is the culprit; several are re-run
  one at a time in a quarantine worker, where a death names its culprit. A culprit's crash is
  counted (three: a poison pill, failed and alerted).
- A job past its time limit is reported as timed out, its worker stops taking work ("draining"),
  a fresh worker takes its place, and the draining worker is killed once nothing but abandoned
  jobs is left in it. At most one worker drains at a time: no process piles up.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import queue
import signal
import sys
import threading
import time
from multiprocessing import Pipe
from typing import Callable

from .. import logs
from ..jobs import Job
from .decide import CRASHED, INTERRUPTED, TIMEOUT
from .execute import OK, Result, run_job

log = logging.getLogger(__name__)
STOP_REPLY_WAIT = 5.0       # seconds a worker has to say which jobs it never started
RING = 1 << 16              # taken marks, one per place in the order sent, reused in turn (far more than a
                            # worker ever holds: the supervisor claims MAX_AHEAD jobs beyond its slots at most)
TAKEN, SUCCEEDED = 1, 2     # a place's mark (0: not taken); SUCCEEDED has [started, finished] in `times`


class Worker:
    """One forked worker process, as the supervisor sees it."""

    def __init__(self, manager, concurrency: int, events: queue.SimpleQueue, quarantine: bool = False):
        self.concurrency = concurrency
        self.quarantine = quarantine
        self.assigned: dict[int, Job] = {}       # sent to it, no result yet
        self.order: dict[int, int] = {}          # job id -> its place in the order sent (assigned jobs)
        self.sent = 0                            # jobs sent to it so far
        self.abandoned: set[int] = set()         # timed out: its late result is dropped
        self.draining = False
        self.unstarted: list[int] | None = None  # its answer to "stop"
        self.spawned = time.monotonic()
        table = 16 * concurrency
        self._memory = mmap.mmap(-1, table + 16 * RING + RING)   # shared with the child: MAP_SHARED
        self.slots = memoryview(self._memory)[:table].cast("d")   # [job id, started] per thread
        self.times = memoryview(self._memory)[table:table + 16 * RING].cast("d")   # [started, finished] per place
        self.taken = memoryview(self._memory)[table + 16 * RING:]   # the mark of the job sent at place p % RING
        mine, theirs = Pipe(duplex=True)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                                             # the worker: never returns
            mine.close()
            _child(manager, theirs, self.taken, self.times, self.slots, concurrency)
        theirs.close()
        self.pid, self.conn = pid, mine
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, args=(events,), name=f"delayq-reader-{pid}", daemon=True).start()

    def give(self, jobs: list[Job]) -> None:
        """Send jobs to run, in this order (the worker takes them in it)."""
        for job in jobs:
            self.assigned[job.id] = job
            self.order[job.id] = self.sent
            self.taken[self.sent % RING] = 0
            self.sent += 1
        self.send(("run", jobs))

    def ended(self, job_id: int) -> Job | None:
        """Its result came (or it was given up on): no longer assigned here."""
        self.order.pop(job_id, None)
        return self.assigned.pop(job_id, None)

    def marks(self) -> dict[int, int]:
        """Each assigned job's mark: 0 not taken, TAKEN (running, or ended otherwise), SUCCEEDED (result unsent)."""
        return {job_id: self.taken[place % RING] for job_id, place in self.order.items() if job_id in self.assigned}

    def success(self, job_id: int) -> Result:
        """The success of an assigned job marked SUCCEEDED, read back from shared memory."""
        place = self.order[job_id] % RING
        return Result(job_id, OK, self.times[2 * place], self.times[2 * place + 1])

    def send(self, message: tuple) -> None:
        try:
            with self._send_lock:
                self.conn.send(message)
        except OSError:
            pass                                  # it died: its reader reports the end

    def running(self) -> list[int]:
        """Ids of the jobs its threads run now (read from the shared table)."""
        return [int(self.slots[2 * i]) for i in range(self.concurrency) if self.slots[2 * i]]

    def started_at(self, job_id: int) -> float | None:
        for i in range(self.concurrency):
            if int(self.slots[2 * i]) == job_id:
                return self.slots[2 * i + 1]
        return None

    def kill(self) -> int:
        """SIGKILL and reap; returns the wait status."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.reap()

    def reap(self) -> int:
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return 0

    def _read(self, events: queue.SimpleQueue) -> None:
        try:
            while True:
                events.put((self, self.conn.recv()))
        except (EOFError, OSError):
            events.put((self, ("eof",)))


class ProcessExecutor:
    def __init__(self, manager, processes: int, concurrency: int, timeout_of: Callable[[Job], float]):
        self.manager = manager
        self.processes = processes
        self.concurrency = concurrency
        self.timeout_of = timeout_of
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.results: list[Result] = []
        # The workers inherit a clock reading (and the TLS context): their threads need no connection of their
        # own at the first jobs. A server that does not answer ends the runner here, as its first claim would.
        manager.clock.now()
        self.workers = [Worker(manager, concurrency, self.events) for _ in range(processes)]
        self.suspects: list[Job] = []               # to re-run one at a time in quarantine
        self.deaths: list[float] = []
        self.stopping = False                       # stop(): unstarted jobs are handed back, not resubmitted

    # -- the supervisor's view ------------------------------------------------
    @property
    def capacity(self) -> int:
        return self.processes * self.concurrency

    def active(self) -> list[Worker]:
        return [w for w in self.workers if not w.draining and not w.quarantine]

    def in_flight(self) -> int:
        return sum(len(w.assigned) for w in self.workers) + len(self.suspects)

    def submit(self, jobs: list[Job]) -> None:
        """Hand jobs to the least loaded active workers."""
        active = self.active()
        batches: dict[Worker, list[Job]] = {}
        for job in jobs:
            worker = min(active, key=lambda w: len(w.assigned) + len(batches.get(w, ())))
            batches.setdefault(worker, []).append(job)
        for worker, batch in batches.items():
            worker.give(batch)

    def running(self) -> list[tuple[Job, float]]:
        found = []
        for w in self.workers:
            for job_id in w.running():
                job = w.assigned.get(job_id)
                started = w.started_at(job_id)
                if job is not None and started is not None:
                    found.append((job, started))
        return found

    def poll(self, timeout: float) -> list[Result]:
        """Wait up to `timeout` for events; returns the results they brought (and those made here)."""
        try:
            item = self.events.get(timeout=max(0.0, timeout))
            while True:
                if item is not None:
                    self._event(*item)
                item = self.events.get_nowait()
        except queue.Empty:
            pass
        self.check()
        out, self.results = self.results, []
        return out

    def wake(self) -> None:
        self.events.put(None)

    # -- time limits -----------------------------------------------------------
    def check(self) -> None:
        now = self.manager.clock.now()
        for worker in list(self.workers):
            for job_id in worker.running():
                job, started = worker.assigned.get(job_id), worker.started_at(job_id)
                if job is None or started is None or now - started <= self.timeout_of(job):
                    continue
                worker.ended(job_id)
                worker.abandoned.add(job_id)
                self.results.append(Result(job_id, TIMEOUT, started, now,
                                           error=f"timed out after {self.timeout_of(job):g}s"))
                self._drain(worker, "a job in it ran past its time limit")
        for worker in list(self.workers):
            if worker.draining and not worker.assigned and worker.unstarted is not None:
                worker.kill()                    # nothing left in it but abandoned jobs (or nothing at all)
                self.workers.remove(worker)
        self._feed_quarantine()

    def _drain(self, worker: Worker, why: str) -> None:
        """Stop giving the worker jobs; a fresh one takes its place; at most one worker drains."""
        if worker.draining:
            return
        older = [w for w in self.workers if w.draining and not w.quarantine]
        for old in older:                        # cap: the older draining worker goes now
            log.warning("stopping worker %d early: %s (at most one worker drains)", old.pid, why)
            self._lost(old, old.kill(), INTERRUPTED, "stopped: its worker was replaced after a time limit")
            self.workers.remove(old)
        worker.draining = True
        worker.send(("stop",))
        if not worker.quarantine:
            self.workers.append(Worker(self.manager, self.concurrency, self.events))

    # -- events from workers ------------------------------------------------------
    def _event(self, worker: Worker, message: tuple) -> None:
        kind = message[0]
        if kind == "done":
            for fields in message[1]:
                if worker.ended(fields[0]) is not None:
                    self.results.append(Result(*fields))
                worker.abandoned.discard(fields[0])
        elif kind == "unstarted":
            worker.unstarted = list(message[1])
            if not self.stopping:                # a worker draining after a time limit: its queue moves on
                self._resubmit([worker.ended(i) for i in message[1] if i in worker.assigned], worker)
        elif kind == "eof" and worker in self.workers:
            self.workers.remove(worker)
            status = worker.reap()
            if worker.assigned or not worker.draining:
                self._died(worker, status)

    def _died(self, worker: Worker, status: int) -> None:
        """A worker ended without being told to: find what was running in it, and what only waited."""
        why = _describe(status)
        marks = worker.marks()
        succeeded = [job_id for job_id, mark in marks.items() if mark == SUCCEEDED]
        self.results.extend(worker.success(job_id) for job_id in succeeded)
        running = (set(worker.running()) & set(worker.assigned)) - set(succeeded)
        waiting = [job for job_id, job in worker.assigned.items() if not marks.get(job_id)]
        unsent = [job for job_id, job in worker.assigned.items() if marks.get(job_id) == TAKEN and job_id not in running]
        suspects = [worker.assigned[job_id] for job_id in running]
        worker.assigned, worker.order = {}, {}
        log.warning("worker %d %s with %d job(s) running", worker.pid, why, len(suspects))
        if len(suspects) == 1:                   # alone (or in quarantine): the culprit
            self._report(suspects, CRASHED, f"its worker process {why} while running it", worker)
        else:
            self.suspects.extend(suspects)
        self._report(unsent, INTERRUPTED, f"its worker process {why} after it ended, before its outcome was sent",
                     worker)
        self._resubmit(waiting, worker)
        if not worker.quarantine and not worker.draining and not self.stopping:
            self._respawn()

    def _respawn(self) -> None:
        now = time.monotonic()
        self.deaths = [t for t in self.deaths if now - t < 10] + [now]
        if len(self.deaths) > 3:                 # dying at start-up? don't fork in a tight loop
            time.sleep(min(5.0, 0.2 * 2 ** (len(self.deaths) - 3)))
        self.workers.append(Worker(self.manager, self.concurrency, self.events))

    def _resubmit(self, jobs: list[Job], source: Worker) -> None:
        if jobs:
            if source.quarantine or self.stopping or not self.active():
                self.suspects[:0] = jobs
            else:
                self.submit(jobs)

    def _feed_quarantine(self) -> None:
        """Suspects run one at a time, alone in a worker of their own: a death there names its culprit."""
        if self.stopping:
            return
        box = next((w for w in self.workers if w.quarantine), None)
        if box is None and self.suspects:
            box = Worker(self.manager, 1, self.events, quarantine=True)
            self.workers.append(box)
        if box is None or box.draining or box.assigned:
            return
        if self.suspects:
            box.give([self.suspects.pop(0)])
        else:
            box.draining = True
            box.send(("stop",))

    def _lost(self, worker: Worker, status: int, kind: str, error: str) -> None:
        self._report(list(worker.assigned.values()), kind, error, worker)
        worker.assigned, worker.order = {}, {}

    def _report(self, jobs: list[Job], kind: str, error: str, worker: Worker) -> None:
        now = self.manager.clock.now()
        for job in jobs:
            self.results.append(Result(job.id, kind, worker.started_at(job.id) or now, now, error=error))

    # -- stopping ------------------------------------------------------------------
    def stop(self) -> list[Job]:
        """Stop starting jobs: every worker returns the jobs it has not started (handed back)."""
        self.stopping = True
        self.suspects, handed = [], list(self.suspects)
        for worker in self.workers:
            if worker.unstarted is None:
                worker.draining = True
                worker.send(("stop",))
        deadline = time.monotonic() + STOP_REPLY_WAIT
        came: list[Result] = []          # results that come meanwhile, kept for the supervisor's next poll
        while any(w.unstarted is None for w in self.workers) and time.monotonic() < deadline:
            came += self.poll(0.05)      # (poll swaps self.results: never extend it with poll's answer)
        self.results[:0] = came
        for worker in self.workers:
            handed.extend(worker.ended(i) for i in (worker.unstarted or []) if i in worker.assigned)
        return handed

    def kill(self) -> list[Job]:
        """The grace period is over: kill every worker; the jobs cut short, for the supervisor to record."""
        cut = []
        for worker in self.workers:
            worker.kill()
            cut.extend(worker.assigned.values())
        self.workers = []
        return cut

    def close(self) -> None:
        for worker in self.workers:
            worker.kill()
        self.workers = []


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    return f"exited with code {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status}"


# -- inside the worker ------------------------------------------------------------------
def _child(manager, conn, taken, times, slots, concurrency: int) -> None:
    """The worker's main thread: take jobs from the pipe; `concurrency` threads run them, one thread sends results."""
    code = 1
    try:
        _die_with_parent()
        signal.signal(signal.SIGINT, signal.SIG_IGN)      # the supervisor decides when workers stop
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        todo: queue.SimpleQueue = queue.SimpleQueue()
        outbox = _Outbox()
        send_lock = threading.Lock()
        threads = [threading.Thread(target=_thread, args=(manager, todo, outbox, taken, times, slots, i),
                                    daemon=True) for i in range(concurrency)]
        for thread in threads:
            thread.start()
        sender = threading.Thread(target=_send_results, args=(conn, send_lock, outbox), daemon=True)
        sender.start()
        _serve(conn, todo, threads, send_lock)
        outbox.close()
        sender.join()
        code = 0
    finally:
        logs.flush()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:    # a closed stream must not keep the worker alive
                pass
        os._exit(code)


def _serve(conn, todo: queue.SimpleQueue, threads: list[threading.Thread], send_lock: threading.Lock) -> None:
    received = 0                                          # jobs received so far: the next one's place
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(1)                                   # the supervisor is gone: stop at once
        if message[0] == "run":
            for job in message[1]:
                todo.put((received % RING, job))
                received += 1
        elif message[0] == "stop":
            unstarted = []
            while True:
                try:
                    job = todo.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    unstarted.append(job[1].id)
            with send_lock:
                conn.send(("unstarted", unstarted))
            for _ in threads:
                todo.put(None)
            for thread in threads:
                thread.join()
            return


class _Outbox:
    """Results waiting for the sender thread, which sends all that came meanwhile in one message. A job thread
    whose result is not a success waits until it is sent before it takes the next job (a success is marked in
    shared memory instead): a job that kills the process later (os._exit, a segfault) then loses no outcome."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.items: list = []
        self.queued = 0          # results put so far
        self.sent = 0            # results sent so far
        self.closed = False

    def put(self, fields: tuple) -> int:
        with self.cond:
            self.items.append(fields)
            self.queued += 1
            self.cond.notify_all()
            return self.queued

    def wait_sent(self, ticket: int) -> None:
        with self.cond:
            while self.sent < ticket and not self.closed:
                self.cond.wait()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def _thread(manager, todo: queue.SimpleQueue, outbox: _Outbox, taken, times, slots, i: int) -> None:
    while True:
        item = todo.get()
        if item is None:
            return
        place, job = item
        slots[2 * i + 1] = manager.clock.now()
        slots[2 * i] = float(job.id)
        taken[place] = TAKEN      # in the table, then marked as taken: both before it starts
        result = run_job(manager, job)
        if result.kind == OK:     # marked as succeeded before anything else: a death from here on loses nothing
            times[2 * place], times[2 * place + 1] = result.started, result.finished
            taken[place] = SUCCEEDED
        ticket = outbox.put((result.job_id, result.kind, result.started, result.finished, result.error,
                             result.snooze))
        slots[2 * i] = 0.0        # ended: out of the table, its mark kept until its result is sent
        if result.kind != OK:
            outbox.wait_sent(ticket)


def _send_results(conn, send_lock: threading.Lock, outbox: _Outbox) -> None:
    """Send what has ended, as it ends: whatever came while the last send was under way goes in one message."""
    while True:
        with outbox.cond:
            while not outbox.items and not outbox.closed:
                outbox.cond.wait()
            done, outbox.items = outbox.items, []
            last = outbox.closed
        if done:
            with send_lock:
                conn.send(("done", done))
            with outbox.cond:
                outbox.sent += len(done)
                outbox.cond.notify_all()
        if last and not done:
            return


def _die_with_parent() -> None:
    """Linux: the kernel kills the worker if the supervisor dies, even by SIGKILL (no orphan runs jobs)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        os._exit(1)

