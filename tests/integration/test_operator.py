"""The operator's verbs on every backend: bulk actions by filter, paused queues, heartbeats, metrics, check_ready."""

from __future__ import annotations

import pytest

from delayq import bulk
from delayq.errors import InvalidInput, SchemaError
from delayq.search import JobFilter
from delayq.store import open_store
from delayq.workers import MISSED, Heartbeat
from tests.conftest import MYSQL_URL, new_prefix, require
from tests.helpers import run

NOOP = "examples.shop:noop"
FAILS = "examples.shop:refund_rejected"
FLAKY = "examples.shop:flaky_sync"


def statuses(q, ids):
    return [q.reports.get(job).status for job in ids]


def metric(q):
    return {(queue, kind, name): (n, total) for queue, kind, name, n, total in q.reports.metrics()}


# -- bulk actions -------------------------------------------------------------------------
def test_bulk_cancel_by_each_filter_acts_on_pending_jobs_only(q, clock):
    sms = [q.enqueue(NOOP, queue="sms", ext=f"promo:{i}", delay=600).id for i in range(3)]
    mail = q.enqueue(FLAKY, {"order_id": 1}, queue="mail", ext="order:1", delay=600).id
    done = q.enqueue(NOOP, queue="sms", ext="promo:done").id
    run(q, ["sms"])
    clock.advance(1)
    late = q.enqueue(NOOP, queue="sms", ext="late", delay=600).id
    assert bulk.cancel(q, JobFilter(call=FLAKY)).sample_ids == [mail]
    assert bulk.cancel(q, JobFilter(ext_prefix="promo:", until=clock.now(), time_field="created")).total == 3
    result = bulk.cancel(q, JobFilter(ids=(late, done)))
    assert (result.total, result.per_queue, result.skipped) == (1, {"sms": 1}, {"succeeded": 1})
    assert statuses(q, [*sms, mail, done, late]) == ["cancelled"] * 4 + ["succeeded", "cancelled"]
    clock.advance(600)
    assert run(q, ["sms", "mail"]).claimed == 0           # gone from the due index too


def test_bulk_cancel_by_queue_status_error_and_time(q, clock):
    a = q.enqueue(FLAKY, {"order_id": 1}, queue="erp").id
    b = q.enqueue(NOOP, queue="erp", delay=3600).id
    c = q.enqueue(NOOP, queue="other", delay=3600).id
    run(q, ["erp"])                                     # a fails once: pending again, with its error
    assert bulk.cancel(q, JobFilter(queues=("erp",), error="ERP timed out")).sample_ids == [a]
    assert bulk.cancel(q, JobFilter(since=clock.now() + 1800, time_field="due", queues=("erp", "other"))).total == 2
    assert statuses(q, [a, b, c]) == ["cancelled"] * 3
    with pytest.raises(InvalidInput, match="cancel takes pending jobs only"):
        bulk.cancel(q, JobFilter(statuses=("failed",)))
    with pytest.raises(InvalidInput, match="needs a filter"):
        bulk.cancel(q, JobFilter())


@pytest.mark.parametrize("scan_by_id", [10, 1000])     # 30 matches: the primary key walked, or the optimizer's choice
def test_bulk_walks_in_batches_skips_what_changed_meanwhile_and_keeps_a_bounded_sample(q, monkeypatch, scan_by_id):
    monkeypatch.setattr(bulk, "BATCH", 7)
    monkeypatch.setattr(bulk, "SCAN_BY_ID", scan_by_id)
    ids = [r.id for r in q.enqueue_many([{"call": NOOP, "queue": "big", "delay": 600}] * 30)]
    cancel_ids, pages = q.store.cancel_ids, []

    def meanwhile(page, now):                           # between reading a page and changing it, a runner takes one
        if not pages:
            q.store.start([ids[-1]], "someone", now, 300)
        pages.append(len(page))
        return cancel_ids(page, now)

    monkeypatch.setattr(q.store, "cancel_ids", meanwhile)
    result = bulk.cancel(q, JobFilter(queues=("big",)))
    assert pages == [7, 7, 7, 7, 2]
    assert result.total == 29 and result.skipped == {"running": 1} and result.skipped_ids == [(ids[-1], "running")]
    assert len(result.sample_ids) == bulk.SAMPLE and not result.complete
    assert statuses(q, ids[:-1]) == ["cancelled"] * 29


def test_bulk_retry_with_step_at_and_a_unique_job_taken_meanwhile(q, clock, tmp_path):
    failed = [q.enqueue(FAILS, {"order_id": i}, queue="refund").id for i in range(3)]
    unique = q.enqueue(FAILS, {"order_id": 9}, queue="refund", ext="order:9", unique=True).id
    gift = q.enqueue("examples.shop:SendGift", {"path": str(tmp_path / "e.log"), "charge_fails": True},
                     queue="refund").id
    run(q, ["refund"])
    q.enqueue(NOOP, queue="refund", ext="order:9", unique=True, delay=60)     # its key is live again
    result = bulk.retry(q, JobFilter(queues=("refund",)), step="charge_user", at=clock.now() + 30)
    assert result.sample_ids == [gift] and result.skipped == {"no step 'charge_user'": 4}
    result = bulk.retry(q, JobFilter(queues=("refund",), statuses=("failed",)), reset_attempts=True)
    assert sorted(result.sample_ids) == failed
    assert result.skipped == {"unique: another job with its queue and ext is live": 1}
    assert statuses(q, [*failed, unique, gift]) == ["pending"] * 3 + ["failed", "pending"]
    assert q.reports.get(gift).due_at == clock.now() + 30 and q.reports.get(failed[0]).attempts == 0
    assert run(q, ["refund"]).claimed == 3              # due now; the gift job waits for its `at`


def test_bulk_purge_takes_final_statuses_and_keeps_the_counters(q, clock):
    ok = [q.enqueue(NOOP, queue="p").id for _ in range(3)]
    bad = q.enqueue(FAILS, {"order_id": 1}, queue="p").id
    waiting = q.enqueue(NOOP, queue="p", delay=3600).id
    run(q, ["p"])
    before = metric(q)
    assert before[("p", "outcome", "succeeded")][0] == 3 and before[("p", "jobs", "enqueued")][0] == 5
    with pytest.raises(InvalidInput, match="purge takes final statuses only"):
        bulk.purge(q, JobFilter(queues=("p",), statuses=("pending",)))
    result = bulk.purge(q, JobFilter(queues=("p",)))
    assert result.total == 4 and result.per_queue == {"p": 4}
    assert [q.reports.get(job) for job in [*ok, bad]] == [None] * 4 and q.reports.attempts(ok[0]) == []
    assert q.reports.get(waiting).status == "pending"
    assert metric(q) == before                          # folded into the totals, not lost


def test_a_purge_from_cron_counts_no_match_beyond_what_it_deletes(q, clock, monkeypatch, capsys):
    """With --yes and no terminal nothing is previewed: a preview's count reads every match (10 million rows for
    the scale bench's purge), and the walk decides its index from a bounded count."""
    import argparse
    from delayq.commands import _filters
    ids = [q.enqueue(NOOP, queue="p").id for _ in range(3)]
    run(q, ["p"])
    counted = []
    monkeypatch.setattr(q.store, "count", lambda *a: counted.append(a) or [])
    args = argparse.Namespace(yes=True, dry_run=False, json=True, quiet=False)
    assert _filters.act(args, q, "purge", JobFilter(queues=("p",)), lambda f, progress: bulk.purge(q, f, progress)) == 0
    assert counted == [] and [q.reports.get(job) for job in ids] == [None] * 3
    assert '"deleted": 3' in capsys.readouterr().out


def test_single_job_retry_and_age_purge_keep_their_behaviour(q, clock):
    job = q.enqueue(FAILS, {"order_id": 1})
    run(q)
    assert q.retry(job_id=job.id) == [job.id]
    run(q)
    clock.advance(3 * 86400 + 1)
    assert bulk.purge_older(q, ["failed"], 3 * 86400) == 1 and q.reports.get(job.id) is None


# -- paused queues ----------------------------------------------------------------------------
def test_a_paused_queue_is_skipped_by_every_runner_and_resumes(backend, clock):
    operator, first, second = backend.manager(), backend.manager(), backend.manager()
    sms = [operator.enqueue(NOOP, queue="sms").id for _ in range(3)]
    mail = operator.enqueue(NOOP, queue="mail").id
    assert operator.control.pause("sms", "gateway down") is True and operator.control.pause("sms") is False
    assert operator.control.paused_queues()["sms"][1] == "gateway down"
    clock.advance(1)                                    # each runner trusts its last read for a second
    assert (run(first, ["sms", "mail"]).claimed, run(second, ["sms"]).claimed) == (1, 0)
    assert first.next_due(["sms"]) is None              # a runner does not spin on a paused queue's due jobs
    late = operator.enqueue(NOOP, queue="sms").id        # enqueue still works while paused
    assert operator.control.resume("sms") is True and operator.control.resume("sms") is False
    assert run(second, ["sms"]).claimed == 0            # its read of a second ago still says paused
    clock.advance(1)
    assert run(second, ["sms"]).claimed == 4
    assert statuses(operator, [*sms, late, mail]) == ["succeeded"] * 5


# -- heartbeats -----------------------------------------------------------------------------
def test_heartbeat_shows_live_runner_with_its_jobs_then_stopped_or_lost(q, clock):
    running = [(41, clock.now() - 2.5)]
    beat = Heartbeat(q.control, ["default", "sms"], 8, lambda: list(running), every=5).start()
    try:
        [w] = q.control.workers()
        assert (w.state, w.queues, w.concurrency, w.running) == ("live", ["default", "sms"], 8, running)
        running.append((42, clock.now()))
        beat.beat()
        assert [job for job, _ in q.control.workers()[0].running] == [41, 42]
    finally:
        beat.stop()
    [w] = q.control.workers()
    assert w.state == "stopped" and w.running == []
    other = Heartbeat(q.control, ["default"], 1, lambda: [], every=5)
    other.beat()                                        # beats once, then its process dies
    clock.advance(5 * MISSED + 1)
    assert {w.id: w.state for w in q.control.workers()}[other.id] == "lost"
    assert {w.id: round(w.quiet_for) for w in q.control.workers()}[other.id] == 16


# -- stats and metrics from the attempts ---------------------------------------------------------
def test_recent_failures_are_counted_from_attempts_so_a_retry_does_not_hide_them(q, clock):
    job = q.enqueue(FAILS, {"order_id": 1}, queue="r")
    run(q, ["r"])
    q.retry(job_id=job.id)
    rows = {(queue, outcome): (hour, minute) for queue, outcome, hour, minute, *_ in q.reports.recent_attempts()}
    assert rows[("r", "failed")] == (1, 1)
    clock.advance(120)
    rows = {(queue, outcome): (hour, minute) for queue, outcome, hour, minute, *_ in q.reports.recent_attempts()}
    assert rows[("r", "failed")] == (1, 0)


def test_metrics_count_outcomes_durations_and_lateness_per_queue(q, clock):
    q.enqueue(NOOP, queue="m", delay=10)
    q.enqueue(FLAKY, {"order_id": 1}, queue="m", ladder="5")
    q.enqueue(NOOP, queue="m", delay=600)
    bulk.cancel(q, JobFilter(queues=("m",), since=clock.now() + 60))
    run(q, ["m"])
    clock.advance(12)
    run(q, ["m"])
    m = metric(q)
    assert m[("m", "jobs", "enqueued")][0] == 3 and m[("m", "jobs", "cancelled")][0] == 1
    assert (m[("m", "outcome", "succeeded")][0], m[("m", "outcome", "retry")][0]) == (2, 1)
    assert m[("m", "duration", "0.005")][0] == 3 and m[("m", "duration", "0.005")][1] == 0   # the fake clock stood still
    # started 0 s (the first try), 2 s (due at +10, run at +12) and 7 s (the retry, due at +5) after their due times
    assert [m[("m", "lateness", b)] for b in ("0.1", "2", "10")] == [(1, 0.0), (1, 2.0), (1, 7.0)]


# -- fail fast ---------------------------------------------------------------------------------
def test_check_ready_proves_the_schema_with_one_query(q):
    from delayq.store.queries import latest_version

    assert q.check_ready() == latest_version(q.store.dialect)


def test_check_ready_names_an_unmigrated_prefix():
    require("mysql")
    from delayq.clock import FakeClock
    from delayq.index import StoreIndex
    from delayq.manager import Manager
    from delayq.registry import Registry

    store = open_store(MYSQL_URL, new_prefix())
    manager = Manager(store, StoreIndex(store), Registry(("examples",)), FakeClock())
    with pytest.raises(SchemaError, match='no delayq tables at mysql://.* \\(prefix \\w+\\): run "delayq migrate"'):
        manager.check_ready()
    manager.close()
