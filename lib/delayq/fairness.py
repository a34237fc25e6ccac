"""The order jobs are claimed in when a runner serves several queues (both indexes use it), and kept in once
started (in_order).

Higher priority first, across every queue the runner serves. Among jobs of the same
priority, the queues take turns (one job from each queue that has one, then the next
round), earliest due first within a round: a busy queue listed first cannot starve a
quiet one, and a quiet queue's job waits behind at most one job of each other queue.
"""

from __future__ import annotations

from typing import Sequence

from .jobs import Job


def fair_pick(candidates: Sequence[Sequence[Sequence]], limit: int) -> list[int]:
    """Ids to claim, at most `limit`, from each queue's due candidates.

    `candidates[q]` lists queue q's due jobs as (id, priority, due_at), highest priority
    first, then earliest due (the order each index walks); a queue may list more than
    `limit`, the rest stay due.
    """
    if len(candidates) == 1:
        return [row[0] for row in candidates[0][:limit]]
    ranked = []
    for rows in candidates:
        turn: dict[int, int] = {}       # per priority level: this queue's how-manieth job
        for job_id, priority, due_at in rows:
            n = turn[priority] = turn.get(priority, -1) + 1
            ranked.append((-priority, n, due_at, job_id))
    ranked.sort()
    return [job_id for _, _, _, job_id in ranked[:limit]]


def in_order(jobs: list[Job], ids: Sequence[int]) -> list[Job]:
    """The started jobs in the order they were claimed (priority first), not the database's."""
    rank = {job_id: i for i, job_id in enumerate(ids)}
    return sorted(jobs, key=lambda job: rank[job.id])
