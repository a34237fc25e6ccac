"""The behavioural contract, run against every backend: SQLite, MySQL alone, MySQL + Redis."""

from __future__ import annotations

import pytest

import delayq
from delayq.errors import BackendError, InvalidInput, NotFound
from delayq.index.redis import RedisIndex
from delayq.runner import Runner
from tests.conftest import make_backend
from tests.helpers import run

NOOP = "examples.shop:noop"
FLAKY = "examples.shop:flaky_sync"


def test_job_runs_only_when_due_and_records_attempt(q, clock):
    job = q.enqueue(NOOP, delay=60)
    assert run(q).claimed == 0
    clock.advance(59.9)
    assert run(q).claimed == 0
    clock.advance(0.2)
    summary = run(q)
    assert (summary.claimed, summary.succeeded) == (1, 1)
    stored = q.store.get(job.id)
    assert stored.status == "succeeded" and stored.attempts == 1 and stored.finished_at == clock.now()
    attempts = q.reports.attempts(job.id)
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "succeeded")]
    assert run(q).claimed == 0


def test_failure_retries_on_the_ladder_then_succeeds(q, clock):
    job = q.enqueue(FLAKY, {"order_id": 1, "fail_times": 1}, ladder="10,20")
    assert run(q).retried == 1
    stored = q.store.get(job.id)
    assert stored.status == "pending" and stored.due_at == pytest.approx(clock.now() + 10)
    assert "ConnectionError: ERP timed out" in stored.last_error
    clock.advance(9)
    assert run(q).claimed == 0
    clock.advance(1)
    assert run(q).succeeded == 1
    assert [a.outcome for a in q.reports.attempts(job.id)] == ["retry", "succeeded"]


def test_attempts_exhausted_fail_the_job(q, clock):
    job = q.enqueue(FLAKY, {"order_id": 1, "fail_times": 99}, ladder="1", max_attempts=3)
    for _ in range(3):
        run(q)
        clock.advance(1)
    stored = q.store.get(job.id)
    assert stored.status == "failed" and stored.attempts == 3
    assert [a.outcome for a in q.reports.attempts(job.id)] == ["retry", "retry", "failed"]
    assert run(q).claimed == 0


def test_deadline_stops_retries(q, clock):
    job = q.enqueue(FLAKY, {"order_id": 1, "fail_times": 99}, ladder="30", deadline=45, max_attempts=5)
    run(q)
    clock.advance(30)
    run(q)   # the next retry would be at +60, past the deadline at +45: a failure, so failed (and alerted)
    assert q.store.get(job.id).status == "failed"


def test_permanent_fails_at_once(q):
    job = q.enqueue("examples.shop:refund_rejected", {"order_id": 7})
    assert run(q).failed == 1
    stored = q.store.get(job.id)
    assert stored.status == "failed" and stored.attempts == 1
    assert stored.last_error.startswith("Permanent: order 7 was already refunded")


def test_cancel_by_ext_stops_the_job(q, clock):
    keep = q.enqueue(NOOP, delay=10, ext="order:2")
    gone = q.enqueue(NOOP, delay=10, ext="order:1")
    result = q.cancel(ext="order:1")
    assert result.cancelled == [(gone.id, "default")] and result.untouched == []
    clock.advance(10)
    assert run(q).claimed == 1
    assert q.store.get(gone.id).status == "cancelled"
    assert q.store.get(keep.id).status == "succeeded"


def test_cancel_reports_jobs_that_are_not_pending(q):
    job = q.enqueue(NOOP, ext="order:9")
    run(q)
    result = q.cancel(ext="order:9")
    assert result.cancelled == [] and result.untouched == [(job.id, "succeeded")]
    with pytest.raises(NotFound):
        q.cancel(ext="order:unknown")
    with pytest.raises(NotFound):
        q.cancel(job_id=987654)


def test_cancel_is_limited_to_a_queue(q):
    a = q.enqueue(NOOP, delay=5, ext="order:3", queue="sms")
    b = q.enqueue(NOOP, delay=5, ext="order:3", queue="email")
    assert q.cancel(ext="order:3", queue="sms").cancelled == [(a.id, "sms")]
    assert q.store.get(b.id).status == "pending"


def test_job_cancelled_after_indexing_is_never_run(q, clock, tmp_path):
    log = tmp_path / "side-effects.log"
    job = q.enqueue("examples.shop:record", {"path": str(log), "tag": "x"})
    q.store.cancel(clock.now(), job_id=job.id)     # the row only: the index entry stays behind
    assert run(q).claimed == 0
    assert not log.exists()
    if isinstance(q.index, RedisIndex):
        inflight = q.index.keys("default")[1]
        assert q.index.r.zcard(inflight) == 0


def test_unique_returns_the_live_job(q):
    first = q.enqueue(NOOP, delay=5, ext="order:5", unique=True)
    again = q.enqueue(NOOP, delay=5, ext="order:5", unique=True)
    assert again.id == first.id and again.created is False
    other_queue = q.enqueue(NOOP, delay=5, ext="order:5", unique=True, queue="other")
    assert other_queue.created and other_queue.id != first.id
    not_unique = q.enqueue(NOOP, delay=5, ext="order:5")
    assert not_unique.created


def test_unique_allows_a_new_job_once_the_old_one_ended(q, clock):
    first = q.enqueue(NOOP, ext="order:6", unique=True)
    run(q)
    second = q.enqueue(NOOP, ext="order:6", unique=True)
    assert second.created and second.id != first.id
    q.cancel(job_id=second.id)
    third = q.enqueue(NOOP, ext="order:6", unique=True)
    assert third.created


def test_bulk_with_one_bad_item_writes_nothing(q, clock):
    items = [{"call": NOOP, "delay": 1}] * 5 + [{"call": NOOP, "delay": -1}]
    with pytest.raises(InvalidInput, match="item 6"):
        q.enqueue_many(items)
    clock.advance(5)
    assert run(q).claimed == 0


def test_bulk_enqueue_keeps_order_and_runs_all(q, clock):
    items = [{"call": NOOP, "delay": i % 7, "ext": f"order:{i}"} for i in range(1200)]
    results = q.enqueue_many(items)
    assert len({r.id for r in results}) == 1200
    assert [q.store.get(results[i].id).ext for i in (0, 599, 1199)] == ["order:0", "order:599", "order:1199"]
    clock.advance(10)
    total = sum(run(q, batch=500).succeeded for _ in range(4))
    assert total == 1200


def test_claims_never_share_a_job(backend, clock):
    a, b = backend.manager(), backend.manager()
    a.enqueue_many([{"call": NOOP}] * 300)
    first, second = a.claim(["default"], 200), b.claim(["default"], 200)
    ids_a, ids_b = {j.id for j in first}, {j.id for j in second}
    assert len(ids_a) == 200 and len(ids_b) == 100 and not ids_a & ids_b


def test_outcome_needs_the_claim_token(q, clock):
    job = q.enqueue(NOOP)
    jobs = q.claim(["default"], 10)
    runner = Runner(q, ["default"])
    outcome = runner.execute(jobs[0])
    mine, outcome.job.token = outcome.job.token, "someone-elses-token"
    assert q.finish([outcome]) == set()
    assert q.store.get(job.id).status == "running"
    outcome.job.token = mine
    assert q.finish([outcome]) == {job.id}
    assert q.store.get(job.id).status == "succeeded"


def edit_callable(q, backend, job_id, call):
    """What an operator (or an attacker with SQL access) might do by hand."""
    backend.sql("UPDATE {jobs} SET callable = ? WHERE id = ?", call, job_id)


def test_hand_edited_callable_is_refused_and_others_run(q, backend):
    bad = q.enqueue(NOOP, ext="edited")
    good = q.enqueue(NOOP, ext="fine")
    edit_callable(q, backend, bad.id, "os:system")
    summary = run(q)
    assert (summary.succeeded, summary.failed) == (1, 1)
    stored = q.store.get(bad.id)
    assert stored.status == "failed" and "CallableRefused" in stored.last_error and "'os'" in stored.last_error
    assert q.store.get(good.id).status == "succeeded"


def test_missing_module_fails_the_attempt_and_retries(q, backend):
    job = q.enqueue(NOOP)
    edit_callable(q, backend, job.id, "examples.gone:noop")
    assert run(q).retried == 1
    assert "ModuleNotFoundError" in q.store.get(job.id).last_error


def test_priority_runs_first_among_jobs_due_together(q, clock, tmp_path):
    log = tmp_path / "order.log"
    for tag, priority in (("low", -5), ("mid", 0), ("high", 9)):
        q.enqueue("examples.shop:record", {"path": str(log), "tag": tag}, priority=priority)
    run(q)
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["high", "mid", "low"]


def test_queues_are_separate(q, clock):
    q.enqueue(NOOP, queue="sms")
    q.enqueue(NOOP, queue="email")
    q.enqueue(NOOP)
    assert run(q, queues=["sms"]).claimed == 1
    assert run(q, queues=["default", "email"]).claimed == 2


def test_job_sees_its_context(q, tmp_path):
    log = tmp_path / "ctx.log"
    job = q.enqueue("examples.shop:record", {"path": str(log), "tag": "ctx"}, ext="order:77")
    run(q)
    assert log.read_text().split()[1] == str(job.id)
    assert delayq.current_job() is None


def test_marked_class_methods_run(q):
    a = q.enqueue("examples.shop:Orders.close", {"order_id": 1})
    b = q.enqueue("examples.shop:Orders.ping")
    assert run(q).succeeded == 2
    assert {q.store.get(a.id).status, q.store.get(b.id).status} == {"succeeded"}


def test_run_for_sleeps_until_the_next_due_job(q, clock):
    q.enqueue(NOOP, delay=2.5)
    q.enqueue(NOOP, delay=7)
    start = clock.now()
    summary = Runner(q, ["default"]).run_for(10, interval=5)
    assert summary.succeeded == 2
    assert clock.now() >= start + 10
    assert summary.passes <= 5   # woke for each due time and the interval, not a busy loop


def test_find_and_show(q):
    job = q.enqueue("examples.shop:record", ext="order:42", args={"path": "/dev/null", "tag": "中文"})
    assert [j.id for j in q.reports.find(ext="order:42")] == [job.id]
    assert q.reports.find(job_id=job.id)[0].args == {"path": "/dev/null", "tag": "中文"}
    with pytest.raises(NotFound):
        q.reports.find(ext="order:none")


def test_index_failure_on_enqueue_leaves_no_row(tmp_path, clock):
    backend = make_backend("mysql+redis", tmp_path, clock)   # only a separate index can fail after the row
    try:
        q = backend.manager(redis_url="redis://127.0.0.1:1/0")   # nothing listens on port 1
        with pytest.raises(BackendError, match="Redis at redis://127.0.0.1:1/0"):
            q.enqueue(NOOP, ext="order:lost")
        assert q.store.by_ext("order:lost") == []
    finally:
        backend.cleanup()


def test_outcomes_are_written_only_for_jobs_the_claim_still_holds(q, backend):
    a = q.enqueue(NOOP)
    b = q.enqueue(NOOP)
    jobs = q.claim(["default"], 10)
    runner = Runner(q, ["default"])
    outcomes = [runner.execute(job) for job in jobs]
    backend.sql("UPDATE {jobs} SET claim_token = 'other' WHERE id = ?", b.id)   # another runner took b over
    assert q.finish(outcomes) == {a.id}
    assert q.store.get(a.id).status == "succeeded"
    assert q.store.get(b.id).status == "running"
    assert len(q.reports.attempts(b.id)) == 1      # the run did happen: it stays in the audit trail


def test_pipelined_runner_writes_every_outcome_on_its_second_connection(backend, clock, tmp_path):
    q = backend.manager()
    log = tmp_path / "e.log"
    jobs = q.enqueue_many([{"call": "examples.shop:record", "args": {"path": str(log), "tag": "p"}}] * 450 +
                          [{"call": FLAKY, "args": {"order_id": 1, "fail_times": 1}, "ladder": "5"}] * 50)
    runner = Runner(q, ["default"], 100, pipeline=True)
    try:
        summary = runner.run_for(10, interval=1)
    finally:
        runner.close()
    assert (summary.claimed, summary.succeeded, summary.retried) == (550, 500, 50)
    assert {q.store.get(j.id).status for j in jobs} == {"succeeded"}
    assert len(log.read_text().splitlines()) == 450
