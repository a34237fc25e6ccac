"""The ledger: what a worker process holds and does, in memory its supervisor reads even after the worker died.

One shared mapping per worker (MAP_SHARED, made before the fork) of a small file in the host's
memory (/dev/shm; orphans.py). The worker writes; the supervisor reads. A write is a store into
memory, not a system call, so a worker killed at any instant leaves the ledger as it was at that
instant: the supervisor then knows, for every job the worker claimed, whether it never started,
was running (since when, in which thread), or had ended (and how) with its outcome not yet
committed. That knowledge is what recovery needs to run again only what was running, and to
record every run that happened. The file outlives them all: if the supervisor dies too (kill -9,
or it exits on a backend that stopped answering), the next runner on the host reads it once the
last process that had it open is gone (its lock is free), and recovers the same way.

Each slot holds one claimed job: id, state, started, finished, time limit, snooze seconds, the
native thread id and the Python thread ident of the thread running it, and the kind of its
result. A slot is taken when its job is claimed, freed once its outcome is committed (or the
job was handed on). The header holds the ticker (the worker's heartbeat inside the process,
written every TICK seconds by a thread of its own: it stops when one thread holds the GIL),
the supervisor's order (run, finish, stop, drain), the slot of a job that ended the process
(os._exit), a fatal error's one line, and the worker's counters (the summary).
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from dataclasses import dataclass

from ..retries import ERROR, LATE, OK, PERMANENT, SKIPPED, SNOOZE

TICK = 0.05                 # seconds between the worker's ticks

# slot states
FREE, QUEUED, RUNNING, ENDED = 0, 1, 2, 3
# the supervisor's orders (header word ORDER)
RUN, FINISH, STOP, DRAIN = 0, 1, 2, 3

KINDS = (OK, ERROR, PERMANENT, SNOOZE, LATE, SKIPPED)      # a result's kind as a small number (index + 1)
_CODES = {kind: (i + 1) << 8 for i, kind in enumerate(KINDS)}
COUNTERS = ("claimed", "succeeded", "retried", "snoozed", "failed", "expired", "timed_out", "crashed", "lost",
            "skipped", "handed_back", "passes")

_WORDS = 8                  # 8-byte words per slot: id, state, started, finished, limit, snooze, tid, ident
_ID, _STATE, _STARTED, _FINISHED, _LIMIT, _SNOOZE, _TID, _IDENT = range(_WORDS)
_KIND_SHIFT = 8             # a slot's state word: state | kind << 8 | abandoned << 16
_ABANDONED = 1 << 16
# header words: tick, order, culprit slot + 1, fatal length, pid, slots held, slots, threads, layout, counters...
_TICK, _ORDER, _CULPRIT, _FATAL_LEN, _PID, _HELD, _SLOTS, _THREADS, _LAYOUT = range(9)
_COUNTERS = 9
LAYOUT = 0x64_6C_71_6C_65_64_00_01    # "dlqled", layout 1: a ledger file of another layout is not read
_HEADER_WORDS = _COUNTERS + len(COUNTERS)
_FATAL_BYTES = 1024


@dataclass(frozen=True)
class Known:
    """What a ledger says of one job (read after its worker died, or while it runs)."""

    job_id: int
    state: int                  # QUEUED, RUNNING or ENDED
    started: float = 0.0
    finished: float = 0.0
    limit: float = 0.0
    kind: str | None = None     # ENDED: the result's kind
    snooze: float | None = None
    tid: int = 0
    ident: int = 0
    abandoned: bool = False     # the supervisor gave up on it (its time limit): a late result is dropped
    slot: int = -1


def _created(path: str, size: int) -> int | None:
    """A new ledger file, locked, its pages allocated now (a full /dev/shm must not strike later, as SIGBUS in a job's
    thread): its descriptor, or None if there is no room (the file removed again)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.posix_fallocate(fd, 0, size)
        return fd
    except OSError:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        return None


def _size(slots: int, threads: int) -> tuple[int, int, int]:
    """(end of the header, end of the thread table, whole size) of a ledger, in bytes."""
    head = 8 * _HEADER_WORDS + _FATAL_BYTES
    table = head + 8 * threads
    return head, table, table + 8 * _WORDS * slots


class LedgerMemory:
    """A ledger's shared memory, and what the supervisor reads of it (and the orders it gives); Ledger adds
    what the worker writes."""

    def __init__(self, slots: int, threads: int, path: str | None = None, *, _fd: int | None = None):
        """A new ledger: anonymous memory, or the file `path` (created, locked until every process that has it
        open is gone; the forked children inherit the lock with the descriptor)."""
        self.slots = slots
        self.threads = threads
        self.path = path
        head, table, size = _size(slots, threads)
        self._fd = _fd
        if path is not None and _fd is None:
            self._fd = _created(path, size)
            if self._fd is None:
                self.path = None              # no room in the host's memory: a ledger in this process's memory
        # shared with forked children; a file's pages are the file's (they outlive every process)
        self._memory = mmap.mmap(-1 if self._fd is None else self._fd, size)
        view = memoryview(self._memory)
        self._head_q = view[:8 * _HEADER_WORDS].cast("q")
        self._head_d = view[:8 * _HEADER_WORDS].cast("d")
        self._fatal = view[8 * _HEADER_WORDS:head]
        self._table = view[head:table].cast("q")        # per job thread: the slot it runs + 1 (0: idle)
        self._q = view[table:].cast("q")
        self._d = view[table:].cast("d")
        self._free = list(range(slots - 1, -1, -1))     # the worker's own list (each process has its copy)
        if _fd is None:
            self._head_q[_SLOTS], self._head_q[_THREADS], self._head_q[_LAYOUT] = slots, threads, LAYOUT

    @classmethod
    def left_behind(cls, path: str) -> "Ledger | None":
        """The ledger file of a runner that is gone, to read: None while a process that had it open lives (its lock
        is held), or if it is not a whole ledger."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_nlink == 0:
                raise ValueError("removed meanwhile: recovered by another runner")
            size = os.fstat(fd).st_size
            slots, threads, layout = struct.unpack("qqq", os.pread(fd, 24, 8 * _SLOTS).ljust(24, b"\0"))
            if layout != LAYOUT or slots <= 0 or threads <= 0 or _size(slots, threads)[2] != size:
                raise ValueError(f"not a whole ledger of this layout: {path}")   # (or one being made now)
            return cls(slots, threads, path, _fd=fd)
        except (OSError, ValueError):
            os.close(fd)
            return None

    # -- both -------------------------------------------------------------------------------
    @property
    def order(self) -> int:
        return self._head_q[_ORDER]

    @order.setter
    def order(self, value: int) -> None:
        self._head_q[_ORDER] = value

    # -- the supervisor reads -----------------------------------------------------------------
    @property
    def ticked(self) -> float:
        return self._head_d[_TICK]

    def culprit(self) -> int | None:
        """The slot whose job ended the process through os._exit, if one did."""
        value = self._head_q[_CULPRIT]
        return value - 1 if value else None

    def fatal(self) -> str | None:
        n = self._head_q[_FATAL_LEN]
        return bytes(self._fatal[:n]).decode("utf-8", "replace") if n else None

    def counters(self) -> dict[str, int]:
        return {name: self._head_q[_COUNTERS + i] for i, name in enumerate(COUNTERS)}

    def held(self) -> int:
        """Slots in use: jobs claimed and not yet let go (queued, running, or ended with the outcome unwritten)."""
        return self._head_q[_HELD]

    def abandon(self, slot: int, job_id: int) -> bool:
        """Give up on a running job (its time limit): a result it returns later is dropped. False if it is no
        longer that job running there."""
        base = slot * _WORDS
        state = self._q[base + _STATE]
        if self._q[base + _ID] != job_id or state & 0xFF != RUNNING:
            return False
        self._q[base + _STATE] = state | _ABANDONED
        return True

    def read(self, slot: int) -> Known | None:
        base = slot * _WORDS
        state = self._q[base + _STATE]
        job_id = self._q[base + _ID]
        if state & 0xFF == FREE or not job_id:
            return None
        code = (state >> _KIND_SHIFT) & 0xFF
        snooze = self._d[base + _SNOOZE]
        return Known(job_id, state & 0xFF, self._d[base + _STARTED], self._d[base + _FINISHED],
                     self._d[base + _LIMIT], KINDS[code - 1] if code else None, None if snooze < 0 else snooze,
                     self._q[base + _TID], self._q[base + _IDENT], bool(state & _ABANDONED), slot)

    def known(self) -> dict[int, Known]:
        """Every job this ledger holds, by id."""
        out = {}
        for slot in range(self.slots):
            k = self.read(slot)
            if k is not None:
                out[k.job_id] = k
        return out

    def running(self) -> list[Known]:
        """The jobs the worker's threads run now (a read of the thread table: cheap enough for every tick)."""
        out = []
        for thread in range(self.threads):
            slot = self._table[thread] - 1
            k = self.read(slot) if slot >= 0 else None
            if k is not None and k.state == RUNNING:
                out.append(k)
        return out

    def close(self, remove: bool = False) -> None:
        """Let go of it (and of its lock, in this process); remove: its file too (everything in it is recovered)."""
        for view in (self._head_q, self._head_d, self._fatal, self._table, self._q, self._d):
            view.release()
        self._memory.close()
        if remove and self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class Ledger(LedgerMemory):
    """What the worker writes: each job's slot from its claim to its commit, the ticker, its fatal line, its
    counters (created before the fork: the supervisor keeps the same memory, as a LedgerMemory reads it)."""

    def take(self, job_id: int) -> int:
        """A slot for a job just claimed (QUEUED); IndexError when none is free (the claimer never asks for more)."""
        slot = self._free.pop()
        base = slot * _WORDS
        self._q[base + _ID] = job_id
        self._q[base + _STATE] = QUEUED
        self._head_q[_HELD] += 1
        return slot

    def start(self, slot: int, thread: int, started: float, limit: float, tid: int, ident: int) -> None:
        """The job's code is about to run in job thread `thread` (written before it runs)."""
        base = slot * _WORDS
        self._d[base + _STARTED] = started
        self._d[base + _LIMIT] = limit
        self._q[base + _TID] = tid
        self._q[base + _IDENT] = ident
        self._q[base + _STATE] = RUNNING
        self._table[thread] = slot + 1

    def idle(self, thread: int) -> None:
        """Job thread `thread` runs nothing now."""
        self._table[thread] = 0

    def end(self, slot: int, kind: str, started: float, finished: float, snooze: float | None) -> bool:
        """The job returned: ENDED with its kind, until its outcome is committed. False if the supervisor abandoned
        it meanwhile (past its time limit): its result must then be dropped."""
        base = slot * _WORDS
        if self._q[base + _STATE] & _ABANDONED:
            return False
        self._d[base + _STARTED] = started
        self._d[base + _FINISHED] = finished
        self._d[base + _SNOOZE] = -1.0 if snooze is None else float(snooze)
        self._q[base + _STATE] = ENDED | _CODES.get(kind, 0)
        return True

    def free(self, slot: int) -> None:
        """Its outcome is committed, or it was handed on, or handed back: nothing of it is held here any more."""
        base = slot * _WORDS
        self._q[base + _STATE] = FREE
        self._q[base + _ID] = 0
        self._head_q[_HELD] -= 1
        self._free.append(slot)

    def available(self) -> int:
        """Free slots: the most jobs the worker may claim now."""
        return len(self._free)

    def abandoned(self, slot: int, job_id: int) -> bool:
        """Whether the supervisor gave up on this job (its time limit) while it ran."""
        if slot < 0:
            return False
        base = slot * _WORDS
        return self._q[base + _ID] == job_id and bool(self._q[base + _STATE] & _ABANDONED)

    def tick(self, now: float) -> None:
        self._head_d[_TICK] = now

    def blame(self, slot: int) -> None:
        """The job in this slot is ending the process (os._exit): the supervisor blames it, and only it."""
        self._head_q[_CULPRIT] = slot + 1

    def fail(self, line: str, pid: int) -> None:
        """A fatal error of the worker itself (a backend that stopped answering), one line for the supervisor."""
        data = line.encode("utf-8", "replace")[:_FATAL_BYTES]
        self._fatal[:len(data)] = data
        self._head_q[_FATAL_LEN] = len(data)
        self._head_q[_PID] = pid

    def publish(self, summary) -> None:
        """The worker's summary so far (after each commit, and at its end): the supervisor adds it up."""
        for i, name in enumerate(COUNTERS):
            self._head_q[_COUNTERS + i] = getattr(summary, name)
