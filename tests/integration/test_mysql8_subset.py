"""The store keeps to what MySQL 8 and MariaDB >= 10.6 both document (docs/ARCHITECTURE.md, "SQL: the common
subset"). No MySQL 8 server is installable here, so MariaDB runs every named query of the mysql dialect the way
MySQL 8 would: with MySQL 8's default sql_mode (ONLY_FULL_GROUP_BY, STRICT_TRANS_TABLES, ...) on each connection
and without INSERT ... RETURNING, which only MariaDB has (the store then inserts one row at a time)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from delayq.errors import BackendError
from delayq.jobs import FAILED, PENDING, SUCCEEDED, TIMED_OUT, JobSpec, Outcome
from delayq.search import JobFilter
from delayq.store.queries import Queries, load
from tests.conftest import drop_mysql, mysql8_store, new_prefix, require

NOW = 1_800_000_000.0
MARIADB_ONLY = {"insert_jobs_json"}        # INSERT ... RETURNING: MySQL 8 takes insert_job, one row at a time


@pytest.fixture
def recorded(monkeypatch):
    """The names of the queries (and filter fragments) executed while the test runs."""
    ran: set[str] = set()
    call, compose = Queries.__call__, Queries.compose

    def recording_call(self, name, /, **params):
        ran.add(name)
        return call(self, name, **params)

    def recording_compose(self, name, parts, tokens, /, **params):
        ran.update([name, *parts])
        return compose(self, name, parts, tokens, **params)

    monkeypatch.setattr(Queries, "__call__", recording_call)
    monkeypatch.setattr(Queries, "compose", recording_compose)
    return ran


@pytest.fixture
def store():
    require("mysql")
    prefix = new_prefix()
    s = mysql8_store(prefix)
    yield s
    s.close()
    drop_mysql(prefix)


def spec(**kw) -> JobSpec:
    return JobSpec(**{"call": "examples.shop:noop", "args_json": "{}", "due_at": NOW, **kw})


def test_every_query_of_the_mysql_dialect_runs_in_mysql_8s_sql_mode_without_returning(store, recorded):
    store.migrate(NOW)                                   # the migrations' DDL too, in strict mode
    with store.tx() as cur:
        cur.execute("SELECT @@SESSION.sql_mode")
        assert set(cur.fetchone()[0].split(",")) >= {"ONLY_FULL_GROUP_BY", "STRICT_TRANS_TABLES"}
    assert abs(store.server_time() - NOW) < 10 ** 9
    _jobs(store)
    _claims_and_outcomes(store)
    _steps_and_recovery(store)
    _maintenance_and_reports(store)
    _schedules_and_limits(store)
    big = [r.id for r in store.insert_jobs([spec(queue="big", args_json='{"b": "%s"}' % ("x" * 60_000))] * 20, NOW)]
    assert len(store.start(big, "t7", NOW, 60)) == 20          # too big to pack in one value: select_claimed's rows
    missing = set(load("mysql")) - MARIADB_ONLY - recorded
    assert missing == set() and not recorded & MARIADB_ONLY


def test_a_first_write_of_several_rows_is_all_or_nothing_without_returning():
    """A store that has not connected yet does not know whether its server has RETURNING: several rows go in
    one transaction on MySQL 8 (one INSERT each), never as separate statements that each commit."""
    require("mysql")
    prefix = new_prefix()
    first = mysql8_store(prefix)
    first.migrate(NOW)
    first.close()
    fresh = mysql8_store(prefix)
    try:
        with pytest.raises(BackendError, match="Data too long"):
            fresh.insert_jobs([spec(ext="kept?"), spec(ext="x", queue="q" * 65)], NOW)   # strict mode refuses row 2
        assert fresh.by_ext("kept?") == []
    finally:
        fresh.close()
        drop_mysql(prefix)


def _schedules_and_limits(store) -> None:
    from delayq.cron import Every, zone
    from delayq.limits import QueueLimit
    from delayq.schedules import Schedule, plan

    s = Schedule("m8", "examples.shop:noop", Every(60), zone("UTC"), overlap=True)

    def take(now):
        return store.take_slots("m8", lambda state: plan(s, state, now), lambda slots: [
            spec(due_at=float(x), ext=s.ext(x)) for x in slots], NOW, now, False)
    take(NOW)
    assert len(take(NOW + 61)[1]) == 1 and store.schedule_rows()[0]["ran"] == 1
    with store.tx() as cur:                                   # set back by hand: the slot taken is skipped
        cur.execute(f"UPDATE {store.prefix}_schedules SET last_slot = {int(NOW)}")
    assert len(take(NOW + 121)[1]) == 1
    assert store.pause_schedule("m8", NOW) and store.resume_schedule("m8", NOW + 200)
    assert store.forget_slots(NOW + 10**6) == 2
    store.set_limits({"lim": QueueLimit(rate=10.0, max_running=5)})
    ids = [r.id for r in store.insert_jobs([spec(queue="lim") for _ in range(3)]
                                           + [spec(limit_key="k8", limit_max=1) for _ in range(2)], NOW)]
    started = store.start(ids, "t8", NOW, 300.0)
    assert len(started) == 2 and len(started.held) == 3 and store.waiting_on_limits() == {"lim": 2, "default": 1}
    store.finish([Outcome(j, SUCCEEDED, NOW, NOW + 1) for j in started], NOW + 1)
    assert store.forget_limited() == 1                       # the keyed job's row; the held ones' stay
    store.set_limits({})


def _jobs(store) -> None:
    a, b, u1, u2 = store.insert_jobs([spec(ext="o:1"), spec(ext="o:2"), spec(ext="u", unique=True),
                                      spec(ext="u", unique=True)], NOW)
    assert (u1.created, u2.created, u2.id) == (True, False, u1.id) and b.id == a.id + 1
    ev = store.insert_jobs([spec(event="paid", event_id="e" * 32)], NOW)[0]
    assert [j.id for j in store.by_event("e" * 32)] == [ev.id] and store.by_ext("o:1")[0].id == a.id
    assert store.cancel(NOW, ext="o:2").cancelled == [(b.id, "default")]
    assert store.cancel(NOW, job_id=ev.id).cancelled == [(ev.id, "default")]
    store.delete_jobs([u1.id])
    assert store.get(u1.id) is None and store.statuses([a.id, b.id]) == {a.id: PENDING, b.id: "cancelled"}


def _claims_and_outcomes(store) -> None:
    ids = [r.id for r in store.insert_jobs([spec(queue="c", priority=p, due_at=NOW - 5) for p in (0, 1, 2, 3)], NOW)]
    assert store.next_due(["c"]) == NOW - 5
    claimed = store.claim_due(["c"], NOW, 2, "t1", 60)
    assert [j.priority for j in claimed] == [3, 2]
    rest = store.start(ids[:2], "t2", NOW, 60)
    late = store.insert_jobs([spec(queue="c", at_most_once=True, deadline=NOW + 1, on_timeout="examples.shop:noop")],
                             NOW)[0]
    [once] = store.start([late.id], "t3", NOW, 60)
    assert store.begin_job(once.id, "t3", NOW) and store.extend_lease(once.id, "t3", NOW + 600, NOW)
    outcomes = [Outcome(claimed[0], SUCCEEDED, NOW, NOW), Outcome(claimed[1], PENDING, NOW, NOW, "later", NOW + 30),
                Outcome(rest[0], FAILED, NOW, NOW, "boom"),
                Outcome(rest[1], TIMED_OUT, NOW, NOW, "deadline", followup=spec(queue="c"))]
    held, handlers = store.finish(outcomes, NOW)
    assert held == {j.id for j in claimed + rest} and len(handlers) == 1
    assert [a.outcome for a in store.attempts(rest[0].id)] == ["failed"]
    [taken] = store.start([store.insert_jobs([spec(queue="c")], NOW)[0].id], "t6", NOW, 60)
    held, _ = store.finish([Outcome(replace(taken, token="lost-lease"), SUCCEEDED, NOW, NOW)], NOW)   # taken over
    assert held == set() and store.get(taken.id).status == "running"
    assert store.keep_alive([taken], NOW, 60) == 1
    assert [j.id for j in store.unclaim([taken], NOW)] == [taken.id] and store.get(taken.id).status == PENDING


def _steps_and_recovery(store) -> None:
    [job] = store.start([store.insert_jobs([spec(queue="s")], NOW)[0].id], "t4", NOW, 60)
    store.ensure_steps(job.id, [("charge", "manual"), ("notify", "auto")], NOW)
    assert store.begin_step(job.id, "charge", "t4", NOW) and store.begin_step(job.id, "notify", "t4", NOW)
    store.finish_step(job.id, "notify", FAILED, "smtp down", NOW)
    assert store.begin_step(job.id, "notify", "t4", NOW)
    [plain] = store.start([store.insert_jobs([spec(queue="s")], NOW)[0].id], "t5", NOW, 60)
    expired = {e.id: e for e in store.expired(NOW + 1000, 10)}
    assert {job.id, plain.id} <= set(expired) and expired[job.id].manual_running == 1
    assert [j.id for j in store.held("t5")] == [plain.id] and store.hand_off(plain.id, "t5", "t6", NOW)
    assert store.keep_alive_held(["t4", "t6"], NOW + 1000, 60) == 2
    lost = [Outcome(expired[job.id], FAILED, NOW, NOW + 1000, "unknown", interrupted=True, label="interrupted"),
            Outcome(replace(expired[plain.id], token="t6"), PENDING, NOW, NOW + 1000, "interrupted", NOW + 1000,
                    interrupted=True, solo=True)]
    assert store.finish(lost, NOW + 1000, witnessed=False, lapsed=True)[0] == set()     # both renewed just now
    assert store.finish(lost, NOW + 1000, witnessed=False)[0] == {job.id, plain.id}
    assert store.pending_entries([job.id, plain.id]) == [(plain.id, "s", NOW + 1000, 0)]
    assert [s.status for s in store.steps(job.id)] == [FAILED, PENDING]
    assert store.step_names(job.id) == ["charge", "notify"]
    assert [c[0] for c in store.retry_ids([job.id], NOW + 1000, NOW + 1000, True, "charge").changed] == [job.id]


def _maintenance_and_reports(store) -> None:
    [kept] = store.insert_jobs([spec(queue="o")], NOW, index_pending=True)
    assert store.outbox(10) == [(kept.id, "o", NOW, 0)]
    store.outbox_done([kept.id])
    page = store.pending_page(0, store.max_job_id(), 1000)
    assert kept.id in [job for job, _, _, _ in page]
    newer, last = store.newer_rows(kept.id - 1, NOW + 1, 10)
    assert newer == [(kept.id, "o", NOW, 0)] and last == kept.id == store.max_job_id()
    alerts = store.alerts_due(10)
    assert alerts and json.dumps(alerts)
    store.mark_alerted([a["id"] for a in alerts], NOW)
    rows = store.queue_figures(NOW, 1)
    assert {(g.queue, g.status) for g in rows} >= {("c", SUCCEEDED), ("c", FAILED)}
    assert store.count_groups(NOW, 1, 60, 5) >= 0 and store.queue_figures(NOW, 1)
    everything = JobFilter(ids=(kept.id,), queues=("o",), statuses=(PENDING,), call="examples.shop:noop",
                           ext_prefix=None, since=NOW - 1, until=NOW + 1, time_field="due")
    assert [j["id"] for j in store.search(everything, None, 10)] == [kept.id]
    assert store.count(JobFilter(call="examples.", ext="u", error="x")) == []
    few = store.search(JobFilter(queues=("c",), statuses=(FAILED,), call="examples."), None, 10)   # two steps
    assert few and {j["status"] for j in few} == {FAILED} and store.search(JobFilter(queues=("c",)), None, 1)
    snapshot = JobFilter(ids=(kept.id,), arg=("k", "v"), upto_id=kept.id, as_of=NOW + 1, above_id=0)
    assert store.count(snapshot) == [] and store.count_upto(JobFilter(ids=(kept.id,), upto_id=kept.id), 5) == 1
    assert store.search_keys(JobFilter(statuses=(PENDING,), timed_out=True), None, 10, by_id=True) == []
    assert {j["status"] for j in store.search(JobFilter(statuses=(SUCCEEDED,)), None, 10)} == {SUCCEEDED}   # by_is_finished
    assert sorted(store.count(JobFilter(ext_prefix="o:"))) == [("default", "cancelled", 1), ("default", PENDING, 1)]
    assert store.list_jobs(PENDING, "o", None, 5)[0]["id"] == kept.id
    assert store.live_queues_like("%") and store.failed_in_queue("c", 5)
    assert store.search_keys(JobFilter(queues=("o",)), None, 10) and store.search_keys(JobFilter(), None, 10, by_id=True)
    assert store.recent_attempts(NOW - 60, NOW - 3600) is not None and store.metrics()
    [extra] = store.insert_jobs([spec(queue="x")], NOW)
    assert [c[0] for c in store.cancel_ids([extra.id], NOW).changed] == [extra.id]
    assert store.pause("o", "upstream down", NOW) and "o" in store.paused() and store.resume("o")
    worker = {"id": "w" * 32, "host": "h", "pid": 1, "queues": "o", "concurrency": 1, "every": 5.0, "started_at": NOW}
    store.beat(worker, "[]", NOW)
    store.worker_stopped(worker["id"], NOW)
    assert store.workers() and store.forget_workers(NOW + 1) >= 1
    [later] = store.insert_jobs([spec(queue="m", due_at=NOW + 3600)], NOW)
    assert store.make_due(later.id, NOW) and store.get(later.id).due_at == NOW
    counts = {(g.queue, g.status): g.count for g in store.queue_figures(NOW, 10_000)}
    assert counts[("m", PENDING)] == 1
    assert {row[1] for row in store.attempts_per_bucket(NOW - 3600, NOW - 3600, NOW + 3600, 60)} >= {"failed"}
    t0 = NOW - NOW % 300 - 3600
    assert store.roll_up(t0, t0 + 7200, t0 - 86400) >= 1 and store.rolled_upto() is not None
    assert {row[1] for row in store.rollups_per_bucket(t0, t0, t0 + 7200, 3600, queue="c")} >= {"failed"}
    store.record_action({"id": "a" * 32, "at": NOW, "address": "127.0.0.1", "actor": "ops", "action": "retry",
                         "target": "job 1", "jobs": 1, "detail": "{}"})
    assert [a["action"] for a in store.actions(NOW + 1, 10)] == ["retry"]
    old = [job for job, status in store.statuses(list(range(1, 100))).items() if status != PENDING]
    assert store.purge_ids(old, [FAILED, SUCCEEDED, TIMED_OUT, "cancelled"]).changed
