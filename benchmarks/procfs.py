"""What Linux's /proc tells the bench about a process: CPU seconds used, its children, a server's pid; and
waiting until a server is quiet."""

from __future__ import annotations

import os
import subprocess
import time


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds a process has used; 0.0 for None, or when it cannot tell (gone, not ours)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (a runner's forked workers)."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def pid_of(name: str) -> int | None:
    """The oldest process of that name (the local server the bench talks to), or None."""
    done = subprocess.run(["pgrep", "-o", "-x", name], capture_output=True, text=True)
    return int(done.stdout.split()[0]) if done.returncode == 0 and done.stdout.strip() else None


def quiet(pid: int | None, below: float = 0.05, most: float = 30.0) -> None:
    """Until mariadbd uses less than `below` of a core over half a second (the last run's DROP TABLEs are purged
    in the background, and would be counted against the next burst), `most` seconds at most."""
    if pid is None:
        return
    end = time.monotonic() + most
    while time.monotonic() < end:
        before = cpu_seconds(pid)
        time.sleep(0.5)
        if cpu_seconds(pid) - before < below * 0.5:
            return
