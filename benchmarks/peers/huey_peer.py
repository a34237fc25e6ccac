"""Huey: tasks scheduled with task.schedule(args, delay=seconds), run by one
`huey_consumer` with its defaults (1 worker thread, scheduler interval 1 s), or
with `-w N -k thread` (N worker threads in one process) for the issue-11 workloads."""

from __future__ import annotations

import time

from huey import RedisHuey

import common

NAME = "huey"
DIST = "huey"

huey = RedisHuey("peerbench", url=common.redis_url())


# ---- jobs

@huey.task()
def job_ready():
    common.mark_ready(huey.storage.conn)


@huey.task()
def job_burst(n, i):
    common.mark_burst(huey.storage.conn, n, i)


@huey.task()
def job_late(due):
    common.mark_late(huey.storage.conn, due)


@huey.task()
def job_wait(n, i, ms, shared):
    common.wait_then_mark(huey.storage.conn, n, i, ms, shared)


@huey.task()
def job_mixed(due, slow_ms):
    common.mark_mixed(huey.storage.conn, due, slow_ms)


TASKS = {"burst": job_burst, "late": job_late, "wait": job_wait, "mixed": job_mixed}


# ---- driver side

def connect(redis_url):
    return huey


def enqueue(h, kind, items):
    if kind == "ready":
        job_ready()
        return
    task = TASKS[kind]
    for args, due_at in items:
        task.schedule(args=args, delay=due_at - time.time())


def worker_argv(bin_dir, redis_url, verbose, threads=None):
    """threads None or "defaults": the consumer's defaults (-w 1 -k thread); N: N worker threads."""
    argv = [f"{bin_dir}/huey_consumer", "huey_peer.huey"]
    if threads not in (None, "defaults"):
        argv += ["-w", str(threads), "-k", "thread"]
    if not verbose:
        argv.append("--quiet")
    return argv


def close(h):
    h.storage.conn.close()
