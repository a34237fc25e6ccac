"""Celery: tasks sent with task.apply_async(args, countdown=seconds) over the Redis
broker, run by one `celery worker -P solo -c 1` (the worker receives ETA tasks
at once and holds them in memory until their eta). For the issue-11 workloads:
`-P threads -c N`, or a bare `celery worker` (its defaults: prefork, one process per core)."""

from __future__ import annotations

import time

from celery import Celery

import common

NAME = "celery"
DIST = "celery"

app = Celery("peerbench", broker=common.redis_url())
app.conf.broker_connection_retry_on_startup = True  # silences a deprecation warning only

_client = None


def _conn():
    global _client
    if _client is None:
        from redis import Redis
        _client = Redis.from_url(common.redis_url())
    return _client


# ---- jobs

@app.task
def job_ready():
    common.mark_ready(_conn())


@app.task
def job_burst(n, i):
    common.mark_burst(_conn(), n, i)


@app.task
def job_late(due):
    common.mark_late(_conn(), due)


@app.task
def job_wait(n, i, ms, shared):
    common.wait_then_mark(_conn(), n, i, ms, shared)


@app.task
def job_mixed(due, slow_ms):
    common.mark_mixed(_conn(), due, slow_ms)


TASKS = {"burst": job_burst, "late": job_late, "wait": job_wait, "mixed": job_mixed}


# ---- driver side

def connect(redis_url):
    return app


def enqueue(a, kind, items):
    if kind == "ready":
        job_ready.delay()
        return
    task = TASKS[kind]
    for args, due_at in items:
        task.apply_async(args=args, countdown=due_at - time.time())


def worker_argv(bin_dir, redis_url, verbose, threads=None):
    """threads None: -P solo -c 1; N: -P threads -c N; "defaults": neither flag (prefork, one process per core)."""
    argv = [f"{bin_dir}/celery", "-A", "celery_peer", "worker"]
    if threads is None:
        argv += ["-P", "solo", "-c", "1"]
    elif threads != "defaults":
        argv += ["-P", "threads", "-c", str(threads)]
    if verbose:
        argv += ["-l", "INFO"]
    return argv  # default log level: WARNING


def close(a):
    a.close()
