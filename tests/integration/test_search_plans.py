"""Which index MariaDB reads for the searches issue 26 timed (benchmarks/scale.py measures them at 20 million rows):
the shape of the world there, small. Old finished jobs in four queues (a few failed, a few finished just now), then
a block of newer pending jobs in `default`; the plan of each search as Reports.search sends it. Without migration
14's indexes these fail; the hints of sql_reporting._order change the plan only at millions of rows, where the
optimizer's estimates mislead it: their effect is measured by `make bench-scale`, not here."""

from __future__ import annotations

import re
import time

import pytest

from delayq.jobs import JobSpec
from delayq.search import JobFilter
from tests.conftest import make_backend

QUEUES = ("default", "sms", "mail", "erp")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from delayq.clock import FakeClock
    backend = make_backend("mysql", tmp_path_factory.mktemp("plans"), FakeClock())
    store = backend.manager().store
    now = time.time()
    old = [JobSpec(call="examples.shop:noop", args_json="{}", due_at=now - 86400, queue=QUEUES[i % 4],
                   ext=f"order:{i}") for i in range(3000)]
    low = min(r.id for r in store.insert_jobs(old, now))
    store.insert_jobs([JobSpec(call="examples.shop:noop", args_json="{}", due_at=now + 86400 + i, ext=f"order:{i}")
                       for i in range(3000, 9000)], now)
    backend.sql("UPDATE {jobs} SET status = CASE WHEN MOD(id, 100) = 7 THEN 'failed' ELSE 'succeeded' END, "
                "finished_at = ? WHERE id < ?", now - 86000, low + 3000)
    backend.sql("UPDATE {jobs} SET finished_at = ? WHERE id < ?", now - 60, low + 4)
    backend.sql("ANALYZE TABLE {jobs}")
    store.failed_ids = {r[0] for r in backend.sql("SELECT id FROM {jobs} WHERE status = 'failed'")}
    store.ids_of = {status: sorted((r[0] for r in backend.sql("SELECT id FROM {jobs} WHERE status = ?", status)),
                                   reverse=True) for status in ("succeeded", "pending")}
    yield store, now
    backend.cleanup()


def index_read(store, f: JobFilter, walk: bool = False, extra: bool = False) -> str:
    """The index the first statement of store.search(f) (walk: of a bulk action's walk over many jobs,
    store.search_keys) reads, as MariaDB's EXPLAIN says."""
    sent = []
    compose = store.q.compose
    store.q.compose = lambda *a, **k: sent.append(compose(*a, **k)) or sent[-1]
    try:
        store.search_keys(f.checked(), None, 500, by_id=True) if walk else store.search(f.checked(), None, 51)
    finally:
        del store.q.compose
    sql, bound = sent[0]
    with store.tx(write=False) as cur:
        cur.execute("EXPLAIN " + sql, bound)
        names = [d[0] for d in cur.description]
        row = dict(zip(names, cur.fetchone()))
        return f"{row['key']}: {row['Extra']}" if extra else row["key"]


def test_a_queue_reads_by_queue(world):
    store, _ = world
    assert index_read(store, JobFilter(queues=("sms",))) == "by_queue"


def test_failed_reads_its_by_claim_entries_not_the_primary_key_back_through_the_backlog(world):
    store, _ = world
    assert index_read(store, JobFilter(statuses=("failed",))) == "by_claim"
    assert index_read(store, JobFilter(statuses=("failed",), ext_prefix="order:")) == "by_claim"
    # the first step takes ids from by_claim's entries alone: no row read for a predicate the index lacks
    plan = index_read(store, JobFilter(statuses=("failed",), ext_prefix="order:"), extra=True)
    assert re.search(r"Using index(;|$)", plan), plan          # not "Using index condition": that reads rows


def test_pending_and_succeeded_read_by_is_finished_the_live_or_the_finished_rows_alone(world):
    store, _ = world
    assert index_read(store, JobFilter(statuses=("succeeded",))) == "by_is_finished"
    assert index_read(store, JobFilter(statuses=("pending",))) == "by_is_finished"


def test_a_purge_walks_the_finished_rows_and_a_cancel_the_live_ones_not_the_whole_primary_key(world):
    store, now = world
    assert index_read(store, JobFilter(statuses=("succeeded", "failed"), time_field="finished", until=now - 3600),
                      walk=True) == "by_is_finished"
    assert index_read(store, JobFilter(statuses=("pending",), queues=("default",)), walk=True) == "by_is_finished"
    assert index_read(store, JobFilter(queues=("default",)), walk=True) == "PRIMARY"
    keys = store.search_keys(JobFilter(statuses=("succeeded",)).checked(), None, 7, by_id=True)
    assert [job for job, _, _ in keys] == store.ids_of["succeeded"][:7]


def test_finished_in_the_last_minutes_reads_by_finished(world):
    store, now = world
    assert index_read(store, JobFilter(time_field="finished", since=now - 600)) == "by_finished"
    # with a status too: by_is_finished would read every finished row to find the few of the last minutes
    assert index_read(store, JobFilter(statuses=("succeeded",), time_field="finished", since=now - 600)) == \
        "by_finished"


def test_the_pages_find_what_the_rows_hold(world):
    store, now = world
    failed = store.search(JobFilter(statuses=("failed",)).checked(), None, 100)
    assert {r["id"] for r in failed} == store.failed_ids and len(failed) >= 29
    assert [r["id"] for r in failed] == sorted((r["id"] for r in failed), reverse=True)
    recent = store.search(JobFilter(time_field="finished", since=now - 600).checked(), None, 100)
    assert len(recent) == 4
    sms = store.search(JobFilter(queues=("sms",)).checked(), None, 10)
    assert len(sms) == 10 and {r["queue"] for r in sms} == {"sms"}
    ids = lambda status, before, n: [r["id"] for r in store.search(JobFilter(statuses=(status,)).checked(),  # noqa
                                                                    before, n)]
    succeeded, pending = store.ids_of["succeeded"], store.ids_of["pending"]
    assert ids("succeeded", None, 10) == succeeded[:10] and ids("succeeded", succeeded[99], 5) == succeeded[100:105]
    assert ids("pending", None, 5) == pending[:5] and ids("pending", pending[99], 5) == pending[100:105]
    assert ids("pending", pending[-1], 5) == [] and ids("succeeded", succeeded[-1], 5) == []


def test_on_sqlite_a_walk_and_a_page_of_succeeded_jobs_read_by_is_finished(tmp_path):
    from delayq.store import open_store
    store = open_store(f"sqlite:///{tmp_path}/plans.db", "plans")
    store.migrate(time.time())
    sent = []
    compose = store.q.compose
    store.q.compose = lambda *a, **k: sent.append(compose(*a, **k)) or sent[-1]
    try:
        store.search_keys(JobFilter(statuses=("succeeded", "failed")).checked(), None, 500, by_id=True)
        store.search(JobFilter(statuses=("succeeded",)).checked(), None, 51)
    finally:
        del store.q.compose
    with store.tx(write=False) as cur:
        for sql, bound in sent:
            cur.execute("EXPLAIN QUERY PLAN " + sql, bound)
            assert "plans_jobs_by_is_finished" in " ".join(str(row[-1]) for row in cur.fetchall()), sql
    store.close()
