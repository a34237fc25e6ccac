"""Issue 4's job patterns on every backend: stepped polling to a deadline, events, queue defaults."""

from __future__ import annotations

from collections import Counter

import pytest

from delayq.errors import InvalidInput
from tests.helpers import effects, run

POLL = "examples.shop:poll_payment"


def step_until_idle(q, clock, queues=("default",), limit=200):
    """Run passes, jumping the clock to the next due time, until nothing is scheduled."""
    for _ in range(limit):
        run(q, queues)
        nxt = q.next_due(list(queues))
        if nxt is None:
            return
        clock.t = max(clock.t, nxt)
    raise AssertionError("still scheduled after %d passes" % limit)


def test_polling_snoozes_on_the_stepped_ladder_until_paid(q, clock, tmp_path):
    log = tmp_path / "e.log"
    job = q.enqueue(POLL, {"trade_no": "T1", "path": str(log), "paid_after": 7}, ladder="stepped", deadline=180,
                    ext="order:1", unique=True)
    gaps, last = [], clock.now()
    for _ in range(8):
        summary = run(q)
        stored = q.store.get(job.id)
        if stored.status == "pending":
            assert summary.snoozed == 1 and summary.failed == 0
            gaps.append(stored.due_at - last)
            clock.t = last = stored.due_at
    assert gaps == [1, 1, 1, 1, 1, 5, 5]
    stored = q.store.get(job.id)
    assert stored.status == "succeeded" and stored.last_error is None
    assert [a.outcome for a in q.reports.attempts(job.id)] == ["snoozed"] * 7 + ["succeeded"]
    assert effects(log) == Counter(poll=8, paid=1)
    assert q.store.alerts_due(10) == []


def test_deadline_ends_polling_and_the_timeout_handler_runs_once(q, clock, tmp_path):
    log = tmp_path / "e.log"
    start = clock.now()
    job = q.enqueue(POLL, {"trade_no": "T2", "path": str(log), "paid_after": -1}, ladder="stepped", deadline=180,
                    on_timeout="examples.shop:mark_timed_out", ext="order:2", unique=True)
    assert q.enqueue(POLL, {"trade_no": "T2", "path": str(log)}, ext="order:2", unique=True).created is False
    step_until_idle(q, clock)
    stored = q.store.get(job.id)
    assert stored.status == "timed_out" and stored.finished_at <= start + 180
    assert effects(log)["timeout"] == 1
    assert 20 < effects(log)["poll"] < 40          # 5 + 5 + 10 steps, then every 30 s up to 180 s
    [handler] = [j for j in q.reports.find(ext="order:2") if j.id != job.id]
    assert handler.call == "examples.shop:mark_timed_out" and handler.status == "succeeded"
    assert handler.args == stored.args
    assert q.store.alerts_due(10) == []            # a timeout is not a failure
    again = q.enqueue(POLL, {"trade_no": "T2", "path": str(log)}, ext="order:2", unique=True)
    assert again.created                           # the timed-out poller no longer holds the key


def test_a_job_due_after_its_deadline_expires_without_running(q, clock, tmp_path):
    log = tmp_path / "e.log"
    job = q.enqueue(POLL, {"trade_no": "T3", "path": str(log)}, delay=10, deadline=20)
    clock.advance(30)                              # the runners were down meanwhile
    done = run(q)
    assert (done.expired, done.timed_out) == (1, 0)                 # the deadline's word, not the time limit's
    assert q.store.get(job.id).status == "timed_out" and not log.exists()      # stored as before (words.py)


def test_failures_while_polling_follow_the_ladder_and_limits(q, clock):
    job = q.enqueue("examples.shop:flaky_sync", {"order_id": 1, "fail_times": 99}, ladder="stepped", max_attempts=3,
                    deadline=180)
    step_until_idle(q, clock)
    stored = q.store.get(job.id)
    assert stored.status == "failed" and stored.attempts == 3
    assert [a.outcome for a in q.reports.attempts(job.id)] == ["retry", "retry", "failed"]


def test_deadline_as_a_time_and_on_timeout_needs_a_deadline(q, clock):
    from datetime import datetime, timezone
    at = datetime.fromtimestamp(clock.now() + 600, timezone.utc).isoformat()
    assert q.store.get(q.enqueue(POLL, {"trade_no": "T", "path": "/dev/null"}, deadline=at).id).deadline == \
        pytest.approx(clock.now() + 600)
    with pytest.raises(InvalidInput, match="on_timeout needs a deadline"):
        q.enqueue(POLL, {"trade_no": "T", "path": "/dev/null"}, on_timeout="examples.shop:mark_timed_out")
    with pytest.raises(InvalidInput, match="not under DELAYQ_ALLOWED_MODULES"):
        q.enqueue(POLL, {"trade_no": "T", "path": "/dev/null"}, deadline=60, on_timeout="os:system")


def test_emit_creates_one_job_per_handler_each_on_its_own(backend, clock, tmp_path):
    q = backend.manager()
    q.event_modules = ("examples.events",)
    log = tmp_path / "e.log"
    event_id, jobs = q.emit("order.completed", {"order_id": 1, "path": str(log), "total": 650, "erp_down": True})
    assert len(jobs) == 3
    found = q.reports.find(event_id=event_id)
    assert {j.call.split(":")[1] for j in found} == {"upgrade_to_diamond", "send_email", "sync_to_erp"}
    assert {j.queue for j in found} == {"default", "mail"} and {j.event for j in found} == {"order.completed"}
    run(q, ["default", "mail"])
    statuses = {j.call.split(":")[1]: j.status for j in q.reports.find(event_id=event_id)}
    assert statuses == {"upgrade_to_diamond": "succeeded", "send_email": "succeeded", "sync_to_erp": "pending"}
    assert effects(log) == Counter(diamond=1, email=1, erp=1)


def test_emit_refuses_unknown_events_and_unlisted_modules(backend):
    q = backend.manager()
    with pytest.raises(InvalidInput, match="DELAYQ_EVENT_MODULES is empty"):
        q.emit("order.completed", {})
    q.event_modules = ("examples.events",)
    with pytest.raises(InvalidInput, match="no handler for event 'order.refunded'"):
        q.emit("order.refunded", {})
    q.event_modules = ("os",)
    with pytest.raises(InvalidInput, match="not under DELAYQ_ALLOWED_MODULES"):
        q.emit("order.completed", {})


def test_queue_defaults_apply_and_explicit_options_win(backend, clock):
    q = backend.manager()
    q.queues = {"sms": {"ladder": "alipay", "max_attempts": 3, "priority": 5}}
    a = q.store.get(q.enqueue("examples.shop:noop", queue="sms").id)
    assert (a.ladder, a.max_attempts, a.priority) == ("alipay", 3, 5)
    b = q.store.get(q.enqueue("examples.shop:noop", queue="sms", max_attempts=9, ladder="15").id)
    assert (b.ladder, b.max_attempts) == ("15", 9)
    c = q.store.get(q.enqueue("examples.shop:noop").id)
    assert (c.ladder, c.max_attempts) == ("wechat", 16)


def test_a_poller_whose_api_keeps_failing_fails_at_the_deadline_and_its_handler_runs(q, clock, tmp_path):
    log = tmp_path / "e.log"
    job = q.enqueue("examples.shop:flaky_sync", {"order_id": 9, "fail_times": 999, "path": str(log)}, ladder="stepped",
                    max_attempts=1000, deadline=60, on_timeout="examples.shop:mark_timed_out", ext="order:9")
    step_until_idle(q, clock)
    stored = q.store.get(job.id)
    assert stored.status == "failed" and "ConnectionError" in stored.last_error
    assert [j["id"] for j in q.store.alerts_due(10)] == [job.id]
    assert effects(log)["timeout"] == 1


def test_polling_without_a_deadline_times_out_at_max_attempts(q, clock, tmp_path):
    job = q.enqueue(POLL, {"trade_no": "T4", "path": str(tmp_path / "e.log"), "paid_after": -1}, ladder="1",
                    max_attempts=4)
    step_until_idle(q, clock)
    stored = q.store.get(job.id)
    assert stored.status == "timed_out" and "max_attempts reached" in stored.last_error
    assert q.store.alerts_due(10) == []
