"""Celery: tasks sent with task.apply_async(args, countdown=seconds) over the Redis
broker, run by one `celery worker -P solo -c 1` (the worker receives ETA tasks
at once and holds them in memory until their eta)."""

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


# ---- driver side

def connect(redis_url):
    return app


def enqueue(a, kind, items):
    if kind == "ready":
        job_ready.delay()
        return
    task = job_burst if kind == "burst" else job_late
    for args, due_at in items:
        task.apply_async(args=args, countdown=due_at - time.time())


def worker_argv(bin_dir, redis_url, verbose):
    argv = [f"{bin_dir}/celery", "-A", "celery_peer", "worker", "-P", "solo", "-c", "1"]
    if verbose:
        argv += ["-l", "INFO"]
    return argv  # default log level: WARNING


def close(a):
    a.close()
