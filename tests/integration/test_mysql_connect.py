"""Connecting to MySQL/MariaDB: the default (PREFERRED) TLS mode builds its context once per process; an insert of
one statement runs on a connection that commits each statement (one round trip, not two); a connection cut short
is never reused, and a statement whose reply was lost says it may or may not have been applied; DELAYQ_DB_TIMEOUT
bounds a whole transaction or statement, not each of its waits (issue 21, invariant 6)."""

from __future__ import annotations

import ssl
import threading
import time

import pymysql
import pytest

from delayq.errors import BackendError
from delayq.jobs import JobSpec
from delayq.store.mysql import MySQLStore
from tests.conftest import MYSQL_URL, drop_mysql, new_prefix, require

NOW = 1_800_000_000.0


def test_connections_share_one_unverified_preferred_tls_context():
    require("mysql")
    store = MySQLStore(MYSQL_URL, "unused")
    first, second = store._connect(), store._connect()
    try:
        assert first.ctx is second.ctx and first.ssl and not first._ssl_required
        assert first.ctx.verify_mode == ssl.CERT_NONE and not first.ctx.check_hostname   # PyMySQL's own default
    finally:
        first.close()
        second.close()


@pytest.fixture
def store():
    """A migrated MySQLStore of its own prefix, closed and dropped after the test."""
    require("mysql")
    s = MySQLStore(MYSQL_URL, new_prefix())
    s.migrate(NOW)
    yield s
    s.close()
    drop_mysql(s.prefix)


def test_an_insert_of_one_statement_commits_by_itself_without_a_commit_round_trip(store):
    one = store.insert_jobs([JobSpec(call="examples.shop:noop", args_json="{}", due_at=NOW)], NOW)
    group = store.insert_jobs([JobSpec(call="examples.shop:noop", args_json="{}", due_at=NOW)] * 4, NOW)
    assert [store.get(r.id).status for r in one + group] == ["pending"] * 5     # seen from another connection
    with store.statement() as cur:         # the connection that wrote them: autocommit, no COMMIT ever sent
        cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Com_commit', 'Com_insert', 'Com_insert_select')")
        counts = {name: int(value) for name, value in cur.fetchall()}
    inserts = 2 if store.returning else 1      # MySQL 8 (no RETURNING): several rows go in a transaction
    assert counts["Com_commit"] == 0 and counts["Com_insert"] + counts["Com_insert_select"] == inserts, counts


def test_a_statement_cut_short_does_not_return_its_connection_to_the_pool(store):
    with pytest.raises(KeyboardInterrupt):
        with store.statement() as cur:
            cur.execute("SELECT 1")
            cut = cur.connection
            raise KeyboardInterrupt       # e.g. between sending a statement and reading its reply
    assert not cut.open
    with store.statement() as cur:
        assert cur.connection is not cut


def test_a_transaction_cut_short_by_an_interrupt_does_not_return_its_connection_but_an_error_does(store):
    with pytest.raises(KeyboardInterrupt):
        with store.tx() as cur:
            cur.execute("SELECT 1")
            cut = cur.connection
            raise KeyboardInterrupt       # a reply may be half read: the session is out of step
    assert not cut.open
    with pytest.raises(RuntimeError):
        with store.tx() as cur:
            kept = cur.connection
            raise RuntimeError("the caller's own error: rolled back, the session is fine")
    with store.tx() as cur:
        assert cur.connection is kept and kept.open


def test_a_statement_whose_connection_is_lost_may_have_been_applied_and_says_so(store):
    killer = pymysql.connect(**_login())
    try:
        with store.statement() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            victim = cur.fetchone()[0]

        def kill_when_in_flight() -> None:
            with killer.cursor() as k:
                for _ in range(500):
                    k.execute("SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = %s", (victim,))
                    row = k.fetchone()
                    if row and row[0] and row[0].startswith("SELECT SLEEP"):
                        k.execute(f"KILL CONNECTION {int(victim)}")
                        return
                    time.sleep(0.01)

        thread = threading.Thread(target=kill_when_in_flight)
        thread.start()
        with pytest.raises(BackendError, match=r"the reply was lost: it may or may not have been applied"):
            with store.statement() as cur:
                assert cur.connection.thread_id() == victim       # the pool's one idle connection
                cur.execute("SELECT SLEEP(20)")
        thread.join()
        with pytest.raises(BackendError) as refused:          # the server's own answer: not applied, and no doubt
            with store.statement() as cur:
                cur.execute(f"INSERT INTO {store.prefix}_no_such_table VALUES (1)")
        assert "doesn't exist" in str(refused.value) and "may or may not" not in str(refused.value)
    finally:
        killer.close()


def test_a_transaction_or_a_statement_has_one_bound_in_all_not_one_per_wait():
    """Three answers of 0.6 s are each within a 1 s DELAYQ_DB_TIMEOUT; the transaction holding them is not, and
    ends at the bound (a statement() the same). The next operation connects afresh and works."""
    require("mysql")
    store = MySQLStore(MYSQL_URL, new_prefix(), timeout=1.0)
    try:
        for operation in (store.tx, store.statement):
            started = time.monotonic()
            with pytest.raises(BackendError, match=r"failed: timed out after 1 s \(DELAYQ_DB_TIMEOUT\)"):
                with operation() as cur:
                    for _ in range(3):
                        cur.execute("SELECT SLEEP(0.6)")
            assert 1.0 <= time.monotonic() - started < 1.5
            with operation() as cur:
                cur.execute("SELECT 1")
                assert cur.fetchone() == (1,)
    finally:
        store.close()


def _login() -> dict:
    from urllib.parse import urlsplit
    parts = urlsplit(MYSQL_URL)
    return {"host": parts.hostname or "127.0.0.1", "port": parts.port or 3306, "user": parts.username or "root",
            "password": parts.password or "", "database": parts.path.lstrip("/") or None}


def test_a_transaction_chosen_as_a_deadlock_s_victim_is_run_again(store):
    """The runner's writes meet each other on the same rows (claims, outcomes, leases); InnoDB then rolls one back
    whole (1213): `retried` runs it again instead of ending the runner. The other side here has changed rows and
    ours has only locked some, so InnoDB picks ours as the victim."""
    a, b = [r.id for r in store.insert_jobs([JobSpec("examples.shop:noop", "{}", NOW)] * 2, NOW)]
    jobs = f"{store.prefix}_jobs"
    runs: list[int] = []
    done: list = []
    locked = threading.Event()

    def body(cur):
        runs.append(1)
        cur.execute(f"SELECT id FROM {jobs} WHERE id = %s FOR UPDATE", (a,))
        locked.set()
        cur.execute(f"SELECT id FROM {jobs} WHERE id = %s FOR UPDATE", (b,))     # waits for the other side
        return True

    other = pymysql.connect(host="127.0.0.1", user="root", database="test", autocommit=False)
    worker = threading.Thread(target=lambda: done.append(store.retried(body)))
    try:
        with other.cursor() as cur:
            cur.execute(f"UPDATE {jobs} SET updated_at = updated_at + 1 WHERE id = %s", (b,))
            worker.start()
            assert locked.wait(10)
            time.sleep(0.2)                          # (the store's second lock wait has begun: nothing to poll for)
            cur.execute(f"UPDATE {jobs} SET updated_at = updated_at + 1 WHERE id = %s", (a,))   # the cycle closes
        other.commit()
    finally:
        other.close()
        worker.join(20)
    assert done == [True] and len(runs) == 2


def test_a_list_of_ints_is_one_parameter_rendered_as_integers_only(store):
    """IntList: `IN (:ids)` with 500 ids is one parameter; its encoder renders each item through int(), so even an
    int subclass whose str() is hostile reaches the SQL as digits."""
    class Sneaky(int):
        def __str__(self) -> str:
            return "1) OR (1=1"
    [a, b] = [r.id for r in store.insert_jobs([JobSpec("examples.shop:noop", "{}", NOW)] * 2, NOW)]
    with store.tx() as cur:
        assert list(store.run(cur, "select_statuses", ids=[a, b]).fetchall()) == [(a, "pending"), (b, "pending")]
    from delayq.store.queries import IntList
    from delayq.store.mysql import _ints
    assert _ints(IntList([Sneaky(a), b])) == f"{a},{b}"
