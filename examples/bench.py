"""The benchmark's observed job: one Redis INCR, the same command every peer's benchmark job does."""

import functools

import redis

import delayq


@functools.lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


@delayq.job
def incr(url: str, key: str) -> None:
    _client(url).incr(key)
