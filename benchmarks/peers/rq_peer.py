"""RQ: jobs scheduled with Queue.enqueue_in(timedelta, ...), run by one
`rq worker --with-scheduler` (default worker class: forks a work horse per job;
the scheduler is a forked child of the worker that polls every second)."""

from __future__ import annotations

import time
from datetime import timedelta

import common

NAME = "rq"
DIST = "rq"
QUEUE = "default"


# ---- jobs (run in the worker's work horse)

def _conn():
    from rq import get_current_job
    return get_current_job().connection


def job_ready():
    common.mark_ready(_conn())


def job_burst(n, i):
    common.mark_burst(_conn(), n, i, shared=True)   # a work horse per job: no memory across jobs


def job_late(due):
    common.mark_late(_conn(), due)


# ---- driver side

def connect(redis_url):
    from redis import Redis
    from rq import Queue
    return Queue(QUEUE, connection=Redis.from_url(redis_url))


def enqueue(queue, kind, items):
    if kind == "ready":
        queue.enqueue(job_ready)
        return
    func = job_burst if kind == "burst" else job_late
    for args, due_at in items:
        # RQ stores the scheduled time in whole seconds (floor); the extra 1 ms keeps
        # a job due at an integer time from being floored to the second before.
        queue.enqueue_in(timedelta(seconds=due_at - time.time() + 0.001), func, *args)


def worker_argv(bin_dir, redis_url, verbose):
    argv = [f"{bin_dir}/rq", "worker", "--with-scheduler", "--url", redis_url, QUEUE]
    if not verbose:
        argv.insert(2, "--quiet")
    return argv


def close(queue):
    queue.connection.close()
