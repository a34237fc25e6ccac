"""The due index in Redis: per queue, a ZSET of due ids and a ZSET of ids in flight.

Keys share a hash tag per queue, "{PREFIX:QUEUE}:due" and "{PREFIX:QUEUE}:inflight",
so each Lua script touches one hash slot and also runs on Redis Cluster.
Lua lives in sql/lua/*.lua, loaded by name.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable

import redis

from ..config import describe
from ..errors import BackendError
from .base import DueIndex

LUA_DIR = Path(__file__).resolve().parents[3] / "sql" / "lua"
MAX_PER_CALL = 1000


class RedisIndex(DueIndex):
    backend = "Redis"

    def __init__(self, url: str, prefix: str, client: redis.Redis | None = None):
        self.where = describe(url)
        self.prefix = prefix
        self.r = client or redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
        self._scripts = {p.stem: self.r.register_script(p.read_text()) for p in LUA_DIR.glob("*.lua")}

    def keys(self, queue: str) -> tuple[str, str]:
        tag = "{" + self.prefix + ":" + queue + "}"
        return tag + ":due", tag + ":inflight"

    def _fail(self, exc: Exception) -> BackendError:
        return BackendError(f"Redis at {self.where} failed: {exc}")

    def add(self, entries: list[tuple[int, str, float]]) -> None:
        try:
            with self.r.pipeline(transaction=False) as pipe:
                for queue, items in _by_queue(entries):
                    for part in _chunks(items):
                        pipe.zadd(self.keys(queue)[0], {str(job): due for job, due in part})
                pipe.execute()
        except redis.RedisError as exc:
            raise self._fail(exc) from None

    def remove(self, entries: list[tuple[int, str]]) -> None:
        self._zrem(entries, 0)

    def release(self, entries: list[tuple[int, str]]) -> None:
        self._zrem(entries, 1)

    def _zrem(self, entries: list[tuple[int, str]], which: int) -> None:
        try:
            with self.r.pipeline(transaction=False) as pipe:
                for queue, items in _by_queue((job, queue, None) for job, queue in entries):
                    for part in _chunks(items):
                        pipe.zrem(self.keys(queue)[which], *[str(job) for job, _ in part])
                pipe.execute()
        except redis.RedisError as exc:
            raise self._fail(exc) from None

    def claim(self, queue: str, now: float, limit: int, lease_until: float) -> list[int]:
        try:
            ids = self._scripts["claim"](keys=self.keys(queue), args=[repr(now), min(limit, MAX_PER_CALL), repr(lease_until)])
        except redis.RedisError as exc:
            raise self._fail(exc) from None
        return [int(i) for i in ids]

    def reschedule(self, entries: list[tuple[int, str, float]]) -> None:
        try:
            for queue, items in _by_queue(entries):
                for part in _chunks(items):
                    args = [v for job, due in part for v in (repr(due), str(job))]
                    self._scripts["reschedule"](keys=self.keys(queue), args=args)
        except redis.RedisError as exc:
            raise self._fail(exc) from None

    def restore(self, entries: list[tuple[int, str, float]], now: float) -> int:
        added = 0
        try:
            for queue, items in _by_queue(entries):
                for part in _chunks(items, 2000):
                    pairs = json.dumps([[due, str(job)] for job, due in part])
                    added += self._scripts["restore"](keys=self.keys(queue), args=[repr(now), pairs])
        except redis.RedisError as exc:
            raise self._fail(exc) from None
        return added

    def members(self, batch: int = 1000, kinds: tuple[str, ...] = ("due", "inflight")):
        try:
            for key in self.r.scan_iter(match="{" + self.prefix + ":*}:*", count=1000):
                name = key.decode()
                tag, _, kind = name.rpartition(":")
                queue = tag[len(self.prefix) + 2:-1]
                if kind not in kinds or self.keys(queue) != (tag + ":due", tag + ":inflight"):
                    continue
                page: list[tuple[int, float]] = []
                for member, score in self.r.zscan_iter(name, count=batch):
                    page.append((int(member), score))
                    if len(page) >= batch:
                        yield queue, kind, page
                        page = []
                if page:
                    yield queue, kind, page
        except redis.RedisError as exc:
            raise self._fail(exc) from None

    def sizes(self) -> int:
        """Members of every due set of this prefix (for the rebuild's "anything stale?" check)."""
        try:
            keys = [k for k in self.r.scan_iter(match="{" + self.prefix + ":*}:due", count=1000)]
            with self.r.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.zcard(key)
                return sum(pipe.execute())
        except redis.RedisError as exc:
            raise self._fail(exc) from None

    def drop_unchanged(self, queue: str, which: str, members: list[tuple[int, float]]) -> int:
        key = self.keys(queue)[0 if which == "due" else 1]
        removed = 0
        try:
            for part in _chunks(members):
                args = [v for job, score in part for v in (repr(score), str(job))]
                removed += self._scripts["drop_unchanged"](keys=[key], args=args)
        except redis.RedisError as exc:
            raise self._fail(exc) from None
        return removed

    def rebuild_due(self, every: float) -> bool:
        # A marker that FLUSHALL or an eviction wipes together with the sets, so a lost index is rebuilt at once.
        try:
            return bool(self.r.set("{" + self.prefix + "}:rebuilt", "1", nx=True, ex=max(1, int(every))))
        except redis.RedisError as exc:
            raise self._fail(exc) from None

    def rebuild_failed(self) -> None:
        try:
            self.r.delete("{" + self.prefix + "}:rebuilt")
        except redis.RedisError:
            pass    # the marker expires on its own

    def next_due(self, queues: list[str]) -> float | None:
        try:
            with self.r.pipeline(transaction=False) as pipe:
                for queue in queues:
                    pipe.zrange(self.keys(queue)[0], 0, 0, withscores=True)
                firsts = [row[0][1] for row in pipe.execute() if row]
        except redis.RedisError as exc:
            raise self._fail(exc) from None
        return min(firsts) if firsts else None

    def server_time(self) -> float:
        try:
            seconds, micros = self.r.time()
        except redis.RedisError as exc:
            raise self._fail(exc) from None
        return seconds + micros / 1e6

    def close(self) -> None:
        self.r.close()


def _by_queue(entries: Iterable[tuple]) -> list[tuple[str, list[tuple[int, float]]]]:
    grouped: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for job, queue, due in entries:
        grouped[queue].append((job, due))
    return list(grouped.items())


def _chunks(items: list, size: int = MAX_PER_CALL) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
