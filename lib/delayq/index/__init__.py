"""Due indexes: Redis (RedisIndex) or the store's own rows (StoreIndex)."""

from __future__ import annotations

from .base import DueIndex, Entry, RebuildableIndex
from .store import StoreIndex

__all__ = ["DueIndex", "Entry", "RebuildableIndex", "StoreIndex", "open_index"]


def open_index(redis_url: str | None, prefix: str, store, **redis_options) -> DueIndex:
    """Redis when a URL is set, else the store's rows; either way claims go through the index.

    redis_options go to RedisIndex: socket_timeout, connect_timeout, failover_wait (seconds)."""
    if not redis_url:
        return StoreIndex(store)
    from .redis import RedisIndex

    return RedisIndex(redis_url, prefix, store, **redis_options)
