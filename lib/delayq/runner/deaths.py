"""The supervisor's dead (a part of Supervisor): every child that ends, however it ends, is reaped, its process
group killed, and what it held judged from its ledger (postmortem.py) and written through the one recovery path
(recovery.settle); before the runner exits, no process it or its jobs started is left (it is their subreaper)."""

from __future__ import annotations

import logging
import os
import signal
import time

from .. import recovery
from ..errors import DelayqError
from . import postmortem
from .children import Child
from .ledger import RUNNING

log = logging.getLogger("delayq.runner")
PR_SET_CHILD_SUBREAPER = 36


class Deaths:
    children: dict[int, Child]

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
                recovery.requeue_claims(self.manager.store, self.manager.index, holder)
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
