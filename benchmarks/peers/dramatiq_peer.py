"""Dramatiq: messages sent with actor.send_with_options(args=..., delay=ms) to the
Redis broker's delay queue, run by one `dramatiq dramatiq_peer --processes 1`
(default 8 threads; the worker holds up to 8 x 1000 delayed messages in memory
and moves each to the work queue when its eta passes). For the issue-11 workloads:
`--processes 1 --threads N`, or no --processes/--threads at all (its defaults: one
process per core, 8 threads each)."""

from __future__ import annotations

import time

import dramatiq
from dramatiq.brokers.redis import RedisBroker

import common

NAME = "dramatiq"
DIST = "dramatiq"

broker = RedisBroker(url=common.redis_url())
dramatiq.set_broker(broker)


# ---- jobs

@dramatiq.actor
def job_ready():
    common.mark_ready(broker.client)


@dramatiq.actor
def job_burst(n, i):
    common.mark_burst(broker.client, n, i)


@dramatiq.actor
def job_late(due):
    common.mark_late(broker.client, due)


@dramatiq.actor
def job_wait(n, i, ms, shared):
    common.wait_then_mark(broker.client, n, i, ms, shared)


@dramatiq.actor
def job_mixed(due, slow_ms):
    common.mark_mixed(broker.client, due, slow_ms)


ACTORS = {"burst": job_burst, "late": job_late, "wait": job_wait, "mixed": job_mixed}


# ---- driver side

def connect(redis_url):
    return broker


def enqueue(b, kind, items):
    if kind == "ready":
        job_ready.send()
        return
    actor = ACTORS[kind]
    for args, due_at in items:
        actor.send_with_options(args=args, delay=max(0, int((due_at - time.time()) * 1000)))


def worker_argv(bin_dir, redis_url, verbose, threads=None):
    """threads None: one process, --threads left at its default (8); N: one process of N threads;
    "defaults": neither flag (one process per core, 8 threads each)."""
    argv = [f"{bin_dir}/dramatiq", "dramatiq_peer"]
    if threads == "defaults":
        return argv
    argv += ["--processes", "1"]
    if threads is not None:
        argv += ["--threads", str(threads)]
    return argv


def close(b):
    b.close()
