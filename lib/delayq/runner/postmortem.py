"""Post-mortem: what each job of a dead process comes to, from its ledger and how the process ended.

Pure: the supervisor gathers the facts (the wait status, why it killed the process if it did,
the slot an os._exit named, the thread a fatal signal's report named, whether the kernel's OOM
killer just killed something) and recovery.settle writes the verdicts. The rules:

  - a job that never started (or is not in the ledger: its claim's reply never arrived) is handed
    back, not counted; one that ended has the outcome it ended with (a success stays a success);
  - only the job that ended its process is blamed (CRASHED: counted, a poison pill at 3): the one
    os._exit named, the thread a fatal signal's report named, the job alone in its process when it
    died by itself, or alone when the OOM killer killed it;
  - the jobs running beside it are interrupted: not blamed, not failed, run again at once (an
    at-most-once job or a manual step that began cannot be: it fails as "outcome unknown");
  - when nobody can say which job ended the process (a SIGKILL from outside or from the OOM killer
    with several running), they are interrupted and run alone from now on (Job.solo), where a
    death can only be their own;
  - a job the supervisor gave up on (past its time limit) timed out; the jobs it killed the process
    under for another reason (the grace period after SIGTERM, a worker hung as a whole) were
    interrupted.
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass, field

from ..jobs import Job
from ..retries import CRASHED, INTERRUPTED, OK, SNOOZE, TIMEOUT, Result
from .ledger import ENDED, QUEUED, RUNNING, Known

FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT)
EXIT_OK, EXIT_FATAL, EXIT_BUG = 0, 3, 4          # a worker's own exit codes (fatal: a backend stopped answering)
_FAULT_THREAD = re.compile(r"Current thread 0x([0-9a-fA-F]+)")

# why the supervisor ended a process itself
TIMED_OUT = "timeout"        # a job in it ran past its time limit (and its batch-mates ended, or could not)
GRACE = "grace"              # SIGTERM's grace period ended
HUNG = "hung"                # the whole process stopped moving for longer than any of its jobs may run
STOPPED = "stopped"          # the runner is failing (a backend error): its workers are ended at once
ORPHANED = "orphaned"        # found dead with its supervisor, by the next runner (orphans.py)


@dataclass
class Death:
    """The facts of one process's end."""

    status: int                            # os.waitpid's status
    solo: bool = False                     # a process of one job
    killed: str | None = None              # why the supervisor killed it, if it did
    culprit_slot: int | None = None        # the slot os._exit named
    fault_ident: int | None = None         # the thread a fatal signal's report named
    oom: bool = False                      # the OOM killer killed something just now
    timed_out: dict[int, float] = field(default_factory=dict)   # job id -> its time limit, abandoned by us

    def describe(self) -> str:
        if self.killed == TIMED_OUT:
            return "was stopped after a job in it ran past its time limit"
        if self.killed == GRACE:
            return "was stopped: the runner stopped and its grace period ended"
        if self.killed == HUNG:
            return "was stopped: it had stopped moving (one thread held the interpreter) for longer than its jobs may run"
        if self.killed == STOPPED:
            return "was stopped: the runner failed"
        if self.killed == ORPHANED:
            return "died with its runner (recovered from its ledger by the next runner)"
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            return f"was killed by {name}" + (" (the kernel's OOM killer)" if self.oom and sig == signal.SIGKILL else "")
        return f"exited with code {os.WEXITSTATUS(self.status) if os.WIFEXITED(self.status) else self.status}"

    def by_itself(self) -> bool:
        """It ended by its own doing (a job's os._exit, a fatal signal, an exit code not its own), not by a kill
        from outside nor by its own loop's exit."""
        if self.killed is not None:
            return False
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            return sig in FATAL_SIGNALS or (sig == signal.SIGKILL and self.oom)
        return os.WIFEXITED(self.status) and os.WEXITSTATUS(self.status) not in (EXIT_OK, EXIT_FATAL, EXIT_BUG)


def fault_ident(report: str) -> int | None:
    """The thread ident a fatal-signal report (faulthandler's) names as the current thread."""
    found = _FAULT_THREAD.search(report or "")
    return int(found.group(1), 16) if found else None


def verdicts(death: Death, known: dict[int, Known]) -> tuple[int | None, bool]:
    """(the slot of the job blamed, whether the others running must run alone from now on)."""
    running = [k for k in known.values() if k.state == RUNNING and k.job_id not in death.timed_out]
    if death.culprit_slot is not None:
        return death.culprit_slot, False
    if death.fault_ident is not None:
        named = [k.slot for k in running if k.ident == death.fault_ident]
        if named:
            return named[0], False
    if not death.by_itself():
        external = death.killed is None and os.WIFSIGNALED(death.status)
        return None, external and len(running) > 1      # killed from outside with several: nobody can say who
    if len(running) == 1:
        return running[0].slot, False
    return None, len(running) > 1


def ended(job: Job, k: Known, why: str) -> Result:
    """The result of a job that ended (its ledger slot says how) and whose outcome its worker has not written: the
    error text of a failure stays in the worker (the ledger holds the kind, not the text)."""
    lost = None if k.kind in (OK, SNOOZE) else f"(its error was lost: {why})"
    return Result(job.id, k.kind or INTERRUPTED, k.started, k.finished, error=lost, snooze=k.snooze)


def judge(death: Death, known: dict[int, Known], now: float, now_mono: float):
    """(judge, solo): for recovery.settle, what each job the dead process held comes to."""
    blamed, suspects = verdicts(death, known)
    how = death.describe()

    def started_of(k: Known) -> float:
        return now - max(0.0, now_mono - k.started)       # a running job's start, from the ledger's monotonic time

    def one(job: Job) -> Result | None:
        k = known.get(job.id)
        if job.id in death.timed_out:
            limit = death.timed_out[job.id]
            return Result(job.id, TIMEOUT, started_of(k) if k else now, now, error=f"timed out after {limit:g}s")
        if k is None or k.state == QUEUED:
            if job.at_most_once and job.started_at is not None:     # its begin committed: it may have run
                return Result(job.id, INTERRUPTED, job.started_at, now, error=f"interrupted: its process {how}")
            return None
        if k.state == ENDED:
            return ended(job, k, "its process died before writing it")
        if k.slot == blamed:
            return Result(job.id, CRASHED, started_of(k), now, error=f"it killed its {'solo ' if death.solo else 'worker '}process, which {how}")
        return Result(job.id, INTERRUPTED, started_of(k), now, error=f"interrupted: its process {how} while it ran")

    def solo(job: Job) -> bool:
        k = known.get(job.id)
        if k is None or k.state != RUNNING or job.id in death.timed_out:
            return False
        return k.slot == blamed or suspects
    return one, solo
