"""The code of record, measured in the same run: the one-job-at-a-time runner's no-op burst and its bulk enqueue.

Issue 11 asks that the no-op burst not get slower than the runner it replaced, and issue 10 that
bulk enqueue stay within 10% of what it was. The figures of record (21,798 and 32,201 jobs/s, make
bench of 2026-11-22) came from another day's VM; this one's speed changes from session to session,
so a figure of record alone cannot say "slower". `make bench` therefore measures that code beside
the current code, alternating run by run on the same servers: the commit of record (BENCH_BASELINE,
default 4182bff) is checked out into a temporary git worktree, and its own benchmarks/delayq_side.py
drives its own bin/run_due.py with its own lib/ first on the path.

Outside a git checkout (or with BENCH_BASELINE=none) there is no such figure, and the report says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMIT = os.environ.get("BENCH_BASELINE", "4182bff")
NAME = f"delayq runner of record ({COMMIT})"

_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
import delayq_side as D
kind, db, redis, n = sys.argv[2], sys.argv[3], sys.argv[4] or None, int(sys.argv[5])
print(json.dumps(D.burst(db, redis, n) if kind == "burst" else D.enqueue(db, redis, n)))
"""


class Baseline:
    """The commit of record in a temporary worktree (a context manager); `why_not` says why it is missing."""

    def __init__(self) -> None:
        self.path: str | None = None
        self.why_not: str | None = None

    def __enter__(self) -> "Baseline":
        if COMMIT in ("", "none"):
            self.why_not = "BENCH_BASELINE is none"
            return self
        tmp = tempfile.mkdtemp(prefix="delayq-baseline-")
        done = subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tmp, COMMIT],
                              capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            self.why_not = f"no worktree of {COMMIT}: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
        else:
            self.path = tmp
            _own_lib_first(tmp)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.path:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", self.path], capture_output=True)
            shutil.rmtree(self.path, ignore_errors=True)

    def run(self, kind: str, database_url: str, redis_url: str | None, n: int) -> dict:
        """`burst` (delayq_side.burst of that commit) or `enqueue` (its delayq_side.enqueue); {} when missing."""
        if not self.path:
            return {}
        done = subprocess.run([sys.executable, "-c", _RUN, os.path.join(self.path, "benchmarks"), kind, database_url,
                               redis_url or "", str(n)], capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"the baseline's {kind} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def _own_lib_first(tree: str) -> None:
    """The commit's runner must import the commit's delayq. Its bin/ scripts may prefer an installed delayq (from
    3c512f4 on they do: an application's venv first), and this venv has the current checkout installed (editable),
    so the side of record would run the current code. Its delayq_side.py sets PYTHONPATH for the runner: pointed at
    the commit's own lib/, that comes before every installed package."""
    side = os.path.join(tree, "benchmarks", "delayq_side.py")
    with open(side, encoding="utf-8") as f:
        text = f.read()
    if "PYTHONPATH=ROOT)" in text:
        with open(side, "w", encoding="utf-8") as f:
            f.write(text.replace("PYTHONPATH=ROOT)", 'PYTHONPATH=os.path.join(ROOT, "lib") + os.pathsep + ROOT)'))
