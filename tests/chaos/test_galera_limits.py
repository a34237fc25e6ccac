"""A key's limit across two Galera nodes (issue 26, finding 1): two runners, each connected to its own node of a
two-node cluster (tests/chaos/galera.py), start jobs of `examples.limits:confirm_order` (limit_key order:{order_id},
limit 1) claimed from one Redis index. The jobs come due in waves, two of each order a wave, all due at one moment:
both runners wake then, each claims half of the wave, and both start their jobs at the same moment, of about half of
the orders each (a job of the same order as one the other runner starts). No two runs of one order may overlap, by
the jobs' own record of their start and end (EXAMPLE_LIMITS_LOG).

The gate of a key was a row locked FOR UPDATE and not written: a row lock is each node's own and Galera certifies
only writes, so both runners passed the same gate (before the fix: overlaps in every run). Each claim that passes a
gate now writes its row (migration 13, `passes`): the second to commit is refused (1213) and runs again."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import pytest

import delayq
from delayq.config import Config
from tests.chaos.galera import PROVIDER, Galera
from tests.chaos.limits_check import kill_tree
from tests.conftest import REDIS_URL, ROOT, drop_redis, new_prefix, require

ORDERS, WAVES = 8, 8                # 128 jobs: each wave two of each order, one running at a time per order
FIRST, EVERY = 4.0, 1.5             # seconds from the enqueue to the first wave (the runners are up), between waves
CONCURRENCY = ORDERS                # a runner's claim at a wave: half of it
RUN_FOR = 22                        # seconds each runner claims (the last held jobs are due again within it)


def wave_jobs() -> list[dict]:
    """Each wave: two jobs of each order, all due at one moment (the index hands them out in its own order)."""
    return [{"call": "examples.limits:confirm_order", "args": {"order_id": n % ORDERS, "seconds": 0.05 + (n % 3) * 0.05},
             "delay": FIRST + wave * EVERY}
            for wave in range(WAVES) for n in range(2 * ORDERS)]


def overlaps(lines: list[list[str]], end_of_check: float) -> list[str]:
    """Runs of one key that overlap in time, from `start ID KEY T PID` and `end ID KEY T PID` lines (a run with no
    end counts as running until the end of the check)."""
    began: dict[str, tuple[str, float]] = {}
    spans: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for what, job, key, at, _ in lines:
        if what == "start":
            began[job] = (key, float(at))
        elif job in began:
            key, start = began.pop(job)
            spans[key].append((start, float(at), job))
    for job, (key, start) in began.items():
        spans[key].append((start, end_of_check, job))
    found = []
    for key, runs in spans.items():
        runs.sort()
        for (s1, e1, j1), (s2, _, j2) in zip(runs, runs[1:]):
            if s2 < e1 - 1e-3:
                found.append(f"{key}: job {j2} started {e1 - s2:.3f} s before job {j1} ended")
    return found


def test_two_runners_on_two_nodes_never_run_two_jobs_of_one_key_at_once():
    if not os.path.exists(PROVIDER) or not shutil.which("rsync"):
        pytest.fail(f"galera-4 ({PROVIDER}) and rsync are needed: apt-get install galera-4 rsync "
                    "(or run `make test`, which installs them)", pytrace=False)
    require("redis")
    tmp = tempfile.mkdtemp(prefix="delayq-galera-limits-")
    log, prefix = os.path.join(tmp, "key.log"), new_prefix()
    try:
        with Galera(size=2) as cluster:
            config = Config(database_url=cluster.node_url(0), redis_url=REDIS_URL, allowed_modules=("examples",),
                            prefix=prefix)
            q = delayq.open_manager(config)
            try:
                q.store.migrate(time.time())
                q.enqueue_many(wave_jobs())
                env = {k: v for k, v in os.environ.items() if not k.startswith("DELAYQ_")}
                env.update(DELAYQ_PREFIX=prefix, DELAYQ_ALLOWED_MODULES="examples", DELAYQ_REDIS_URL=REDIS_URL,
                           EXAMPLE_LIMITS_LOG=log, PYTHONPATH=ROOT)
                runners = [subprocess.Popen([sys.executable, os.path.join(ROOT, "bin", "run_due.py"), "--for",
                                             str(RUN_FOR), "--interval", "0.1", "--concurrency", str(CONCURRENCY), "--quiet"],
                                            env=dict(env, DELAYQ_DATABASE_URL=cluster.node_url(node)), cwd=ROOT,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                            start_new_session=True)
                           for node in (0, 1)]
                try:
                    errors = [runner.communicate(timeout=RUN_FOR + 60)[1] for runner in runners]
                finally:
                    for runner in runners:          # whatever happened, no runner of ours outlives the test
                        if runner.poll() is None:
                            kill_tree(runner.pid)
                with open(log) as f:
                    lines = [line.split() for line in f if line.strip()]
                found = overlaps(lines, time.time())
                starts = sum(1 for parts in lines if parts[0] == "start")
            finally:
                q.close()
    finally:
        drop_redis(prefix)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{starts} runs of {ORDERS} orders; runners exited {[r.returncode for r in runners]}; overlaps {found[:5]}; "
          f"stderr {[e.strip()[-300:] for e in errors]}")
    assert [r.returncode for r in runners] == [0, 0], [e[-500:] for e in errors]
    assert starts >= ORDERS * WAVES, starts         # the runners did start jobs of every order, wave after wave
    assert found == [], f"{len(found)} overlapping runs of one key: {found[:5]}"
