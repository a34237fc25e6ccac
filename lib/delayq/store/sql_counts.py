"""How many jobs each queue holds, by status, at a cost that does not grow with the tables (issue 26).

A group (queue, status) of at most `most` jobs is counted on each read from the by_claim index (status, queue,
priority DESC, due_at), stopping at `most` + 1. Bigger groups (a week of pending auto-confirms, millions of
succeeded jobs) would cost a read of every entry, so compensate counts them (count_groups, once a minute at most
each) into {counts}, and a read shows that count and when it was made. The queues come from a loose scan of the
uniq_live index; a queue's pending priorities from one dive each, so due jobs are counted per priority: a range
of by_claim read from its start, never the future jobs behind it.
"""

from __future__ import annotations

import time
from typing import Any

from ..jobs import PENDING, STATUSES
from .base import Group

PRIORITY_ABOVE = 2 ** 15       # above every priority (a SMALLINT)


class CountsSql:
    run: Any
    tx: Any
    retried: Any
    integrity_error: Any

    def queue_figures(self, now: float, most: int) -> list[Group]:
        groups: list[Group] = []
        with self.tx(write=False) as cur:
            counted = {(queue, status): (int(n), float(at))
                       for queue, status, n, at in self.run(cur, "counted").fetchall()}
            for (queue,) in self.run(cur, "queues_present").fetchall():
                for status in STATUSES:
                    big = counted.get((queue, status))
                    if big and big[0] > most:     # big when compensate counted it: a live count would stop at most
                        groups.append(Group(queue, status, big[0], counted_at=big[1]))
                        continue
                    n = int(self.run(cur, "count_group_upto", queue=queue, status=status, most=most + 1).fetchone()[0])
                    if n > most:                  # grew past `most` since compensate looked
                        groups.append(Group(queue, status, n, at_least=True))
                    elif n:
                        groups.append(Group(queue, status, n))
            return [self._with_due(cur, g, now, most) if g.status == PENDING else g for g in groups]

    def _with_due(self, cur: Any, group: Group, now: float, most: int) -> Group:
        due, oldest, upcoming = 0, None, None
        below = PRIORITY_ABOVE
        while True:
            row = self.run(cur, "next_pending_priority", queue=group.queue, below=below).fetchone()
            if row is None:
                break
            priority = row[0]
            n, first, after = self.run(cur, "due_figures", queue=group.queue, priority=priority, now=now,
                                       most=most + 1).fetchone()
            due += int(n)
            if first is not None:
                oldest = float(first) if oldest is None else min(oldest, float(first))
            if after is not None:
                upcoming = float(after) if upcoming is None else min(upcoming, float(after))
            below = int(priority)
        return group._replace(due_now=min(due, most + 1), oldest_due=oldest, next_due=upcoming)

    def count_groups(self, now: float, most: int, every: float, budget: float) -> int:
        began, done = time.monotonic(), 0
        with self.tx(write=False) as cur:
            counted = {(queue, status): float(at) for queue, status, _, at in self.run(cur, "counted").fetchall()}
            queues = [row[0] for row in self.run(cur, "queues_present").fetchall()]
        stale = [(queue, status) for queue in queues for status in STATUSES
                 if now - counted.get((queue, status), float("-inf")) >= every]
        stale += [group for group in counted if group[0] not in queues]       # a queue with no job left
        stale.sort(key=lambda group: counted.get(group, float("-inf")))       # the oldest counts first
        for queue, status in stale:
            if time.monotonic() - began >= budget:
                break
            with self.tx(write=False) as cur:
                n = int(self.run(cur, "count_group_upto", queue=queue, status=status, most=most + 1).fetchone()[0])
                if n > most:
                    n = int(self.run(cur, "count_group", queue=queue, status=status).fetchone()[0])
            if n <= most and (queue, status) not in counted:
                continue                          # small, and no count of it to forget: nothing to write
            try:
                self.retried(lambda cur: self._put_count(cur, queue, status, n if n > most else None, now))
            except _CountedMeanwhile:
                continue
            done += n > most
        return done

    def _put_count(self, cur: Any, queue: str, status: str, n: int | None, now: float) -> None:
        self.run(cur, "forget_count", queue=queue, status=status)
        if n is not None:
            try:
                self.run(cur, "put_count", queue=queue, status=status, n=n, at=now)
            except self.integrity_error:
                raise _CountedMeanwhile from None


class _CountedMeanwhile(Exception):
    """Another compensate put the same group's count in meanwhile: this transaction is rolled back, its stands."""
