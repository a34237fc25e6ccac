"""Ledgers left behind: what a runner that died whole knew of its jobs, recovered by the next runner on the host.

A supervisor recovers a dead worker at once from the worker's ledger (postmortem.py). When the
supervisor dies too, or exits on a backend that stopped answering (it cannot write then), the
ledgers stay: each is a file in a directory of this host's memory, one directory per database
and prefix (the runners of one queue system on one host share it). The next runner there looks
before it claims: a ledger whose lock is free (every process that had it open is gone) is read
and recovered by the same rules as a dead worker's: an ended job gets the outcome it ended with
(it does not run again), a running one is interrupted (an ordinary job runs again now, not when
its lease runs out; an at-most-once one fails as "outcome unknown"), one never started goes
back to pending. Only what its claim still holds is written (compensate may have recovered it
by its lease meanwhile, and then nothing is). The file goes once it is recovered. compensate
does the same before it takes over leases that ran out (recover_here): a runner that exited on
a paused database leaves outcomes that the first look after the pause writes, whichever of
compensate and the next runner comes first, and its ended jobs do not run again.

A host that restarts loses the directory (its memory): then the leases recover the jobs, as
they always did.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import stat
import tempfile
import time
from typing import Callable

from .. import recovery
from ..errors import DelayqError
from . import postmortem
from .ledger import RUNNING, Ledger

log = logging.getLogger("delayq.runner")
SUFFIX = ".ledger"


def directory(store, make: bool = True) -> str:
    """This host's directory of ledgers for the store's database and prefix (`make`: made if missing, this user's
    only)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    key = hashlib.sha256(f"{store.where}\n{store.prefix}".encode()).hexdigest()[:16]
    path = os.path.join(base, f"delayq-{os.getuid()}-{store.prefix}-{key}")
    if make:
        os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def ours(folder: str) -> bool:
    """The folder is a real directory of this user's that nobody else may write (/dev/shm is everyone's: another
    user could have made it first, or put files in it); else the runner keeps its ledgers in memory only."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def create(folder: str | None, holder: str, make: Callable[[str | None], Ledger]) -> Ledger:
    """make(path) for the holder's ledger file (the folder made again if a runner that ended just removed it);
    make(None), a ledger in memory, without a folder of ours."""
    if folder is None:
        return make(None)
    for _ in range(3):
        try:
            return make(os.path.join(folder, holder + SUFFIX))
        except FileNotFoundError:
            os.makedirs(folder, mode=0o700, exist_ok=True)
    return make(os.path.join(folder, holder + SUFFIX))


def tidy(folder: str) -> None:
    """A runner that ends removes the folder if nothing is left in it (no garbage in /dev/shm per prefix)."""
    try:
        os.rmdir(folder)
    except OSError:
        pass


def recover_here(manager) -> list[recovery.Recovered]:
    """Recover the ledgers runners of this store left behind on this host, if its folder is there and ours (then
    removed if nothing is left in it)."""
    folder = directory(manager.store, make=False)
    if not ours(folder):
        return []
    done = recover(manager, folder)
    tidy(folder)
    return done


def recover(manager, folder: str) -> list[recovery.Recovered]:
    """Recover every ledger in `folder` that nobody has open any more; returns what was written. A backend error
    is raised (the ledger stays for the next runner)."""
    done: list[recovery.Recovered] = []
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:          # a runner that ended just removed the empty folder: nothing left behind
        return done
    for name in names:
        if not name.endswith(SUFFIX):
            continue
        path = os.path.join(folder, name)
        ledger = Ledger.left_behind(path)
        if ledger is None:
            continue
        holder = name[:-len(SUFFIX)]
        try:
            known = ledger.known()
            death = postmortem.Death(signal.SIGKILL, killed=postmortem.ORPHANED, culprit_slot=ledger.culprit(),
                                     timed_out={k.job_id: k.limit for k in known.values()
                                                if k.abandoned and k.state == RUNNING})
            judge, _ = postmortem.judge(death, known, manager.clock.now(), time.monotonic())
            settled = recovery.settle(manager, manager.held(holder), judge)
            recovery.requeue_claims(manager.store, manager.index, holder)
        except DelayqError:            # the backend: the file stays for the next runner
            ledger.close()
            raise
        except Exception as exc:       # a file this code cannot read: set aside, never in every runner's way
            ledger.close()
            log.warning("a ledger left behind could not be read (%s: %s): kept as %s.bad; its jobs are recovered "
                        "by their leases", type(exc).__name__, exc, path)
            _set_aside(path)
            continue
        ledger.close(remove=True)
        if settled:
            log.info("recovered %d job(s) from the ledger of a runner that died: %s", len(settled), holder)
        done += settled
    return done


def _set_aside(path: str) -> None:
    try:
        os.replace(path, path + ".bad")
    except OSError:
        pass
