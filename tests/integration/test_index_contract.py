"""The DueIndex contract (index/base.py), one suite run on every index: the in-database index on SQLite and
MariaDB, and Redis over MariaDB and over SQLite. Whoever indexes, claims: each test claims through the index.
"""

from __future__ import annotations

import itertools
import threading

import pytest

from delayq.index import RebuildableIndex
from delayq.jobs import JobSpec, RUNNING
from tests.conftest import INDEXES, REBUILDABLE, make_backend

NOW = 1_800_000_000.0


def _world(kind, tmp_path, clock):
    backend = make_backend(kind, tmp_path, clock)
    manager = backend.manager()
    yield manager.store, manager.index
    backend.cleanup()


@pytest.fixture(params=INDEXES)
def world(request, tmp_path, clock):
    yield from _world(request.param, tmp_path, clock)


@pytest.fixture(params=REBUILDABLE)
def kept_apart(request, tmp_path, clock):
    """An index kept apart from the rows (Redis): it can lose entries, and be rebuilt."""
    yield from _world(request.param, tmp_path, clock)


def add(store, index, n=1, **kw):
    specs = [JobSpec(**{"call": "examples.shop:noop", "args_json": "{}", "due_at": NOW, **kw}) for _ in range(n)]
    rows = store.insert_jobs(specs, NOW)
    index.add([(r.id, s.queue, s.due_at, s.priority) for r, s in zip(rows, specs)])
    return [r.id for r in rows]


_tokens = itertools.count()


def claim(index, queues=("default",), now=NOW, limit=100, token=None):
    """A claim under a new token (the manager makes one a claim), or under `token`."""
    return index.claim(list(queues), now, limit, token or f"tok{next(_tokens)}", 300.0)


def test_a_job_is_claimed_once_it_is_due_and_then_runs_under_the_token(world):
    store, index = world
    [job] = add(*world, due_at=NOW + 10)
    assert claim(index, now=NOW + 9.9) == []
    [got] = claim(index, now=NOW + 10, token="tok")
    assert (got.id, got.token, got.attempts) == (job, "tok", 1) and store.get(job).status == RUNNING
    assert claim(index, now=NOW + 20) == []


def test_concurrent_claims_never_share_a_job(world):
    store, index = world
    add(store, index, 300)
    got, barrier = [], threading.Barrier(3)

    def runner(n):
        barrier.wait()
        for i in range(4):
            got.extend(j.id for j in claim(index, limit=30, token=f"t{n}-{i}"))

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 300 and len(set(got)) == 300


def test_priority_first_among_due_jobs_then_earliest_due(world):
    store, index = world
    low = add(store, index, 3, due_at=NOW - 60)
    [high] = add(store, index, due_at=NOW - 1, priority=7)
    [later] = add(store, index, due_at=NOW + 60, priority=9)          # highest, but not due
    [negative] = add(store, index, due_at=NOW - 3600, priority=-2)
    got = [j.id for j in claim(index, limit=5)]
    assert got == [high, *low, negative] and later not in got


def test_a_quiet_queue_is_not_starved_by_a_busy_one(world):
    store, index = world
    busy = add(store, index, 200, queue="busy", due_at=NOW - 100)
    [quiet] = add(store, index, queue="quiet", due_at=NOW - 1)
    got = [j.id for j in claim(index, queues=("busy", "quiet"), limit=10)]
    assert quiet in got and len(got) == 10 and set(got) - {quiet} <= set(busy)


def test_priority_wins_across_queues(world):
    store, index = world
    add(store, index, 20, queue="a", due_at=NOW - 100)
    urgent = add(store, index, 2, queue="b", due_at=NOW, priority=3)
    got = [j.id for j in claim(index, queues=("a", "b"), limit=4)]
    assert got[:2] == urgent


def test_removed_or_no_longer_pending_jobs_are_not_claimed(world):
    store, index = world
    removed, stale, ok = add(store, index, 3)
    store.cancel(NOW, job_id=removed)
    index.remove([(removed, "default")])
    store.cancel(NOW, job_id=stale)                 # the row only: its index entry stays behind
    assert [j.id for j in claim(index)] == [ok]
    assert claim(index) == []


def test_a_committed_retry_is_due_again_at_its_new_time(world):
    store, index = world
    [job] = add(*world)
    [got] = claim(index)
    from delayq.jobs import Outcome, PENDING
    store.finish([Outcome(got, PENDING, NOW, NOW, "boom", NOW + 30)], NOW)
    index.reschedule([(job, "default", NOW + 30, 0)])
    assert claim(index, now=NOW + 29) == []
    assert [j.id for j in claim(index, now=NOW + 30)] == [job]


def test_next_due_spans_queues_and_priorities(world):
    store, index = world
    add(store, index, due_at=NOW + 50, priority=5)
    add(store, index, due_at=NOW + 20, queue="b")
    add(store, index, due_at=NOW + 40, priority=-1)
    assert index.next_due(["default"]) == pytest.approx(NOW + 40, abs=0.01)
    assert index.next_due(["default", "b"]) == pytest.approx(NOW + 20, abs=0.01)
    assert index.next_due(["empty"]) is None


def test_a_job_written_in_the_callers_transaction_is_indexed_after_its_commit(world):
    store, index = world
    spec = JobSpec(call="examples.shop:noop", args_json="{}", due_at=NOW)
    # what insert_jobs_on leaves once the application committed
    [row] = store.insert_jobs([spec], NOW, index_pending=index.follows_commit)
    got = claim(index)                  # a claim catches up with the outbox first (throttled to every 0.5 s)
    assert [j.id for j in got] == [row.id]
    assert store.outbox(10) == []


def test_a_lost_entry_is_restored_once_with_its_priority(kept_apart):
    store, index = kept_apart
    assert isinstance(index, RebuildableIndex)
    job = add(store, index, priority=4)[0]
    index.remove([(job, "default")])                    # lost (a FLUSHALL, a failover)
    assert index.restore([(job, "default", NOW, 4)], NOW) == 1
    assert index.restore([(job, "default", NOW, 4)], NOW) == 0
    [got] = claim(index)
    assert got.id == job and got.priority == 4


QUEUES = [f"q{i}" for i in range(6)]         # on the Cluster: spread over its three masters


def test_a_runner_of_many_queues_claims_from_each_once(world):
    store, index = world
    ids = {queue: add(store, index, 5, queue=queue) for queue in QUEUES}
    got = [j for _ in range(3) for j in claim(index, queues=QUEUES, limit=12)]
    assert sorted(j.id for j in got) == sorted(job for jobs in ids.values() for job in jobs)
    assert {j.queue for j in got[:6]} == set(QUEUES)          # the queues take turns
    assert index.next_due(QUEUES) is None and claim(index, queues=QUEUES) == []


def test_a_claim_repeated_under_its_token_takes_nothing_more(kept_apart):
    """A claim whose reply a failover lost is retried under the same record: it returns what the first took (a worker
    claims under one token all its life; each claim has a record of its own)."""
    store, index = kept_apart
    add(store, index, 6)
    first = index.claim_lua("default", NOW, 3, repr(NOW + 300), "lost-reply")
    assert len(first) == 3
    assert index.claim_lua("default", NOW, 3, repr(NOW + 300), "lost-reply") == first
    again = index.claim(["default"], NOW, 3, "worker", 300.0, record="lost-reply")   # the whole claim, rows started once
    assert [j.id for j in again] == first and {store.get(j).attempts for j in first} == {1}
    assert len(index.claim(["default"], NOW, 10, "worker", 300.0)) == 3          # a new claim: the other three


def test_every_queue_is_counted_and_scanned_on_every_node(kept_apart):
    store, index = kept_apart
    for queue in QUEUES:
        add(store, index, 4, queue=queue)
    claim(index, queues=QUEUES[:1], limit=2)
    assert index.sizes() == 22
    seen = {(queue, kind): len(page) for queue, kind, page in index.members(batch=3)}
    assert {q for q, _ in seen} == set(QUEUES) and seen[("q0", "inflight")] == 2
