"""Jobs that misbehave on purpose, each writing its own history (allowed with DELAYQ_ALLOWED_MODULES=tests.chaos).

Every job appends one JSON line when its code begins and one when it returns, to a history file
the runner never touches (O_APPEND, one write() each, well under PIPE_BUF: lines never interleave):

    {"e": "start", "job": 12, "attempt": 1, "pid": 4242, "t": 1764000000.123, "kind": "ok"}
    {"e": "end",   "job": 12, "attempt": 1, "pid": 4242, "t": 1764000000.145, "kind": "ok"}

A checker reads the history beside the tables (tests/chaos/checker.py): a start without an end is a run
its process did not survive; two starts of an at-most-once job are a violation; a start with no attempt
row of that (job, attempt) is a run without its record.

`kind` says what the job does after its start line:
    ok          sleep `ms` milliseconds, then return
    raise       raise RuntimeError (a plain failure, retried by the ladder)
    exit        os._exit(1): ends its process at once
    segv        a segmentation fault (reads address 0 through ctypes)
    fork        forks a child that sleeps `seconds` holding the runner's stdout and stderr, then returns
    term_proof  starts a child that ignores SIGTERM and sleeps `seconds`, then sleeps `seconds` itself
    spin        a pure-Python busy loop for `seconds` (it lets other threads run)
    block_c     blocks in C holding the GIL for `seconds` (no other thread of its process runs meanwhile), after
                sleeping `ms` milliseconds first (0: at once)
    hog         allocates and touches `mb` megabytes (2048: a memory hog), holds them `seconds`, returns
    sleep       sleeps `seconds` (a hung upstream)
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time

import delayq


def record(path: str, event: str, kind: str) -> None:
    ctx = delayq.current_job()
    line = json.dumps({"e": event, "job": ctx.id if ctx else None, "attempt": ctx.attempt if ctx else None,
                       "pid": os.getpid(), "t": time.time(), "kind": kind}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def behave(kind: str, ms: float = 0.0, seconds: float = 0.0, mb: int = 2048) -> None:
    if kind == "ok":
        if ms:
            time.sleep(ms / 1000)
    elif kind == "raise":
        raise RuntimeError("this job fails on purpose")
    elif kind == "exit":
        os._exit(1)
    elif kind == "segv":
        ctypes.string_at(0)
    elif kind == "fork":
        if os.fork() == 0:                      # the child: no Python cleanup, just outlive the job
            time.sleep(seconds)
            os._exit(0)
    elif kind == "term_proof":
        subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                          f"time.sleep({float(seconds)!r})"])
        time.sleep(seconds)
    elif kind == "spin":
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
    elif kind == "block_c":
        if ms:
            time.sleep(ms / 1000)
        ctypes.PyDLL(None).usleep(int(seconds * 1_000_000))     # PyDLL: the GIL stays held during the call
    elif kind == "hog":
        block = bytearray(mb << 20)
        memoryview(block)[::4096] = b"\x01" * len(range(0, len(block), 4096))   # touch every page
        time.sleep(seconds)
        del block
    elif kind == "sleep":
        time.sleep(seconds)
    else:
        raise ValueError(f"unknown kind {kind!r}")


@delayq.job
def run(path: str, kind: str = "ok", ms: float = 0.0, seconds: float = 0.0, mb: int = 2048) -> None:
    """An ordinary job: may run again after a crash."""
    record(path, "start", kind)
    behave(kind, ms, seconds, mb)
    record(path, "end", kind)


@delayq.job(at_most_once=True)
def once(path: str, kind: str = "ok", ms: float = 0.0, seconds: float = 0.0, mb: int = 2048) -> None:
    """An at-most-once job (a charge, a refund): never run twice by a machine."""
    record(path, "start", kind)
    behave(kind, ms, seconds, mb)
    record(path, "end", kind)


def read(path: str) -> list[dict]:
    """The history's records in the order written; a torn last line (a kill mid-write) is left out."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out

