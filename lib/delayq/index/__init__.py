"""Due indexes: Redis (RedisIndex) or the store's own rows (StoreIndex)."""

from __future__ import annotations

from .base import DueIndex, StoreIndex

__all__ = ["DueIndex", "StoreIndex", "open_index"]


def open_index(redis_url: str | None, prefix: str, store) -> DueIndex:
    if not redis_url:
        return StoreIndex(store)
    from .redis import RedisIndex

    return RedisIndex(redis_url, prefix)
