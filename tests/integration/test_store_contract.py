"""The Store contract (store/base.py), one suite run on every store: SQLite and MariaDB (huey's storage suite).

Each test calls the interface directly, with the clock's times passed in, and checks what
its docstring promises (what is atomic, what is conditional on the claim token).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import threading
import time

import pymysql
import pytest

from delayq.errors import InvalidInput, SchemaError
from delayq.jobs import CANCELLED, FAILED, PENDING, RUNNING, SUCCEEDED, TIMED_OUT, JobSpec, Outcome
from delayq.search import JobFilter
from delayq.store import open_store
from delayq.store.queries import latest_version
from tests.conftest import MYSQL_URL, STORES, drop_mysql, mysql8_store, new_prefix, raw_mysql, require
from tests.helpers import until

NOW = 1_800_000_000.0


@pytest.fixture(params=STORES)
def store(request, tmp_path):
    prefix = new_prefix()
    if request.param.startswith("mysql"):
        require("mysql")
        s = mysql8_store(prefix) if request.param == "mysql8" else open_store(MYSQL_URL, prefix)
        s.migrate(NOW)
    else:
        s = open_store(f"sqlite:///{tmp_path}/store.db", prefix)
        s.migrate(NOW)
    yield s
    s.close()
    if request.param.startswith("mysql"):
        drop_mysql(prefix)


def spec(**kw) -> JobSpec:
    return JobSpec(**{"call": "examples.shop:noop", "args_json": "{}", "due_at": NOW, **kw})


def started(store, n=1, token="tok", **kw):
    ids = [r.id for r in store.insert_jobs([spec(**kw) for _ in range(n)], NOW)]
    return store.start(ids, token, NOW, 300.0)


def ran(store, status=SUCCEEDED, began=NOW, finished=NOW, **kw):
    """One job run once, from `began` to `finished`, that ended `status` (a retry is due in an hour): one attempt row."""
    [job] = started(store, **kw)
    error, retry = (None, None) if status == SUCCEEDED else ("boom", NOW + 3600 if status == PENDING else None)
    store.finish([Outcome(job, status, began, finished, error, retry)], finished)
    return job


# -- schema -----------------------------------------------------------------------
def test_migrate_is_idempotent_and_the_schema_is_current(store):
    assert store.migrate(NOW) == []
    assert store.check_schema() == latest_version(store.dialect)


def test_migrate_on_a_new_sqlite_file_says_what_it_applied(tmp_path):
    """`delayq migrate` in a new directory said "schema up to date" while it created the file and every table."""
    s = open_store(f"sqlite:///{tmp_path}/new.db", new_prefix())
    try:
        assert s.migrate(NOW) == sorted(latest_version_list()) and s.migrate(NOW) == []
    finally:
        s.close()


def latest_version_list() -> list[int]:
    return list(range(1, latest_version("sqlite") + 1))


def test_an_unmigrated_prefix_is_named_with_how_to_fix():
    require("mysql")
    store = open_store(MYSQL_URL, new_prefix())
    with pytest.raises(SchemaError, match=r'^no delayq tables at mysql://127\.0\.0\.1:3306/test \(prefix \w+\): run "delayq migrate"'
                                          r" to create them, or set DELAYQ_DATABASE_URL \(and DELAYQ_PREFIX\)"):
        store.check_schema()
    store.close()


def test_a_store_that_must_not_create_refuses_a_missing_sqlite_file_and_creates_nothing(tmp_path):
    """Commands that do not enqueue open the store with create=False: a missing file is a SchemaError naming it by
    its absolute path, never a new empty database (which then answered "no jobs" from the wrong directory)."""
    s = open_store(f"sqlite:///{tmp_path}/missing.db", new_prefix(), create=False)
    with pytest.raises(SchemaError, match=f"^no delayq tables at sqlite:///{tmp_path}/missing.db "):
        s.check_schema()
    with pytest.raises(SchemaError, match="no delayq tables"):
        s.count(JobFilter())
    s.close()
    assert os.listdir(tmp_path) == []


def test_a_schema_too_old_or_too_new_is_named(store):
    need = latest_version(store.dialect)
    with store.tx() as cur:
        cur.execute(f"DELETE FROM {store.prefix}_migrations WHERE version = {need}")
    with pytest.raises(SchemaError, match=f"at schema version {need - 1}, this delayq needs {need}: run `delayq migrate`"):
        store.check_schema()
    with store.tx() as cur:
        cur.execute(f"INSERT INTO {store.prefix}_migrations (version, applied_at) VALUES ({need + 1}, 0)")
    with pytest.raises(SchemaError, match=f"at schema version {need + 1}, newer than this delayq \\({need}\\): upgrade"):
        store.check_schema()


# -- JobStore -----------------------------------------------------------------------
def test_insert_returns_ids_in_order_and_unique_returns_the_live_job(store):
    first = store.insert_jobs([spec(ext=f"o:{i}") for i in range(600)], NOW)
    assert [r.created for r in first] == [True] * 600 and [r.id for r in first] == sorted(r.id for r in first)
    assert [store.get(first[i].id).ext for i in (0, 599)] == ["o:0", "o:599"]
    a, b = store.insert_jobs([spec(ext="u", unique=True), spec(ext="u", unique=True)], NOW)
    assert (a.created, b.created, b.id) == (True, False, a.id)


def test_unique_keeps_one_live_job_per_queue_and_ext_whatever_flags_the_live_one_had(store):
    """README: a unique enqueue returns the live (pending or running) job of its queue and ext, however that one was
    enqueued; a plain enqueue always adds one (it asked for no check)."""
    plain = store.insert_jobs([spec(ext="order:1")], NOW)[0]
    again = store.insert_jobs([spec(ext="order:1", unique=True)], NOW)[0]
    assert (again.created, again.id) == (False, plain.id)
    assert store.insert_jobs([spec(ext="order:1", queue="other", unique=True)], NOW)[0].created   # another queue
    unique = store.insert_jobs([spec(ext="order:2", unique=True)], NOW)[0]
    assert unique.created and store.insert_jobs([spec(ext="order:2")], NOW)[0].created         # the other way round
    assert store.insert_jobs([spec(ext="order:2", unique=True)], NOW)[0].id == unique.id
    [running] = store.start([plain.id], "tok", NOW, 300.0)
    assert store.insert_jobs([spec(ext="order:1", unique=True)], NOW)[0].id == running.id       # running is live
    store.finish([Outcome(running, SUCCEEDED, NOW, NOW)], NOW)
    fresh = store.insert_jobs([spec(ext="order:1", unique=True)], NOW)[0]
    assert fresh.created and fresh.id != plain.id                                              # ended: a new one


def test_insert_without_returning_as_on_mysql_8(store):
    store._supports_returning = lambda connection: False
    store.returning = False
    rows = store.insert_jobs([spec(ext="a"), spec(ext="b", unique=True), spec(ext="b", unique=True)], NOW)
    assert [store.get(r.id).ext for r in rows] == ["a", "b", "b"] and rows[1].id == rows[2].id


def test_insert_on_the_callers_connection_exists_only_if_it_commits(store, tmp_path):
    def connection():
        if store.dialect == "sqlite":
            return sqlite3.connect(store.path, isolation_level=None)
        return raw_mysql()

    conn = connection()
    for outcome in ("rollback", "commit"):
        conn.cursor().execute("BEGIN")
        [row] = store.insert_jobs_on(conn, [spec(ext=outcome)], NOW, index_pending=True)
        getattr(conn, outcome)()
        assert (store.get(row.id) is not None) == (outcome == "commit")
    conn.close()
    kept = store.by_ext("commit")[0]
    assert store.outbox(10) == [(kept.id, "default", NOW, 0)]       # its index entry is still to be added
    store.outbox_done([kept.id])
    assert store.outbox(10) == []


def test_cancel_touches_pending_jobs_only(store):
    [running] = started(store, ext="k")
    [pending] = store.insert_jobs([spec(ext="k", queue="q2")], NOW)
    result = store.cancel(NOW, ext="k")
    assert result.cancelled == [(pending.id, "q2")] and result.untouched == [(running.id, RUNNING)]
    assert store.cancel(NOW, job_id=running.id, queue="elsewhere").cancelled == []


def test_reads_by_id_ext_event_and_statuses(store):
    rows = store.insert_jobs([spec(ext="e", event="order.done", event_id="a" * 32), spec(ext="e")], NOW)
    assert [j.id for j in store.by_ext("e")] == [r.id for r in rows]
    assert [j.id for j in store.by_event("a" * 32)] == [rows[0].id]
    assert store.statuses([rows[0].id, 10**9]) == {rows[0].id: PENDING}
    assert store.get(10**9) is None and store.attempts(rows[0].id) == []


def test_delete_jobs_removes_them_outright_and_frees_their_unique_key(store):
    gone, also_gone, kept = store.insert_jobs([spec(ext="d", unique=True), spec(), spec()], NOW)
    store.delete_jobs([gone.id, also_gone.id])
    assert store.statuses([gone.id, also_gone.id, kept.id]) == {kept.id: PENDING}
    assert store.get(gone.id) is None and store.pending_entries([gone.id, also_gone.id]) == []
    assert store.insert_jobs([spec(ext="d", unique=True)], NOW)[0].created       # no live job holds the key now


def test_cancel_ids_cancels_those_still_pending_and_says_why_it_skipped_the_others(store):
    [running] = started(store)
    urgent, plain = store.insert_jobs([spec(queue="q", priority=3), spec()], NOW)
    result = store.cancel_ids([urgent.id, running.id, 10**9, plain.id], NOW)
    assert sorted(result.changed) == [(urgent.id, "q", 3), (plain.id, "default", 0)]
    assert result.skipped == [(running.id, RUNNING), (10**9, "gone")]
    assert store.statuses([urgent.id, plain.id, running.id]) == {urgent.id: CANCELLED, plain.id: CANCELLED,
                                                                 running.id: RUNNING}
    assert store.cancel_ids([urgent.id], NOW).skipped == [(urgent.id, CANCELLED)]


def test_a_job_is_either_cancelled_or_started_never_both(store):
    """cancel_ids decides on locked rows: what it reports cancelled no concurrent start took, and the other way round."""
    ids = [r.id for r in store.insert_jobs([spec() for _ in range(300)], NOW)]
    cancelled, begun, barrier = [], [], threading.Barrier(2)

    def cancel():
        barrier.wait()
        for part in range(0, 300, 10):
            cancelled.extend(job for job, _, _ in store.cancel_ids(ids[part:part + 10], NOW).changed)

    def start():
        barrier.wait()
        for part in range(0, 300, 10):
            begun.extend(j.id for j in store.start(ids[part:part + 10], "tok", NOW, 300.0))

    threads = [threading.Thread(target=cancel), threading.Thread(target=start)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not set(cancelled) & set(begun) and sorted(cancelled + begun) == ids
    statuses = store.statuses(ids)
    assert {statuses[job] for job in cancelled} <= {CANCELLED} and {statuses[job] for job in begun} <= {RUNNING}


def test_make_due_runs_a_pending_job_now_and_leaves_any_other_alone(store):
    [later] = store.insert_jobs([spec(due_at=NOW + 3600)], NOW)
    [running] = started(store, due_at=NOW - 5)
    assert store.make_due(later.id, NOW + 1) and store.get(later.id).due_at == NOW + 1
    assert store.next_due(["default"]) == NOW + 1
    assert not store.make_due(running.id, NOW + 1) and store.get(running.id).due_at == NOW - 5
    assert not store.make_due(10**9, NOW + 1)


# -- ClaimStore ---------------------------------------------------------------------
def test_start_takes_only_pending_jobs_and_sets_the_lease(store):
    a, b = store.insert_jobs([spec(lease=60), spec()], NOW)
    store.cancel(NOW, job_id=b.id)
    [job] = store.start([a.id, b.id], "tok", NOW, 300.0)
    assert (job.id, job.token, job.attempts, job.lease_until) == (a.id, "tok", 1, NOW + 60)
    assert store.start([a.id], "other", NOW, 300.0) == []


def test_start_reads_back_every_field_exactly_and_jobs_too_large_to_pack_together(store):
    """MySQL reads a claim back as one packed JSON value; the fields must come back as the rows hold them, and
    jobs whose args together outgrow one packed value (MariaDB cuts it at group_concat_max_len, 1 MB) are read
    from their rows: every job comes back whole."""
    odd = spec(due_at=NOW + 0.123456789, deadline=NOW + 7200.5, lease=61.25, timeout=9.5, priority=-3,
               ext="order:é\"'\\", args_json='{"s": "a\\"b\\\\c\\n", "n": 1.5e-7}', on_timeout="examples.shop:noop")
    [inserted] = store.insert_jobs([odd], NOW)
    [job] = store.start([inserted.id], "tok", NOW + 0.25, 300.0)
    assert (job.due_at, job.deadline, job.lease, job.timeout, job.priority, job.ext, job.args_json, job.on_timeout,
            job.lease_until, job.token, job.attempts, job.max_attempts, job.at_most_once, job.crashes) == (
        odd.due_at, odd.deadline, 61.25, 9.5, -3, odd.ext, odd.args_json, odd.on_timeout, NOW + 0.25 + 61.25,
        "tok", 1, 16, 0, 0)
    big = json.dumps({"blob": "a\"b'c\\d\n\u001a" * 6000})      # long values are escaped by delayq's own code
    ids = [r.id for r in store.insert_jobs([spec(args_json=big) for _ in range(20)], NOW)]   # 1.2 MB of args
    jobs = store.start(ids, "tok2", NOW, 300.0)
    assert sorted(j.id for j in jobs) == ids and all(j.args_json == big for j in jobs)


def test_claim_due_is_priority_first_and_fair_between_queues(store):
    store.insert_jobs([spec(queue="busy", due_at=NOW - 100 + i) for i in range(50)], NOW)
    quiet = store.insert_jobs([spec(queue="quiet", due_at=NOW - 1)], NOW)
    urgent = store.insert_jobs([spec(queue="busy", due_at=NOW, priority=5)], NOW)
    store.insert_jobs([spec(queue="quiet", due_at=NOW + 60)], NOW)       # not due
    jobs = store.claim_due(["busy", "quiet"], NOW, 3, "tok", 300.0)
    assert urgent[0].id == jobs[0].id and quiet[0].id in {j.id for j in jobs} and len(jobs) == 3


def test_concurrent_claims_never_share_a_job(store):
    store.insert_jobs([spec() for _ in range(400)], NOW)
    got, barrier = [], threading.Barrier(4)

    def claim(n):
        barrier.wait()
        for _ in range(3):
            got.extend(j.id for j in store.claim_due(["default"], NOW, 40, f"t{n}", 300.0))

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 400 and len(set(got)) == 400


def test_next_due_is_the_earliest_pending(store):
    store.insert_jobs([spec(due_at=NOW + 30), spec(due_at=NOW + 10, priority=3), spec(due_at=NOW + 5, queue="x")], NOW)
    assert store.next_due(["default"]) == NOW + 10
    assert store.next_due(["nothing"]) is None


def test_finish_writes_only_where_the_token_still_holds(store):
    ok, retry, bad, late = started(store, 4)
    late.token = "someone-else"
    outcomes = [Outcome(ok, SUCCEEDED, NOW, NOW + 1), Outcome(retry, PENDING, NOW, NOW + 1, "boom", NOW + 60),
                Outcome(bad, FAILED, NOW, NOW + 1, "final"), Outcome(late, SUCCEEDED, NOW, NOW + 1)]
    held, _ = store.finish(outcomes, NOW + 1)
    assert held == {ok.id, retry.id, bad.id}
    assert [store.get(j.id).status for j in (ok, retry, bad, late)] == [SUCCEEDED, PENDING, FAILED, RUNNING]
    assert store.get(retry.id).due_at == NOW + 60
    assert [a.outcome for a in store.attempts(late.id)] == ["succeeded"]      # the run happened: recorded


def test_finish_inserts_the_timeout_handler_with_the_outcome(store):
    [job] = started(store, on_timeout="examples.shop:noop", deadline=NOW + 1)
    follow = spec(queue="q9", priority=2)
    held, handlers = store.finish([Outcome(job, TIMED_OUT, NOW, NOW + 2, "deadline", followup=follow)], NOW + 2)
    [(new_id, queue, due, priority)] = handlers
    assert held == {job.id} and (queue, due, priority) == ("q9", NOW, 2) and store.get(new_id).status == PENDING


def test_begin_and_extend_need_the_claim(store):
    [job] = started(store)
    assert store.begin_job(job.id, "tok", NOW) and store.extend_lease(job.id, "tok", NOW + 999, NOW)
    assert not store.begin_job(job.id, "stolen", NOW) and not store.extend_lease(job.id, "stolen", NOW + 1, NOW)
    assert not store.begin_job(job.id, "tok", NOW + 1000)        # the lease ran out


def test_keep_alive_moves_the_leases_only_where_the_claim_still_holds(store):
    own, plain, lost = started(store, lease=60)[0], started(store)[0], started(store)[0]
    lost.token = "someone-else"
    done = ran(store)
    assert store.keep_alive([own, plain, lost, done], NOW + 100, 300.0) == 2
    assert [store.get(j.id).lease_until for j in (own, plain, lost)] == [NOW + 160, NOW + 400, NOW + 300]
    assert store.keep_alive([], NOW, 300.0) == 0


# -- StepStore ----------------------------------------------------------------------
def test_steps_are_declared_once_and_a_manual_step_begins_once(store):
    [job] = started(store)
    declared = [("a", "auto"), ("m", "manual")]
    store.ensure_steps(job.id, declared, NOW)
    store.ensure_steps(job.id, declared, NOW)
    assert [(s.name, s.status) for s in store.steps(job.id)] == [("a", PENDING), ("m", PENDING)]
    assert store.begin_step(job.id, "m", "tok", NOW)
    store.finish_step(job.id, "m", FAILED, "declined", NOW)
    assert not store.begin_step(job.id, "m", "tok", NOW)         # a person must reset it first
    assert store.begin_step(job.id, "a", "tok", NOW) and not store.begin_step(job.id, "a", "stolen", NOW)


def test_step_names_are_a_job_s_steps_in_declared_order(store):
    [job] = started(store)
    store.ensure_steps(job.id, [("ship", "auto"), ("charge", "manual"), ("email", "auto")], NOW)
    assert store.step_names(job.id) == ["ship", "charge", "email"] and store.step_names(10**9) == []


# -- MaintenanceStore ---------------------------------------------------------------------
def test_expired_leases_give_what_recovery_needs_and_are_recovered_once(store):
    [job] = started(store)
    store.ensure_steps(job.id, [("charge", "manual")], NOW)
    assert store.begin_step(job.id, "charge", "tok", NOW)
    assert store.expired(NOW + 10, 10) == []
    [e] = store.expired(NOW + 301, 10)
    assert (e.id, e.token, e.crashes, e.started_at, e.manual_running, e.solo) == (job.id, "tok", 0, NOW, 1, 0)
    lost = Outcome(e, PENDING, NOW, NOW + 301, "lost", due_at=NOW + 301, interrupted=True, solo=True,
                   label="interrupted")
    assert store.finish([lost], NOW + 301, witnessed=False)[0] == {job.id}
    assert store.finish([lost], NOW + 301, witnessed=False)[0] == set()   # the token moved on: applied once
    stored = store.get(job.id)
    assert (stored.status, stored.crashes, stored.solo) == (PENDING, 0, 1)
    assert [a.outcome for a in store.attempts(job.id)] == ["interrupted"]     # recorded once, by the one that won
    assert [s.status for s in store.steps(job.id)] == [FAILED]           # a manual step is never run again


def test_a_run_recorded_by_a_recovery_gets_no_second_attempt_row_from_its_late_witness(store):
    """A run is recorded once, whoever writes it first: the supervisor wrote an ended job's outcome while its
    worker could not (a batch-mate held the worker's interpreter), or a recovery recorded it as interrupted; when
    the worker's own commit comes, the claim is gone and the run already has its row."""
    [job, other] = started(store, 2)
    done = Outcome(job, SUCCEEDED, NOW, NOW + 1, None)
    assert store.finish([done], NOW + 1, witnessed=False)[0] == {job.id}          # the supervisor's write
    late = [Outcome(job, SUCCEEDED, NOW, NOW + 1, None), Outcome(other, SUCCEEDED, NOW, NOW + 2, None)]
    assert store.finish(late, NOW + 3)[0] == {other.id}                          # the worker's, later
    assert [(a.attempt, a.outcome) for a in store.attempts(job.id)] == [(1, "succeeded")]
    assert [(a.attempt, a.outcome) for a in store.attempts(other.id)] == [(1, "succeeded")]
    [third] = started(store, 1)                 # by attempt, not by job: a later attempt nobody recorded gets its row
    retry = Outcome(third, PENDING, NOW, NOW + 1, "boom", due_at=NOW + 1)
    assert store.finish([retry], NOW + 1, witnessed=False)[0] == {third.id}      # attempt 1 recorded
    [again] = store.start([third.id], "tok2", NOW + 2, 300.0)                      # attempt 2 runs
    assert store.unclaim([again], NOW + 3) == [again]                              # its claim gone, no row for it
    assert store.finish([Outcome(again, SUCCEEDED, NOW + 2, NOW + 3, None)], NOW + 4)[0] == set()
    assert [a.attempt for a in store.attempts(third.id)] == [1, 2]


def test_a_start_returns_only_what_it_moved_itself(store):
    """If a failover lost a claim's write in Redis, a later claim of the same holder may bring the same id again:
    its start (a new claim token) gets nothing, and the job does not run twice at once."""
    [job] = started(store, token="holder0123456789" + "a" * 16)
    assert store.start([job.id], "holder0123456789" + "b" * 16, NOW + 1, 300.0) == []
    assert store.get(job.id).attempts == 1
    assert [j.id for j in store.held("holder0123456789")] == [job.id]


def test_the_leases_of_everything_live_holders_hold_move_on_in_one_call(store):
    a, b = started(store, 1, token="w1")[0], started(store, 1, token="w2")[0]
    other = started(store, 1, token="w3")[0]
    assert store.keep_alive_held(["w1", "w2"], NOW + 100, 300.0) == 2
    assert [store.get(j.id).lease_until for j in (a, b, other)] == [NOW + 400, NOW + 400, NOW + 300]
    assert store.keep_alive_held([], NOW, 300.0) == 0


@contextlib.contextmanager
def row_locked(store, job_id: int):
    """One job row locked by another connection's open transaction (a worker frozen mid-write), until the block ends."""
    frozen = raw_mysql()
    try:
        with frozen.cursor() as cur:
            cur.execute("SELECT id FROM `%s_jobs` WHERE id = %%s FOR UPDATE" % store.prefix, (job_id,))
        yield
    finally:
        frozen.rollback()
        frozen.close()


def test_keeping_leases_never_waits_on_a_row_a_live_holder_has_locked(store):
    """A worker frozen mid-write (a job holding its interpreter in a C call) keeps its rows locked: the supervisor's
    lease keeping skips them instead of waiting (a wait ran into DELAYQ_DB_TIMEOUT and ended the whole runner)."""
    if store.dialect == "sqlite":
        return                                # one writer at a time: no row is ever locked by another
    a, b = started(store, 1, token="w1")[0], started(store, 1, token="w1")[0]
    with row_locked(store, a.id):
        assert store.keep_alive_held(["w1"], NOW + 100, 300.0) == 1
        assert [store.get(j.id).lease_until for j in (a, b)] == [NOW + 300, NOW + 400]


def test_a_recovery_skips_a_row_being_written_now_instead_of_waiting(store):
    """compensate's recovery of an expired lease waited on a row a frozen worker had locked, holding its own locks
    meanwhile, until DELAYQ_DB_TIMEOUT; it skips that row now, and the next recovery takes it."""
    if store.dialect == "sqlite":
        return                                # one writer at a time: no row is ever locked by another
    a, b = started(store, 1, token="w1")[0], started(store, 1, token="w1")[0]
    lost = [Outcome(j, PENDING, NOW, NOW + 301, "lost", due_at=NOW + 301, interrupted=True) for j in (a, b)]
    with row_locked(store, a.id):
        assert store.finish(lost, NOW + 301, witnessed=False)[0] == {b.id}
    assert store.finish(lost, NOW + 302, witnessed=False)[0] == {a.id}        # the next recovery
    assert [store.get(j.id).status for j in (a, b)] == [PENDING, PENDING]


def test_a_dead_holder_s_jobs_are_found_by_its_token_and_can_be_handed_on(store):
    [a, b] = started(store, 2)
    assert {j.id for j in store.held("tok")} == {a.id, b.id}
    assert store.hand_off(a.id, "tok", "solo", NOW) and not store.hand_off(a.id, "tok", "solo2", NOW)
    assert [j.id for j in store.held("tok")] == [b.id] and [j.id for j in store.held("solo")] == [a.id]
    assert store.pending_entries([a.id, b.id]) == []
    assert [j.id for j in store.unclaim(store.held("solo"), NOW)] == [a.id]
    assert store.pending_entries([a.id, b.id]) == [(a.id, "default", NOW, 0)]


def test_newer_rows_walk_the_keys_up_to_the_first_row_too_new_to_judge(store):
    assert store.max_job_id() == 0
    old = store.insert_jobs([spec(), spec()], NOW)
    started(store)                                                          # a third row, running
    new = store.insert_jobs([spec()], NOW + 60)
    entries, last = store.newer_rows(0, NOW + 1, 100)
    assert [e[0] for e in entries] == [r.id for r in old] and last == new[0].id - 1
    assert store.newer_rows(last, NOW + 61, 100) == ([(new[0].id, "default", NOW, 0)], new[0].id)
    assert store.max_job_id() == new[0].id


def test_pending_pages_walk_the_keys(store):
    rows = store.insert_jobs([spec(priority=i % 3) for i in range(7)], NOW)
    first = store.pending_page(0, rows[-1].id, 4)
    rest = store.pending_page(first[-1][0], rows[-1].id, 4)
    assert [r[0] for r in first + rest] == [r.id for r in rows]
    assert first[1] == (rows[1].id, "default", NOW, 1)
    assert [r[0] for r in store.pending_page(rows[1].id, rows[3].id, 4)] == [rows[2].id, rows[3].id]   # upto bounds


def test_alerts_retry_and_purge(store):
    [job] = started(store)
    store.finish([Outcome(job, FAILED, NOW, NOW, "down")], NOW)
    assert [a["id"] for a in store.alerts_due(10)] == [job.id]
    store.mark_alerted([job.id], NOW)
    assert store.alerts_due(10) == []
    retried = store.retry_ids([job.id, 987654], NOW + 5, NOW, True, None)
    assert retried.changed == [(job.id, "default", 0)] and retried.skipped == [(987654, "gone")]
    assert (store.get(job.id).status, store.get(job.id).attempts) == (PENDING, 0)
    assert store.retry_ids([job.id], NOW + 5, NOW, True, None).skipped == [(job.id, PENDING)]   # no longer failed
    [again] = store.start([job.id], "tok2", NOW, 300)
    store.finish([Outcome(again, SUCCEEDED, NOW, NOW)], NOW)
    assert store.purge_ids([job.id], [FAILED]).skipped == [(job.id, SUCCEEDED)]      # not a status it was told
    assert store.purge_ids([job.id], [SUCCEEDED]).changed == [(job.id, "default", 0)]
    assert store.get(job.id) is None and store.attempts(job.id) == []


def test_server_time_is_the_database_clock_in_epoch_seconds(store):
    before = time.time()
    now = store.server_time()
    after = time.time()
    assert isinstance(now, float) and before - 1 <= now <= after + 1      # one host: the same clock, in seconds


# -- ReportStore ----------------------------------------------------------------------
def test_reports(store):
    store.insert_jobs([spec(ext="a_b%1"), spec(ext="axb%2"), spec(queue="~tube")], NOW)
    [failed] = started(store, queue="q")
    store.finish([Outcome(failed, FAILED, NOW, NOW, "x")], NOW)
    assert [r["ext"] for r in store.list_jobs(None, None, "a_b", 10)] == ["a_b%1"]     # _ and % are literal
    assert store.live_queues_like("~%") == ["~tube"] and store.failed_in_queue("q", 5) == [failed.id]
    counts = {(g.queue, g.status): g.count for g in store.queue_figures(NOW, 10_000)}
    assert counts == {("default", PENDING): 2, ("q", FAILED): 1, ("~tube", PENDING): 1}


def test_search_keys_page_newest_first_by_key_with_or_without_the_filter_s_index(store):
    ids = [r.id for r in store.insert_jobs([spec(queue="a" if i % 2 else "b") for i in range(7)], NOW)]
    [running] = started(store, queue="a")
    expected = [(running.id, "a", RUNNING)] + [(job, "a", PENDING) for job in ids[1::2][::-1]]
    for by_id in (False, True):
        first = store.search_keys(JobFilter(queues=("a",)), None, 2, by_id=by_id)
        rest = store.search_keys(JobFilter(queues=("a",)), first[-1][0], 10, by_id=by_id)
        assert first + rest == expected and len(first) == 2


def test_recent_attempts_count_runs_by_outcome_since_the_hour_and_the_minute_with_their_lateness(store):
    ran(store, queue="r", due_at=NOW - 7300, began=NOW - 7200, finished=NOW - 7199)   # before the hour: left out
    ran(store, queue="r", due_at=NOW - 701, began=NOW - 700, finished=NOW - 600)      # 1 s late, within the hour
    retried = ran(store, PENDING, queue="r", due_at=NOW - 3, began=NOW, finished=NOW + 1)   # 3 s late, the minute
    [again] = store.start([retried.id], "tok2", NOW + 5, 300.0)      # the retry succeeds: its failure still counts
    store.finish([Outcome(again, SUCCEEDED, NOW + 10, NOW + 11)], NOW + 11)
    rows = sorted(row for row in store.recent_attempts(NOW - 60, NOW - 3600) if row[0] == "r")
    assert [(queue, outcome, n, m) for queue, outcome, n, m, _, _ in rows] == [("r", "retry", 1, 1),
                                                                             ("r", "succeeded", 2, 1)]
    assert [(late, most) for *_, late, most in rows] == [(pytest.approx(3), pytest.approx(3)),
                                                         (pytest.approx((1 + NOW + 10 - (NOW + 3600)) / 2),
                                                          pytest.approx(1))]


def test_attempts_per_bucket_count_by_bucket_from_since_with_their_lateness(store):
    since = NOW - 300
    for finished in (since - 1, since, since + 59.5, since + 60, since + 179):
        ran(store, queue="b", due_at=finished - 2, began=finished, finished=finished)         # 2 s late each
    ran(store, FAILED, queue="b2", due_at=since + 56, began=since + 61, finished=since + 61)   # 5 s late
    rows = store.attempts_per_bucket(since, since, since + 300, 60)
    assert sorted((b, o, n) for b, o, n, *_ in rows) == [(0, SUCCEEDED, 2), (1, FAILED, 1), (1, SUCCEEDED, 1),
                                                         (2, SUCCEEDED, 1)]
    late = {(b, o): (total, counted, most) for b, o, _, total, counted, most in rows}
    assert late[(1, FAILED)] == (pytest.approx(5), 1, pytest.approx(5))
    assert late[(0, SUCCEEDED)] == (pytest.approx(4), 2, pytest.approx(2))
    one = store.attempts_per_bucket(since, since + 60, since + 300, 120, queue="b2")    # from_at, one queue, 2 min
    assert [(b, o, n) for b, o, n, *_ in one] == [(0, FAILED, 1)]
    assert store.attempts_per_bucket(since, since + 180, since + 300, 60) == []


def test_roll_up_buckets_attempts_by_5_minutes_and_counts_each_once_however_often_it_runs(store):
    t0 = NOW - NOW % 300
    ran(store, queue="r", due_at=t0 + 10, began=t0 + 12, finished=t0 + 13)         # 2 s late
    ran(store, queue="r", due_at=t0 + 290, began=t0 + 296, finished=t0 + 299)      # 6 s late, the same bucket
    ran(store, FAILED, queue="s", due_at=t0 + 300, began=t0 + 301, finished=t0 + 302)     # the next bucket
    assert store.rolled_upto() is None
    assert store.roll_up(t0, t0 + 600, t0 - 86400) == 2          # (t0, r, succeeded), (t0 + 300, s, failed)
    assert store.roll_up(t0, t0 + 600, t0 - 86400) == 2          # again: replaced, not added
    assert store.rolled_upto() == t0 + 300
    rows = store.rollups_per_bucket(t0, t0, t0 + 600, 600)
    assert sorted((b, o, n) for b, o, n, *_ in rows) == [(0, FAILED, 1), (0, SUCCEEDED, 2)]
    [(_, _, _, total, counted, most)] = [row for row in rows if row[1] == SUCCEEDED]
    assert (total, counted, most) == (pytest.approx(8), 2, pytest.approx(6))
    assert [row[:3] for row in store.rollups_per_bucket(t0, t0, t0 + 600, 300, queue="s")] == [(1, FAILED, 1)]
    assert store.rollups_per_bucket(t0, t0 + 300, t0 + 600, 300, queue="r") == []      # from_at: the later bucket
    assert store.roll_up(t0 + 600, t0 + 900, t0 + 1) == 0                    # nothing new; the first bucket aged out
    assert [row[:3] for row in store.rollups_per_bucket(t0, t0, t0 + 900, 300)] == [(1, FAILED, 1)]


def test_roll_ups_of_the_same_buckets_at_once_on_two_hosts_count_each_attempt_once(store):
    """Review of issue 24: two compensates rolling the same buckets at once. On MariaDB a DELETE waits on the other
    host's uncommitted rows, then replaces them; when both DELETEs run before either INSERT (nothing to lock yet),
    the later INSERT meets the other's rows and its transaction is rolled back whole (roll_up says 0). Either way
    neither fails and each attempt is counted once. The interleaving is the threads' own: this checks the
    invariant, it cannot force the second case."""
    t0 = NOW - NOW % 300
    for i in range(6):
        ran(store, queue="c", began=t0 + i, finished=t0 + i + 1 + (300 if i % 2 else 0))
    for _ in range(8):
        start, errors, written = threading.Barrier(2), [], []

        def host():
            start.wait()
            try:
                written.append(store.roll_up(t0, t0 + 600, t0 - 86400))
            except Exception as exc:      # noqa: BLE001  (what the other host's rows made of this one)
                errors.append(exc)
        hosts = [threading.Thread(target=host) for _ in range(2)]
        for h in hosts:
            h.start()
        for h in hosts:
            h.join(60)
        assert errors == [] and max(written) == 2
        assert sorted(row[:3] for row in store.rollups_per_bucket(t0, t0, t0 + 600, 300)) == [(0, SUCCEEDED, 3),
                                                                                              (1, SUCCEEDED, 3)]


def test_queue_figures_count_each_status_and_what_is_due_across_priorities(store):
    store.insert_jobs([spec(queue="c", due_at=NOW - 5), spec(queue="c", due_at=NOW + 50),
                       spec(queue="c", due_at=NOW - 9, priority=5), spec(queue="c", due_at=NOW + 20, priority=-3)], NOW)
    started(store, queue="c", due_at=NOW - 1)
    ran(store, FAILED, queue="c", due_at=NOW - 2)
    ran(store, queue="c")
    store.cancel_ids([store.insert_jobs([spec(queue="c")], NOW)[0].id], NOW)
    groups = {g.status: g for g in store.queue_figures(NOW, 10_000) if g.queue == "c"}
    assert {status: g.count for status, g in groups.items()} == {PENDING: 4, RUNNING: 1, FAILED: 1, SUCCEEDED: 1,
                                                                  CANCELLED: 1}
    pending = groups[PENDING]
    assert (pending.due_now, pending.oldest_due, pending.next_due) == (2, NOW - 9, NOW + 20)
    assert all(g.counted_at is None and not g.at_least for g in groups.values())


def test_a_group_too_big_to_count_live_shows_compensate_s_count_and_when(store):
    ids = [r.id for r in store.insert_jobs([spec(queue="big", due_at=NOW - i) for i in range(6)], NOW)]
    [g] = store.queue_figures(NOW, 3)
    assert (g.count, g.at_least, g.counted_at, g.due_now) == (4, True, None, 4)   # more than 3, so far
    assert store.count_groups(NOW, 3, 60, 5) == 1
    [g] = store.queue_figures(NOW + 1, 3)
    assert (g.count, g.at_least, g.counted_at, g.due_now) == (6, False, NOW, 4)   # compensate's count, and when
    assert g.oldest_due == NOW - 5                                                 # due figures stay live
    assert store.count_groups(NOW + 30, 3, 60, 5) == 0                             # a minute between counts
    store.cancel_ids(ids[:4], NOW + 31)
    assert {(g.status, g.count, g.counted_at) for g in store.queue_figures(NOW + 31, 3)} == {
        (PENDING, 6, NOW), (CANCELLED, 4, None)}                                   # stale until counted again
    assert store.count_groups(NOW + 61, 3, 60, 5) == 1        # the cancelled group is big now; pending is forgotten
    assert {(g.status, g.count, g.counted_at) for g in store.queue_figures(NOW + 62, 3)} == {
        (PENDING, 2, None), (CANCELLED, 4, NOW + 61)}
    assert store.count_groups(NOW + 62, 3, 60, 0) == 0                             # no time: nothing counted


def test_metrics_count_attempts_and_jobs_and_never_go_down_when_rows_are_purged(store):
    quick = ran(store, queue="m", due_at=NOW - 0.3, began=NOW, finished=NOW + 0.2)   # 0.2 s long, 0.3 s late
    slow = ran(store, FAILED, queue="m", due_at=NOW, began=NOW + 2, finished=NOW + 5)   # 3 s long, 2 s late
    [cancelled] = store.insert_jobs([spec(queue="m")], NOW)
    store.cancel_ids([cancelled.id], NOW)
    expected = {("outcome", SUCCEEDED): (1, 0), ("outcome", FAILED): (1, 0),
                ("duration", "0.25"): (1, pytest.approx(0.2, abs=1e-5)), ("duration", "5"): (1, pytest.approx(3)),
                ("lateness", "0.5"): (1, pytest.approx(0.3, abs=1e-5)), ("lateness", "2"): (1, pytest.approx(2)),
                ("jobs", "enqueued"): (3, 0), ("jobs", "cancelled"): (1, 0)}

    def of_queue_m():
        return {(kind, name): (n, total) for queue, kind, name, n, total in store.metrics() if queue == "m"}

    assert of_queue_m() == expected
    purged = store.purge_ids([quick.id, slow.id, cancelled.id], [SUCCEEDED, FAILED, CANCELLED])
    assert len(purged.changed) == 3 and store.statuses([quick.id, slow.id, cancelled.id]) == {}
    assert of_queue_m() == expected                  # folded into the totals: no counter went down


def test_both_dialects_build_the_same_schema(tmp_path):
    """Migrations produce the same columns (name, nullability, kind) and indexes (columns) on SQLite and MariaDB."""
    require("mysql")
    prefix = new_prefix()
    lite = open_store(f"sqlite:///{tmp_path}/schema.db", prefix)
    lite.migrate(NOW)
    maria = open_store(MYSQL_URL, prefix)
    maria.migrate(NOW)
    try:
        assert schema_of_sqlite(lite, prefix) == schema_of_mysql(maria, prefix)
    finally:
        lite.close()
        maria.close()
        drop_mysql(prefix)


KINDS = {"int": "integer", "tinyint": "integer", "smallint": "integer", "bigint": "integer", "integer": "integer",
         "double": "real", "real": "real", "varchar": "text", "char": "text", "text": "text", "mediumtext": "text"}


def _kind(declared: str) -> str:
    return KINDS[declared.lower().split("(")[0].split()[0]]


def schema_of_sqlite(store, prefix):
    schema = {}
    with store.tx() as cur:
        for table in ("jobs", "attempts", "steps"):
            name = f"{prefix}_{table}"
            cur.execute(f"PRAGMA table_xinfo({name})")      # table_info leaves generated columns out
            cols = {r[1]: (_kind(r[2]), bool(r[3]) or bool(r[5])) for r in cur.fetchall()}
            cur.execute(f"PRAGMA index_list({name})")
            indexes = set()
            for row in cur.fetchall():
                cur.execute(f"PRAGMA index_info({row[1]})")
                indexes.add(tuple(r[2] for r in cur.fetchall()))
            schema[table] = (cols, indexes - {()})
    return schema


def schema_of_mysql(store, prefix):
    schema = {}
    with store.tx() as cur:
        for table in ("jobs", "attempts", "steps"):
            name = f"{prefix}_{table}"
            cur.execute("SELECT column_name, data_type, is_nullable, column_key FROM information_schema.columns "
                        "WHERE table_schema = DATABASE() AND table_name = %s", (name,))
            cols = {r[0]: (_kind(r[1]), r[2] == "NO" or r[3] == "PRI") for r in cur.fetchall()}
            cur.execute("SELECT index_name, column_name FROM information_schema.statistics "
                        "WHERE table_schema = DATABASE() AND table_name = %s ORDER BY index_name, seq_in_index", (name,))
            by_index: dict[str, list[str]] = {}
            for index, column in cur.fetchall():
                by_index.setdefault(index, []).append(column)
            pk = tuple(by_index.pop("PRIMARY", ()))
            indexes = {tuple(cols_) for cols_ in by_index.values()}
            if len(pk) > 1:          # SQLite lists a composite primary key as an index; a rowid key it does not
                indexes.add(pk)
            schema[table] = (cols, indexes)
    return schema


def test_search_pages_by_key_with_every_filter(store):
    from delayq.search import JobFilter
    rows = store.insert_jobs([spec(ext=f"order:{i}", queue="a" if i % 2 else "b", due_at=NOW + i) for i in range(10)]
                             + [spec(call="examples.shop:record", ext="gift:1")], NOW)
    ids = [r.id for r in rows]
    first = store.search(JobFilter(), None, 4)
    second = store.search(JobFilter(), first[-1]["id"], 4)
    assert [r["id"] for r in first + second] == ids[::-1][:8]
    by = lambda **kw: [r["id"] for r in store.search(JobFilter(**kw), None, 100)]   # noqa: E731
    assert by(queues=("a",)) == ids[1:10:2][::-1]
    assert by(ext_prefix="order:") == ids[:10][::-1] and by(ext="gift:1") == [ids[10]]
    assert by(call="examples.shop:record") == [ids[10]] and by(call="examples.shop:") == ids[::-1]
    assert by(since=NOW + 3, until=NOW + 5) == [ids[4], ids[3]]
    assert by(ids=(ids[0], ids[5]), statuses=("pending",)) == [ids[5], ids[0]]
    [job] = started(store, ext="boom")
    store.finish([Outcome(job, FAILED, NOW, NOW, "ConnectionError: 50%_off host down")], NOW)
    assert by(error="50%_off") == [job.id] and by(error="50x_off") == []
    assert by(statuses=("failed",), time_field="finished", since=NOW) == [job.id]
    assert sorted(store.count(JobFilter(ext_prefix="order:"))) == [("a", "pending", 5), ("b", "pending", 5)]


def test_is_finished_follows_every_status_change_and_the_live_and_final_searches_find_each_job(store):
    """Migration 15's generated column, which a page of pending or succeeded jobs reads (by_is_finished): 0 while a
    job is pending or running, 1 once it is final, through every change of status a job can make."""
    ok, again, bad, timed, unclaimed, retried = started(store, 6)
    [cancelled, waiting] = store.insert_jobs([spec(), spec()], NOW)
    store.finish([Outcome(ok, SUCCEEDED, NOW, NOW + 1), Outcome(again, PENDING, NOW, NOW + 1, "boom", NOW + 60),
                  Outcome(bad, FAILED, NOW, NOW + 1, "final"), Outcome(timed, TIMED_OUT, NOW, NOW + 1, "deadline"),
                  Outcome(retried, FAILED, NOW, NOW + 1, "final")], NOW + 1)
    store.unclaim([unclaimed], NOW + 1)
    store.cancel_ids([cancelled.id], NOW + 1)
    store.retry_ids([retried.id], NOW + 5, NOW + 1, True, None)
    [running] = started(store)
    with store.tx(write=False) as cur:
        cur.execute(f"SELECT id, status, is_finished FROM {store.prefix}_jobs")
        rows = {int(i): (status, int(done)) for i, status, done in cur.fetchall()}
    assert {status for status, _ in rows.values()} == {PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED, TIMED_OUT}
    assert all(done == (status not in (PENDING, RUNNING)) for status, done in rows.values()), rows
    by = lambda *statuses: [r["id"] for r in store.search(JobFilter(statuses=statuses), None, 100)]   # noqa: E731
    assert by(PENDING) == sorted((again.id, unclaimed.id, retried.id, waiting.id), reverse=True)
    assert by(PENDING, RUNNING) == sorted((again.id, unclaimed.id, retried.id, waiting.id, running.id), reverse=True)
    assert by(SUCCEEDED) == [ok.id] and by(SUCCEEDED, FAILED, CANCELLED) == [cancelled.id, bad.id, ok.id]
    assert by(SUCCEEDED, PENDING) == [i for i in sorted(rows, reverse=True) if rows[i][0] in (SUCCEEDED, PENDING)]


def test_a_search_of_the_few_statuses_with_a_prefix_reads_ids_a_step_at_a_time_and_finds_the_same_page(store,
                                                                                                          monkeypatch):
    """ext_prefix + failed (issue 26): the failed ids from by_claim FEW_IDS at a time, then their rows; the page is
    the one a single statement finds, newest first, across steps that find nothing."""
    from delayq.store import sql_reporting
    monkeypatch.setattr(sql_reporting, "FEW_IDS", 3)
    failed = []
    for i in range(12):
        [job] = started(store, ext=f"{'order' if i % 3 else 'gift'}:{i}", queue="a" if i % 2 else "b")
        store.finish([Outcome(job, FAILED, NOW, NOW, "boom")], NOW)
        failed.append(job.id)
    store.insert_jobs([spec(ext=f"order:p{i}") for i in range(5)], NOW)            # pending: not among them
    want = [j for i, j in enumerate(failed) if i % 3][::-1]
    by = lambda before=None, limit=100, **kw: [r["id"] for r in store.search(     # noqa: E731
        JobFilter(statuses=("failed",), ext_prefix="order:", **kw).checked(), before, limit)]
    steps: list[str] = []
    compose = store.q.compose
    monkeypatch.setattr(store.q, "compose", lambda name, *a, **k: steps.append(name) or compose(name, *a, **k))
    assert by() == want and steps.count("search_few_ids") == 5         # 12 failed ids, 3 a step, then none
    assert by(limit=5) == want[:5] and by(before=want[4]) == want[5:]
    assert by(queues=("a",)) == [j for i, j in enumerate(failed) if i % 3 and i % 2][::-1]
    assert by(call="examples.shop:") == want and by(call="nope.") == []


def test_search_by_one_argument_compares_its_value_as_text(store):
    """Issue 24: search by arguments. A top-level key of the JSON args equal to a value, a number or a string alike;
    a key with a quote or a dot in it is refused (it would be a path), and the snapshot of a bulk preview narrows."""
    from delayq.search import JobFilter
    args = ['{"order_id": 123, "who": "ann"}', '{"order_id": "123"}', '{"order_id": 1234}', '{"who": "bob"}',
            '{"nested": {"order_id": 123}}', '{"note": "it\'s \\"quoted\\""}']
    ids = [r.id for r in store.insert_jobs([spec(args_json=a) for a in args], NOW)]
    by = lambda key, value: sorted(r["id"] for r in store.search(JobFilter(arg=(key, value)), None, 100))  # noqa: E731
    assert by("order_id", "123") == [ids[0], ids[1]]
    assert by("who", "bob") == [ids[3]] and by("who", "carl") == [] and by("note", 'it\'s "quoted"') == [ids[5]]
    assert sorted(store.count(JobFilter(arg=("order_id", "1234")))) == [("default", "pending", 1)]
    assert [store.count_upto(JobFilter(call="examples.shop:"), most) for most in (1, 3, 100)] == [1, 3, len(args)]
    for bad in ('order_id"', "nested.order_id", "$", ""):
        with pytest.raises(InvalidInput, match="an argument's name"):
            JobFilter(arg=(bad, "1")).checked()
    assert [r["id"] for r in store.search(JobFilter(arg=("order_id", "123"), upto_id=ids[0]), None, 10)] == [ids[0]]


def test_a_wrong_connection_is_named_in_one_line_and_writes_nothing(store, tmp_path):
    """connection= given a cursor, another driver's connection, or a connection to a database without delayq's
    tables: InvalidInput naming what was expected (not an AttributeError or a raw 1146)."""
    other = sqlite3.connect(str(tmp_path / "other.db"))
    wrong = [other.cursor(), object()]
    if store.dialect == "sqlite":
        wrong.append(pymysql)                         # not even a connection
    else:
        raw = raw_mysql(database="mysql")
        with pytest.raises(InvalidInput, match="without delayq's tables") as caught:
            store.insert_jobs_on(raw, [spec(ext="w")], NOW, index_pending=True)
        raw.rollback(), raw.close()
        assert "\n" not in str(caught.value)
        wrong.append(other)                           # a sqlite3 connection on a MySQL store
    for obj in wrong:
        with pytest.raises(InvalidInput, match="connection= must be an open connection") as caught:
            store.insert_jobs_on(obj, [spec(ext="w")], NOW, index_pending=True)
        assert "\n" not in str(caught.value) and type(obj).__name__ in str(caught.value)
    if store.dialect == "sqlite":
        other_tables = store.insert_jobs_on  # a sqlite3 connection to another file: no tables there
        with pytest.raises(InvalidInput, match="without delayq's tables"):
            other_tables(other, [spec(ext="w")], NOW, index_pending=True)
    other.close()
    assert store.by_ext("w") == []


# -- ControlStore ----------------------------------------------------------------------
def test_a_queue_is_paused_once_with_its_latest_reason_until_resumed(store):
    assert store.paused() == {}
    assert store.pause("mail", "smtp down", NOW) and not store.pause("mail", "still down", NOW + 5)
    assert store.pause("sms", None, NOW + 1)
    assert store.paused() == {"mail": (NOW, "still down"), "sms": (NOW + 1, None)}     # paused since the first time
    assert store.resume("mail") and not store.resume("mail") and not store.resume("never-paused")
    assert store.paused() == {"sms": (NOW + 1, None)}


def runner_row(n: int, **kw) -> dict:
    return {"id": f"w{n}".ljust(32, "0"), "host": "host-1", "pid": 100 + n, "queues": "a,b", "concurrency": 8,
            "every": 10.0, "started_at": NOW + n, **kw}


def test_a_runner_s_row_follows_its_beats_and_its_clean_stop_until_forgotten(store):
    one, two = runner_row(1), runner_row(2)
    store.beat(one, "[]", NOW + 1)
    store.beat(two, "[]", NOW + 2)
    store.beat(one, "[[7, 1800000000.5]]", NOW + 10)                  # the same row, seen again
    first, _ = store.workers()
    assert first == {**one, "last_seen": NOW + 10, "stopped_at": None, "running": "[[7, 1800000000.5]]"}
    store.worker_stopped(two["id"], NOW + 20)
    assert store.workers()[1] == {**two, "last_seen": NOW + 20, "stopped_at": NOW + 20, "running": None}
    assert store.forget_workers(NOW + 15) == 1 and [w["id"] for w in store.workers()] == [two["id"]]
    assert store.forget_workers(NOW + 15) == 0


def audit_row(at: float, **kw) -> dict:
    return {"id": secrets.token_hex(16), "at": at, "address": "10.0.0.1", "actor": "ann", "action": "retry",
            "target": "job 7", "jobs": 1, "detail": None, **kw}


def test_the_audit_trail_pages_newest_first_below_a_time(store):
    rows = [audit_row(NOW + i, detail=f"because {i}" if i % 2 else None) for i in range(4)]
    for row in rows:
        store.record_action(row)
    assert store.actions(NOW + 3, 2) == [rows[2], rows[1]]
    assert store.actions(NOW + 1, 10) == [rows[0]]                  # strictly older than `before`
    assert store.actions(NOW + 100, 100) == rows[::-1]


# -- Store ----------------------------------------------------------------------
def open_now(store) -> set:
    """What the store holds open, seen from outside it: this process's descriptors on the SQLite file (with its -wal
    and -shm), or the MariaDB session of its pooled connection."""
    if store.dialect == "sqlite":
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}").startswith(store.path):
                    found.add(fd)
        return found
    with store.tx(write=False) as cur:
        cur.execute("SELECT CONNECTION_ID()")
        return {cur.fetchone()[0]}


def still_open(store, held: set) -> bool:
    if store.dialect == "sqlite":
        return bool(open_now(store))
    conn = raw_mysql()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id FROM information_schema.processlist WHERE id IN %s", (tuple(held),))
            return bool(cur.fetchall())
    finally:
        conn.close()


def test_close_releases_the_connections_and_the_store_reconnects_on_next_use(store):
    [row] = store.insert_jobs([spec()], NOW)
    held = open_now(store)
    assert held and still_open(store, held)
    store.close()
    until(lambda: not still_open(store, held), timeout=5, detail=f"still open after close: {held}")
    assert store.get(row.id).status == PENDING


# -- schedules (ScheduleStore) -------------------------------------------------------------------
def _every_minute(name="tick", **kw):
    from delayq.schedules import Schedule
    from delayq.cron import Every, zone
    return Schedule(name, "examples.shop:noop", Every(60), zone("UTC"), **kw)


def _take(store, schedule, now, first=None):
    from delayq.schedules import plan
    return store.take_slots(schedule.name, lambda state: plan(schedule, state, now),
                            lambda slots: [spec(due_at=float(s), ext=schedule.ext(s)) for s in slots],
                            NOW if first is None else first, now, False)


def test_take_slots_runs_each_slot_once_with_its_slot_row_and_counts_what_it_did(store):
    s = _every_minute()
    decided, inserted = _take(store, s, NOW)                   # first seen: counts from NOW, nothing due
    assert inserted == [] and decided.run == ()
    decided, inserted = _take(store, s, NOW + 61)
    assert [job.due_at for job in inserted] == [NOW + 60] and decided.run == (NOW + 60,)
    assert store.get(inserted[0].id).ext == "schedule:tick:2027-01-15T08:01:00+00:00"
    assert _take(store, s, NOW + 61)[1] == []                  # the same slot again: taken
    [row] = store.schedule_rows()
    assert (row["name"], row["last_slot"], row["last_job"], row["ran"], row["status"]) == (
        "tick", NOW + 60, inserted[0].id, 1, PENDING)
    decided, inserted = _take(store, s, NOW + 181)             # the previous job still pending: skipped
    assert inserted == [] and (decided.skipped, decided.missed) == (1, 1)
    [row] = store.schedule_rows()
    assert (row["last_slot"], row["skipped"], row["missed"]) == (NOW + 180, 1, 1)


def test_a_slot_with_its_row_already_written_gets_no_second_job_even_if_the_schedule_row_went(store):
    s = _every_minute(overlap=True)
    _take(store, s, NOW)
    assert len(_take(store, s, NOW + 61)[1]) == 1
    with store.tx() as cur:                                    # an operator deletes the schedule's row by hand
        cur.execute(f"DELETE FROM {store.prefix}_schedules")
    decided, inserted = _take(store, s, NOW + 61, first=NOW)   # the row made again from NOW: slot NOW+60 is due
    assert inserted == [] and len(store.by_ext(s.ext(int(NOW + 60)))) == 1


def test_concurrent_takes_of_one_slot_write_one_job(store):
    s = _every_minute(overlap=True)
    _take(store, s, NOW)
    got, barrier = [], threading.Barrier(4)

    def take():
        barrier.wait()
        got.extend(_take(store, s, NOW + 61)[1])

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 1


def test_pause_and_resume_a_schedule_and_forget_old_slot_rows(store):
    s = _every_minute(overlap=True)
    assert not store.pause_schedule("tick", NOW)               # no row yet
    _take(store, s, NOW)
    assert store.pause_schedule("tick", NOW + 1)
    assert _take(store, s, NOW + 121)[1] == []                 # paused: its slots pass without jobs
    assert store.resume_schedule("tick", NOW + 300) and not store.resume_schedule("tick", NOW + 300)
    [row] = store.schedule_rows()
    assert row["paused_at"] is None and row["last_slot"] == NOW + 300
    assert [j.due_at for j in _take(store, s, NOW + 361)[1]] == [NOW + 360]   # none that passed while paused
    assert store.forget_slots(NOW + 361) == 1 and store.forget_slots(NOW + 361) == 0


# -- limits (ClaimStore.start with set_limits and limit keys) ----------------------------------------
def _statuses(store, ids):
    return [store.get(i).status for i in ids]


def test_a_key_runs_at_most_its_limit_and_held_jobs_wait_uncounted_out_of_the_way(store):
    from delayq.limits import RECHECK
    ids = [r.id for r in store.insert_jobs([spec(limit_key="order:1", limit_max=1) for _ in range(3)]
                                           + [spec(limit_key="order:2", limit_max=1), spec()], NOW)]
    started = store.start(ids, "tok", NOW, 300.0)
    assert sorted(j.id for j in started) == [ids[0], ids[3], ids[4]]          # one per key; the free job too
    # held, a RECHECK apart (a key's backlog is not looked at again all at once)
    assert sorted((h[0], h[2]) for h in started.held) == [(ids[1], NOW + RECHECK), (ids[2], NOW + 2 * RECHECK)]
    held = [store.get(i) for i in ids[1:3]]
    assert [(j.status, j.attempts, j.due_at) for j in held] == [(PENDING, 0, NOW + RECHECK), (PENDING, 0, NOW + 2 * RECHECK)]
    assert store.waiting_on_limits() == {"default": 2}
    assert store.start(ids[1:3], "tok2", NOW + RECHECK, 300.0) == []         # its holder still runs
    [first] = [j for j in started if j.id == ids[0]]
    store.finish([Outcome(first, SUCCEEDED, NOW, NOW + 2)], NOW + 2)
    again = store.start(ids[1:3], "tok2", NOW + 3, 300.0)
    assert [j.id for j in again] == [ids[1]] and [h[0] for h in again.held] == [ids[2]]
    assert store.waiting_on_limits() == {"default": 1}
    assert store.forget_limited() == 1                                       # the finished holder's row


def test_a_dead_holder_gives_its_slot_back_when_its_lease_runs_out(store):
    ids = [r.id for r in store.insert_jobs([spec(limit_key="k", limit_max=1) for _ in range(2)], NOW)]
    assert [j.id for j in store.start(ids, "tok", NOW, 5.0)] == [ids[0]]      # its lease: 5 s
    assert store.start(ids[1:], "tok2", NOW + 4.9, 5.0) == []
    assert [j.id for j in store.start(ids[1:], "tok2", NOW + 5.1, 5.0)] == [ids[1]]


def test_a_queue_rate_starts_its_tokens_and_spreads_the_rest_one_token_apart(store):
    from delayq.limits import QueueLimit
    store.set_limits({"r": QueueLimit(rate=20.0)})                           # burst: 2 (a tenth of a second)
    ids = [r.id for r in store.insert_jobs([spec(queue="r") for _ in range(6)] + [spec(queue="free")], NOW)]
    started = store.start(ids, "tok", NOW, 300.0)
    assert sorted(j.id for j in started) == [ids[0], ids[1], ids[6]]
    assert [round(h[2] - NOW, 3) for h in sorted(started.held, key=lambda h: h[2])] == [0.05, 0.1, 0.15, 0.2]
    assert [j.id for j in store.start(ids[2:6], "tok2", NOW + 0.05, 300.0)] == [ids[2]]    # a token a 0.05 s
    assert len(store.start(ids[3:6], "tok3", NOW + 10, 300.0)) == 2         # a full bucket holds 2, not 200


def test_a_queue_max_running_counts_every_runner_s_jobs(store):
    from delayq.limits import QueueLimit
    store.set_limits({"m": QueueLimit(max_running=2)})
    ids = [r.id for r in store.insert_jobs([spec(queue="m") for _ in range(4)], NOW)]
    assert len(store.start(ids[:1], "a", NOW, 300.0)) == 1
    assert [j.id for j in store.start(ids[1:], "b", NOW, 300.0)] == [ids[1]]
    assert store.start(ids[2:], "c", NOW + 1, 300.0) == []


def test_claims_in_the_database_skip_held_keys_and_take_the_jobs_behind_them(store):
    ids = [r.id for r in store.insert_jobs([spec(limit_key="hot", limit_max=1) for _ in range(5)]
                                           + [spec(limit_key=f"k{i}", limit_max=1) for i in range(3)], NOW)]
    first = store.claim_due(["default"], NOW, 4, "a", 300.0)
    assert [j.id for j in first] == [ids[0]]                                  # the other three of "hot": held
    second = store.claim_due(["default"], NOW, 4, "b", 300.0)
    assert [j.id for j in second] == ids[5:8]                                  # not blocked behind them


def test_concurrent_claims_never_run_two_of_one_key(store):
    ids = [r.id for r in store.insert_jobs([spec(limit_key=f"order:{i % 5}", limit_max=1) for i in range(60)], NOW)]
    got, barrier = [], threading.Barrier(4)

    def claim(n):
        barrier.wait()
        for _ in range(3):
            got.extend(store.claim_due(["default"], NOW, 10, f"t{n}", 300.0))

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(ids.index(j.id) % 5 for j in got) == [0, 1, 2, 3, 4]       # one job of each key, no second
    assert _statuses(store, [j.id for j in got]) == [RUNNING] * 5


def test_a_claim_whose_time_was_read_before_the_last_one_committed_takes_no_token_twice(store):
    from delayq.limits import QueueLimit
    store.set_limits({"r": QueueLimit(rate=100.0)})                          # burst: 10
    ids = [r.id for r in store.insert_jobs([spec(queue="r") for _ in range(30)], NOW - 1)]
    first = store.start(ids[:15], "a", NOW, 300.0)
    late = store.start(ids[15:20], "b", NOW - 0.1, 300.0)                     # read its time 0.1 s before
    again = store.start(ids[20:25], "c", NOW, 300.0)
    assert (len(first), len(late), len(again)) == (10, 0, 0)


def test_a_keyed_job_started_and_then_retried_is_not_counted_as_waiting_on_a_limit(store):
    [job] = store.start([r.id for r in store.insert_jobs([spec(limit_key="k", limit_max=1)], NOW)], "t", NOW, 300.0)
    store.finish([Outcome(job, PENDING, NOW, NOW + 1, "boom", NOW + 60)], NOW + 1)
    assert store.waiting_on_limits() == {} and store.forget_limited() == 0     # its row stays: its job is pending
    store.finish([Outcome(store.start([job.id], "t2", NOW + 60, 300.0)[0], SUCCEEDED, NOW + 60, NOW + 61)], NOW + 61)
    assert store.forget_limited() == 1


def test_a_slot_already_run_is_skipped_and_the_schedule_moves_on_with_catch_up_all(store):
    s = _every_minute(overlap=True, catch_up="all")
    _take(store, s, NOW)
    assert len(_take(store, s, NOW + 61)[1]) == 1
    with store.tx() as cur:                                    # its row set back by hand: NOW+60 is due again
        cur.execute(f"UPDATE {store.prefix}_schedules SET last_slot = {int(NOW)}")
    decided, inserted = _take(store, s, NOW + 121)
    assert [j.due_at for j in inserted] == [NOW + 120] and decided.last_slot == NOW + 120
