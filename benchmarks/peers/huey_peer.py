"""Huey: tasks scheduled with task.schedule(args, delay=seconds), run by one
`huey_consumer` with its defaults (1 worker thread, scheduler interval 1 s)."""

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


# ---- driver side

def connect(redis_url):
    return huey


def enqueue(h, kind, items):
    if kind == "ready":
        job_ready()
        return
    task = job_burst if kind == "burst" else job_late
    for args, due_at in items:
        task.schedule(args=args, delay=due_at - time.time())


def worker_argv(bin_dir, redis_url, verbose):
    argv = [f"{bin_dir}/huey_consumer", "huey_peer.huey"]
    if not verbose:
        argv.append("--quiet")
    return argv


def close(h):
    h.storage.conn.close()
