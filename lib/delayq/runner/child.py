"""Inside a forked process of the runner: a worker (claims and runs many jobs) or a solo (runs one job alone).

Set up right after the fork, before anything else runs:
  - a process group of its own: the supervisor ends it with every process its jobs started;
  - the kernel sends it SIGUSR1 if the supervisor dies (PR_SET_PDEATHSIG), even by SIGKILL: it then
    writes what it has, hands back what never started, and ends with its jobs' processes;
  - SIGTERM and SIGINT are ignored: the supervisor decides when it stops, and says so in the ledger;
  - os._exit called by a job writes the job's slot into the ledger first (the supervisor blames
    that job, and only it); a fatal signal's report (faulthandler) names the thread that caused it;
  - a ticker thread writes the time into the ledger every TICK seconds: when one thread holds the
    interpreter (a C call, a hog), the ticks stop, and the supervisor does not count that time
    against the other jobs' time limits.
"""

from __future__ import annotations

import ctypes
import faulthandler
import gc
import os
import signal
import sys
import threading
import time
from typing import Callable, NoReturn

from .. import logs
from ..errors import DelayqError
from .ledger import TICK, Ledger
from .postmortem import EXIT_BUG, EXIT_FATAL, EXIT_OK
from .threads import current_slot

PR_SET_PDEATHSIG = 1
GC_THRESHOLDS = (10000, 20, 20)
_orphaned = threading.Event()
_wake: list[Callable[[], None]] = []


def orphaned() -> bool:
    """Whether this process's supervisor died."""
    return _orphaned.is_set()


def on_wake(fn: Callable[[], None]) -> None:
    _wake.append(fn)


def setup(ledger: Ledger, supervisor: int, fault_file: str) -> None:
    """Everything a forked process sets before running a job (see the module's docstring)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass                                  # the supervisor set it already
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, _on_orphaned)
    _pdeathsig(signal.SIGUSR1)
    if os.getppid() != supervisor:            # it died before the line above took effect
        _orphaned.set()
    _hook_exit(ledger)
    faulthandler.enable(file=open(fault_file, "w"), all_threads=True)
    threading.Thread(target=_tick, args=(ledger,), name="delayq-ticker", daemon=True).start()
    # Everything made before the fork lives as long as the process: out of the collector's sight; and a worker
    # makes thousands of short-lived objects a claim, freed by their counts, so a young-generation pass every
    # GC_YOUNG of them instead of every 700 (a no-op burst: 2 µs less CPU a job, about a tenth).
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def finish(code: int) -> NoReturn:
    """End the process: flush what is buffered; an orphan takes its jobs' processes with it."""
    logs.flush()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:       # a closed stream must not keep the process alive
            pass
    if orphaned():
        os.killpg(0, signal.SIGKILL)           # nobody else will end what its jobs started
    _real_exit(code)


def run(main: Callable[[], None], ledger: Ledger) -> NoReturn:
    """Run a child's main function under one error boundary: a backend that stops answering is a fatal error
    of this process (its one line goes into the ledger for the supervisor to print); anything else is a bug."""
    code = EXIT_BUG
    try:
        main()
        code = EXIT_OK
    except DelayqError as exc:
        ledger.fail(str(exc), os.getpid())
        code = EXIT_FATAL
    except BaseException as exc:      # noqa: BLE001 (the boundary of a forked process)
        ledger.fail(f"internal error in a worker process: {type(exc).__name__}: {exc}", os.getpid())
    finish(code)


def _on_orphaned(*_: object) -> None:
    _orphaned.set()
    for fn in _wake:
        fn()


def _pdeathsig(sig: int) -> None:
    """Linux: the kernel signals this process when the thread that forked it (the supervisor's main) ends."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))
    except (OSError, AttributeError):
        pass


_real_exit = os._exit


def _hook_exit(ledger: Ledger) -> None:
    """os._exit from a job's thread names that job in the ledger first; anyone else's (a job's own forked child,
    this process's own code) is the plain os._exit."""
    me = os.getpid()

    def _exit(code: int) -> NoReturn:
        slot = current_slot()
        if os.getpid() == me and slot is not None:
            ledger.blame(slot)
        _real_exit(code)
    os._exit = _exit


def _tick(ledger: Ledger) -> None:
    while True:
        ledger.tick(time.monotonic())
        time.sleep(TICK)
