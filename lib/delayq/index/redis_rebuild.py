"""The Redis index's rebuild and its checks (compensate): restore pending rows, read every member back, drop
what changed under no one, the claims a dead claimer left, the in-flight ids whose claim was cut short."""

from __future__ import annotations

import json
import secrets
from typing import Iterator

import redis
from redis.exceptions import RedisClusterException

from ..errors import BackendError
from ..redis_urls import CLUSTER
from .base import Entry
from .redis_base import MAX_PER_CALL, RedisBase, _by_queue, _chunks, score


class RedisRebuild(RedisBase):
    def restore(self, entries: list[Entry], now: float) -> int:
        added = 0
        for queue, items in _by_queue(entries):
            for part in _chunks(items, 2000):
                pairs = json.dumps([[score(due, prio), str(job)] for job, due, prio in part])
                added += self._script("restore", list(self.keys(queue)), [repr(now), pairs])
        return added

    def _our_keys(self, match: str) -> list[bytes]:
        """Keys of this prefix matching a pattern, from every primary of a cluster (SCAN, never KEYS)."""
        return self._call(lambda: list(self.r.scan_iter(match=match, count=1000)))

    def members(self, batch: int = 1000, kinds: tuple[str, ...] = ("due", "inflight")
                ) -> Iterator[tuple[str, str, list[tuple[int, float]]]]:
        for key in self._our_keys("{" + self.prefix + ":*}:*"):
            name = key.decode()
            tag, _, kind = name.rpartition(":")
            queue = tag[len(self.prefix) + 2:-1]
            if kind not in kinds or self.keys(queue) != (tag + ":due", tag + ":inflight"):
                continue
            cursor = 0
            while True:   # one ZSCAN page a call, each retried alone: a page seen twice is harmless
                cursor, page = self._call(lambda: self.r.zscan(name, cursor, count=batch))
                if page:
                    yield queue, kind, [(int(member), raw) for member, raw in page]
                if not cursor:
                    break

    def claimed_by(self, holder: str) -> Iterator[tuple[str, list[int]]]:
        """(queue, ids) of the claims made by `holder` whose records still live (a few seconds): what a claimer
        that just died may have moved in flight without moving its rows to running."""
        for key in self._our_keys("{" + self.prefix + ":*}:claim:" + holder + "*"):
            name = key.decode()
            tag = name[:name.index("}") + 1]
            queue = tag[len(self.prefix) + 2:-1]
            raw = self._call(lambda: self.r.get(name))
            if raw:
                yield queue, [int(job) for job in json.loads(raw)]

    def stranded(self, now: float, limit: int = MAX_PER_CALL) -> Iterator[tuple[str, list[tuple[int, float]]]]:
        """(queue, [(job id, raw score)]) of in-flight members whose claim's hint ran out before `now`: a bounded
        range read per in-flight set (ZRANGEBYSCORE), never the whole set."""
        for key in self._our_keys("{" + self.prefix + ":*}:inflight"):
            name = key.decode()
            tag = name.rpartition(":")[0]
            queue = tag[len(self.prefix) + 2:-1]
            if self.keys(queue)[1] != name:
                continue
            page = self._call(lambda: self.r.zrangebyscore(name, "-inf", f"({now!r}", start=0, num=limit,
                                                            withscores=True))
            if page:
                yield queue, [(int(member), raw) for member, raw in page]

    def sizes(self) -> int:
        keys = self._our_keys("{" + self.prefix + ":*}:due")

        def zcard(pipe) -> None:
            for key in keys:
                pipe.zcard(key)
        return sum(self._pipeline(zcard)) if keys else 0

    def drop_unchanged(self, queue: str, which: str, members: list[tuple[int, float]]) -> int:
        key = self.keys(queue)[0 if which == "due" else 1]
        removed = 0
        for part in _chunks(members):
            args = [v for job, raw in part for v in (repr(raw), str(job))]
            removed += self._script("drop_unchanged", [key], args)
        return removed

    def checked_upto(self) -> int | None:
        """The last job id compensate looked at (newer_rows), or None when it never did or the key was lost."""
        raw = self._call(lambda: self.r.get("{" + self.prefix + "}:checked"))
        return int(raw) if raw else None

    def set_checked(self, job_id: int) -> None:
        self._call(lambda: self.r.set("{" + self.prefix + "}:checked", str(int(job_id))))

    def rebuild_due(self, every: float) -> bool:
        # A marker that FLUSHALL, a restart or an eviction wipes together with the sets, so a lost index is
        # rebuilt at once; it names the masters it was written under, so a failover (a replica promoted, which
        # may lack writes its old master acknowledged, and keeps the marker it copied) is rebuilt at once too,
        # even when no client saw the failover (marker.lua). A client that rode over one deletes it as well.
        mine = secrets.token_hex(8)

        def claim_marker() -> bool:
            client = self.r         # connected, its scripts loaded
            return bool(self._scripts["marker"](keys=[self._marker()], client=client,
                                                args=[mine, ",".join(self.masters()), max(1, int(every))]))
        return self._call(claim_marker)

    def masters(self) -> list[str]:
        """The run_id of every master holding this index, sorted: one server's, a Sentinel set's current
        master's, every primary of a cluster (a run_id is new with each process: a restart changes it too)."""
        if self.target.form == CLUSTER:
            infos = self.r.info("server", target_nodes=self.r.PRIMARIES)
            if "run_id" in infos:          # redis-py answers one node's INFO without the node's name
                infos = {"one": infos}
            return sorted(info["run_id"] for info in infos.values())
        return [self.r.info("server")["run_id"]]

    def rebuild_failed(self) -> None:
        try:
            self.r.delete(self._marker())
        except (redis.RedisError, RedisClusterException, BackendError):
            pass    # the marker expires on its own
