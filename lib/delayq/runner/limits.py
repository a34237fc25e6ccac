"""The supervisor's watch over time (a part of Supervisor): a job past its time limit, counted on its own running
time; a worker whose interpreter one thread holds (its ticker late: the time goes to the thread burning CPU, not to
its batch-mates); the outcomes such a worker cannot commit, written for it; a worker stuck as a whole, ended."""

from __future__ import annotations

import logging
import os
import time

from .. import recovery
from . import postmortem
from .children import Child
from .ledger import DRAIN, ENDED, TICK

log = logging.getLogger("delayq.runner")
STALL = 0.25                # a worker whose ticker is this late has one thread holding its interpreter
RESCUE = 1.0                # ... this late: the outcomes its ended jobs wait with are written by the supervisor
MAX_DRAINING = 2            # workers finishing their jobs after a time limit, per worker wanted; older ones end
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Limits:
    children: dict[int, Child]
    processes: int

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


def _thread_cpu(pid: int, tid: int) -> float | None:
    """CPU seconds (user + system) a thread of another process used so far; None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, IndexError, ValueError):
        return None
