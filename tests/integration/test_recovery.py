"""Issue 3's promises on every backend: leases, crash recovery, index rebuild, steps, retry, purge."""

from __future__ import annotations

from collections import Counter

import pytest


from delayq import bulk, recovery
from delayq.index.redis import CLAIM_WINDOW
from delayq.jobs import claim_token
from delayq.retries import UNKNOWN
from delayq.errors import InvalidInput, NotFound
from delayq.runner import Runner
from tests.conftest import REBUILDABLE, make_backend
from tests.helpers import effects, run

NOOP = "examples.shop:noop"


def crash_after_claim(q, limit=200):
    """A runner that claimed (rows running) and died before recording anything."""
    return q.claim(["default"], limit)


def lua_claim_only(q, now):
    """A runner that claimed in Redis (due -> in flight) and died before moving the rows to running."""
    return q.index.claim_lua("default", now, 10, repr(now + q.lease), "died-before-its-update")


def test_killed_runner_job_runs_again_and_the_interrupted_attempt_counts(q, clock):
    job = q.enqueue(NOOP)
    crash_after_claim(q)
    clock.advance(q.lease - 1)
    assert recovery.recover_expired(q) == []            # lease not run out yet
    clock.advance(2)
    recovered = recovery.recover_expired(q)
    assert [(r.id, r.status) for r in recovered] == [(job.id, "pending")]
    assert recovery.recover_expired(q) == []            # a second compensate run finds nothing
    assert run(q).succeeded == 1
    assert [a.outcome for a in q.reports.attempts(job.id)] == ["interrupted", "succeeded"]
    assert q.store.get(job.id).attempts == 2


def test_a_claim_committed_late_does_not_hand_its_jobs_an_expired_lease(q, clock):
    """Issue 21, invariant 3 (found by the short fault check): a worker's claim set its leases at `now`, then a
    batch-mate held the worker's interpreter (a C call) for longer than the lease before the claim could commit;
    its rows were locked meanwhile, so the supervisor's renewal skipped them, and they committed with their lease
    already run out: compensate took over a job that was about to run, and it ran twice.

    Right answer: a claim that comes back a third of a lease or more after its `now` renews its jobs' leases
    before returning them: compensate right after finds nothing to take over."""
    job = q.enqueue(NOOP)
    claim = q.index.claim

    def held_up(*args, **kw):             # the claim's UPDATE ran at `now`; its commit a lease later
        jobs = claim(*args, **kw)
        clock.advance(q.lease + 2)
        return jobs
    q.index.claim = held_up
    assert [j.id for j in q.claim(["default"], 10)] == [job.id]
    assert recovery.recover_expired(q) == []
    assert q.store.get(job.id).lease_until >= clock.now() + q.lease - 1


def test_a_lease_renewed_between_recovery_s_read_and_its_write_keeps_its_job(q, clock):
    """docs/RELIABILITY.md, the long fault check's invariant-3 finding: compensate read a row whose lease had run
    out, the live holder's late renewal committed, then compensate wrote its outcome (checking the claim token
    alone) and the job ran again beside its live first run. Right answer: the write checks the lease again."""
    job = q.enqueue(NOOP)
    [claimed] = crash_after_claim(q)
    clock.advance(q.lease + 1)
    expired = q.store.expired

    def renewed_meanwhile(now, limit):     # the holder's renewal lands just after compensate's read
        found = expired(now, limit)
        assert q.keep_alive([claimed]) == 1
        return found
    q.store.expired = renewed_meanwhile
    assert recovery.recover_expired(q) == []
    del q.store.expired
    row = q.store.get(job.id)
    assert (row.status, row.token) == ("running", claimed.token) and q.reports.attempts(job.id) == []
    clock.advance(q.lease + 1)                           # no renewal this time: the lease runs out and is taken over
    assert [(r.id, r.status) for r in recovery.recover_expired(q)] == [(job.id, "pending")]


def test_interrupted_job_without_attempts_left_fails(q, clock):
    job = q.enqueue(NOOP, max_attempts=1)
    crash_after_claim(q)
    clock.advance(q.lease + 1)
    recovery.recover_expired(q)
    stored = q.store.get(job.id)
    assert stored.status == "failed" and "no attempts left" in stored.last_error


def test_at_most_once_job_that_began_is_never_rerun(q, clock, tmp_path):
    log = tmp_path / "effects.log"
    job = q.enqueue("examples.shop:charge", {"path": str(log)})
    assert q.store.get(job.id).max_attempts == 1
    jobs = crash_after_claim(q)
    assert q.begin(jobs[0])          # it began (and charged), then the host died
    clock.advance(q.lease + 1)
    recovery.recover_expired(q)
    stored = q.store.get(job.id)
    assert stored.status == "failed" and stored.last_error.endswith(UNKNOWN)
    clock.advance(3600)
    assert run(q).claimed == 0
    assert [a.outcome for a in q.reports.attempts(job.id)] == ["interrupted"]
    assert [j["id"] for j in q.store.alerts_due(10)] == [job.id]


def test_at_most_once_job_claimed_but_not_begun_may_run_once(q, clock, tmp_path):
    log = tmp_path / "effects.log"
    job = q.enqueue("examples.shop:charge", {"path": str(log)})
    crash_after_claim(q)
    clock.advance(q.lease + 1)
    [r] = recovery.recover_expired(q)
    assert r.status == "pending" and q.store.get(job.id).attempts == 0
    assert run(q).succeeded == 1
    assert effects(log)["charge"] == 1


def test_paused_runner_does_not_begin_an_at_most_once_job_taken_over(q, clock, tmp_path):
    log = tmp_path / "effects.log"
    q.enqueue("examples.shop:charge", {"path": str(log)})
    jobs = crash_after_claim(q)                        # the runner is paused here (GC, swap, SIGSTOP)
    clock.advance(q.lease + 1)
    recovery.recover_expired(q)
    runner = Runner(q, ["default"])
    assert runner.execute(jobs[0]) is None      # wakes up: must not charge
    assert run(q).succeeded == 1                                   # the recovered job runs once
    assert effects(log)["charge"] == 1


def test_failed_at_most_once_job_is_not_retried(q, tmp_path):
    job = q.enqueue("examples.shop:charge", {"path": str(tmp_path / "e.log"), "fail": True})
    assert run(q).failed == 1
    assert q.store.get(job.id).status == "failed"


def test_a_long_job_extends_its_lease(q, clock):
    job = q.enqueue(NOOP, lease=60)
    jobs = crash_after_claim(q)
    assert jobs[0].lease_until == pytest.approx(clock.now() + 60)
    clock.advance(50)
    assert q.extend(jobs[0], 120)
    clock.advance(100)                                  # past the first lease, within the extension
    assert recovery.recover_expired(q) == []
    clock.advance(30)
    assert [r.id for r in recovery.recover_expired(q)] == [job.id]
    assert not q.extend(jobs[0], 60)        # the claim is gone now


def test_queue_lease_applies_to_its_jobs(backend, clock):
    q = backend.manager()
    q.queues = {"report": {"lease": 3600}}
    q.enqueue(NOOP, queue="report")
    jobs = q.claim(["report"], 10)
    assert jobs[0].lease_until == pytest.approx(clock.now() + 3600)


def test_steps_run_independently_and_only_failed_auto_steps_rerun(q, clock, tmp_path):
    log = tmp_path / "effects.log"
    job = q.enqueue("examples.shop:SendGift", {"path": str(log), "star_failures": 1}, ladder="5")
    assert run(q).retried == 1
    assert effects(log) == Counter(star=1, charge=1, notify=1)     # the failing step held nothing back
    clock.advance(5)
    assert run(q).succeeded == 1
    assert effects(log) == Counter(star=2, charge=1, notify=1)
    steps = {s.name: (s.status, s.attempts) for s in q.store.steps(job.id)}
    assert steps == {"add_week_star": ("succeeded", 2), "charge_user": ("succeeded", 1), "notify": ("succeeded", 1)}


def test_failed_manual_step_fails_the_job_once_and_a_person_can_rerun_it(q, clock, tmp_path, backend):
    log = tmp_path / "effects.log"
    job = q.enqueue("examples.shop:SendGift", {"path": str(log), "charge_fails": True}, ladder="5")
    assert run(q).failed == 1
    stored = q.store.get(job.id)
    assert stored.status == "failed" and "manual step(s) failed: charge_user" in stored.last_error
    assert [j["id"] for j in q.store.alerts_due(10)] == [job.id]
    clock.advance(3600)
    assert run(q).claimed == 0 and effects(log)["charge"] == 1
    backend.sql("UPDATE {jobs} SET args = ? WHERE id = ?", '{"path": "%s"}' % log, job.id)   # the cause is fixed
    assert q.retry(job_id=job.id, step="charge_user") == [job.id]
    assert q.store.alerts_due(10) == []
    assert run(q).succeeded == 1
    assert effects(log) == Counter(star=1, charge=2, notify=1)


def test_manual_step_interrupted_mid_run_is_failed_not_rerun(q, clock, tmp_path):
    log = tmp_path / "effects.log"
    job = q.enqueue("examples.shop:SendGift", {"path": str(log)})
    jobs = crash_after_claim(q)
    q.store.ensure_steps(job.id, [("add_week_star", "auto"), ("charge_user", "manual"), ("notify", "auto")], clock.now())
    assert q.store.begin_step(job.id, "add_week_star", jobs[0].token, clock.now())
    assert q.store.begin_step(job.id, "charge_user", jobs[0].token, clock.now())   # then the host died
    clock.advance(q.lease + 1)
    [r] = recovery.recover_expired(q)
    assert r.status == "failed" and r.error.endswith(UNKNOWN)
    steps = {s.name: s.status for s in q.store.steps(job.id)}
    assert steps == {"add_week_star": "pending", "charge_user": "failed", "notify": "pending"}


def test_retry_by_ext_and_reset_attempts(q, clock):
    job = q.enqueue("examples.shop:refund_rejected", {"order_id": 1}, ext="order:1")
    run(q)
    with pytest.raises(NotFound):
        q.retry(ext="order:unknown")
    assert q.retry(ext="order:1", reset_attempts=True, at=clock.now() + 60) == [job.id]
    stored = q.store.get(job.id)
    assert stored.status == "pending" and stored.attempts == 0 and stored.due_at == clock.now() + 60
    with pytest.raises(NotFound, match="is pending"):
        q.retry(job_id=job.id)
    clock.advance(60)
    assert run(q).failed == 1


def test_purge_deletes_old_finished_jobs_with_history_and_keeps_failed(q, clock):
    old = q.enqueue(NOOP)
    failed = q.enqueue("examples.shop:refund_rejected", {"order_id": 2})
    run(q)
    clock.advance(4 * 86400)
    recent = q.enqueue(NOOP)
    run(q)
    assert bulk.purge_older(q, ["succeeded", "cancelled"], 3 * 86400, batch=1) == 1
    assert q.store.get(old.id) is None and q.reports.attempts(old.id) == []
    assert q.store.get(failed.id).status == "failed" and q.store.get(recent.id).status == "succeeded"


@pytest.fixture(params=[kind for kind in REBUILDABLE if kind.startswith("mysql")])
def redis_q(request, tmp_path, clock):
    """MySQL + Redis (one server, Sentinel, Cluster): the other backends have no separate index to lose."""
    backend = make_backend(request.param, tmp_path, clock)
    yield backend.manager()
    backend.cleanup()


def test_rebuild_restores_a_flushed_index(redis_q, clock):
    q = redis_q
    jobs = q.enqueue_many([{"call": NOOP, "delay": i % 5} for i in range(1200)])
    cancelled = q.enqueue(NOOP)
    q.store.cancel(clock.now(), job_id=cancelled.id)       # its index entry is left behind
    due, inflight = q.index.keys("default")
    q.index.r.delete(due)                                  # FLUSHALL, eviction, a lost failover write...
    result = recovery.reconcile(q.store, q.index, q.clock)
    assert (result.scanned, result.restored) == (1200, 1200)
    assert q.index.r.zcard(due) == 1200
    assert recovery.reconcile(q.store, q.index, q.clock).restored == 0             # idempotent
    clock.advance(5)
    assert sum(run(q, batch=500).succeeded for _ in range(3)) == len(jobs)


def test_a_rebuild_reads_a_span_of_ids_at_a_time_past_finished_rows_and_pages_within_one(redis_q, clock, monkeypatch):
    """Pending rows behind a block of finished ones: each read walks SPAN ids at most (10 million finished rows in
    one statement would outlast DELAYQ_DB_TIMEOUT), and a span with more than a PAGE of pending rows is read on."""
    q = redis_q
    monkeypatch.setattr(recovery, "SPAN", 7)
    monkeypatch.setattr(recovery, "PAGE", 3)
    done = q.enqueue_many([{"call": NOOP} for _ in range(20)])
    q.store.cancel_ids([j.id for j in done], clock.now())
    pending = q.enqueue_many([{"call": NOOP, "delay": 1} for _ in range(11)])
    reads = []
    real = q.store.pending_page
    monkeypatch.setattr(q.store, "pending_page", lambda a, u, n: reads.append((a, u)) or real(a, u, n))
    q.index.r.delete(*q.index.keys("default"))
    result = recovery.reconcile(q.store, q.index, q.clock)
    assert (result.scanned, result.restored) == (11, 11)
    assert all(0 < upto - after <= 7 for after, upto in reads) and reads[-1][1] == pending[-1].id
    clock.advance(2)
    assert run(q, batch=50).succeeded == 11


def test_rebuild_drops_stale_members_and_frees_stranded_claims(redis_q, clock):
    q = redis_q
    gone = q.enqueue(NOOP)
    stranded = q.enqueue(NOOP)
    q.store.cancel(clock.now(), job_id=gone.id)
    ids = lua_claim_only(q, clock.now())      # claimed in Redis, then the runner died before its UPDATE
    assert set(ids) == {gone.id, stranded.id}
    assert recovery.reconcile(q.store, q.index, q.clock).restored == 0             # a live claim is left alone
    clock.advance(q.lease + 1)
    result = recovery.reconcile(q.store, q.index, q.clock)
    assert result.restored == 1 and result.dropped == 1
    due, inflight = q.index.keys("default")
    assert q.index.r.zrange(due, 0, -1) == [str(stranded.id).encode()]
    assert q.index.r.zcard(inflight) == 0
    assert run(q).succeeded == 1


def test_a_claim_cut_between_its_two_steps_is_due_again_at_the_next_compensate(redis_q, clock):
    """Issue 21: a runner killed between its Redis claim and its rows' update stranded the ids in flight until the
    next full rebuild (minutes). The claim's hint is short, and every compensate run puts them back."""
    q = redis_q
    gone, stranded = q.enqueue(NOOP), q.enqueue(NOOP)
    q.store.cancel(clock.now(), job_id=gone.id)
    now = clock.now()
    q.index.claim(["default"], now, 10, claim_token("dying-claimer-01"), q.lease)     # the whole claim: both steps
    q.store.unclaim(q.held("dying-claimer-01"), now)                   # undo the rows' step: as if never done
    assert run(q).claimed == 0 and recovery.requeue_stranded(q.store, q.index, q.clock.now()) == 0             # in flight, its hint not yet out
    hint = CLAIM_WINDOW + q.index.failover.wait                           # not the lease: it may be hours
    clock.advance(hint + 1)
    assert q.lease > hint + 1 and recovery.requeue_stranded(q.store, q.index, q.clock.now()) == 1
    due, inflight = q.index.keys("default")
    assert q.index.r.zcard(inflight) == 0                                 # the cancelled one's member is gone too
    assert run(q).succeeded == 1 and q.store.get(stranded.id).status == "succeeded"    # the stranded one ran


def test_the_claims_of_a_claimer_seen_dying_are_due_again_at_once(redis_q, clock):
    """Its supervisor saw it die: its last claims' records name what it may have left in flight."""
    q = redis_q
    job, other = q.enqueue(NOOP), q.enqueue(NOOP)
    now = clock.now()
    dead, live = "dead-worker-0123", "live-worker-0123"            # holders: a claim token's first 16 characters
    q.index.claim(["default"], now, 1, claim_token(dead), q.lease)
    q.index.claim(["default"], now, 1, claim_token(live), q.lease)
    q.store.unclaim(q.held(dead), now)                         # its rows' step undone: it died between the two
    assert recovery.requeue_claims(q.store, q.index, live) == 0                         # a live claim's rows are running: left alone
    assert recovery.requeue_claims(q.store, q.index, dead) == 1
    assert run(q).succeeded == 1 and q.store.get(job.id).status == "succeeded"
    assert q.store.get(other.id).status == "running"


def test_a_row_whose_index_entry_never_came_is_indexed_at_the_next_compensate(redis_q, clock):
    """An enqueue whose reply was lost (the row committed, its ZADD never sent): one compensate run later, not the
    next full rebuild's."""
    q = redis_q
    q.enqueue(NOOP)
    assert recovery.index_newer(q.store, q.index, q.clock.now()) == 0                          # the first look only marks where the rows are
    [lost] = q.store.insert_jobs([q.validate({"call": NOOP}, clock.now())], clock.now())
    assert recovery.index_newer(q.store, q.index, q.clock.now()) == 0 and run(q).claimed == 1  # too new to judge: its entry may still be coming
    clock.advance(6)
    assert recovery.index_newer(q.store, q.index, q.clock.now()) == 1 and recovery.index_newer(q.store, q.index, q.clock.now()) == 0
    assert run(q).succeeded == 1 and q.store.get(lost.id).status == "succeeded"


def test_rebuild_runs_once_per_interval_and_at_once_after_a_wipe(redis_q):
    q = redis_q
    assert q.index.rebuild_due(600) is True
    assert q.index.rebuild_due(600) is False           # another host, or the next minute
    q.enqueue(NOOP)
    for key in q.index.r.scan_iter(match="{" + q.index.prefix + "*"):
        q.index.r.delete(key)                          # what FLUSHALL does to our keys
    assert q.index.rebuild_due(600) is True


def test_retry_of_an_unknown_step_is_refused(q, tmp_path):
    job = q.enqueue("examples.shop:SendGift", {"path": str(tmp_path / "e.log"), "charge_fails": True})
    run(q)
    with pytest.raises(InvalidInput, match="has no step 'nosuch': its steps are add_week_star, charge_user, notify"):
        q.retry(job_id=job.id, step="nosuch")
    assert q.store.get(job.id).status == "failed"


def test_retry_keeps_a_unique_job_unique(q):
    job = q.enqueue("examples.shop:refund_rejected", {"order_id": 1}, ext="order:u", unique=True)
    run(q)
    q.retry(job_id=job.id)
    again = q.enqueue(NOOP, ext="order:u", unique=True)
    assert again.id == job.id and again.created is False


def test_retry_refuses_when_another_unique_job_is_live(q):
    job = q.enqueue("examples.shop:refund_rejected", {"order_id": 1}, ext="order:v", unique=True)
    run(q)
    q.enqueue(NOOP, ext="order:v", unique=True, delay=60)
    with pytest.raises(InvalidInput, match="another job with its queue and ext is live"):
        q.retry(job_id=job.id)


def test_at_most_once_class_marks_its_static_methods_too(q):
    job = q.enqueue("examples.shop:Payments.refund", {"order_id": 1})
    stored = q.store.get(job.id)
    assert stored.at_most_once and stored.max_attempts == 1


def test_extend_takes_sane_seconds(q):
    q.enqueue(NOOP)
    jobs = q.claim(["default"], 1)
    for bad in (0, -5, 8 * 86400):
        with pytest.raises(InvalidInput):
            q.extend(jobs[0], bad)


def test_rebuild_drops_a_stale_due_member(redis_q, clock):
    q = redis_q
    keep = q.enqueue(NOOP, delay=60)
    gone = q.enqueue(NOOP, delay=60)
    q.store.cancel(clock.now(), job_id=gone.id)            # crash before the ZREM: a stale due member
    result = recovery.reconcile(q.store, q.index, q.clock)
    assert (result.scanned, result.restored, result.dropped) == (1, 0, 1)
    assert q.index.r.zrange(q.index.keys("default")[0], 0, -1) == [str(keep.id).encode()]
