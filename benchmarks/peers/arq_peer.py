"""ARQ: jobs enqueued with ArqRedis.enqueue_job(name, *args, _defer_by=seconds), run
by one `arq arq_peer.WorkerSettings` with its defaults (max_jobs 10, poll_delay
0.5 s, at most 100 due jobs read per poll)."""

from __future__ import annotations

import asyncio
import time

from arq import create_pool
from arq.connections import RedisSettings

import common

NAME = "arq"
DIST = "arq"


# ---- jobs

async def job_ready(ctx):
    await common.amark_ready(ctx["redis"])


async def job_burst(ctx, n, i):
    await common.amark_burst(ctx["redis"], n, i)


async def job_late(ctx, due):
    await common.amark_late(ctx["redis"], due)


class WorkerSettings:
    functions = [job_ready, job_burst, job_late]
    redis_settings = RedisSettings.from_dsn(common.redis_url())


# ARQ's CLI has no quiet flag: its default config logs two INFO lines per job.
QUIET_LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"arq.standard": {"level": "WARNING", "class": "logging.StreamHandler"}},
    "loggers": {"arq": {"handlers": ["arq.standard"], "level": "WARNING"}},
}


# ---- driver side

class _Ctx:
    def __init__(self, redis_url):
        self.loop = asyncio.new_event_loop()
        self.pool = self.loop.run_until_complete(create_pool(RedisSettings.from_dsn(redis_url)))


def connect(redis_url):
    return _Ctx(redis_url)


async def _enqueue_all(pool, name, items):
    for args, due_at in items:
        await pool.enqueue_job(name, *args, _defer_by=due_at - time.time())


def enqueue(ctx, kind, items):
    if kind == "ready":
        ctx.loop.run_until_complete(ctx.pool.enqueue_job("job_ready"))
        return
    name = "job_burst" if kind == "burst" else "job_late"
    ctx.loop.run_until_complete(_enqueue_all(ctx.pool, name, items))


def worker_argv(bin_dir, redis_url, verbose):
    argv = [f"{bin_dir}/arq", "arq_peer.WorkerSettings"]
    if not verbose:
        argv += ["--custom-log-dict", "arq_peer.QUIET_LOG_CONFIG"]
    return argv


def close(ctx):
    ctx.loop.run_until_complete(ctx.pool.aclose())
    ctx.loop.close()
