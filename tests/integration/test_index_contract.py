"""The DueIndex contract (index/base.py), one suite run on every index: the in-database index on SQLite and
MariaDB, and Redis over MariaDB and over SQLite. Whoever indexes, claims: each test claims through the index.
"""

from __future__ import annotations

import itertools
import threading
import time

import pytest
import redis

from delayq.errors import BackendError
from delayq.index import RebuildableIndex
from delayq.jobs import HOLDER, RUNNING, SUCCEEDED, JobSpec, Outcome, new_holder
from tests.conftest import INDEXES, REBUILDABLE, drop_redis, make_backend
from tests.helpers import until

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


def in_flight(index) -> set[int]:
    return {job for _, _, page in index.members(kinds=("inflight",)) for job, _ in page}


def another_host(index, store):
    """The same Redis index as another host opens it: the same URL and prefix, its own connections."""
    return type(index)(index.target.url, index.prefix, store)


def wipe(index) -> None:
    """Every key of the index lost at once, as a FLUSHALL or a failover to an empty replica loses them."""
    drop_redis(index.prefix, index.target.url)


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


def test_a_released_job_leaves_the_in_flight_set_only(world):
    store, index = world
    done, running = add(store, index, 2)
    [later] = add(store, index, due_at=NOW + 60)
    claimed = {j.id: j for j in claim(index)}
    store.finish([Outcome(claimed[done], SUCCEEDED, NOW, NOW + 1)], NOW + 1)
    index.release([(done, "default"), (later, "default")])      # `later` is due, not in flight: it stays due
    if isinstance(index, RebuildableIndex):
        assert in_flight(index) == {running}
    assert [j.id for j in claim(index, now=NOW + 3600)] == [later] and index.next_due(["default"]) is None


def test_server_time_is_the_clock_of_the_due_times_in_epoch_seconds(world):
    _, index = world
    before = time.time()
    now = index.server_time()
    after = time.time()
    assert isinstance(now, float) and before - 1 <= now <= after + 1     # one host: the same clock, in seconds


def test_check_passes_on_an_index_that_answers_and_names_the_cause_otherwise(world):
    store, index = world
    assert index.check() is None
    if index.follows_commit:                            # kept apart from the rows: it can be away
        away = type(index)("redis://127.0.0.1:1/0", index.prefix, store)
        with pytest.raises(BackendError, match=r"^Redis at redis://127\.0\.0\.1:1/0 is unreachable: .*is the server"):
            away.check()
        away.close()


def test_catch_up_indexes_the_jobs_committed_in_the_callers_transaction_and_says_how_many(world):
    store, index = world
    rows = store.insert_jobs([spec_at(NOW + i) for i in range(3)], NOW, index_pending=index.follows_commit)
    if index.follows_commit:
        assert index.next_due(["default"]) is None                   # committed, not indexed yet
        assert index.catch_up(limit=2) == 2 and index.next_due(["default"]) == pytest.approx(NOW, abs=0.01)
        assert index.catch_up() == 1
    assert index.catch_up() == 0 and store.outbox(10) == []     # nothing left (in the database: the rows are the index)
    assert [j.id for j in claim(index, now=NOW + 2)] == [r.id for r in rows]


def spec_at(due_at: float) -> JobSpec:
    return JobSpec(call="examples.shop:noop", args_json="{}", due_at=due_at)


def connections(index) -> list[tuple[str, int, str | None]]:
    """(server address, CLIENT ID, password) of each connection the index holds, as its server sees it: on one server,
    the Sentinel set's master and each sentinel, or each primary of a Cluster."""
    r, target = index.r, index.target
    if hasattr(r, "get_nodes"):
        infos = [(r.client_info(target_nodes=node), target.password) for node in r.get_nodes()]
    else:
        sentinels = getattr(r.connection_pool, "sentinel_manager", None)
        password = target.options.get("sentinel_password")
        infos = [(r.client_info(), target.password)] + [(sentinel.client_info(), password)
                                                        for sentinel in (sentinels.sentinels if sentinels else [])]
    return [(info["laddr"], info["id"], password) for info, password in infos]


def still_open(address: str, client_id: int, password: str | None) -> bool:
    host, port = address.rsplit(":", 1)
    with redis.Redis(host=host, port=int(port), password=password, socket_timeout=5) as fresh:
        return bool(fresh.client_list(client_id=[client_id]))


def test_close_releases_every_connection_the_index_opened(kept_apart):
    """The in-database index holds no connection of its own (the store's are the store's). On a Cluster every
    node's connections close (RedisCluster.close only hands them back to their pools), on a Sentinel set the
    sentinels' too (redis-py closes only the master's pool); the next use connects again."""
    store, index = kept_apart
    add(store, index)
    held = connections(index)
    index.close()
    until(lambda: not [c for c in held if still_open(*c)], timeout=5, detail=f"still open: {[c[:2] for c in held]}")
    assert index.next_due(["default"]) is not None       # connected again


def test_the_rows_compensate_checked_are_remembered_across_hosts_until_the_index_is_lost(kept_apart):
    store, index = kept_apart
    assert index.checked_upto() is None
    index.set_checked(41)
    index.set_checked(42)
    other = another_host(index, store)
    assert index.checked_upto() == 42 and other.checked_upto() == 42
    wipe(index)
    assert other.checked_upto() is None
    other.close()


def test_a_holder_s_recent_claims_are_found_by_its_name(kept_apart):
    store, index = kept_apart
    a = add(store, index, 2, queue="a")
    b = add(store, index, 1, queue="b")
    add(store, index, 1, queue="c")
    holder, stranger = new_holder("t"), new_holder("t")
    claim(index, queues=("a", "b"), token=holder + "1" * HOLDER)
    claim(index, queues=("c",), token=stranger + "1" * HOLDER)
    assert sorted((queue, sorted(ids)) for queue, ids in index.claimed_by(holder)) == [("a", a), ("b", b)]
    assert list(index.claimed_by(new_holder("t"))) == []


def test_in_flight_members_are_stranded_once_their_claim_s_hint_has_passed(kept_apart):
    store, index = kept_apart
    add(store, index, 3)
    [other] = add(store, index, queue="b")
    claim(index, queues=("default", "b"))
    assert list(index.stranded(NOW)) == []                      # claimed now: its rows are being moved to running
    late = dict(index.stranded(NOW + 300))                     # a hint is never after the lease
    assert sorted(late) == ["b", "default"] and len(late["default"]) == 3 and [j for j, _ in late["b"]] == [other]
    hint = late["b"][0][1]
    assert NOW < hint <= NOW + 300 and list(index.stranded(hint)) == []          # strictly before `now`
    assert {queue: len(page) for queue, page in index.stranded(NOW + 300, limit=2)} == {"default": 2, "b": 1}


def test_drop_unchanged_removes_only_the_members_whose_score_is_still_the_one_read(kept_apart):
    store, index = kept_apart
    *_, moved = add(store, index, 3)
    [(_, _, read)] = index.members(kinds=("due",))
    index.add([(moved, "default", NOW + 60, 0)])                  # re-added since the read: a new score
    assert index.drop_unchanged("default", "due", read) == 2 and index.sizes() == 1
    assert [j.id for j in claim(index, now=NOW + 60)] == [moved]
    [(_, _, flying)] = index.members(kinds=("inflight",))
    assert index.drop_unchanged("default", "inflight", flying) == 1 and in_flight(index) == set()
    assert index.drop_unchanged("default", "due", read) == 0


def test_a_rebuild_is_due_once_per_interval_across_hosts_and_at_once_after_the_index_was_lost(kept_apart):
    store, index = kept_apart
    other = another_host(index, store)
    assert index.rebuild_due(3600) and not other.rebuild_due(3600) and not index.rebuild_due(3600)
    wipe(index)                                                   # lost with the sets: rebuild now
    assert other.rebuild_due(3600) and not index.rebuild_due(3600)
    other.rebuild_failed()                                        # that rebuild failed: the next run rebuilds
    assert index.rebuild_due(1) and not other.rebuild_due(1)
    began = time.monotonic()
    until(lambda: other.rebuild_due(1), timeout=5)              # once `every` seconds went by
    assert time.monotonic() - began >= 0.9
    other.close()


def test_a_job_a_limit_holds_back_is_due_again_later_and_not_lost_from_the_index(world):
    from delayq.limits import QueueLimit, RECHECK
    store, index = world
    keyed = add(store, index, 3, limit_key="order:1", limit_max=1)
    free = add(store, index, 1)
    assert sorted(j.id for j in claim(index)) == [keyed[0], *free]
    assert claim(index, now=NOW + 0.5) == []                                   # held until NOW + RECHECK
    assert index.next_due(["default"]) == pytest.approx(NOW + RECHECK, abs=0.01)
    assert claim(index, now=NOW + RECHECK + 0.01) == []                       # its holder still runs: held again
    store.set_limits({"r": QueueLimit(rate=20.0)})
    rated = add(store, index, 5, queue="r")
    assert len(claim(index, ("r",))) == 2                                     # its bucket: 2 starts
    assert len(claim(index, ("r",), now=NOW + 0.31)) == 2                     # refilled: 2 more (its burst)
    assert len(claim(index, ("r",), now=NOW + 10)) == 1 and len(rated) == 5   # every job of it started once
